"""Request, Response and RequestChannel: the queue between request senders and handler threads.

Senders (network processors, in-process benchmarks) put a ``Request`` on the bounded channel
(``queued.max.requests``; a full channel blocks the sender, as in Kafka);
``KafkaRequestHandler`` threads take them. In-process replica fetchers have theirs served on
their own thread instead (``handle_inline``: one thread hand-off less each way).
A handler answers, now or later from a delayed operation, with ``send_response``, which fills
the timing fields and calls ``request.respond``. The completed request then goes to every
``request_listeners`` callable (metrics): for an in-process request (``processor_id`` -1:
replica fetchers, benchmarks) right there, as nothing is sent; for a network request
(``processor_id`` >= 0) only once its network processor has written the response
(``end_time_ns``), as Kafka's ``updateRequestMetrics`` runs on send completion, so
ResponseQueueTimeMs and ResponseSendTimeMs are real. ``send_response`` keeps the response body
on the request (``response_body``) for those listeners (error counts by code).

Test control (``broker.control``): when ``control`` is set, every answer passes through
``ClusterControl.on_response`` first (recording, latency, isolation), which may deliver it later
through ``deliver_response``.

How requests reach the handlers without a thread switch more than needed: ``RequestChannel``.
"""
from __future__ import annotations

import os
import select
import threading
import time as _time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import structlog

if TYPE_CHECKING:
    from kafka_emu.broker.control import ClusterControl

FETCH_API_KEY = 1

_log = structlog.get_logger("broker.request_channel")


@dataclass(eq=False, slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any                      # a kio request entity (decoded)
    respond: Callable[["Response"], None]   # delivers the response to whoever sent the request
    connection_id: str = "in-process"
    processor_id: int = -1         # -1 for in-process requests (replica fetchers, benchmarks)
    client_host: str = ""
    listener: str = "PLAINTEXT"
    start_time_ns: int = 0
    dequeue_time_ns: int = 0
    api_local_complete_time_ns: int = 0
    response_complete_time_ns: int = 0
    response_dequeue_time_ns: int = 0
    end_time_ns: int = 0           # the response was written (network) / handed back (in-process)
    response_body: Any = None      # set by send_response: what the request was answered with

    @property
    def api_name(self) -> str:
        """Kafka's name of the API (``Produce``, ``JoinGroup``...), for logs and metric labels."""
        # imported here: the handler modules behind broker.apis import this module
        from kafka_emu.broker.apis import api_name
        return api_name(self.api_key)

    @property
    def is_from_follower(self) -> bool:
        """A Fetch sent by a follower replica (Kafka's ``FetchRequest.isFromFollower``)."""
        if self.api_key != FETCH_API_KEY:
            return False
        from kafka_emu.broker.apis.fetch import replica_id_of  # the fetch API imports this module
        return replica_id_of(self.body, self.api_version) >= 0


@dataclass(eq=False, slots=True)
class Response:
    request: Request
    body: Any | None               # a kio response entity; None = no response (acks=0 produce)
    close_connection: bool = False


# --- what a network processor is told to do once a request is answered -----------------------
# Kafka's RequestChannel.{SendResponse, NoOpResponse, CloseConnectionResponse}, plus the
# emulator's WrittenResponse (a direct write, see ``broker.network.processor``). NamedTuples:
# typed and immutable, and cheaper to build on the per-request path than frozen dataclasses.


class SendResponse(NamedTuple):
    """Encoded response bytes for the processor to write (a memoryview: the part a direct
    write left unsent)."""

    connection_id: str
    request: Request | None
    data: bytes | memoryview


class NoOpResponse(NamedTuple):
    """Nothing to send (acks=0 produce): the processor only unmutes the connection."""

    connection_id: str
    request: Request | None


class CloseConnectionResponse(NamedTuple):
    """Close the connection instead of answering."""

    connection_id: str
    request: Request | None


class WrittenResponse(NamedTuple):
    """Already written to the socket, ``size`` bytes, by the thread that completed the request:
    the processor only accounts for it and unmutes the connection."""

    connection_id: str
    request: Request | None
    size: int


NetworkResponse = SendResponse | NoOpResponse | CloseConnectionResponse | WrittenResponse


class _Wakeup:
    """Queue marker: a handler drains the action queue (no request attached)."""

    __slots__ = ()


WAKEUP = _Wakeup()


@dataclass(frozen=True, slots=True)
class RequestChannelSnapshot:
    """Kafka's ``RequestChannel`` gauges: requests waiting for a handler (RequestQueueSize)."""

    request_queue_size: int


class _IdleHandler:
    """How one handler thread sleeps while the channel is empty: an eventfd it polls.

    A sender wakes it with ``os.eventfd_write``, a system call made without the interpreter
    lock, so the handler can take the lock at once (see ``RequestChannel``). Wake-ups coalesce
    in the eventfd's counter.
    The fd is closed when the object is collected (its thread has ended)."""

    __slots__ = ("fd", "_poll", "__weakref__")

    def __init__(self) -> None:
        self.fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLIN)
        weakref.finalize(self, os.close, self.fd)

    def wake(self) -> None:
        os.eventfd_write(self.fd, 1)

    def wait(self, timeout_s: float) -> None:
        """Until woken (at once if a wake-up came since the last wait) or ``timeout_s``."""
        if self._poll.poll(timeout_s * 1000.0):
            try:
                os.eventfd_read(self.fd)
            except BlockingIOError:
                pass


