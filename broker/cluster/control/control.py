"""ClusterControl: making an embedded cluster misbehave on purpose, at an exact moment.

One per ``EmbeddedCluster`` (``cluster.control``; the cluster's own methods delegate here).
It sits on the request path through two hooks and otherwise drives the cluster's controller:

* ``on_request`` (called by ``KafkaApis.handle`` before the handler): a request to an isolated
  broker gets its connection closed; a request matching an error injection (``faults``) takes
  that injection's next entry and is answered with the error in the API's own response shape
  (``protocol.error_response``: every partition, group or key the request named carries it), or
  its connection is closed (``DISCONNECT``); an interceptor registered for the API sees the
  request and may answer it instead of the broker.
* ``on_response`` (called by ``RequestChannel.send_response`` for every answer, delayed ones
  included): records the request and its answer (``recorder``), turns any answer of an
  isolated broker into a closed connection, and delays the answer by the broker's (or
  broker and API's) latency on a timer of the cluster's clock, as Kafka's quota throttling
  delays a response: the handler thread is free at once and other connections are not slowed.
  A connection has one request in flight (the network layer mutes it), so a delayed answer
  never overtakes another one.

Only client requests (from a network connection) are touched: in-process requests (replica
fetchers, ``EmbeddedCluster.produce``) pass unchanged, so injections never break replication.

Isolation is a network partition of one broker: its client connections are closed and new
ones are closed at their first request (the listener stays bound: clients see a reset rather
than a refused connection), its replica fetchers stall, and the controller fences it as KRaft
does once the broker's heartbeats stop: its leaderships move to other ISR members with a
leader-epoch bump and it leaves every ISR. The broker itself keeps running and still believes
what it last heard (its ISR changes are refused as stale). ``heal`` unfences it: it hears the
current partition states, becomes follower, truncates where its log diverged, catches up and
rejoins the ISR. Difference from Kafka on purpose: fencing happens at once rather than after
``broker.session.timeout.ms``, as ``stop_broker`` fences at once.

Every operation is logged (one structlog event, warning level so a failing test's output
names what was done to the cluster) and counted in ``counts`` (exported as
``kafka_emu_control_actions_total{action=...}`` when the cluster serves metrics).

Locking: ``_lock`` guards the latency table, the interceptors, the isolated set, ``counts``
and the lazily created latency timer; the fault table has its own lock. The hooks read the
tables without the lock (dict and set reads are atomic in CPython; a change races only with
requests already in flight). ``_local`` carries the fault kind from ``on_request`` to the
``on_response`` it triggers on the same thread.
"""
from __future__ import annotations

import contextlib
import threading
from collections import Counter, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TypeAlias

import structlog

from kafka_emu.broker.apis import APIS, api_name
from kafka_emu.broker.cluster.control import time_control
from kafka_emu.broker.cluster.control.faults import (
    DISCONNECT,
    ErrorInjection,
    FaultTable,
    api_key,
    error_name,
    new_injection,
    request_facts,
)
from kafka_emu.broker.cluster.control.entity_json import JsonValue, from_json_value
from kafka_emu.broker.cluster.control.recorder import DEFAULT_CAPACITY, RequestRecord, RequestRecorder
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.broker.server.partition_state import PartitionState
from kafka_emu.broker.protocol.adapter import response_schema
from kafka_emu.broker.protocol.codec import RequestBody, ResponseBody
from kafka_emu.broker.protocol.error_response import build_error_response
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.records import partition_for
from kafka_emu.timer import SystemTimer, SystemTimerReaper, TimerTask

if TYPE_CHECKING:
    from kio.static.protocol import ResponsePayload

    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    from kafka_emu.broker.network.request_channel import Request, RequestChannel
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.server.kafka_server import KafkaServer

_log = structlog.get_logger("broker.control")

PRODUCE_KEY = int(ApiKeys.PRODUCE)   # an int: compared with every request's key
# RequestChannel.deliver_response: (request, response body or None, close the connection)
Deliver: TypeAlias = Callable[["Request", ResponseBody | None, bool], None]
# An interceptor's answer: a response entity, a dict of its fields, or None (the broker answers)
Interceptor: TypeAlias = Callable[["ControlRequest"], "ResponsePayload | dict[str, object] | None"]


