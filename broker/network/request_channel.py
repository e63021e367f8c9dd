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

A request carries what its handler, logs and metrics need, stamped by whoever creates it (the
network processor from the header it admitted, the in-process clients, the replica fetchers):
its API's name (``api_name``) and, for an in-process follower Fetch, the follower's id
(``replica_id``). So this module imports no handler and nothing of the server: it sits between
the network layer and the handlers, below both (``tests/test_layering.py``).

Test control (``broker.cluster.control``): when ``control`` (a ``ResponseHook``) is set, every
answer passes through its ``on_response`` first (recording, latency, isolation), which may
deliver it later through ``deliver_response``.

Throttling (KIP-219): a quota manager mutes a throttled client's connection through
``start_throttling``/``end_throttling``, which hand the request's network processor (registered
by the socket server with ``add_processor``, as Kafka's ``RequestChannel`` holds its processors)
a ``StartThrottlingResponse``/``EndThrottlingResponse``.

Locking: the queue has its own lock; ``request_listeners`` and the processors are only added
at start-up.
"""
from __future__ import annotations

import queue
import threading
import time as _time
from dataclasses import dataclass
from typing import Callable, NamedTuple, Protocol, Sequence, Union

import structlog
from kio.static.protocol import RequestPayload, ResponsePayload

from kafka_emu.broker.protocol.codec import EncodedResponse
from kafka_emu.broker.protocol.fast_fetch import FETCH, FetchRequestData, PartitionData, fetch_replica_id
from kafka_emu.broker.protocol.fast_produce import ProduceRequestData
from kafka_emu.broker.security.auth import ANONYMOUS, KafkaPrincipal

_log = structlog.get_logger("broker.request_channel")

TopicPartition = tuple[str, int]


class InProcessFetch(Protocol):
    """The body of an in-process follower Fetch (``broker.server.replica_fetcher``'s
    ``ReplicaFetchRequestData``): never encoded, read only by the leader's Fetch handler. With
    session id 0 and epoch -1 (Kafka's sessionless fetch) it is answered with a plain list of
    read results, otherwise with a ``SessionFetchAnswer``."""

    @property
    def session_id(self) -> int: ...
    @property
    def session_epoch(self) -> int: ...


class SessionFetchAnswer(Protocol):
    """The answer to an in-process follower Fetch with session fields
    (``broker.server.fetch_session.SessionFetchResponse``)."""

    @property
    def error(self) -> int: ...
    @property
    def session_id(self) -> int: ...
    @property
    def results(self) -> Sequence[tuple[TopicPartition, PartitionData]]: ...


# What a request carries: a kio request entity, the hand-decoded Produce or Fetch of the network
# path (``broker.protocol.fast_produce``/``fast_fetch``), an in-process follower Fetch, or None
# (an ApiVersions request at a version the broker does not know: KIP-511's fallback).
RequestBody = Union[RequestPayload, ProduceRequestData, FetchRequestData, InProcessFetch, None]
# What it is answered with: a kio response entity, bytes a hand-written encoder wrote
# (``codec.EncodedResponse``), the read results of an in-process follower Fetch, or None
# (no response: acks=0 Produce, or a closed connection).
ResponseBody = Union[ResponsePayload, EncodedResponse, Sequence[tuple[TopicPartition, PartitionData]],
                     SessionFetchAnswer, None]


@dataclass(eq=False, slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: RequestBody
    respond: Callable[["Response"], None]   # delivers the response to whoever sent the request
    api_name: str                  # Kafka's name of the API (Produce, JoinGroup...): logs, metric labels
    connection_id: str = "in-process"
    processor_id: int = -1         # -1 for in-process requests (replica fetchers, benchmarks)
    client_host: str = ""
    listener: str = "PLAINTEXT"
    replica_id: int = -1           # the follower an in-process Fetch comes from (stamped by its fetcher)
    start_time_ns: int = 0
    dequeue_time_ns: int = 0
    api_local_complete_time_ns: int = 0
    response_complete_time_ns: int = 0
    response_dequeue_time_ns: int = 0
    end_time_ns: int = 0           # the response was written (network) / handed back (in-process)
    memory_bytes: int = 0          # held of the network's request memory pool until done (queued.max.request.bytes)
    size_in_bytes: int = 0         # the request's size on the wire (header and body); 0 in process
    response_body: ResponseBody = None   # set by send_response: what the request was answered with
    principal: KafkaPrincipal = ANONYMOUS   # who the connection authenticated as (in-process: ANONYMOUS)

    @property
    def is_from_follower(self) -> bool:
        """A Fetch sent by a follower replica (Kafka's ``FetchRequest.isFromFollower``): stamped
        on an in-process one, stated in the body of one decoded from the wire."""
        if self.replica_id >= 0:
            return True
        return self.api_key == FETCH and fetch_replica_id(self.body, self.api_version) >= 0


@dataclass(eq=False, slots=True)
class Response:
    request: Request
    body: ResponseBody
    close_connection: bool = False


Deliver = Callable[[Request, ResponseBody, bool], None]


class ResponseHook(Protocol):
    """What ``send_response`` calls before delivering an answer, when set (``control``): test
    control's ``broker.cluster.control.ClusterControl``."""

    def on_response(self, broker: int, request: Request, body: ResponseBody, close: bool,
                    deliver: Deliver) -> bool:
        """True if the answer was taken over (``deliver`` is called later, or it was replaced)."""


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


class StartThrottlingResponse(NamedTuple):
    """The client is throttled (KIP-219): keep its connection muted once the response is sent,
    until the matching ``EndThrottlingResponse``."""

    connection_id: str
    request: Request | None = None


class EndThrottlingResponse(NamedTuple):
    """The throttle time has passed: the connection may be read again once its response is sent."""

    connection_id: str
    request: Request | None = None


NetworkResponse = (SendResponse | NoOpResponse | CloseConnectionResponse | WrittenResponse
                   | StartThrottlingResponse | EndThrottlingResponse)


class ResponseQueue(Protocol):
    """What the channel hands throttling events to: a network processor (``Processor``)."""

    def enqueue_response(self, response: NetworkResponse) -> None: ...


class _Wakeup:
    """Queue marker: a handler drains the action queue (no request attached)."""

    __slots__ = ()


WAKEUP = _Wakeup()


@dataclass(frozen=True, slots=True)
class RequestChannelSnapshot:
    """Kafka's ``RequestChannel`` gauges: requests waiting for a handler (RequestQueueSize)."""

    request_queue_size: int


class RequestChannel:
    def __init__(self, queue_size: int = 500, broker_id: int = 0,
                 request_listeners: list[Callable[[Request], None]] | None = None) -> None:
        self.broker_id = broker_id
        self.queue_size = queue_size
        # A C ``SimpleQueue`` (fast hand-off to a waiting handler) bounded by ``queue_size``: a
        # sender finding it full waits on ``_not_full`` (the rare slow path).
        # None items are the shutdown markers (``put_shutdown_markers``)
        self._queue: queue.SimpleQueue[Request | _Wakeup | None] = queue.SimpleQueue()
        self._not_full = threading.Condition()
        self._full_waiters = 0
        # The broker's list (``KafkaServer.request_listeners``), so that metrics attached to a
        # broker before its start-up see its channel's requests.
        self.request_listeners: list[Callable[[Request], None]] = (
            request_listeners if request_listeners is not None else [])
        self.closed = False
        self._wakeup_pending = False
        self.control: ResponseHook | None = None   # set by KafkaServer (test control)
        # KafkaApis.handle, for requests served on their sender's thread (``handle_inline``)
        self.inline_handler: Callable[[Request], None] | None = None   # set by KafkaServer
        # the network processors by id (Kafka's RequestChannel.addProcessor), for throttling
        self._processors: dict[int, ResponseQueue] = {}

    # ------------------------------------------------------------------ senders
    def send_request(self, request: Request, timeout_s: float | None = None) -> bool:
        """Queue a request (blocks while the channel is full); false if closed or timed out."""
        if self.closed:
            return False
        if not request.start_time_ns:
            request.start_time_ns = _time.monotonic_ns()
        if self._queue.qsize() >= self.queue_size:
            deadline = None if timeout_s is None else _time.monotonic() + timeout_s
            with self._not_full:
                self._full_waiters += 1
                try:
                    while self._queue.qsize() >= self.queue_size and not self.closed:
                        remaining = None if deadline is None else deadline - _time.monotonic()
                        if remaining is not None and remaining <= 0:
                            return False
                        self._not_full.wait(0.05 if remaining is None else min(remaining, 0.05))
                finally:
                    self._full_waiters -= 1
            if self.closed:
                return False
        self._queue.put(request)
        if self.closed:  # raced with close(): make sure the sender hears back
            self._drain_closed()
        return True

    def handle_inline(self, request: Request) -> bool:
        """Serve an in-process request on the calling thread (the broker's ``KafkaApis``, as a
        handler would), false if closed. For replica fetchers (``broker.server.replica_fetcher`` says
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
        if self._queue.qsize() >= self.queue_size:
            self._wakeup_pending = False  # handlers are busy and drain after each request anyway
            return
        self._queue.put(WAKEUP)

    # ------------------------------------------------------------------ handlers
    def receive_request(self, timeout_s: float) -> Request | _Wakeup | None:
        """The next Request, ``WAKEUP``, or None on timeout (or a shutdown marker)."""
        try:
            item = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if self._full_waiters:
            with self._not_full:
                self._not_full.notify()
        if item is WAKEUP:
            self._wakeup_pending = False
            return item
        if item is not None:
            item.dequeue_time_ns = _time.monotonic_ns()
        return item

    def send_response(self, request: Request, body: ResponseBody, close_connection: bool = False) -> None:
        control = self.control
        if control is not None and control.on_response(self.broker_id, request, body, close_connection,
                                                       self.deliver_response):
            return
        self.deliver_response(request, body, close_connection)

    def deliver_response(self, request: Request, body: ResponseBody, close_connection: bool = False) -> None:
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

    # ------------------------------------------------------------------ throttling (KIP-219)
    def add_processor(self, processor_id: int, processor: ResponseQueue) -> None:
        """Called by the socket server at start-up for each network processor."""
        self._processors[processor_id] = processor

    def start_throttling(self, request: Request) -> None:
        """Mute the request's connection after its response, until ``end_throttling``
        (Kafka's ``startThrottling``); nothing for in-process requests."""
        processor = self._processors.get(request.processor_id)
        if processor is not None:
            processor.enqueue_response(StartThrottlingResponse(request.connection_id))

    def end_throttling(self, request: Request) -> None:
        processor = self._processors.get(request.processor_id)
        if processor is not None:
            processor.enqueue_response(EndThrottlingResponse(request.connection_id))

    # ------------------------------------------------------------------ sizes and close
    def size(self) -> int:
        """Requests waiting (Kafka's RequestQueueSize)."""
        return self._queue.qsize()

    def snapshot(self) -> RequestChannelSnapshot:
        return RequestChannelSnapshot(self._queue.qsize())

    def close(self) -> None:
        """Stop accepting; in-process senders of queued requests get a disconnect (body None,
        close_connection)."""
        self.closed = True
        self._drain_closed()

    def _drain_closed(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, Request):
                try:
                    item.respond(Response(item, None, close_connection=True))
                except Exception:
                    _log.exception("respond_failed_on_close", broker_id=self.broker_id)

    def put_shutdown_markers(self, count: int) -> None:
        for _ in range(count):
            self._queue.put(None)
