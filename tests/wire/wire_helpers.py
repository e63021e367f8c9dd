"""Shared helpers for the wire tests (importable from test modules)."""
from __future__ import annotations

import threading
import time
import uuid
from typing import Callable


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0, interval_s: float = 0.02,
               what: str = "condition") -> None:
    """Poll ``predicate`` until true; fail after ``timeout_s`` (tests never sleep blindly)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def wire_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t.name.startswith(("data-plane-kafka-network-thread", "data-plane-kafka-socket-acceptor",
                                  "data-plane-kafka-request-handler"))]


class RawClient:
    """A minimal blocking Kafka client: one kio request entity in, its response entity out."""

    def __init__(self, host_port: str, timeout_s: float = 10.0, client_id: str | None = None) -> None:
        import socket as _socket

        host, port = host_port.rsplit(":", 1)
        self.sock = _socket.create_connection((host, int(port)), timeout=timeout_s)
        self.correlation_id = 0
        self.client_id = client_id

    def send(self, body: object) -> object:
        import struct as _struct

        from kafka_emu.broker.protocol.adapter import response_schema
        from kafka_emu.broker.protocol.codec import decode_response, encode_request

        self.correlation_id += 1
        self.sock.sendall(encode_request(body, self.correlation_id, self.client_id) if self.client_id is not None
                          else encode_request(body, self.correlation_id))
        size = _struct.unpack(">i", self._exact(4))[0]
        cls = response_schema(type(body).__api_key__, type(body).__version__)   # kio's, or a legacy layout
        corr, resp = decode_response(self._exact(size), cls)
        assert corr == self.correlation_id
        return resp

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()
