"""KafkaChannel: one client connection and its read/write state, as Kafka's ``KafkaChannel``.

``recv``/``send`` are the socket's own methods on a plaintext listener, the TLS layer's
(``SslTransportLayer``, ``tls``) on an SSL one; ``ready`` is Kafka's ``KafkaChannel.ready()``:
the TLS handshake and SASL authentication (``authenticator``) are done and requests go to the
request channel, as ``principal``.

Locking: owned by its processor thread, which alone touches every field but ``write_lock``,
``send_buf``, ``closed`` and ``sock`` (and ``send``/``tls`` for writing): a thread writing a
response directly (``Processor.respond``) reads those under ``write_lock``, which the processor
holds around marking the channel closed (see ``Processor``).
"""
from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Callable

from kafka_emu.broker.network.request_channel import Request
from kafka_emu.broker.security.auth import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from kafka_emu.broker.network.sasl_server_authenticator import SaslServerAuthenticator
    from kafka_emu.broker.network.ssl_transport_layer import SslTransportLayer


class KafkaChannel:
    __slots__ = ("sock", "connection_id", "peer", "rbuf", "send_buf", "muted", "in_flight",
                 "last_active", "armed", "closed", "fd", "requests", "sending", "write_lock",
                 "recv", "send", "tls", "authenticator", "ready", "principal", "failed", "frame_memory",
                 "memory_muted",
                 "throttled")

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
        self.recv: Callable[[int], bytes] = sock.recv
        self.send: Callable[[bytes | memoryview], int] = sock.send
        self.tls: SslTransportLayer | None = None
        self.authenticator: SaslServerAuthenticator | None = None
        self.ready = True           # TLS handshake and SASL authentication done
        self.principal: KafkaPrincipal = ANONYMOUS
        self.failed = False         # authentication failed: closing after the configured delay
        self.frame_memory = 0       # bytes the memory pool granted the frame being read
        self.memory_muted = False   # not read until the memory pool has memory again
        self.throttled = False      # KIP-219: stays muted after its response until throttling ends

    def use_tls(self, tls: SslTransportLayer) -> None:
        self.tls = tls
        self.recv = tls.recv
        self.send = tls.send
        self.ready = False

    @property
    def pending_send(self) -> bool:
        """Encrypted bytes still wait for the socket."""
        return self.tls is not None and self.tls.pending
