"""Processor: a network thread (Kafka's ``Processor``) and the responder its requests carry.

A processor owns its connections (``KafkaChannel``) and its own epoll selector. It reads
size-prefixed frames, parses header and body (``broker.protocol``), puts a ``Request`` on the
broker's ``RequestChannel`` and **mutes** the connection (stops reading it) until that request's
response has been written, so a connection has at most one request in flight and responses
leave in request order. A response comes back through ``Request.respond`` (a ``_Responder``)
from whichever thread completed the request (a request handler, a purgatory reaper, a
coordinator callback). That thread encodes it (spreading the encoding cost over the handler
pool instead of the processor) and, when it can, writes it to the socket itself (see "direct
response writes" below); otherwise it queues a ``NetworkResponse`` (``broker.network.request_channel``)
on the owning processor, waking it through an eventfd; the processor never polls for
responses.

Admission: what the broker serves is not read here but asked of the ``ApiVersionManager`` the
socket server is handed (Kafka's, built by ``KafkaServer`` from ``broker.apis``), so the network
layer imports no handler. It answers with the API's name, which the processor stamps on the
``Request`` it creates (logs and metrics read it there).

Hygiene: ``socket.request.max.bytes`` is checked against the 4-byte size prefix before any body
byte is buffered (a larger or negative size closes the connection, as Kafka's
``InvalidReceiveException`` does); ``connections.max.idle.ms`` closes quiet connections; a frame that cannot be
parsed (unknown API key, truncated body, a version the broker does not serve: Kafka's
``SocketServer.parseRequestHeader``) closes that connection with a structured ``connection_closed`` log line naming the peer and the reason. Every per-connection
failure is caught per connection: one bad client never ends a processor or disturbs another
client.

Throttling (KIP-219): a client over its quota gets its response at once and its connection
then stays muted for the throttle time: a ``StartThrottlingResponse`` (queued by the quota
manager before the response) marks the channel throttled, so sending the response does not
unmute it; the ``EndThrottlingResponse`` from the manager's reaper does (Kafka's mute states
MUTED_AND_THROTTLED and MUTED_AND_THROTTLED_AND_RESPONSE_PENDING).

Request memory (``queued.max.request.bytes``, Kafka's ``MemoryPool``): with the socket server's
``memory_pool`` set, a frame's size is taken from the pool as soon as its prefix is read; when
the pool refuses, the connection is muted for memory (no longer read, so the client's bytes wait
in its socket) and retried once the pool has memory again (Kafka's ``Selector`` unmutes such
channels when ``isOutOfMemory`` turns false; here the pool's ``on_available`` wakes the
processors, see ``SocketServer``). The request carries the bytes (``Request.memory_bytes``) and
gives them back when it is done (``_request_done``), or the connection closes first.

Differences from Kafka, on purpose:
* Direct response writes. In Kafka a response always goes back through the connection's
  processor (handler → response queue → processor → socket). In CPython each of those thread
  handoffs costs a wakeup and a GIL handover, which dominates a small request's latency, so the
  completing thread writes the encoded response straight to the socket (one non-blocking
  ``send``) and only tells the processor afterwards (a ``WrittenResponse``), without waking
  it; a remainder the socket did not take goes to the processor as a normal ``SendResponse``.
  This is safe because a connection has at most one request in flight (it is muted until the
  processor has seen the response complete), so the processor never has anything pending for a
  connection whose response is being written directly, and Kafka's ordering guarantee holds.
  The processor learns of the completed write when it next looks at its queue: before polling,
  when the connection becomes readable again (the client's next request), or within
  ``_IN_FLIGHT_POLL_S``; and at once, woken by the writer, when the client had already sent
  its next request (a pipelining client, such as a producer with several requests in flight:
  its bytes sit in the connection's buffer or on a socket the processor stopped watching, and
  would otherwise wait up to ``_IN_FLIGHT_POLL_S`` each). Set ``Processor.direct_writes =
  False`` to get Kafka's path.
* Unknown tagged fields are skipped (see ``broker.protocol.codec``), as Kafka's generated parsers do.
* A request's pool memory is released when its response has been sent, not when its handler
  returns (Kafka releases a produce's buffer there, others' right after parsing): here the
  decoded request keeps its bytes until it is answered (an acks=all produce parked in its
  purgatory included), so that is when the memory is actually free. Bytes read ahead of the
  size prefix (up to one ``recv`` of 256 KiB per connection) are not counted.

Security (Kafka's ``KafkaChannel.prepare``): on a TLS listener a connection first completes its
handshake, a step per readable or writable event (``broker.network.ssl_transport_layer``), so
one slow client never holds the thread; its principal comes from its certificate
(``ssl.principal.mapping.rules``) on an SSL listener. On a SASL listener its frames go to its
``SaslServerAuthenticator`` until it is authenticated, answered from this thread. A failed
authentication is answered, then the connection is closed after
``connection.failed.authentication.delay.ms`` (``_delayed_closes``); a TLS handshake that fails
closes at once. An authenticated SASL connection whose session expired
(``connections.max.reauth.ms``) is closed at its next request unless that request starts a
re-authentication (KIP-368). Every request carries the connection's principal. The
authentication counters are Kafka's socket-server metrics of the same names.
"""
from __future__ import annotations

