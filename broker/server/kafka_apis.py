"""KafkaApis: dispatch of requests to API handlers by ``api_key``.

The handlers are those the modules of ``broker/apis/`` declare (``broker.apis.APIS``); a
handler is ``handler(apis, request)`` and answers through
``apis.request_channel.send_response(request, body)`` now or later. Everything a handler needs
is a typed attribute here, given to the constructor: ``config``, ``metadata``,
``replica_manager``, ``request_channel``, ``group_coordinator`` and ``transaction_coordinator``
(None when the broker runs without coordinators), ``time``, ``broker_id``, ``authorizer``
(the ``StandardAuthorizer`` when ``authorizer.class.name`` names it, else None; handlers ask it
through ``broker.server.auth_helper``) and the client quota managers (``quotas``, None for a
broker without them), with ``request_helper`` (``broker.server.request_handler_helper``),
through which handlers answer so quotas apply.

An unknown api key is answered by closing the connection (as Kafka's network layer does for a
key it cannot parse); a handler that raises gets a generic error response
(UNKNOWN_SERVER_ERROR) if the protocol package can build one, otherwise a close. The handler
thread never dies.

Test control (``broker.cluster.control``): when the cluster has a ``ClusterControl`` (``control``, a
``RequestHook``), it sees each request first and may answer it itself (an injected error, an
interception, an isolated broker's closed connection); see ``ClusterControl.on_request``.

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
from typing import TYPE_CHECKING, Mapping, Protocol

import structlog

from kafka_emu.broker.apis import APIS, ApiSpec
from kafka_emu.broker.apis.api_spec import Handler
from kafka_emu.broker.protocol.error_response import build_error_response
from kafka_emu.broker.security.authorizer import StandardAuthorizer, parse_super_users
from kafka_emu.broker.server.request_handler_helper import RequestHandlerHelper
from kafka_emu.common.errors import Errors
from kafka_emu.logsetup import request_context

if TYPE_CHECKING:
    from kafka_emu.broker.server.client_metrics_manager import ClientMetricsManager
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.broker.server.quota.quota_factory import QuotaManagers
    from kafka_emu.broker.server.replica_manager import ReplicaManager
    from kafka_emu.broker.network.request_channel import Request, RequestChannel
    from kafka_emu.coordinator.group.group_coordinator import GroupCoordinator
    from kafka_emu.broker.server.share.share_partition_manager import SharePartitionManager
    from kafka_emu.coordinator.share.share_coordinator import ShareCoordinator
    from kafka_emu.coordinator.transaction import TransactionCoordinator
    from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.kafka_apis")


class RequestHook(Protocol):
    """What ``KafkaApis.handle`` calls before the handler, when set (``control``): test control's
    ``broker.cluster.control.ClusterControl``."""

    def on_request(self, apis: KafkaApis, request: Request) -> bool:
        """True if the request was answered here (the handler must not run)."""


class KafkaApis:
    def __init__(self, config: KafkaConfig, request_channel: RequestChannel, metadata: MetadataStore,
                 replica_manager: ReplicaManager, time: Time,
                 group_coordinator: GroupCoordinator | None = None,
                 control: RequestHook | None = None,
                 apis: Mapping[int, ApiSpec] = APIS,
                 transaction_coordinator: TransactionCoordinator | None = None,
                 client_metrics_manager: ClientMetricsManager | None = None,
                 quotas: QuotaManagers | None = None,
                 share_coordinator: ShareCoordinator | None = None,
                 share_partition_manager: SharePartitionManager | None = None) -> None:
        self.config = config
        self.request_channel = request_channel
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.time = time
        self.group_coordinator = group_coordinator
        self.transaction_coordinator = transaction_coordinator
        self.client_metrics_manager = client_metrics_manager   # KIP-714; None: telemetry refused
        self.share_coordinator = share_coordinator
        self.share_partition_manager = share_partition_manager
        self.control = control   # the cluster's test control, None outside an EmbeddedCluster
        self.quotas = quotas
        self.request_helper = RequestHandlerHelper(request_channel, quotas, time)
        self.broker_id = config.broker_id
        # authorizer.class.name: the StandardAuthorizer over the cluster metadata's ACLs, or none
        self.authorizer: StandardAuthorizer | None = None
        if config["authorizer.class.name"]:
            self.authorizer = StandardAuthorizer(metadata, parse_super_users(config["super.users"]),
                                                 bool(config["allow.everyone.if.no.acl.found"]))
        self.handlers: dict[int, Handler] = {key: spec.handler for key, spec in apis.items()}
        self.unknown_api_requests = 0
        self.handler_errors = 0

    def register(self, api_key: int, handler: Handler) -> None:
        """Serve ``api_key`` with ``handler`` (tests that dispatch their own request types)."""
        self.handlers[api_key] = handler

    def handle(self, request: Request) -> None:
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
            self._answer_error(request, Errors.UNKNOWN_SERVER_ERROR)
        finally:
            if not request.api_local_complete_time_ns:
                request.api_local_complete_time_ns = _time.monotonic_ns()

    def _answer_error(self, request: Request, code: int) -> None:
        try:
            body = build_error_response(request.api_key, request.api_version, request.body, code)
        except Exception:
            body = None
        self.request_helper.send_response_maybe_throttle(request, body, close_connection=body is None)