class RequestChannel:
    """A bounded FIFO of requests (``queued.max.requests``) served by the handler pool.

    The hand-off: a deque of requests and a stack of idle handlers, each asleep on its own
    eventfd (``_IdleHandler``). A sender appends, then wakes the most recently idle handler
    (its caches are the warmest). Why not a ``queue.SimpleQueue``: its ``put`` wakes the
    handler while the sender holds the interpreter lock, and the kernel often switches to the
    woken thread as the sender's system call returns (even under ``SCHED_BATCH``); on one CPU
    (``broker.cpu_affinity``) the handler then finds the lock taken and sleeps again until the
    sender blocks, and the request waits for the sender's tail. The eventfd is written without
    the lock, so the handler runs the request right away (or once the sender blocks). Measured
    on one connection: 2 context switches per request instead of 3.

    Batching: a network processor enqueues the requests of one poll with ``send_request(...,
    wake=False)`` and wakes handlers once with ``wake_handlers()``; they then run the batch back
    to back. One handler per call, and a handler that takes a request while more wait wakes the
    next idle one: so a batch is shared as Kafka's handlers share the queue, and a handler that
    blocks in a long request (a TV2 implicit add) never leaves requests waiting behind it.

    Lost wake-ups: a handler pushes itself on ``_idle`` before it checks the deque a last time,
    and a sender appends before it pops ``_idle`` and writes the popped handler's eventfd, so a
    request is always either seen by that check or followed by a wake-up that handler's wait
    sees (only the wait drains the eventfd). A handler woken for nothing goes round again
    (``_wait_for_item``). Deque and list operations are atomic in CPython.

    Locking: ``_not_full`` (a condition) is used only by senders waiting for room (the rare slow
    path); ``request_listeners`` is only appended to at start-up.
    """

    def __init__(self, queue_size: int = 500, broker_id: int = 0,
                 request_listeners: list[Callable[[Request], None]] | None = None) -> None:
        self.broker_id = broker_id
        self.queue_size = queue_size
        # None items are the shutdown markers (``put_shutdown_markers``)
        self._queue: deque[Request | _Wakeup | None] = deque()
        self._idle: list[_IdleHandler] = []
        self._handler_local = threading.local()
        self._not_full = threading.Condition()
        self._full_waiters = 0
        # The broker's list (``KafkaServer.request_listeners``), so that metrics attached to a
        # broker before its start-up see its channel's requests.
        self.request_listeners: list[Callable[[Request], None]] = (
            request_listeners if request_listeners is not None else [])
        self.closed = False
        self._wakeup_pending = False
        self.control: ClusterControl | None = None   # set by KafkaServer
        # KafkaApis.handle, for requests served on their sender's thread (``handle_inline``)
        self.inline_handler: Callable[[Request], None] | None = None   # set by KafkaServer

    # ------------------------------------------------------------------ senders
    def send_request(self, request: Request, timeout_s: float | None = None, wake: bool = True) -> bool:
        """Queue a request (blocks while the channel is full); false if closed or timed out.
        ``wake=False``: the caller calls ``wake_handlers`` itself after a batch."""
        if self.closed:
            return False
        if not request.start_time_ns:
            request.start_time_ns = _time.monotonic_ns()
        if len(self._queue) >= self.queue_size:
            deadline = None if timeout_s is None else _time.monotonic() + timeout_s
            with self._not_full:
                self._full_waiters += 1
                try:
                    while len(self._queue) >= self.queue_size and not self.closed:
                        remaining = None if deadline is None else deadline - _time.monotonic()
                        if remaining is not None and remaining <= 0:
                            return False
                        self.wake_handlers()   # a batch enqueued with wake=False must drain
                        self._not_full.wait(0.05 if remaining is None else min(remaining, 0.05))
                finally:
                    self._full_waiters -= 1
            if self.closed:
                return False
        self._queue.append(request)
        if wake and self._idle:
            self.wake_handlers()
        if self.closed:  # raced with close(): make sure the sender hears back
            self._drain_closed()
        return True

    def wake_handlers(self) -> None:
        """Wake one idle handler if requests wait (see "Batching")."""
        if self._queue and self._idle:
            try:
                handler = self._idle.pop()
            except IndexError:
                return
            handler.wake()

    def handle_inline(self, request: Request) -> bool:
        """Serve an in-process request on the calling thread (the broker's ``KafkaApis``, as a
        handler would), false if closed. For replica fetchers (``broker.replica_fetcher`` says
        why): the answer still comes through ``request.respond``, now or later from a delayed
        operation completed by another thread. No queue time (``dequeue_time_ns`` = start)."""
        handler = self.inline_handler
        if self.closed or handler is None:
            return False
        request.start_time_ns = request.dequeue_time_ns = _time.monotonic_ns()
        handler(request)
        return True

    def wakeup(self) -> None:
        """Ask a handler to drain the action queue soon (coalesced; never blocks)."""
        if self._wakeup_pending or self.closed:
            return
        self._wakeup_pending = True
        if len(self._queue) >= self.queue_size:
            self._wakeup_pending = False  # handlers are busy and drain after each request anyway
            return
        self._queue.append(WAKEUP)
        self.wake_handlers()

    # ------------------------------------------------------------------ handlers
    def receive_request(self, timeout_s: float) -> Request | _Wakeup | None:
        """The next Request, ``WAKEUP``, or None on timeout (or a shutdown marker)."""
        queue = self._queue
        try:
            item = queue.popleft()
        except IndexError:
            item = self._wait_for_item(timeout_s)
        if queue and self._idle:
            self.wake_handlers()   # more waiting: another handler takes them if this one blocks
        if self._full_waiters:
            with self._not_full:
                self._not_full.notify()
        if item is WAKEUP:
            self._wakeup_pending = False
            return item
        if item is not None:
            item.dequeue_time_ns = _time.monotonic_ns()
        return item

    def _wait_for_item(self, timeout_s: float) -> Request | _Wakeup | None:
        """Sleep as an idle handler until an item can be taken (None at the deadline).

        Each round: push itself on ``_idle``, look at the queue once more, then wait on its
        eventfd (see "Lost wake-ups"). A wake-up can find nothing to take (the request went to a
        handler that was not asleep yet, or it is a stale one from an earlier round in which
        this handler found its request at the last look): it then goes round again."""
        me: _IdleHandler | None = getattr(self._handler_local, "idle", None)
        if me is None:
            me = self._handler_local.idle = _IdleHandler()
        queue, idle = self._queue, self._idle
        deadline = _time.monotonic() + timeout_s
        while True:
            idle.append(me)
            try:
                try:
                    return queue.popleft()   # the last look
                except IndexError:
                    pass
                remaining = deadline - _time.monotonic()
                if remaining <= 0:
                    return None
                me.wait(remaining)
                try:
                    return queue.popleft()
                except IndexError:
                    pass
            finally:
                try:
                    idle.remove(me)   # still there unless a sender popped it to wake it
                except ValueError:
                    pass

    def send_response(self, request: Request, body: object, close_connection: bool = False) -> None:
        control = self.control
        if control is not None and control.on_response(self.broker_id, request, body, close_connection,
                                                       self.deliver_response):
            return
        self.deliver_response(request, body, close_connection)

    def deliver_response(self, request: Request, body: object, close_connection: bool = False) -> None:
        now = _time.monotonic_ns()
        if not request.api_local_complete_time_ns:
            request.api_local_complete_time_ns = now
        request.response_body = body
        response = Response(request, body, close_connection)
        try:
            request.respond(response)
        except Exception:
            _log.exception("respond_failed", broker_id=self.broker_id, api_key=request.api_key,
                           correlation_id=request.correlation_id)
        request.response_complete_time_ns = request.response_complete_time_ns or _time.monotonic_ns()
        if request.processor_id >= 0:
            return  # the network processor calls the listeners once the response is written
        for listener in self.request_listeners:
            try:
                listener(request)
            except Exception:
                _log.exception("request_listener_failed", broker_id=self.broker_id)

    # ------------------------------------------------------------------ sizes and close
    def size(self) -> int:
        """Requests waiting (Kafka's RequestQueueSize)."""
        return len(self._queue)

    def snapshot(self) -> RequestChannelSnapshot:
        return RequestChannelSnapshot(len(self._queue))

    def close(self) -> None:
        """Stop accepting; in-process senders of queued requests get a disconnect (body None,
        close_connection)."""
        self.closed = True
        self._drain_closed()

    def _drain_closed(self) -> None:
        while True:
            try:
                item = self._queue.popleft()
            except IndexError:
                return
            if isinstance(item, Request):
                try:
                    item.respond(Response(item, None, close_connection=True))
                except Exception:
                    _log.exception("respond_failed_on_close", broker_id=self.broker_id)

    def put_shutdown_markers(self, count: int) -> None:
        for _ in range(count):
            self._queue.append(None)
        idle = self._idle
        while idle:
            try:
                handler = idle.pop()
            except IndexError:
                return
            handler.wake()