import itertools
import os
import select
import socket
import struct
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from kafka_emu.broker.network.kafka_channel import KafkaChannel
from kafka_emu.broker.network.sasl_server_authenticator import SASL_HANDSHAKE, Step
from kafka_emu.broker.network.ssl_transport_layer import HandshakeFailed, SslTransportLayer
from kafka_emu.broker.security.auth import ANONYMOUS, USER_TYPE, KafkaPrincipal
from kafka_emu.broker.security.ssl_principal_mapper import NoMatchingRule
from kafka_emu.broker.protocol.codec import (
    InvalidRequestError,
    RequestHeaderData,
    UnsupportedVersionError,
    decode_request_fast,
    decode_request_header,
    encode_response,
)
from kafka_emu.broker.network.request_channel import (
    CloseConnectionResponse,
    EndThrottlingResponse,
    NetworkResponse,
    NoOpResponse,
    Request,
    RequestBody,
    Response,
    SendResponse,
    StartThrottlingResponse,
    WrittenResponse,
)
from kafka_emu.timer.shutdownable_thread import ShutdownableThread

if TYPE_CHECKING:
    from kafka_emu.broker.network.socket_server import SocketServer

_log = structlog.get_logger("broker.network")
_SIZE = struct.Struct(">i")
_KEY = struct.Struct(">h")   # a request frame's first field
_RECV_CHUNK = 256 * 1024
# Poll timeout while requests are in flight: bounds how late the processor notices a directly
# written response on an otherwise quiet connection (metrics, idle accounting).
_IN_FLIGHT_POLL_S = 0.01
_IN = select.EPOLLIN
_OUT = select.EPOLLOUT
_ERR = select.EPOLLERR | select.EPOLLHUP
_SASL_HANDSHAKE_PREFIX = struct.pack(">h", SASL_HANDSHAKE)


class ApiVersionManager(Protocol):
    """What the network layer asks of the APIs the broker serves (Kafka's ``ApiVersionManager``,
    handed to its ``SocketServer``): ``broker.apis.api_versions.DefaultApiVersionManager`` for the
    release the broker answers as (``emulator.kafka.version``)."""

    def enabled_api_name(self, api_key: int, api_version: int) -> str | None:
        """The API's name if the broker serves this version of it (Kafka's ``isApiEnabled``),
        else None: the connection is closed."""

    def api_name(self, api_key: int) -> str:
        """Kafka's name of any key (for the log line of a refused request)."""

    def answers_unsupported_versions(self, api_key: int) -> bool:
        """KIP-511: whether a request of this API at a version the broker does not serve is still
        handed on, without a body, to be answered (ApiVersions: a v0 UNSUPPORTED_VERSION answer)."""

    def api_versions_response(self, api_version: int, body: Any) -> Any:
        """The ApiVersions answer (``body`` None: a version not served), which the SASL
        authenticator sends before the connection reaches KafkaApis (Kafka's ``apiVersionResponse``)."""


