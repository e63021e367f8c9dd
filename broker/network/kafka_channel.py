"""KafkaChannel: one client connection and its read/write state, as Kafka's ``KafkaChannel``.

Locking: owned by its processor thread, which alone touches every field but ``write_lock``,
``send_buf``, ``closed`` and ``sock``: a thread writing a response directly (``Processor.respond``)
reads those under ``write_lock``, which the processor holds around marking the channel closed
(see ``Processor``).
"""
from __future__ import annotations

import socket
import threading
import time

from kafka_emu.broker.network.request_channel import Request


class KafkaChannel:
    __slots__ = ("sock", "connection_id", "peer", "rbuf", "send_buf", "muted", "in_flight",
                 "last_active", "armed", "closed", "fd", "requests", "sending", "write_lock")

    def __init__(self, sock: socket.socket, connection_id: str, peer: str) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.connection_id = connection_id
        self.peer = peer
        self.rbuf = bytearray()
        self.send_buf: memoryview | None = None
        self.sending: Request | None = None  # the request whose response send_buf holds
        self.write_lock = threading.Lock()
        self.muted = False          # true while a request of this connection is in flight
        self.in_flight = False
        self.last_active = time.monotonic()
        self.armed = 0              # epoll events currently watched, 0 = none
        self.closed = False
        self.requests = 0
