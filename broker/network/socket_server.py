"""SocketServer: Kafka's network layer — acceptors, processors, one request in flight per connection.

Structure (as in Kafka's ``kafka.network.SocketServer``):

* one :class:`Acceptor` thread per listener (``data-plane-kafka-socket-acceptor-PLAINTEXT-<port>``)
  accepts connections and hands each, round robin, to one of the listener's
  ``num.network.threads`` :class:`Processor` threads;
* a :class:`Processor` (``data-plane-kafka-network-thread-<brokerId>-PLAINTEXT-<n>``) owns its
  connections and its own selector. It reads size-prefixed frames, parses header and body
  (``broker.protocol``), puts a ``Request`` on the broker's ``RequestChannel`` and **mutes** the
  connection (stops reading it) until that request's response has been written, so a connection
  has at most one request in flight and responses leave in request order;
* a response comes back through ``Request.respond`` from whichever thread completed it (a
  request handler, a purgatory reaper, a coordinator callback). That thread encodes it (spreading
  the encoding cost over the handler pool instead of the processor) and, when it can, writes it
  to the socket itself (see "direct response writes" below); otherwise it queues the bytes on
  the owning processor, waking it through an eventfd — the processor never polls for responses.

Hygiene: ``socket.request.max.bytes`` is checked against the 4-byte size prefix before any body
byte is buffered; ``connections.max.idle.ms`` closes quiet connections; a frame that cannot be
parsed (unknown API key, truncated body, a version the broker does not serve: Kafka's
``SocketServer.parseRequestHeader``) closes that connection with
a structured ``connection_closed`` log line naming the peer and the reason. Every per-connection
failure is caught per connection: one bad client never ends a processor or disturbs another
client.

Differences from Kafka, on purpose:
* Direct response writes. In Kafka a response always goes back through the connection's
  processor (handler → response queue → processor → socket). In CPython each of those thread
  handoffs costs a wakeup and a GIL handover, which dominates a small request's latency, so the
  completing thread writes the encoded response straight to the socket (one non-blocking
  ``send``) and only tells the processor afterwards, without waking it; a remainder the socket
  did not take goes to the processor as a normal queued response. This is safe because a
  connection has at most one request in flight (it is muted until the processor has seen the
  response complete), so the processor never has anything pending for a connection whose
  response is being written directly, and Kafka's ordering guarantee holds. The processor learns
  of the completed write when it next looks at its queue: before polling, when the connection
  becomes readable again (the client's next request), or within ``_IN_FLIGHT_POLL_S``. Set
  ``Processor.direct_writes = False`` to get Kafka's path.
* Unknown tagged fields are skipped (see ``broker.protocol.codec``), as Kafka's generated parsers do.
* No SSL/SASL, quotas, or per-IP connection limits.
"""
from __future__ import annotations

import errno
import itertools
import os
import select
import selectors
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import structlog

from kafka_emu.broker.apis import api_name, is_supported
from kafka_emu.broker.apis.api_versions import API_KEY as API_VERSIONS_KEY
from kafka_emu.broker.config import KafkaConfig
from kafka_emu.broker.protocol.codec import (
    InvalidRequestError,
    RequestHeaderData,
    UnsupportedVersionError,
    decode_request_fast,
    decode_request_header,
    encode_response,
)
from kafka_emu.timer.shutdownable_thread import ShutdownableThread

_log = structlog.get_logger("broker.network")
_SIZE = struct.Struct(">i")
_RECV_CHUNK = 256 * 1024


class BindError(OSError):
    """A listener could not bind its address (Kafka's Acceptor throws ``KafkaException("Socket
    server failed to bind to host:port")``); keeps the cause's errno and names the address."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        super().__init__(cause.errno, f"failed to bind to {host}:{port}: {cause.strerror or cause}")
        self.host = host
        self.port = port


@dataclass(frozen=True)
class EndPoint:
    """A listener's bind address and what clients are told to connect to."""

    listener_name: str
    host: str
    port: int
    advertised_host: str | None = None
    advertised_port: int | None = None