class UnknownBrokerError(LookupError):
    """A control operation named a broker the cluster does not have."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True, eq=False)
class ControlRequest:
    """What an interceptor sees: the decoded request (``body``; its fields are also readable
    directly, ``request.topics``) and where it came from. ``response_class`` is the kio class
    of the answer for this version; ``error_response(code)`` builds the broker's error answer."""

    api: str
    api_key: int
    api_version: int
    broker: int
    client_id: str | None
    connection: str
    correlation_id: int
    body: RequestBody

    @property
    def response_class(self) -> type:
        return response_schema(self.api_key, self.api_version)

    def error_response(self, code: int) -> ResponsePayload:
        return build_error_response(self.api_key, self.api_version, self.body, code)

    def __getattr__(self, name: str) -> Any:   # Any: whatever field the request's entity has
        return getattr(self.__dict__["body"], name)


@dataclass
class RegistryErrorInjection:
    """Queued schema registry error codes, for requests of ``method`` and ``endpoint`` (any when None)."""

    errors: deque[int]
    method: str | None = None
    endpoint: str | None = None
    injected: int = 0

    def matches(self, method: str, endpoint: str) -> bool:
        return bool(self.errors) and self.method in (None, method) and self.endpoint in (None, endpoint)

    def describe(self) -> dict[str, Any]:
        return {"errors": list(self.errors), "method": self.method, "endpoint": self.endpoint,
                "injected": self.injected}


class _DelayedResponse(TimerTask):
    __slots__ = ("deliver", "request", "body", "close_connection")

    def __init__(self, delay_ms: int, deliver: Deliver, request: Request, body: ResponseBody | None,
                 close: bool) -> None:
        super().__init__(delay_ms)
        self.deliver = deliver
        self.request = request
        self.body = body
        self.close_connection = close

    def run(self) -> None:
        self.deliver(self.request, self.body, self.close_connection)


