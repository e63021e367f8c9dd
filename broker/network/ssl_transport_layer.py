"""SslTransportLayer: TLS on a non-blocking socket, driven by the processor's selector loop
(Kafka's ``SslTransportLayer`` over an ``SSLEngine``).

The TLS state is an ``ssl.SSLObject`` between two memory buffers, not an ``SSLSocket``: the
processor moves the raw bytes (``recv``/``send`` on the socket) and the object encrypts and
decrypts in memory, so no call ever blocks on the network. The handshake advances a step each
time the socket is readable or writable (``handshake``): a slow or silent client holds nothing
but its own connection, and a processor keeps serving its other connections meanwhile.

After the handshake, ``recv`` reads what the socket has, decrypts every complete record and
returns the plaintext (``BlockingIOError`` when no complete record is there yet, ``b""`` at
the end of the stream, as a socket does). ``send`` encrypts the whole buffer it is given and
writes as much ciphertext as the socket takes; the rest waits in ``raw_out`` (``pending``),
which a later ``send``, even of an empty buffer, flushes first. A caller treats a send as
complete only when nothing is pending.

Threading: the processor thread owns the object, but a response may be written directly by the
thread that completed its request (``broker.network.processor``); a connection has at most one
request in flight and is not read while it is, so encryption (``send``) and decryption
(``recv``) never run at once on one connection, which ``SSLObject`` requires.
"""
from __future__ import annotations

import socket
import ssl

_RECV_CHUNK = 256 * 1024


class HandshakeFailed(Exception):
    """The TLS handshake failed (Kafka: ``SslAuthenticationException``)."""


class SslTransportLayer:
    __slots__ = ("sock", "sslobj", "incoming", "outgoing", "raw_out", "handshake_complete", "eof")

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        self.sock = sock
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.sslobj = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.raw_out = bytearray()
        self.handshake_complete = False
        self.eof = False

    @property
    def pending(self) -> bool:
        """Ciphertext waits for the socket (watch it for writability)."""
        return bool(self.raw_out)

    def _fill(self) -> bool:
        """Move what the socket has into the TLS input; false at the end of the stream."""
        while True:
            try:
                data = self.sock.recv(_RECV_CHUNK)
            except (BlockingIOError, InterruptedError):
                return True
            if not data:
                self.eof = True
                self.incoming.write_eof()
                return False
            self.incoming.write(data)
            if len(data) < _RECV_CHUNK:
                return True

    def flush(self) -> None:
        """Write pending ciphertext; what the socket does not take stays pending."""
        if self.outgoing.pending:
            if self.raw_out:
                self.raw_out += self.outgoing.read()
            else:   # the usual case: send the records straight from the memory buffer's bytes
                data = self.outgoing.read()
                try:
                    sent = self.sock.send(data)
                except (BlockingIOError, InterruptedError):
                    sent = 0
                if sent < len(data):
                    self.raw_out = bytearray(data[sent:])
                return
        while self.raw_out:
            try:
                sent = self.sock.send(self.raw_out)
            except (BlockingIOError, InterruptedError):
                return
            del self.raw_out[:sent]

    def handshake(self) -> bool:
        """One step of the server handshake; true once complete. Raises ``HandshakeFailed``
        (a TLS alert, a certificate refused, the client gone) or OSError."""
        if not self._fill() and not self.incoming.pending:
            raise HandshakeFailed("the client closed the connection during the TLS handshake")
        try:
            self.sslobj.do_handshake()
        except ssl.SSLWantReadError:
            self.flush()
            return False
        except ssl.SSLError as exc:
            self.flush()   # the alert, when the socket takes it
            raise HandshakeFailed(f"SSL handshake failed: {exc.reason or exc}") from None
        self.flush()
        self.handshake_complete = True
        return True

    def recv(self, _size: int = _RECV_CHUNK) -> bytes:
        open_ = self._fill()
        out = []
        read, incoming, sslobj = self.sslobj.read, self.incoming, self.sslobj
        while True:
            try:
                chunk = read(_RECV_CHUNK)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:   # close_notify
                open_ = False
                break
            except ssl.SSLError as exc:
                raise ConnectionError(f"TLS error: {exc.reason or exc}") from None
            if not chunk:   # SSLObject.read gives b"" only once the peer's close_notify arrived
                open_ = False
                break
            out.append(chunk)
            if not incoming.pending and not sslobj.pending():   # nothing more to decrypt: no raise
                break
        if self.outgoing.pending:   # e.g. a TLS 1.3 key update answered
            self.flush()
        if out:
            return out[0] if len(out) == 1 else b"".join(out)
        if not open_:
            return b""
        raise BlockingIOError

    def send(self, data: bytes | memoryview) -> int:
        """Encrypt all of ``data`` (0 while earlier ciphertext is still pending) and write."""
        if self.raw_out:
            self.flush()
            if self.raw_out:
                return 0
        if not data:
            return 0
        written = self.sslobj.write(data)
        self.flush()
        return written

    def peer_certificate(self) -> bytes | None:
        """The client's certificate (DER), None when it sent none."""
        return self.sslobj.getpeercert(binary_form=True)