class _Waker:
    """An eventfd a processor's epoll watches so other threads can wake it: a write is one
    cheap system call and wake-ups coalesce in its counter. ``wake`` never blocks; ``drain``
    empties it. (The processor's epoll already makes the network layer Linux-only.)"""

    def __init__(self) -> None:
        self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    def wake(self) -> None:
        try:
            os.eventfd_write(self.fd, 1)
        except OSError:  # closed at shutdown, or the counter is full: a wakeup is pending anyway
            pass

    def drain(self) -> None:
        try:
            os.eventfd_read(self.fd)
        except OSError:  # nothing to read (BlockingIOError), or closed
            pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


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
        self._api_versions = server.api_versions
        self._enabled_api_name = server.api_versions.enabled_api_name   # bound once: called per request
        self.security = server.securities.get(listener)
        self.ssl_context = server.ssl_contexts.get(listener)
        self._epoll = select.epoll()
        self._waker = _Waker()
        self._wake_fd = self._waker.fd
        self._epoll.register(self._wake_fd, _IN)
        self._wakeup_lock = threading.Lock()
        self._wakeup_pending = False
        self.direct_writes = True
        self._in_flight = 0
        self._polling = False
        self._new_connections: deque[tuple[socket.socket, tuple[Any, ...]]] = deque()
        self._responses: deque[NetworkResponse] = deque()
        self._channels: dict[str, KafkaChannel] = {}
        self._fd_channels: dict[int, KafkaChannel] = {}
        self._ready: deque[KafkaChannel] = deque()   # unmuted channels with buffered bytes
        self._memory_pool = server.memory_pool        # None: queued.max.request.bytes unbounded
        self._memory_muted: list[KafkaChannel] = []   # waiting for the memory pool
        self._conn_index = itertools.count()
        self._last_idle_check = time.monotonic()
        # (monotonic deadline, channel): connections that failed authentication, closed when due
        self._delayed_closes: deque[tuple[float, KafkaChannel]] = deque()
        # Idle connections are looked for every second, or every quarter of the limit if shorter.
        self._idle_check_interval_s = min(1.0, server.connections_max_idle_ms / 4000.0)
        # metrics (plain counters, read without locks)
        self.connections_closed = 0
        self.malformed_frames = 0
        self.requests_received = 0
        self.responses_sent = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.idle_ns = 0
        self.poll_started_ns = 0   # perf_counter_ns() at the start of the poll in progress, else 0
        self.wakeups = 0
        # Kafka's authentication metrics of this processor (summed per listener by the socket server)
        self.successful_authentications = 0
        self.failed_authentications = 0
        self.successful_reauthentications = 0
        self.failed_reauthentications = 0
        self.expired_connections_killed = 0

    # --- called from other threads -------------------------------------------------------------

    def accept(self, sock: socket.socket, addr: tuple[Any, ...]) -> None:
        self._new_connections.append((sock, addr))
        self.wakeup()

    def enqueue_response(self, response: NetworkResponse) -> None:
        """Queue a response for this thread to handle. Its request (if any) gets its send
        timings and goes to the request listeners once the response is handled."""
        self._responses.append(response)
        if self._polling:
            self.wakeup()

    def respond(self, connection_id: str, data: bytes, request: Request | None = None) -> None:
        """Deliver an encoded response from any thread: written directly to the socket when
        possible (see the module docstring), else queued for this processor."""
        # Only when the processor is idle in epoll with this single request in flight: then a
        # queued response would cost a full wakeup and gain nothing. A busy processor, or one
        # with other requests in flight, takes queued responses in batches without a wakeup
        # (measured: direct writes on 16 busy connections lowered the request rate by ~15%).
        direct = self.direct_writes and self._polling and self._in_flight == 1
        channel = self._channels.get(connection_id) if direct else None
        if channel is None:
            self.enqueue_response(SendResponse(connection_id, request, data))
            return
        with channel.write_lock:
            if channel.closed or channel.send_buf is not None:
                sent = -1
            else:
                if request is not None:
                    request.response_dequeue_time_ns = time.monotonic_ns()
                try:
                    sent = channel.send(data)
                except (BlockingIOError, InterruptedError, OSError):
                    sent = 0  # the processor retries and reports a real failure
            done = sent == len(data) and (channel.tls is None or not channel.tls.raw_out)
            if done:
                if request is not None:
                    request.end_time_ns = time.monotonic_ns()
                self._responses.append(WrittenResponse(connection_id, request, sent))
                # A pipelining client's next request is already here (buffered, or on a socket
                # the processor stopped watching): wake the processor to take it now. Otherwise
                # no wakeup (see the module docstring).
                pipelined = not channel.armed or bool(channel.rbuf)
        if done:
            if pipelined:
                self.wakeup()
            return
        if sent <= 0:
            self.enqueue_response(SendResponse(connection_id, request, data))
        else:
            self.enqueue_response(SendResponse(connection_id, request, memoryview(data)[sent:]))

    def wakeup(self) -> None:
        with self._wakeup_lock:
            if self._wakeup_pending:
                return
            self._wakeup_pending = True
        self.wakeups += 1
        self._waker.wake()

    def on_initiate_shutdown(self) -> None:
        self._waker.wake()

    def waiting_for_memory(self) -> bool:
        """Whether connections of this processor are muted for the memory pool (read without
        a lock: a stale answer costs one spare wakeup, or one poll timeout at worst)."""
        return bool(self._memory_muted)

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
        """One round of Kafka's ``Processor.run`` loop, step by step. The guards on the queues
        save a Python call per round when they are empty (the usual case)."""
        if self._new_connections:
            self._configure_new_connections()
        if self._memory_muted and not self._memory_pool.is_out_of_memory():
            self._unmute_for_memory()
        if self._responses:
            self._process_new_responses()
        if self._ready:
            self._process_completed_receives()
        events = self._poll()
        if self._responses:
            self._process_new_responses()  # e.g. direct writes: unmute before reading
        if events:
            self._process_poll_events(events)
        if self._ready:
            self._process_completed_receives()
        now = time.monotonic()
        if self._delayed_closes and self._delayed_closes[0][0] <= now:
            self._close_delayed(now)
        if now - self._last_idle_check > self._idle_check_interval_s:
            self._close_idle_connections(now)

    def _poll(self) -> list[tuple[int, int]]:
        """Wait in epoll: not at all with work pending, briefly with direct writes possibly in
        flight (see ``_IN_FLIGHT_POLL_S``), else until woken. The wait counts as idle time."""
        self._polling = True
        if self._responses or self._new_connections or self._ready or \
                (self._memory_muted and not self._memory_pool.is_out_of_memory()):
            timeout = 0.0
        else:
            timeout = _IN_FLIGHT_POLL_S if self._in_flight and self.direct_writes else 0.3
            if self._delayed_closes:
                timeout = max(0.0, min(timeout, self._delayed_closes[0][0] - time.monotonic()))
        t0 = self.poll_started_ns = time.perf_counter_ns()
        try:
            return self._epoll.poll(timeout)
        finally:
            self._polling = False
            t1 = time.perf_counter_ns()
            self.poll_started_ns = 0   # before idle_ns grows: a snapshot never counts a poll twice
            self.idle_ns += t1 - t0

    def _process_poll_events(self, events: list[tuple[int, int]]) -> None:
        """The I/O of Kafka's ``Selector.poll``: finish pending sends (``_write``), read ready
        connections into their buffers (framed afterwards by ``_process_completed_receives``),
        and close the ones that failed or hung up."""
        fd_channels = self._fd_channels
        wake_fd = self._wake_fd
        for fd, mask in events:
            if fd == wake_fd:
                self._drain_wakeup()
                continue
            channel = fd_channels.get(fd)
            if channel is None or channel.closed:
                continue
            try:
                if channel.tls is not None and not channel.tls.handshake_complete:
                    self._handshake(channel)
                elif mask & _OUT:
                    self._write(channel)
                elif channel.muted and self._settle_direct_write(channel):
                    self._read(channel)
                elif channel.muted:
                    if mask & _ERR:
                        self._close(channel, "connection reset while a request was in flight", level="debug")
                    else:
                        self._arm(channel, 0)  # readable while muted: stop watching until unmuted
                elif mask & (_IN | _ERR):
                    self._read(channel)
            except Exception as exc:  # noqa: BLE001 - one connection must not end the thread
                self._close(channel, f"unexpected error: {exc!r}", level="warning")

    def _process_completed_receives(self) -> None:
        """Kafka's ``processCompletedReceives``: frame what the unmuted connections have
        buffered and hand each complete request on.

        Called after every ready socket of a poll has been read, not per socket: each recv
        releases the interpreter lock, and a handler woken by an earlier hand-off would take it
        at every one (two thread switches per request). This way the handlers get the requests
        of one poll as a batch and run them back to back."""
        ready = self._ready
        while ready and not self.is_shutdown_initiated():
            channel = ready.popleft()
            if not channel.closed and not channel.muted and not channel.memory_muted:
                try:
                    self._try_complete_frame(channel)
                except Exception as exc:  # noqa: BLE001 - one connection must not end the thread
                    self._close(channel, f"unexpected error: {exc!r}", level="warning")

    def _close_idle_connections(self, now: float) -> None:
        """Kafka's ``connections.max.idle.ms`` (checked every ``_idle_check_interval_s``)."""
        self._last_idle_check = now
        idle_s = self.server.connections_max_idle_ms / 1000.0
        for channel in list(self._channels.values()):
            if not channel.in_flight and now - channel.last_active > idle_s:
                self._close(channel, f"idle for more than connections.max.idle.ms={self.server.connections_max_idle_ms}")

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
                if self.ssl_context is not None:
                    channel.use_tls(SslTransportLayer(sock, self.ssl_context))
                if self.security is not None and self.security.protocol.uses_sasl:
                    channel.authenticator = self.server.new_authenticator(self.security)
                    channel.ready = False
                self._epoll.register(channel.fd, _IN)
                channel.armed = _IN
                self._channels[cid] = channel
                self._fd_channels[channel.fd] = channel
            except OSError as exc:
                _log.info("connection_setup_failed", broker_id=self.server.broker_id, reason=repr(exc))
                try:
                    sock.close()
                except OSError:
                    pass

    def _process_new_responses(self) -> None:
        """Kafka's ``processNewResponses``: act on each queued response, in order."""
        responses = self._responses
        channels = self._channels
        while responses:
            response = responses.popleft()
            kind = response.__class__
            if kind is StartThrottlingResponse or kind is EndThrottlingResponse:
                self._on_throttling(response.connection_id, kind is StartThrottlingResponse)
                continue
            request = response.request
            if request is not None and not getattr(request, "response_dequeue_time_ns", 0):
                request.response_dequeue_time_ns = time.monotonic_ns()
            channel = channels.get(response.connection_id)
            if channel is None or channel.closed:
                self._request_done(request)  # the connection went away while its request was in flight
                continue
            try:
                if kind is WrittenResponse:  # written directly by the responder (``respond``)
                    self.bytes_out += response.size
                    self.responses_sent += 1
                    channel.last_active = time.monotonic()
                    self._on_response_done(channel)
                    self._request_done(request)
                elif kind is SendResponse:
                    data = response.data
                    channel.send_buf = data if data.__class__ is memoryview else memoryview(data)
                    channel.sending = request
                    self._write(channel)
                elif kind is NoOpResponse:
                    self._on_response_done(channel)
                    self._request_done(request)
                else:  # CloseConnectionResponse
                    self._close(channel, "close requested by the request handler")
                    self._request_done(request)
            except Exception as exc:  # noqa: BLE001
                self._close(channel, f"unexpected error: {exc!r}", level="warning")

    def _request_done(self, request: Request | None) -> None:
        """Give back its pool memory, stamp ``end_time_ns`` and hand the request to the
        channel's listeners (metrics)."""
        if request is None:
            return
        if self._memory_pool is not None and request.memory_bytes:
            self._memory_pool.release(request.memory_bytes)
            request.memory_bytes = 0
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
            data = channel.recv(_RECV_CHUNK)
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
        self._ready.append(channel)   # framed once every ready socket is read

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
        pool = self._memory_pool
        # authentication frames take no pool memory (Kafka reads them with MemoryPool.NONE)
        if pool is not None and size and channel.ready and not channel.frame_memory:
            if not pool.try_allocate(size):
                self._mute_for_memory(channel)
                return
            channel.frame_memory = size
        if len(rbuf) < 4 + size:
            return
        # one copy into the frame (a slice of the bytearray would be a second, a large request's
        # size again); the view is released before the buffer shrinks
        with memoryview(rbuf) as view:
            frame = bytes(view[4:4 + size])
        if len(rbuf) == 4 + size:
            rbuf.clear()
        else:
            del rbuf[:4 + size]
        self._handle_frame(channel, frame)
        if channel.frame_memory:   # no request took it (a malformed frame)
            self._release_frame_memory(channel)

    def _release_frame_memory(self, channel: KafkaChannel) -> None:
        self._memory_pool.release(channel.frame_memory)
        channel.frame_memory = 0

    def _mute_for_memory(self, channel: KafkaChannel) -> None:
        """The pool refused the frame's size: stop reading the connection until it has memory
        (Kafka's ``KafkaChannel.mute`` from ``read``)."""
        channel.memory_muted = True
        self._arm(channel, 0)
        self._memory_muted.append(channel)

    def _unmute_for_memory(self) -> None:
        """The pool has memory again: every connection muted for it is read again, and its
        buffered size prefix asks the pool once more."""
        waiting, self._memory_muted = self._memory_muted, []
        for channel in waiting:
            channel.memory_muted = False
            if not channel.closed:
                self._arm(channel, _IN)
                self._ready.append(channel)

    def _handle_frame(self, channel: KafkaChannel, frame: bytes) -> None:
        start_ns = time.monotonic_ns()
        if not channel.ready:
            self._auth_step(channel, channel.authenticator.handle(frame))
            return
        auth = channel.authenticator
        if auth is not None:   # an authenticated SASL connection (Kafka's Processor.processCompletedReceives)
            expiration = auth.session_expiration_ns
            if expiration is not None and start_ns > expiration:
                self.expired_connections_killed += 1
                self._close(channel, "SASL session expired (connections.max.reauth.ms)")
                return
            if frame[:2] == _SASL_HANDSHAKE_PREFIX and auth.client_supports_reauth:
                channel.ready = False
                self._auth_step(channel, auth.reauthenticate(frame))
                return
        try:
            header = decode_request_header(frame)
        except UnsupportedVersionError as exc:
            api_versions = self._api_versions
            if len(frame) >= 10 and api_versions.answers_unsupported_versions(_KEY.unpack_from(frame, 0)[0]):
                self._submit_unsupported_version(channel, frame, start_ns)
                return
            self._malformed(channel, str(exc))
            return
        except InvalidRequestError as exc:
            self._malformed(channel, str(exc))
            return
        api_key = header.api_key
        name = self._enabled_api_name(api_key, header.api_version)
        if name is None:
            if self._api_versions.answers_unsupported_versions(api_key):
                self._submit(channel, header, None, start_ns, self._api_versions.api_name(api_key), len(frame))
                return
            # Kafka's SocketServer.parseRequestHeader: a version the broker does not enable is an
            # InvalidRequestException, and the connection is closed
            self._malformed(channel, f"version {header.api_version} of api key {api_key} is not enabled",
                            api=self._api_versions.api_name(api_key), api_version=header.api_version)
            return
        try:
            body = decode_request_fast(header, frame)
        except InvalidRequestError as exc:
            self._malformed(channel, str(exc), api=name, api_version=header.api_version)
            return
        self._submit(channel, header, body, start_ns, name, len(frame))

    def _submit_unsupported_version(self, channel: KafkaChannel, frame: bytes, start_ns: int) -> None:
        """KIP-511: an ApiVersions request newer than any we know still gets the v0 error reply.

        Its header may be v2 with tags we cannot be sure of, so only the fixed prefix is read.
        """
        api_key, version, correlation_id, client_len = struct.unpack_from(">hhih", frame, 0)
        client_id = None
        if client_len > 0 and 10 + client_len <= len(frame):
            client_id = frame[10:10 + client_len].decode("utf-8", "replace")
        header = RequestHeaderData(api_key, version, correlation_id, client_id, len(frame))
        self._submit(channel, header, None, start_ns, self._api_versions.api_name(api_key), len(frame))

    def _set_in_flight(self, channel: KafkaChannel) -> None:
        if not channel.in_flight:
            channel.in_flight = True
            self._in_flight += 1

    def _submit(self, channel: KafkaChannel, header: RequestHeaderData, body: RequestBody, start_ns: int,
                api_name: str, size: int) -> None:
        channel.muted = True
        self._set_in_flight(channel)
        self.requests_received += 1
        memory, channel.frame_memory = channel.frame_memory, 0
        request = self.server.request_factory(
            api_key=header.api_key,
            api_version=header.api_version,
            correlation_id=header.correlation_id,
            client_id=header.client_id,
            body=body,
            respond=_Responder(self, channel.connection_id, header.correlation_id, api_name),
            api_name=api_name,
            connection_id=channel.connection_id,
            processor_id=self.processor_id,
            client_host=channel.peer.rpartition(":")[0],
            listener=self.listener,
            start_time_ns=start_ns,
            principal=channel.principal,
        )
        if memory:
            request.memory_bytes = memory
        request.size_in_bytes = size
        channel_ = self.server.request_channel
        # A full channel blocks this processor, as in Kafka (back-pressure on every connection it
        # owns); the timeout only lets a shutdown or a closed channel end the wait.
        while not channel_.send_request(request, timeout_s=0.5):
            if getattr(channel_, "closed", False) or self.is_shutdown_initiated():
                self._close(channel, "request channel closed (broker stopping)", level="debug")
                if memory:   # never queued: its memory goes back now
                    self._memory_pool.release(memory)
                return

    def _malformed(self, channel: KafkaChannel, reason: str, **extra: Any) -> None:
        self.malformed_frames += 1
        self._close(channel, reason, **extra)

    # --- writing -------------------------------------------------------------------------------

    def _write(self, channel: KafkaChannel) -> None:
        buf = channel.send_buf
        if buf is None:
            if channel.pending_send:   # ciphertext of a finished response (or of the handshake)
                channel.tls.flush()
                if not channel.pending_send:
                    self._arm(channel, 0 if channel.failed else _IN)
            return
        try:
            sent = channel.send(buf)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._close(channel, f"write failed: {exc.strerror or exc!r}", level="debug")
            return
        self.bytes_out += sent
        if sent < len(buf) or (channel.tls is not None and channel.tls.raw_out):   # plaintext: one check
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
        if channel.failed:   # its authentication failure is answered: wait for the delayed close
            self._arm(channel, 0)
            return
        if channel.in_flight:
            self._in_flight -= 1
        channel.in_flight = False
        if not channel.throttled:   # a throttled channel stays muted until its throttling ends
            self._unmute(channel)

    def _unmute(self, channel: KafkaChannel) -> None:
        channel.muted = False
        if len(channel.rbuf) >= 4:
            self._ready.append(channel)   # a pipelined request may already be buffered
        self._arm(channel, _IN)

    def _on_throttling(self, connection_id: str, started: bool) -> None:
        """KIP-219 (Kafka's ``ChannelMuteEvent.THROTTLE_STARTED``/``THROTTLE_ENDED``): a
        throttled channel is not unmuted when its response has been sent; when throttling ends
        it is, if that response is out by then."""
        channel = self._channels.get(connection_id)
        if channel is None or channel.closed:
            return
        channel.throttled = started
        if not started and channel.muted and not channel.in_flight:
            self._unmute(channel)

    def _arm(self, channel: KafkaChannel, events: int) -> None:
        """Watch ``events`` on the channel's fd (0: nothing); a no-op when already so."""
        if channel.armed == events or channel.closed:
            return
        channel.armed = events
        self._epoll.modify(channel.fd, events)

    # --- security ------------------------------------------------------------------------------

    def _handshake(self, channel: KafkaChannel) -> None:
        """One step of a connection's TLS handshake (see the module docstring)."""
        tls = channel.tls
        try:
            done = tls.handshake()
        except (HandshakeFailed, OSError) as exc:
            self.failed_authentications += 1
            self._close(channel, f"{exc}", level="info")
            return
        channel.last_active = time.monotonic()
        self._arm(channel, _IN | _OUT if tls.pending else _IN)
        if not done:
            return
        if channel.authenticator is None:   # an SSL listener: the principal is the certificate's
            try:
                channel.principal = self._certificate_principal(tls)
            except NoMatchingRule as exc:
                self.failed_authentications += 1
                self._close(channel, f"no principal for the client certificate: {exc}")
                return
            channel.ready = True
            self.successful_authentications += 1
        self._read(channel)   # application data that came with the handshake's last flight

    def _certificate_principal(self, tls: SslTransportLayer) -> KafkaPrincipal:
        """Kafka's ``DefaultKafkaPrincipalBuilder`` for SSL: the mapped subject of the client's
        certificate, ANONYMOUS without one."""
        der = tls.peer_certificate()
        if der is None:
            return ANONYMOUS
        from kafka_emu.broker.security.ssl_factory import subject_of

        return KafkaPrincipal(USER_TYPE, self.security.principal_mapper.get_name(subject_of(der)))

    def _auth_step(self, channel: KafkaChannel, step: Step) -> None:
        """Act on the authenticator's answer to a frame: send, then authenticated or failed."""
        auth = channel.authenticator
        reauth = auth.reauthenticating
        if step.close_now:
            self._count_auth(reauth, False)
            self.malformed_frames += 1
            self._close(channel, step.failure or "invalid request during SASL authentication")
            return
        if step.failure is not None:
            self._count_auth(reauth, False)
            channel.failed = True
            delay_s = self.security.failed_authentication_delay_ms / 1000.0
            self._delayed_closes.append((time.monotonic() + delay_s, channel))
            _log.info("authentication_failed", broker_id=self.server.broker_id, connection_id=channel.connection_id,
                      peer=channel.peer, listener=self.listener, mechanism=auth.mechanism, reason=step.failure)
        elif step.complete:
            channel.principal = auth.principal
            channel.ready = True
            self._count_auth(reauth, True)
        if step.response is not None:
            channel.muted = True
            channel.send_buf = memoryview(step.response)
            channel.sending = None
            self._write(channel)
        elif channel.failed:
            self._arm(channel, 0)

    def _count_auth(self, reauth: bool, ok: bool) -> None:
        if reauth and ok:
            self.successful_reauthentications += 1
        elif reauth:
            self.failed_reauthentications += 1
        elif ok:
            self.successful_authentications += 1
        else:
            self.failed_authentications += 1

    def _close_delayed(self, now: float) -> None:
        closes = self._delayed_closes
        while closes and closes[0][0] <= now:
            _, channel = closes.popleft()
            self._close(channel, "authentication failed (closed after connection.failed.authentication.delay.ms)",
                        level="debug")

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
        if channel.frame_memory:
            self._release_frame_memory(channel)
        self.connections_closed += 1
        request, channel.sending = channel.sending, None
        self._request_done(request)  # a response cut short still completes its request (as Kafka)

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

    __slots__ = ("processor", "connection_id", "correlation_id", "api_name", "done")

    def __init__(self, processor: Processor, connection_id: str, correlation_id: int, api_name: str) -> None:
        self.processor = processor
        self.connection_id = connection_id
        self.correlation_id = correlation_id
        self.api_name = api_name
        self.done = False

    def __call__(self, response: Response) -> None:
        if self.done:
            _log.warning("duplicate_response", connection_id=self.connection_id,
                         correlation_id=self.correlation_id, api=self.api_name)
            return
        self.done = True
        req = response.request
        if not req.response_complete_time_ns:
            req.response_complete_time_ns = time.monotonic_ns()  # refined below once encoded
        if response.close_connection:
            self.processor.enqueue_response(CloseConnectionResponse(self.connection_id, req))
            return
        body = response.body
        if body is None:
            self.processor.enqueue_response(NoOpResponse(self.connection_id, req))
            return
        try:
            data = encode_response(self.correlation_id, body)
        except Exception as exc:  # noqa: BLE001 - a bad entity from a handler closes only this link
            _log.error("response_encode_failed", connection_id=self.connection_id,
                       api=self.api_name, correlation_id=self.correlation_id, reason=repr(exc))
            self.processor.enqueue_response(CloseConnectionResponse(self.connection_id, req))
            return
        req.response_complete_time_ns = time.monotonic_ns()
        self.processor.respond(self.connection_id, data, req)