class ClusterControl:
    def __init__(self, cluster: EmbeddedCluster, record_requests: bool | int = False) -> None:
        self.cluster = cluster
        self._lock = threading.Lock()
        self._local = threading.local()
        self.faults = FaultTable()
        self._latency: dict[tuple[int, int | None], int] = {}   # (broker, api key or None) -> ms
        self._interceptors: dict[int, Interceptor] = {}
        self._isolated: set[int] = set()
        self.counts: Counter[str] = Counter()
        self.recorder: RequestRecorder | None = None
        if record_requests:
            capacity = DEFAULT_CAPACITY if record_requests is True else int(record_requests)
            self.recorder = RequestRecorder(capacity)
        self._latency_reaper: SystemTimerReaper | None = None
        # schema registry faults: queued error codes (with their method/endpoint filters) and a latency
        self._registry_errors: list[RegistryErrorInjection] = []
        self._registry_latency_ms = 0
        # What the hooks must look at (recomputed on every change, read without the lock).
        self._request_work = False
        self._response_work = self.recorder is not None

    # ------------------------------------------------------------------ bookkeeping
    def _changed_locked(self) -> None:
        self._request_work = bool(self._isolated or self._interceptors or self.faults.pending())
        self._response_work = bool(self.recorder is not None or self._isolated or self._latency)

    def _event(self, action: str, **fields: object) -> None:
        with self._lock:
            self.counts[action] += 1
        _log.warning("control_" + action, **fields)

    # ------------------------------------------------------------------ hooks
    def on_request(self, apis: KafkaApis, request: Request) -> bool:
        """True if the request was answered here (the handler must not run)."""
        if not self._request_work or request.processor_id < 0:
            return False
        broker = apis.broker_id
        channel = apis.request_channel
        if broker in self._isolated:
            self._answer(channel, request, None, True, "isolated")
            return True
        taken = self.faults.take(request_facts(request.api_key, broker, request.body, apis.metadata)) \
            if self.faults.has_api(request.api_key) else None
        if taken is not None:
            injection, code = taken
            with self._lock:
                self._changed_locked()
            self._event("error_injected", broker=broker, api=api_name(request.api_key),
                        error=error_name(code), client_id=request.client_id,
                        correlation_id=request.correlation_id, remaining=len(injection.errors))
            if code == DISCONNECT:
                self._answer(channel, request, None, True, "disconnect")
                return True
            if code != Errors.NONE:
                if request.api_key == PRODUCE_KEY and int(getattr(request.body, "acks", -1)) == 0:
                    # a failed acks=0 produce closes the connection (Kafka's way to tell the client)
                    self._answer(channel, request, None, True, "error")
                else:
                    body = build_error_response(request.api_key, request.api_version, request.body, code)
                    self._answer(channel, request, body, False, "error")
                return True
        fn = self._interceptors.get(request.api_key)
        if fn is not None:
            view = ControlRequest(api_name(request.api_key), request.api_key, request.api_version, broker,
                                  request.client_id, request.connection_id, request.correlation_id, request.body)
            answer = fn(view)
            if answer is not None:
                body = from_json_value(view.response_class, answer)
                self._event("request_intercepted", broker=broker, api=view.api,
                            client_id=request.client_id, correlation_id=request.correlation_id)
                self._answer(channel, request, body, False, "intercept")
                return True
        return False

    def _answer(self, channel: RequestChannel, request: Request, body: ResponseBody | None, close: bool,
                fault: str) -> None:
        self._local.fault = fault
        try:
            channel.send_response(request, body, close_connection=close)
        finally:
            self._local.fault = None

    def on_response(self, broker: int, request: Request, body: ResponseBody | None, close: bool,
                    deliver: Deliver) -> bool:
        """True if the answer was taken over here (delivered later, or replaced)."""
        if not self._response_work or request.processor_id < 0:
            return False
        fault = getattr(self._local, "fault", None)
        isolated = broker in self._isolated
        if isolated:
            body, close, fault = None, True, "isolated"
        if self.recorder is not None:
            self.recorder.record(broker, request, body, close, fault)
        delay = self._latency.get((broker, request.api_key)) or self._latency.get((broker, None)) or 0
        if delay > 0 and not close:
            self._latency_timer().add(_DelayedResponse(delay, deliver, request, body, close))
            return True
        if isolated:
            deliver(request, body, close)
            return True
        return False

    def _latency_timer(self) -> SystemTimerReaper:
        with self._lock:
            if self._latency_reaper is None:
                timer = SystemTimer("control-latency", time=self.cluster.time)
                self._latency_reaper = SystemTimerReaper("control-latency-reaper", timer)
            return self._latency_reaper

    # ------------------------------------------------------------------ faults
    def inject_errors(self, api: str | int, errors: Iterable[str | int], *, broker: int | None = None,
                      topic: str | None = None, partition: int | None = None,
                      group: str | None = None) -> ErrorInjection:
        if broker is not None:
            self._check_broker(broker)
        injection = new_injection(api, errors, broker=broker, topic=topic, partition=partition, group=group)
        self.faults.add(injection)
        with self._lock:
            self._changed_locked()
        _log.warning("control_errors_queued", **injection.describe())
        return injection

    def set_latency(self, broker: int, ms: int, api: str | int | None = None) -> None:
        """Delay every answer of ``broker`` (of one API, when given) by ``ms``; 0 removes it."""
        self._check_broker(broker)
        if ms < 0:
            raise ValueError("latency must be >= 0 ms")
        key = None if api is None else api_key(api)
        with self._lock:
            if ms:
                self._latency[(broker, key)] = int(ms)
            else:
                self._latency.pop((broker, key), None)
            self._changed_locked()
        self._event("latency_set", broker=broker, api=None if key is None else APIS[key].name, ms=ms)

    def intercept(self, api: str | int, fn: Interceptor | None) -> None:
        """``fn(request)`` answers requests of ``api`` (a response entity or a dict of its
        fields), or returns None to let the broker answer; ``fn=None`` removes it."""
        key = api_key(api)
        with self._lock:
            if fn is None:
                self._interceptors.pop(key, None)
            else:
                self._interceptors[key] = fn
            self._changed_locked()
        self._event("interceptor_set", api=APIS[key].name, removed=fn is None)

    def answer_with(self, api: str | int, response: dict[str, object], count: int = 1) -> None:
        """Answer the next ``count`` requests of ``api`` with ``response`` (a dict of the response's
        fields, built for each request's version), then let the broker answer again: an
        interceptor for clients that cannot pass a callable (``POST /v1/faults/responses``).
        ValueError now if a field is unknown to the API's newest response version."""
        key = api_key(api)
        if count <= 0:
            raise ValueError("count must be positive")
        from_json_value(response_schema(key, APIS[key].max_version), response)
        left = [count]
        lock = threading.Lock()

        def answer(request: ControlRequest) -> dict[str, object] | None:
            with lock:
                if left[0] <= 0:
                    return None
                left[0] -= 1
                if left[0] == 0 and self._interceptors.get(key) is answer:
                    self.intercept(key, None)
            return response

        self.intercept(key, answer)

    # ------------------------------------------------------------------ schema registry faults
    def inject_registry_errors(self, errors: Iterable[int], *, method: str | None = None,
                               endpoint: str | None = None) -> RegistryErrorInjection:
        """The next schema registry requests (of ``method`` and ``endpoint``, a route template
        such as ``/schemas/ids/{id}``, when given) answer these Confluent error codes, one each
        (50001: status 500; 40401: 404; 409: 409), before the registry looks at them."""
        codes = deque(int(e) for e in errors)
        if not codes or any(not 400 <= (c if c < 1000 else c // 100) <= 599 for c in codes):
            raise ValueError("errors must be Confluent error codes (such as 50001, 40401, 409) "
                             "whose status is 4xx or 5xx")
        injection = RegistryErrorInjection(codes, None if method is None else method.upper(), endpoint)
        with self._lock:
            self._registry_errors.append(injection)
        self._event("registry_errors_queued", **injection.describe())
        return injection

    def set_registry_latency(self, ms: int) -> None:
        """Delay every schema registry answer by ``ms`` (0 removes it)."""
        if ms < 0:
            raise ValueError("latency must be >= 0 ms")
        with self._lock:
            self._registry_latency_ms = int(ms)
        self._event("registry_latency_set", ms=ms)

    def registry_fault(self, method: str, endpoint: str) -> tuple[int, int | None] | None:
        """(latency ms, error code or None) for one registry request; None when nothing applies
        (called by ``schema_registry.rest`` before each request)."""
        if not self._registry_errors and not self._registry_latency_ms:
            return None
        code = None
        with self._lock:
            for injection in self._registry_errors:
                if injection.matches(method, endpoint):
                    code = injection.errors.popleft()
                    injection.injected += 1
                    break
            self._registry_errors = [i for i in self._registry_errors if i.errors]
            latency = self._registry_latency_ms
        if code is not None:
            self._event("registry_error_injected", method=method, endpoint=endpoint, error=code)
        return latency, code

    def clear_faults(self) -> None:
        """Remove every injection, latency and interceptor, and heal every isolated broker
        (logged and counted only when there was something to clear: a test suite may call it
        before every test)."""
        dropped = self.faults.clear()
        with self._lock:
            isolated = sorted(self._isolated)
            latencies, interceptors = len(self._latency), len(self._interceptors)
            dropped += len(self._registry_errors)
            latencies += bool(self._registry_latency_ms)
            self._latency.clear()
            self._interceptors.clear()
            self._registry_errors.clear()
            self._registry_latency_ms = 0
            self._changed_locked()
        for broker in isolated:
            self.heal(broker)
        if dropped or isolated or latencies or interceptors:
            self._event("faults_cleared", injections=dropped, latencies=latencies,
                        interceptors=interceptors, healed=isolated)

    @contextlib.contextmanager
    def scoped(self, api: str | int, errors: Iterable[str | int], *, broker: int | None = None,
               topic: str | None = None, partition: int | None = None,
               group: str | None = None) -> Iterator[ErrorInjection]:
        try:
            yield self.inject_errors(api, errors, broker=broker, topic=topic, partition=partition, group=group)
        finally:
            self.clear_faults()

    # ------------------------------------------------------------------ brokers and leaders
    def _check_broker(self, broker: int) -> None:
        if broker not in self.cluster.servers:
            raise UnknownBrokerError(f"unknown broker {broker} (brokers: {sorted(self.cluster.servers)})")

    def _running(self, broker: int) -> KafkaServer:
        self._check_broker(broker)
        server = self.cluster.servers[broker]
        if server.stopped:
            raise ValueError(f"broker {broker} is stopped")
        return server

    def is_isolated(self, broker: int) -> bool:
        return broker in self._isolated

    def isolate(self, broker: int) -> None:
        server = self._running(broker)
        with self._lock:
            if broker in self._isolated:
                return
            self._isolated.add(broker)
            self._changed_locked()
        closed = server.socket_server.close_connections() if server.socket_server is not None else 0
        server.fetcher_manager.set_paused(True)
        changed = self.cluster.metadata.broker_stopped(broker)   # the controller fences it
        self._event("broker_isolated", broker=broker, connections_closed=closed,
                    partitions_changed=len(changed))

    def heal(self, broker: int) -> None:
        self._check_broker(broker)
        with self._lock:
            if broker not in self._isolated:
                return
            self._isolated.discard(broker)
            self._changed_locked()
        server = self.cluster.servers[broker]
        if not server.stopped:
            server.broker_info.request_channel = server.request_channel
            self.cluster.metadata.broker_started(server.broker_info)   # unfence; it hears the states
            server.fetcher_manager.set_paused(False)
        self._event("broker_healed", broker=broker)

    def forget_isolation(self, broker: int) -> None:
        """A restarted broker starts connected (its old server's isolation ends with it)."""
        with self._lock:
            self._isolated.discard(broker)
            self._changed_locked()

    def move_leader(self, topic: str, partition: int, broker: int) -> PartitionState:
        self._check_broker(broker)
        state = self.cluster.metadata.elect_leader(topic, partition, broker)
        self._event("leader_moved", topic=topic, partition=partition, leader=broker,
                    leader_epoch=state.leader_epoch)
        return state

    def move_group_coordinator(self, group_id: str, broker: int) -> int:
        """Move the leadership of ``group_id``'s ``__consumer_offsets`` partition (the old
        coordinator unloads the group, the new one loads it); the partition."""
        self._check_broker(broker)
        self.cluster.ensure_offsets_topic()
        topic = self.cluster.metadata.topic(OFFSETS_TOPIC)
        partition = partition_for(group_id, len(topic.partitions))
        state = self.cluster.metadata.elect_leader(OFFSETS_TOPIC, partition, broker)
        self._event("coordinator_moved", group_id=group_id, partition=partition, coordinator=broker,
                    leader_epoch=state.leader_epoch)
        return partition

    # ------------------------------------------------------------------ time
    def advance_time(self, ms: float) -> None:
        if ms < 0:
            raise ValueError("broker time only moves forward")
        rounds = time_control.advance(self.cluster.time, ms)
        self._event("time_advanced", ms=ms, due_rounds=rounds)

    # ------------------------------------------------------------------ recording
    def requests(self, api: str | int | None = None, broker: int | None = None,
                 client_id: str | None = None) -> list[RequestRecord]:
        if self.recorder is None:
            raise RuntimeError("request recording is off: EmbeddedCluster(record_requests=True)")
        return self.recorder.records(None if api is None else api_key(api), broker, client_id)

    def clear_requests(self) -> None:
        if self.recorder is not None:
            self.recorder.clear()

    # ------------------------------------------------------------------ state
    def action_counts(self) -> dict[str, int]:
        """``counts`` copied under the lock (the metrics scrape's snapshot)."""
        with self._lock:
            return dict(self.counts)

    def describe(self) -> dict[str, JsonValue]:
        """The active faults, as JSON-ready values (``GET /v1/faults``)."""
        with self._lock:
            latency = [{"broker": b, "api": None if k is None else APIS[k].name, "ms": ms}
                       for (b, k), ms in sorted(self._latency.items(),
                                                key=lambda item: (item[0][0], -1 if item[0][1] is None else item[0][1]))]
            interceptors = sorted(APIS[k].name for k in self._interceptors)
            isolated = sorted(self._isolated)
            counts = dict(self.counts)
            registry = {"errors": [i.describe() for i in self._registry_errors],
                        "latency_ms": self._registry_latency_ms}
        return {"errors": [i.describe() for i in self.faults.pending()], "latency": latency,
                "interceptors": interceptors, "isolated": isolated, "counts": counts,
                "schema_registry": registry,
                "time": {"mode": time_control.time_mode(self.cluster.time),
                         "now_ms": self.cluster.time.milliseconds()}}

    def close(self) -> None:
        with self._lock:
            reaper, self._latency_reaper = self._latency_reaper, None
        if reaper is not None:
            reaper.close()