def parse_listeners(value: str) -> list[tuple[str, str, int]]:
    """``PLAINTEXT://127.0.0.1:0,OTHER://host:9093`` -> [(name, host, port)]."""
    out: list[tuple[str, str, int]] = []
    for item in (value or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, _, rest = item.partition("://")
        host, _, port = rest.rpartition(":")
        out.append((name.upper(), host or "127.0.0.1", int(port or 0)))
    return out


class _Waker:
    """A file descriptor a processor's epoll watches so other threads can wake it.

    An eventfd where the OS has one (a write is one cheap system call and wake-ups coalesce in
    the counter), else a socket pair. ``wake`` never blocks; ``drain`` empties it.
    """

    def __init__(self) -> None:
        self._efd = -1
        self._pair: tuple[socket.socket, socket.socket] | None = None
        if hasattr(os, "eventfd"):
            self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self.fd = self._efd
        else:
            r, w = socket.socketpair()
            r.setblocking(False)
            w.setblocking(False)
            self._pair = (r, w)
            self.fd = r.fileno()

    def wake(self) -> None:
        try:
            if self._pair is None:
                os.eventfd_write(self._efd, 1)
            else:
                self._pair[1].send(b"\0")
        except (BlockingIOError, OSError):
            pass

    def drain(self) -> None:
        try:
            if self._pair is None:
                os.eventfd_read(self._efd)
            else:
                while self._pair[0].recv(4096):
                    pass
        except (BlockingIOError, InterruptedError, OSError):
            pass

    def close(self) -> None:
        if self._pair is None:
            if self._efd >= 0:
                os.close(self._efd)
                self._efd = -1
        else:
            for sock in self._pair:
                sock.close()


class KafkaChannel:
    """One client connection, owned (and only touched) by its processor thread."""

    __slots__ = ("sock", "connection_id", "peer", "rbuf", "send_buf", "muted", "in_flight",
                 "last_active", "armed", "closed", "fd", "requests", "sending", "write_lock")

    def __init__(self, sock: socket.socket, connection_id: str, peer: str) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.connection_id = connection_id
        self.peer = peer
        self.rbuf = bytearray()
        self.send_buf: memoryview | None = None
        self.sending: Any = None    # the Request whose response send_buf holds (for metrics)
        self.write_lock = threading.Lock()  # a direct response write vs. closing (see Processor)
        self.muted = False          # true while a request of this connection is in flight
        self.in_flight = False
        self.last_active = time.monotonic()
        self.armed = 0              # epoll events currently watched, 0 = none
        self.closed = False
        self.requests = 0


# Poll timeout while requests are in flight: bounds how late the processor notices a directly
# written response on an otherwise quiet connection (metrics, idle accounting).
_IN_FLIGHT_POLL_S = 0.01
_IN = select.EPOLLIN
_OUT = select.EPOLLOUT
_ERR = select.EPOLLERR | select.EPOLLHUP


class Processor(ShutdownableThread):
    """A network thread: reads frames, hands requests on, writes responses.

    Muting is lazy, to save system calls on the common request/response path: a connection's fd
    stays armed for reading while its request is in flight, and only if it becomes readable while
    muted (a pipelining client) is it disarmed, and re-armed once the response is written. A muted
    connection is never read, so responses keep request order, and a pipelining client cannot
    make the loop spin. (Kafka mutes by removing OP_READ from the selection key.)

    Threading: ``_channels``, ``_fd_channels``, ``_epoll`` and every ``KafkaChannel`` are touched
    only by this thread. Other threads reach it through two deques, ``_new_connections`` (from
    the acceptor) and ``_responses`` (from whoever completes a request); ``deque.append``/
    ``popleft`` are atomic in CPython. A connection's ``write_lock`` is held by a responder around
    a direct response write (the ``send`` and queueing the completion that follows it) and by
    this thread around marking the connection closed, so a direct write never hits a closed (or reused) fd, and a
    processor that finds a muted connection readable can wait for a direct write in progress
    before deciding the client is pipelining. ``_in_flight`` (connections with a request in
    flight) is this thread's own count. A responder writes a wakeup byte only while the processor
    is in (or about to enter) ``epoll.poll`` (``_polling``): the processor sets the flag before
    it looks at the deques, a responder appends before it reads the flag, so a response is
    always either seen by that look or followed by a wakeup. ``_wakeup_lock`` guards
    ``_wakeup_pending`` (at most one wakeup byte in flight).

    Request metrics (as Kafka's ``Processor``): the processor stamps ``response_dequeue_time_ns``
    when it takes a response and ``end_time_ns`` when the write finishes (or when a no-body or
    close response has been handled, or the connection is gone), then calls the request
    channel's ``request_listeners`` itself; a failing listener is logged and never ends the
    thread. ``response_queue_size()`` is Kafka's ResponseQueueSize for this processor.
    """

    def __init__(self, server: "SocketServer", processor_id: int, listener: str) -> None:
        super().__init__(f"data-plane-kafka-network-thread-{server.broker_id}-{listener}-{processor_id}",
                         log_context={"broker_id": server.broker_id})
        self.server = server
        self.processor_id = processor_id
        self.listener = listener
        self._epoll = select.epoll()
        self._waker = _Waker()
        self._wake_fd = self._waker.fd
        self._epoll.register(self._wake_fd, select.EPOLLIN)
        self._wakeup_lock = threading.Lock()
        self._wakeup_pending = False
        self.direct_writes = True
        self._in_flight = 0
        self._polling = False
        self._new_connections: deque[tuple[socket.socket, tuple[Any, ...]]] = deque()
        self._responses: deque[tuple[str, Any, bool, Any]] = deque()  # (cid, data, close, request)
        self._channels: dict[str, KafkaChannel] = {}
        self._fd_channels: dict[int, KafkaChannel] = {}
        self._ready: deque[KafkaChannel] = deque()   # unmuted channels with buffered bytes
        self._conn_index = itertools.count()
        self._last_idle_check = time.monotonic()
        # metrics (plain counters, read without locks)
        self.connection_count = 0
        self.connections_closed = 0
        self.malformed_frames = 0
        self.requests_received = 0
        self.responses_sent = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.idle_ns = 0
        self.poll_started_ns = 0   # perf_counter_ns() at the start of the poll in progress, else 0
        self.wakeups = 0
        self.direct_responses = 0

    # --- called from other threads -------------------------------------------------------------

    def accept(self, sock: socket.socket, addr: tuple[Any, ...]) -> None:
        self._new_connections.append((sock, addr))
        self.wakeup()

    def enqueue_response(self, connection_id: str, data: bytes | None, close: bool,
                         request: Any = None) -> None:
        """Queue an encoded response (None: nothing to send, just unmute; close: drop the link).

        ``request`` (the answered ``Request``) gets its send timings and goes to the request
        listeners once the response is handled."""
        self._responses.append((connection_id, data, close, request))
        if self._polling:
            self.wakeup()

    def respond(self, connection_id: str, data: bytes, request: Any = None) -> None:
        """Deliver an encoded response from any thread: written directly to the socket when
        possible (see the module docstring), else queued for this processor."""
        # Only when the processor is idle in epoll with this single request in flight: then a
        # queued response would cost a full wakeup and gain nothing. A busy processor, or one
        # with other requests in flight, takes queued responses in batches without a wakeup
        # (measured: direct writes on 16 busy connections lowered the request rate by ~15%).
        direct = self.direct_writes and self._polling and self._in_flight == 1
        channel = self._channels.get(connection_id) if direct else None
        if channel is None:
            self.enqueue_response(connection_id, data, False, request)
            return
        with channel.write_lock:
            if channel.closed or channel.send_buf is not None:
                sent = -1
            else:
                if request is not None:
                    request.response_dequeue_time_ns = time.monotonic_ns()
                try:
                    sent = channel.sock.send(data)
                except (BlockingIOError, InterruptedError, OSError):
                    sent = 0  # the processor retries and reports a real failure
            if sent == len(data):
                if request is not None:
                    request.end_time_ns = time.monotonic_ns()
                # an int: "already written, this many bytes"; no wakeup (see the docstring)
                self._responses.append((connection_id, sent, False, request))
                return
        if sent <= 0:
            self.enqueue_response(connection_id, data, False, request)
        else:
            self.enqueue_response(connection_id, memoryview(data)[sent:], False, request)

    def wakeup(self) -> None:
        with self._wakeup_lock:
            if self._wakeup_pending:
                return
            self._wakeup_pending = True
        self.wakeups += 1
        self._waker.wake()

    def on_initiate_shutdown(self) -> None:
        self._waker.wake()

    def response_queue_size(self) -> int:
        """Responses queued for this processor and not yet taken (Kafka's ResponseQueueSize)."""
        return len(self._responses)

    # --- the loop ------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            super().run()
        finally:
            self._close_all()

    def do_work(self) -> None:
        if self._new_connections:
            self._configure_new_connections()
        if self._responses:
            self._process_new_responses()
        self._drain_ready()
        self._polling = True
        if self._responses or self._new_connections or self._ready:
            timeout = 0.0
        else:
            timeout = _IN_FLIGHT_POLL_S if self._in_flight and self.direct_writes else 0.3
        t0 = self.poll_started_ns = time.perf_counter_ns()
        try:
            events = self._epoll.poll(timeout)
        finally:
            self._polling = False
        t1 = time.perf_counter_ns()
        self.poll_started_ns = 0   # before idle_ns grows: a snapshot never counts a poll twice
        self.idle_ns += t1 - t0
        if self._responses:
            self._process_new_responses()  # e.g. direct writes: unmute before reading
        fd_channels = self._fd_channels
        for fd, mask in events:
            if fd == self._wake_fd:
                self._drain_wakeup()
                continue
            channel = fd_channels.get(fd)
            if channel is None or channel.closed:
                continue
            try:
                if mask & select.EPOLLOUT:
                    self._write(channel)
                elif channel.muted and self._settle_direct_write(channel):
                    self._read(channel)
                elif channel.muted:
                    if mask & _ERR:
                        self._close(channel, "connection reset while a request was in flight", level="debug")
                    else:
                        self._arm(channel, 0)  # readable while muted: stop watching until unmuted
                elif mask & (select.EPOLLIN | _ERR):
                    self._read(channel)
            except Exception as exc:  # noqa: BLE001 - one connection must not end the thread
                self._close(channel, f"unexpected error: {exc!r}", level="warning")
        # Read every ready socket first, then frame and hand on what arrived: each recv releases
        # the interpreter lock, and a handler woken by an earlier hand-off would take it at
        # every one (two thread switches per request). This way the handlers get the requests
        # of one poll as a batch and run them back to back.
        self._drain_ready()
        now = time.monotonic()
        if now - self._last_idle_check > min(1.0, self.server.connections_max_idle_ms / 4000.0):
            self._last_idle_check = now
            self._close_idle(now)

    def _drain_ready(self) -> None:
        while self._ready and not self.is_shutdown_initiated():
            channel = self._ready.popleft()
            if not channel.closed and not channel.muted:
                try:
                    self._try_complete_frame(channel)
                except Exception as exc:  # noqa: BLE001 - one connection must not end the thread
                    self._close(channel, f"unexpected error: {exc!r}", level="warning")

    def _settle_direct_write(self, channel: KafkaChannel) -> bool:
        """A muted connection is readable: if its response is being written directly, wait for
        that write and take its completion; true if the connection is now unmuted."""
        if not self.direct_writes:
            return False
        with channel.write_lock:
            pass
        if self._responses:
            self._process_new_responses()
        return not channel.muted and not channel.closed

    def _drain_wakeup(self) -> None:
        # Drain first, then clear the flag: clearing first would let a responder's byte be
        # swallowed by this drain while its flag stays set, silencing every later wakeup. A
        # responder that finds the flag still set only skips writing; its response is already
        # queued and the loop looks at the queue before it polls again.
        self._waker.drain()
        with self._wakeup_lock:
            self._wakeup_pending = False

    def _configure_new_connections(self) -> None:
        while self._new_connections:
            sock, addr = self._new_connections.popleft()
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                local = sock.getsockname()
                peer = f"{addr[0]}:{addr[1]}"
                cid = f"{local[0]}:{local[1]}-{peer}-{next(self._conn_index)}"
                channel = KafkaChannel(sock, cid, peer)
                self._epoll.register(channel.fd, _IN)
                channel.armed = _IN
                self._channels[cid] = channel
                self._fd_channels[channel.fd] = channel
                self.connection_count += 1
            except OSError as exc:
                _log.info("connection_setup_failed", broker_id=self.server.broker_id, reason=repr(exc))
                try:
                    sock.close()
                except OSError:
                    pass

    def _process_new_responses(self) -> None:
        while self._responses:
            cid, data, close, request = self._responses.popleft()
            if request is not None and not getattr(request, "response_dequeue_time_ns", 0):
                request.response_dequeue_time_ns = time.monotonic_ns()
            channel = self._channels.get(cid)
            if channel is None or channel.closed:
                self._request_done(request)  # the connection went away while its request was in flight
                continue
            try:
                if close:
                    self._close(channel, "close requested by the request handler")
                    self._request_done(request)
                    continue
                if data is None:
                    self._on_response_done(channel)
                    self._request_done(request)
                    continue
                if data.__class__ is int:  # written directly by the responder (``respond``)
                    self.direct_responses += 1
                    self.bytes_out += data
                    self.responses_sent += 1
                    channel.last_active = time.monotonic()
                    self._on_response_done(channel)
                    self._request_done(request)
                    continue
                channel.send_buf = data if isinstance(data, memoryview) else memoryview(data)
                channel.sending = request
                self._write(channel)
            except Exception as exc:  # noqa: BLE001
                self._close(channel, f"unexpected error: {exc!r}", level="warning")

    def _request_done(self, request: Any) -> None:
        """Stamp ``end_time_ns`` and hand the request to the channel's listeners (metrics)."""
        if request is None:
            return
        if not getattr(request, "end_time_ns", 0):
            request.end_time_ns = time.monotonic_ns()
        for listener in getattr(self.server.request_channel, "request_listeners", ()):
            try:
                listener(request)
            except Exception:  # noqa: BLE001 - a listener never ends the processor
                _log.exception("request_listener_failed", broker_id=self.server.broker_id)

    # --- reading -------------------------------------------------------------------------------

    def _read(self, channel: KafkaChannel) -> None:
        try:
            data = channel.sock.recv(_RECV_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._close(channel, f"read failed: {exc.strerror or exc!r}")
            return
        if not data:
            self._close(channel, "peer closed the connection", level="debug")
            return
        self.bytes_in += len(data)
        channel.last_active = time.monotonic()
        channel.rbuf += data
        self._ready.append(channel)   # framed after every ready socket is read (see do_work)

    def _try_complete_frame(self, channel: KafkaChannel) -> None:
        rbuf = channel.rbuf
        if len(rbuf) < 4:
            return
        size = _SIZE.unpack_from(rbuf, 0)[0]
        max_bytes = self.server.max_request_size
        if size < 0 or size > max_bytes:
            self.malformed_frames += 1
            self._close(channel, f"frame size {size} outside [0, socket.request.max.bytes={max_bytes}]")
            return
        if len(rbuf) < 4 + size:
            return
        if len(rbuf) == 4 + size:
            frame = bytes(rbuf[4:])
            rbuf.clear()
        else:
            frame = bytes(rbuf[4:4 + size])
            del rbuf[:4 + size]
        self._handle_frame(channel, frame)

    def _handle_frame(self, channel: KafkaChannel, frame: bytes) -> None:
        start_ns = time.monotonic_ns()
        try:
            header = decode_request_header(frame)
        except UnsupportedVersionError as exc:
            if len(frame) >= 10 and struct.unpack_from(">h", frame, 0)[0] == API_VERSIONS_KEY:
                self._submit_unsupported_api_versions(channel, frame, start_ns)
                return
            self._malformed(channel, str(exc))
            return
        except InvalidRequestError as exc:
            self._malformed(channel, str(exc))
            return
        if not is_supported(header.api_key, header.api_version):
            if header.api_key == API_VERSIONS_KEY:
                self._submit(channel, header, None, start_ns)
                return
            # Kafka's SocketServer.parseRequestHeader: a version the broker does not enable is an
            # InvalidRequestException, and the connection is closed
            self._malformed(channel, f"version {header.api_version} of api key {header.api_key} is not enabled",
                            api=api_name(header.api_key), api_version=header.api_version)
            return
        try:
            body = decode_request_fast(header, frame)
        except InvalidRequestError as exc:
            self._malformed(channel, str(exc), api=api_name(header.api_key), api_version=header.api_version)
            return
        self._submit(channel, header, body, start_ns)

    def _submit_unsupported_api_versions(self, channel: KafkaChannel, frame: bytes, start_ns: int) -> None:
        """KIP-511: an ApiVersions request newer than any we know still gets the v0 error reply.

        Its header may be v2 with tags we cannot be sure of, so only the fixed prefix is read.
        """
        _key, version, correlation_id, client_len = struct.unpack_from(">hhih", frame, 0)
        client_id = None
        if client_len > 0 and 10 + client_len <= len(frame):
            client_id = frame[10:10 + client_len].decode("utf-8", "replace")
        header = RequestHeaderData(API_VERSIONS_KEY, version, correlation_id, client_id, len(frame))
        self._submit(channel, header, None, start_ns)

    def _set_in_flight(self, channel: KafkaChannel) -> None:
        if not channel.in_flight:
            channel.in_flight = True
            self._in_flight += 1

    def _submit(self, channel: KafkaChannel, header: RequestHeaderData, body: Any, start_ns: int) -> None:
        channel.muted = True
        self._set_in_flight(channel)
        channel.requests += 1
        self.requests_received += 1
        request = self.server.request_factory(
            api_key=header.api_key,
            api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
            body=body,
            respond=_Responder(self, channel.connection_id, header.correlation_id, header.api_key),
            connection_id=channel.connection_id,
            processor_id=self.processor_id,
            client_host=channel.peer.rpartition(":")[0],
            listener=self.listener,
            start_time_ns=start_ns,
        )
        channel_ = self.server.request_channel
        # A full channel blocks this processor, as in Kafka (back-pressure on every connection it
        # owns); the timeout only lets a shutdown or a closed channel end the wait.
        while not channel_.send_request(request, timeout_s=0.5):
            if getattr(channel_, "closed", False) or self.is_shutdown_initiated():
                self._close(channel, "request channel closed (broker stopping)", level="debug")
                return

    def _malformed(self, channel: KafkaChannel, reason: str, **extra: Any) -> None:
        self.malformed_frames += 1
        self._close(channel, reason, **extra)

    # --- writing -------------------------------------------------------------------------------

    def _write(self, channel: KafkaChannel) -> None:
        buf = channel.send_buf
        if buf is None:
            return
        try:
            sent = channel.sock.send(buf)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._close(channel, f"write failed: {exc.strerror or exc!r}", level="debug")
            return
        self.bytes_out += sent
        if sent < len(buf):
            channel.send_buf = buf[sent:]
            self._arm(channel, _OUT)
            return
        channel.send_buf = None
        self.responses_sent += 1
        channel.last_active = time.monotonic()
        request, channel.sending = channel.sending, None
        self._on_response_done(channel)
        self._request_done(request)

    def _on_response_done(self, channel: KafkaChannel) -> None:
        if channel.in_flight:
            self._in_flight -= 1
        channel.in_flight = False
        channel.muted = False
        if len(channel.rbuf) >= 4:
            self._ready.append(channel)   # a pipelined request may already be buffered
        self._arm(channel, _IN)

    def _arm(self, channel: KafkaChannel, events: int) -> None:
        """Watch ``events`` on the channel's fd (0: nothing); a no-op when already so."""
        if channel.armed == events or channel.closed:
            return
        channel.armed = events
        self._epoll.modify(channel.fd, events)

    # --- closing -------------------------------------------------------------------------------

    def _close(self, channel: KafkaChannel, reason: str, level: str = "info", **extra: Any) -> None:
        if channel.closed:
            return
        if channel.in_flight:
            channel.in_flight = False
            self._in_flight -= 1
        with channel.write_lock:  # no direct write is in progress on this socket past here
            channel.closed = True
        getattr(_log, level)("connection_closed", broker_id=self.server.broker_id,
                             connection_id=channel.connection_id, peer=channel.peer, reason=reason, **extra)
        try:
            self._epoll.unregister(channel.fd)
        except (KeyError, ValueError, OSError):
            pass
        try:
            channel.sock.close()
        except OSError:
            pass
        self._channels.pop(channel.connection_id, None)
        if self._fd_channels.get(channel.fd) is channel:
            del self._fd_channels[channel.fd]
        channel.rbuf = bytearray()
        channel.send_buf = None
        self.connection_count -= 1
        self.connections_closed += 1
        request, channel.sending = channel.sending, None
        self._request_done(request)  # a response cut short still completes its request (as Kafka)

    def _close_idle(self, now: float) -> None:
        idle_s = self.server.connections_max_idle_ms / 1000.0
        for channel in list(self._channels.values()):
            if not channel.in_flight and now - channel.last_active > idle_s:
                self._close(channel, f"idle for more than connections.max.idle.ms={self.server.connections_max_idle_ms}")

    def _close_all(self) -> None:
        for channel in list(self._channels.values()):
            self._close(channel, "broker shutting down", level="debug")
        while self._new_connections:
            sock, _ = self._new_connections.popleft()
            try:
                sock.close()
            except OSError:
                pass
        try:
            self._waker.close()
        except OSError:
            pass
        try:
            self._epoll.close()
        except OSError:
            pass

    def channel_count(self) -> int:
        return len(self._channels)


class _Responder:
    """``Request.respond``: encodes the response on the completing thread and queues the bytes.

    Called at most once per request, from any thread. A body of None (acks=0 produce) sends
    nothing and only unmutes the connection, like Kafka's NoOpResponse. The answered request
    travels with the bytes, so the processor can time the send and report the request.
    """

    __slots__ = ("processor", "connection_id", "correlation_id", "api_key", "done")

    def __init__(self, processor: Processor, connection_id: str, correlation_id: int, api_key: int) -> None:
        self.processor = processor
        self.connection_id = connection_id
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.done = False

    def __call__(self, response: Any) -> None:
        if self.done:
            _log.warning("duplicate_response", connection_id=self.connection_id,
                         correlation_id=self.correlation_id, api=api_name(self.api_key))
            return
        self.done = True
        req = getattr(response, "request", None)
        if req is not None and not getattr(req, "response_complete_time_ns", 0):
            req.response_complete_time_ns = time.monotonic_ns()  # refined below once encoded
        if getattr(response, "close_connection", False):
            self.processor.enqueue_response(self.connection_id, None, True, req)
            return
        body = getattr(response, "body", None)
        if body is None:
            self.processor.enqueue_response(self.connection_id, None, False, req)
            return
        try:
            data = encode_response(self.correlation_id, body)
        except Exception as exc:  # noqa: BLE001 - a bad entity from a handler closes only this link
            _log.error("response_encode_failed", connection_id=self.connection_id,
                       api=api_name(self.api_key), correlation_id=self.correlation_id, reason=repr(exc))
            self.processor.enqueue_response(self.connection_id, None, True, req)
            return
        if req is not None:
            req.response_complete_time_ns = time.monotonic_ns()
        self.processor.respond(self.connection_id, data, req)


class Acceptor(ShutdownableThread):
    """Accepts connections on one listener and deals them round robin to its processors.

    Threading: the listening socket and ``_selector`` belong to this thread; shutdown wakes it
    through ``_wake_w``.
    """

    def __init__(self, server: "SocketServer", endpoint: EndPoint, listen_sock: socket.socket,
                 processors: list[Processor]) -> None:
        super().__init__(f"data-plane-kafka-socket-acceptor-{endpoint.listener_name}-{endpoint.port}",
                         log_context={"broker_id": server.broker_id})
        self.server = server
        self.endpoint = endpoint
        self.listen_sock = listen_sock
        self.processors = processors
        self._next = 0
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(listen_sock, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self.accepted = 0

    def on_initiate_shutdown(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass

    def do_work(self) -> None:
        for key, _ in self._selector.select(0.5):
            if key.data == "wake":
                return
            while True:
                try:
                    sock, addr = self.listen_sock.accept()
                except (BlockingIOError, InterruptedError):
                    break
                except OSError as exc:
                    if exc.errno in (errno.EMFILE, errno.ENFILE):
                        _log.warning("accept_failed", broker_id=self.server.broker_id, reason=repr(exc))
                        self._shutdown_initiated.wait(0.05)
                    break
                self.accepted += 1
                processor = self.processors[self._next % len(self.processors)]
                self._next += 1
                processor.accept(sock, addr)

    def run(self) -> None:
        try:
            super().run()
        finally:
            for s in (self.listen_sock, self._wake_r, self._wake_w):
                try:
                    s.close()
                except OSError:
                    pass
            try:
                self._selector.close()
            except OSError:
                pass


@dataclass(frozen=True, slots=True)
class SocketServerSnapshot:
    """Kafka's SocketServer and RequestChannel network gauges, summed over the processors.

    NetworkProcessorAvgIdlePercent over a window is Δidle_ns / Δcapacity_ns; ``idle_ns``
    includes the polls in progress.
    """

    processors: int
    response_queue_size: int   # responses waiting for their processor (ResponseQueueSize)
    idle_ns: int               # time spent waiting in epoll
    capacity_ns: int           # time since the processors started, times their number


class SocketServer:
    """The broker's network layer: listeners, acceptors and processors.

    ``startup()`` binds synchronously (so ``bound_port`` and ``bootstrap_servers`` are known when
    it returns) and starts the threads; ``shutdown()`` stops acceptors first (no new
    connections), then processors (closing their connections), and joins every thread.
    Configuration read: ``listeners`` (default ``PLAINTEXT://127.0.0.1:0``),
    ``advertised.listeners``, ``num.network.threads``, ``socket.request.max.bytes``,
    ``connections.max.idle.ms``.
    """

    def __init__(self, config: KafkaConfig | Mapping[str, object] | None, request_channel: Any,
                 broker_id: int | None = None, request_factory: Callable[..., Any] | None = None) -> None:
        config = config if isinstance(config, KafkaConfig) else KafkaConfig(config)
        self.config = config
        self.request_channel = request_channel
        self.broker_id = broker_id if broker_id is not None else config.broker_id
        if request_factory is None:
            from kafka_emu.broker.request_channel import Request
            request_factory = Request
        self.request_factory = request_factory
        self.max_request_size: int = config["socket.request.max.bytes"]
        self.connections_max_idle_ms: int = config["connections.max.idle.ms"]
        self.num_network_threads: int = config["num.network.threads"]
        listeners = parse_listeners(config["listeners"]) or [("PLAINTEXT", "127.0.0.1", 0)]
        advertised = {name: (host, port) for name, host, port in
                      parse_listeners(config.get("advertised.listeners", ""))}
        self._listener_specs = [(name, host, port, advertised.get(name)) for name, host, port in listeners]
        self.endpoints: list[EndPoint] = []
        self.acceptors: list[Acceptor] = []
        self.processors: list[Processor] = []
        self._lock = threading.Lock()  # guards startup/shutdown transitions
        self._started = False
        self._stopped = False
        self._started_ns = 0   # perf_counter_ns() when the processors started (their idle clock)

    def startup(self) -> None:
        """Bind every listener, then start the threads. A failed bind (port taken) raises
        ``BindError`` with nothing started and every socket already bound closed again."""
        with self._lock:
            if self._started:
                return
            bound_socks: list[tuple[str, str, socket.socket, Any]] = []
            try:
                for name, host, port, adv in self._listener_specs:
                    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
                    bound_socks.append((name, host, sock, adv))
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((host, port))
                    sock.listen(512)
                    sock.setblocking(False)
            except OSError as exc:
                for _, _, sock, _ in bound_socks:
                    sock.close()
                raise BindError(host, port, exc) from exc
            self._started = True
            pid = 0
            for name, host, sock, adv in bound_socks:
                bound = sock.getsockname()[1]
                ep = EndPoint(name, host, bound,
                              adv[0] if adv else None, (adv[1] or bound) if adv else None)
                processors = []
                for _ in range(self.num_network_threads):
                    processors.append(Processor(self, pid, name))
                    pid += 1
                self.endpoints.append(ep)
                self.processors.extend(processors)
                self.acceptors.append(Acceptor(self, ep, sock, processors))
            self._started_ns = time.perf_counter_ns()
            for p in self.processors:
                p.start()
            for a in self.acceptors:
                a.start()
            _log.info("socket_server_started", broker_id=self.broker_id,
                      endpoints=[f"{e.listener_name}://{e.host}:{e.port}" for e in self.endpoints])

    def shutdown(self) -> None:
        with self._lock:
            if self._stopped or not self._started:
                self._stopped = True
                return
            self._stopped = True
        for a in self.acceptors:
            a.initiate_shutdown()
        for a in self.acceptors:
            a.await_shutdown()
        for p in self.processors:
            p.initiate_shutdown()
        for p in self.processors:
            p.await_shutdown()
        _log.info("socket_server_stopped", broker_id=self.broker_id)

    # --- addresses -------------------------------------------------------------------------------

    @property
    def bound_port(self) -> int:
        return self.endpoints[0].port

    def advertised_endpoint(self, listener: str | None = None) -> tuple[str, int]:
        """(host, port) clients should use: advertised values if configured, else the bind address."""
        for ep in self.endpoints:
            if listener is None or ep.listener_name == listener:
                host = ep.advertised_host or ep.host
                if host in ("0.0.0.0", "::", ""):
                    host = "127.0.0.1"
                return host, ep.advertised_port or ep.port
        raise KeyError(listener)

    @property
    def bootstrap_server(self) -> str:
        host, port = self.advertised_endpoint()
        return f"{host}:{port}"

    def close_connections(self) -> int:
        """Close every client connection, from any thread (test control's network partition):
        each processor closes its own on its thread; the number asked to close."""
        count = 0
        for processor in self.processors:
            for connection_id in list(processor._channels):
                processor.enqueue_response(connection_id, None, True)
                count += 1
            processor.wakeup()
        return count

    # --- metrics ---------------------------------------------------------------------------------

    def threads(self) -> list[threading.Thread]:
        return [*self.acceptors, *self.processors]

    def connection_count(self) -> int:
        return sum(p.connection_count for p in self.processors)

    def stats(self) -> dict[str, int]:
        """Totals over the processors (plain counters read without locks, for metrics scrapes):
        Kafka's connection-count, connection-close-total, request/response totals, bytes in/out,
        malformed frames, and ``idle_ns`` (time spent waiting in epoll; Kafka's
        NetworkProcessorAvgIdlePercent is its rate over wall time)."""
        keys = ("connection_count", "connections_closed", "malformed_frames", "requests_received",
                "responses_sent", "bytes_in", "bytes_out", "idle_ns", "wakeups")
        out = {k: sum(getattr(p, k) for p in self.processors) for k in keys}
        out["connections_accepted"] = sum(a.accepted for a in self.acceptors)
        return out

    def snapshot(self) -> SocketServerSnapshot:
        processors = list(self.processors)
        now = time.perf_counter_ns()
        idle = 0
        for p in processors:
            idle += p.idle_ns                # read before poll_started_ns (see Processor.do_work)
            started = p.poll_started_ns
            if started:
                idle += max(0, now - started)
        elapsed = now - self._started_ns if self._started_ns else 0
        return SocketServerSnapshot(len(processors), sum(p.response_queue_size() for p in processors),
                                    idle, elapsed * len(processors))

