"""Request recording: a bounded ring of what clients sent and what the cluster answered.

Off unless enabled (``EmbeddedCluster(record_requests=True)``, or a capacity as an int). Each
client request is recorded when its answer leaves the broker (a response, no response for an
acks=0 produce, or a closed connection), with the decoded request and the response actually
sent, injected errors and intercepted answers included, so a test asserts what a client did:
how many JoinGroups a rebalance took, that a producer sent InitProducerId first. In-process
requests (replica fetchers, ``EmbeddedCluster.produce``) are not client traffic and are not
recorded. The ring keeps the newest ``capacity`` records (``DEFAULT_CAPACITY``); ``dropped``
counts the ones it pushed out. Each record names the connection's principal and listener.

A Produce response written by the fast encoder is kept as bytes and decoded on first access.

Locking: ``_lock`` guards the ring and ``dropped``; records are immutable once added (apart
from the cached decoding of an encoded response).
"""
from __future__ import annotations

import threading
import time as _time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_emu.broker.apis import api_name
from kafka_emu.broker.cluster.control.entity_json import JsonValue, to_json_value
from kafka_emu.broker.protocol.adapter import response_schema
from kafka_emu.broker.protocol.codec import EncodedResponse, RequestBody, ResponseBody, decode_response

if TYPE_CHECKING:
    from kio.static.protocol import ResponsePayload

    from kafka_emu.broker.network.request_channel import Request

DEFAULT_CAPACITY = 10_000


@dataclass(eq=False)
class RequestRecord:
    time: float                    # wall-clock seconds when the answer left the broker
    broker: int
    connection: str
    client_id: str | None
    api_key: int
    api_version: int
    correlation_id: int
    request: RequestBody           # the decoded request body
    raw_response: ResponseBody | None   # the response body as sent (None: no answer)
    disconnected: bool             # the connection was closed instead of answering
    fault: str | None = None       # "error", "disconnect", "intercept", "isolated" or None
    principal: str = "User:ANONYMOUS"   # who the connection authenticated as (SASL user, certificate)
    listener: str = "PLAINTEXT"
    _decoded: ResponsePayload | None = field(default=None, repr=False)

    @property
    def api(self) -> str:
        return api_name(self.api_key)

    @property
    def response(self) -> ResponsePayload | None:
        """The response entity sent (None for no answer or a disconnect)."""
        body = self.raw_response
        if isinstance(body, EncodedResponse):
            if self._decoded is None:
                header = b"\0" if body.flexible_header else b""
                frame = b"\0\0\0\0" + header + body.data
                self._decoded = decode_response(frame, response_schema(self.api_key, self.api_version))[1]
            return self._decoded
        return body

    def error_codes(self) -> list[int]:
        """Every error code in the response, top level and per item, in schema order."""
        out: list[int] = []
        _collect_errors(self.response, out)
        return out

    def to_json(self) -> dict[str, JsonValue]:
        return {"time": self.time, "broker": self.broker, "connection": self.connection,
                "client_id": self.client_id, "api": self.api, "api_key": self.api_key,
                "api_version": self.api_version, "correlation_id": self.correlation_id,
                "fault": self.fault, "disconnected": self.disconnected, "principal": self.principal,
                "listener": self.listener,
                "request": to_json_value(self.request), "response": to_json_value(self.response)}


def _collect_errors(value: object, out: list[int]) -> None:
    fields_ = getattr(value, "__dataclass_fields__", None)
    if fields_ is None:
        if isinstance(value, tuple):
            for item in value:
                _collect_errors(item, out)
        return
    for name, f in fields_.items():
        item = getattr(value, name)
        if f.metadata.get("kafka_type") == "error_code":
            out.append(int(item))
        elif isinstance(item, tuple) or hasattr(item, "__dataclass_fields__"):
            _collect_errors(item, out)


class RequestRecorder:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity <= 0:
            raise ValueError("record_requests capacity must be positive")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._ring: deque[RequestRecord] = deque(maxlen=capacity)
        self.dropped = 0

    def record(self, broker: int, request: Request, body: ResponseBody | None, close_connection: bool,
               fault: str | None) -> None:
        rec = RequestRecord(_time.time(), broker, request.connection_id, request.client_id,
                            request.api_key, request.api_version, request.correlation_id,
                            request.body, None if close_connection else body, close_connection, fault,
                            str(request.principal), request.listener)
        with self._lock:
            if len(self._ring) == self.capacity:
                self.dropped += 1
            self._ring.append(rec)

    def records(self, api_key: int | None = None, broker: int | None = None,
                client_id: str | None = None) -> list[RequestRecord]:
        with self._lock:
            snapshot = list(self._ring)
        return [r for r in snapshot
                if (api_key is None or r.api_key == api_key) and (broker is None or r.broker == broker)
                and (client_id is None or r.client_id == client_id)]

    def clear(self) -> None:
        with self._lock:
            self._ring.clear()
            self.dropped = 0
