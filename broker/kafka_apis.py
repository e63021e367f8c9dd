"""KafkaApis: dispatch of requests to API handlers by ``api_key``.

Handler modules in ``broker/apis/`` register ``handler(apis, request)`` functions through
``register(apis)`` (listed in ``broker/apis/__init__.py``); a handler answers through
``apis.request_channel.send_response(request, body)`` now or later. Everything a handler needs
is an attribute here: ``config``, ``metadata``, ``replica_manager``, ``request_channel``,
``group_coordinator`` (None until the coordinator exists), ``time``, ``broker_id``, ``server``.

An unknown api key is answered by closing the connection (as Kafka's network layer does for a
key it cannot parse); a handler that raises gets a generic error response
(UNKNOWN_SERVER_ERROR) if the protocol package can build one, otherwise a close. The handler
thread never dies.

Test control (``broker.control``): when the cluster has a ``ClusterControl`` (``control``), it
sees each request first and may answer it itself (an injected error, an interception, an
isolated broker's closed connection); see ``ClusterControl.on_request``.

When the handler returns (answered, parked in a purgatory, or raised) ``handle`` stamps
``request.api_local_complete_time_ns`` unless the handler's answer already did, as Kafka's
``KafkaApis.handle`` does, so a request parked in a purgatory counts its wait as RemoteTimeMs,
not LocalTimeMs. The handler runs inside ``logsetup.request_context`` (request type,
version, correlation id and client id on every log event it emits); the handler thread binds
``broker_id`` once for its lifetime.

Locking: the table is filled at start-up and only read afterwards.
"""
from __future__ import annotations

import time as _time
from typing import TYPE_CHECKING, Any, Callable

import structlog

from kafka_emu.broker import errors
from kafka_emu.broker.config import KafkaConfig
from kafka_emu.logsetup import request_context

if TYPE_CHECKING:
    from kafka_emu.broker.request_channel import Request

_log = structlog.get_logger("broker.kafka_apis")

Handler = Callable[[Any, "Request"], None]


class KafkaApis:
    def __init__(self, server: Any = None, *, config: Any = None, metadata: Any = None,
                 replica_manager: Any = None, request_channel: Any = None,
                 group_coordinator: Any = None, time: Any = None, register_all: bool = True) -> None:
        self.server = server
        config = config if config is not None else getattr(server, "config", None)
        self.config = config if isinstance(config, KafkaConfig) else KafkaConfig(config)
        self.metadata = metadata if metadata is not None else getattr(server, "metadata", None)
        self.replica_manager = replica_manager if replica_manager is not None else \
            getattr(server, "replica_manager", None)
        self.request_channel = request_channel if request_channel is not None else \
            getattr(server, "request_channel", None)
        self.group_coordinator = group_coordinator if group_coordinator is not None else \
            getattr(server, "group_coordinator", None)
        self.time = time if time is not None else getattr(server, "time", None)
        self.broker_id = self.config.broker_id
        self.control = getattr(server, "control", None)   # broker.control.ClusterControl or None
        self.handlers: dict[int, Handler] = {}
        self.unknown_api_requests = 0
        self.handler_errors = 0
        if register_all:
            from kafka_emu.broker.apis import register_all as _register_all
            _register_all(self)

    def register(self, api_key: int, handler: Handler) -> None:
        self.handlers[api_key] = handler

    def handle(self, request: "Request") -> None:
        handler = self.handlers.get(request.api_key)
        if handler is None:
            self.unknown_api_requests += 1
            _log.warning("unknown_api_key", broker_id=self.broker_id, api_key=request.api_key,
                         api_version=request.api_version, connection=request.connection_id)
            self.request_channel.send_response(request, None, close_connection=True)
            return
        try:
            with request_context(request):
                control = self.control
                if control is None or not control.on_request(self, request):
                    handler(self, request)
        except Exception:
            self.handler_errors += 1
            _log.exception("api_handler_failed", broker_id=self.broker_id, api_key=request.api_key,
                           api_version=request.api_version, correlation_id=request.correlation_id)
            self._answer_error(request, errors.UNKNOWN_SERVER_ERROR)
        finally:
            if not request.api_local_complete_time_ns:
                request.api_local_complete_time_ns = _time.monotonic_ns()

    def _answer_error(self, request: "Request", code: int) -> None:
        body = None
        try:
            from kafka_emu.broker.protocol.error_response import build_error_response
            body = build_error_response(request.api_key, request.api_version, request.body, code)
        except Exception:
            body = None
        self.request_channel.send_response(request, body, close_connection=body is None)
