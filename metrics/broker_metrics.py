"""BrokerMetrics: everything one broker contributes to its cluster's registry.

Gauges and counters are read at scrape time from the broker's components (request channel,
handler pool, socket server, replica manager, group coordinator, purgatories, timers), so a
request never pays for a metric it does not feed; request histograms are fed by a listener on
the broker's ``RequestChannel.request_listeners``.

Components are looked up again on every scrape, because a broker that is stopped and
restarted builds new ones; the request listener is re-attached when the request channel
changes. Purgatories and timers are discovered by scanning the attributes of the broker, its
replica manager and its group coordinator, so a new purgatory shows up without code here
(``add_purgatory``/``add_timer`` register extra ones explicitly).

Locking: ``_lock`` guards this object's own mutable state (the attached channel, the idle-ratio
baselines, the explicit purgatory/timer lists, the fetch-expiry fallback counters). It is
never held while calling into a component, and no component lock is ever taken here beyond
what the hooks themselves take (a purgatory's ``watched()`` holds one shard lock at a time).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import structlog

from kafka_emu.metrics import names
from kafka_emu.metrics.hooks import attribute_values, component, mapping_values, read, read_number
from kafka_emu.metrics.api_names import is_from_follower
from kafka_emu.metrics.request_metrics import RequestMetrics

_log = structlog.get_logger("metrics.broker_metrics")

# How components are reached from a broker object; the first present name wins.
REQUEST_CHANNEL = ("request_channel", "data_plane_request_channel")
HANDLER_POOL = ("request_handler_pool", "handler_pool", "data_plane_request_handler_pool")
SOCKET_SERVER = ("socket_server",)
REPLICA_MANAGER = ("replica_manager",)
GROUP_COORDINATOR = ("group_coordinator", "coordinator")
TOPIC_STATS = ("stats", "broker_topic_stats", "topic_stats")

_GROUP_STATES = {
    "preparingrebalance": "PreparingRebalance",
    "completingrebalance": "CompletingRebalance",
    "awaitingsync": "CompletingRebalance",
    "stable": "Stable",
    "dead": "Dead",
    "empty": "Empty",
}


def normalize_group_state(state: Any) -> str:
    """Kafka's state name for an enum member or string (``AWAITING_SYNC`` → ``CompletingRebalance``)."""
    for candidate in (getattr(state, "value", None), getattr(state, "name", None), state):
        if isinstance(candidate, str):
            key = candidate.replace("_", "").replace("-", "").replace(" ", "").lower()
            if key in _GROUP_STATES:
                return _GROUP_STATES[key]
    return str(getattr(state, "name", state))


def fetcher_type(operation: Any) -> str:
    """``follower`` or ``consumer`` for an expired DelayedFetch, from whatever it exposes."""
    for holder in (operation, getattr(operation, "params", None), getattr(operation, "fetch_params", None)):
        if holder is None:
            continue
        flag = getattr(holder, "is_from_follower", None)
        if flag is None:
            flag = getattr(holder, "is_follower", None)
        if flag is not None:
            return "follower" if (flag() if callable(flag) else flag) else "consumer"
        replica_id = getattr(holder, "replica_id", None)
        if replica_id is not None:
            return "follower" if int(replica_id) >= 0 else "consumer"
        request = getattr(holder, "request", None)
        if request is not None and getattr(request, "body", None) is not None:
            return "follower" if is_from_follower(request.body) else "consumer"
    return "consumer"


def _is_purgatory(value: Any) -> bool:
    from kafka_emu.timer.purgatory import DelayedOperationPurgatory
    return isinstance(value, DelayedOperationPurgatory)


def _is_timer(value: Any) -> bool:
    from kafka_emu.timer.system_timer import Timer
    return isinstance(value, Timer)


def _timer_identity(timer: Any) -> tuple[Any, str]:
    """The innermost timer (a SystemTimerReaper wraps one) and its label."""
    inner = timer
    while getattr(inner, "timer", None) is not None and _is_timer(getattr(inner, "timer")):
        inner = inner.timer
    return inner, str(getattr(inner, "executor_name", None) or type(inner).__name__)


def _sum_hooks(objects: list[Any], *hook_names: str) -> float | None:
    """Sum of a numeric hook over objects (threads); None if none of them has it."""
    values = [v for v in (read_number(o, *hook_names) for o in objects) if v is not None]
    return float(sum(values)) if values else None


@dataclass
class _IdleBaseline:
    """Previous (wall, idle) reading for an idle-fraction gauge, and the last value reported."""

    wall_ns: int = 0
    idle_ns: float = 0.0
    busy_ns: float = 0.0
    value: float | None = None


@dataclass
class _Samples:
    """The samples of one scrape: family name → list of (label values, value)."""

    values: dict[str, list[tuple[tuple[str, ...], Any]]] = field(default_factory=dict)

    def add(self, spec: names.MetricSpec, value: Any, *labels: str) -> None:
        if value is None:
            return
        self.values.setdefault(spec.name, []).append((labels, value))


class BrokerMetrics:
    """One broker's metrics source; create through ``ClusterMetrics.register_broker``."""

    # An idle gauge is recomputed at most this often; scrapes in between report the last value,
    # so two scrapers (or a scraper and a test) do not shrink each other's windows to nothing.
    IDLE_MIN_WINDOW_NS = 500_000_000

    def __init__(self, broker: Any, broker_id: int, request_metrics: RequestMetrics | None,
                 clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self.broker = broker
        self.broker_id = broker_id
        self._label = str(broker_id)
        self._request_metrics = request_metrics
        self._listener = request_metrics.listener_for(broker_id) if request_metrics else None
        self._clock_ns = clock_ns
        self._lock = threading.Lock()
        self._attached_channel: Any = None
        self._handler_idle = _IdleBaseline()
        self._network_idle = _IdleBaseline()
        self._extra_purgatories: list[Any] = []
        self._extra_timers: list[Any] = []
        # Fallback for DelayedFetchMetrics when the replica manager keeps no counters itself:
        # an expiration listener on the Fetch purgatory (one writer: that purgatory's executor).
        self._fetch_expiry_purgatory: Any = None
        self._fetch_expiry_listener: Callable[[Any], None] | None = None
        self._fetch_expirations = {"follower": 0, "consumer": 0}
        self.retired = False  # set by ClusterMetrics when the broker stopped or was replaced
        self.ensure_attached()

    # ------------------------------------------------------------------ components
    def _broker_component(self, names_: tuple[str, ...]) -> Any:
        return component(self.broker, *names_)

    @property
    def request_channel(self) -> Any:
        return self._broker_component(REQUEST_CHANNEL)

    @property
    def handler_pool(self) -> Any:
        return self._broker_component(HANDLER_POOL)

    @property
    def socket_server(self) -> Any:
        return self._broker_component(SOCKET_SERVER)

    @property
    def replica_manager(self) -> Any:
        return self._broker_component(REPLICA_MANAGER)

    @property
    def group_coordinator(self) -> Any:
        return self._broker_component(GROUP_COORDINATOR)

    def _topic_stats(self) -> Any:
        """Kafka's BrokerTopicStats equivalent: on the replica manager, else on the broker."""
        return component(self.replica_manager, *TOPIC_STATS) or self._broker_component(TOPIC_STATS)

    def add_purgatory(self, purgatory: Any) -> None:
        """Export a purgatory that attribute discovery would not find."""
        with self._lock:
            self._extra_purgatories.append(purgatory)

    def add_timer(self, timer: Any) -> None:
        """Export a timer that attribute discovery would not find."""
        with self._lock:
            self._extra_timers.append(timer)

    def purgatories(self) -> list[Any]:
        """Every purgatory of the broker, each once, in discovery order."""
        found: dict[int, Any] = {}
        with self._lock:
            extra = list(self._extra_purgatories)
        owners = [self.broker, self.replica_manager, self.group_coordinator]
        for value in extra + [v for owner in owners for v in attribute_values(owner)]:
            if _is_purgatory(value):
                found.setdefault(id(value), value)
        return list(found.values())

    def timers(self) -> dict[str, Any]:
        """label → innermost timer: every purgatory's timer plus standalone timers."""
        with self._lock:
            candidates = list(self._extra_timers)
        candidates += [p.timeout_timer for p in self.purgatories()]
        for owner in (self.broker, self.replica_manager, self.group_coordinator):
            candidates += [v for v in attribute_values(owner) if _is_timer(v)]
        found: dict[str, Any] = {}
        seen: set[int] = set()
        for timer in candidates:
            inner, label = _timer_identity(timer)
            if id(inner) in seen:
                continue
            seen.add(id(inner))
            if label in found:
                label = f"{label}#{len(seen)}"
            found[label] = inner
        return found

    # ------------------------------------------------------------------ listeners
    def ensure_attached(self) -> None:
        """Attach the request listener to the current request channel (once per channel)."""
        if self.retired:
            return
        channel = self.request_channel
        with self._lock:
            previous = self._attached_channel
            if channel is previous:
                return
            self._attached_channel = channel
        if previous is not None:
            self._remove_listener(previous)
        if channel is not None and self._listener is not None:
            listeners = getattr(channel, "request_listeners", None)
            if listeners is None:
                _log.debug("no_request_listeners", broker_id=self.broker_id)
            elif self._listener not in listeners:
                listeners.append(self._listener)

    def _remove_listener(self, channel: Any) -> None:
        listeners = getattr(channel, "request_listeners", None)
        if listeners is not None and self._listener is not None:
            try:
                listeners.remove(self._listener)
            except ValueError:
                pass

    def _ensure_fetch_expiry_listener(self, fetch_purgatory: Any) -> None:
        with self._lock:
            if fetch_purgatory is self._fetch_expiry_purgatory:
                return
            old, old_listener = self._fetch_expiry_purgatory, self._fetch_expiry_listener
            self._fetch_expiry_purgatory = fetch_purgatory
            counts = self._fetch_expirations

            def on_fetch_expired(operation: Any) -> None:
                counts[fetcher_type(operation)] += 1  # single writer: the purgatory's executor

            self._fetch_expiry_listener = on_fetch_expired
        if old is not None and old_listener is not None:
            try:
                old.expiration_listeners.remove(old_listener)
            except ValueError:
                pass
        if fetch_purgatory is not None:
            fetch_purgatory.expiration_listeners.append(on_fetch_expired)

    def detach(self) -> None:
        """Remove every listener this object installed (on unregister or cluster close)."""
        with self._lock:
            channel, self._attached_channel = self._attached_channel, None
            fetch, listener = self._fetch_expiry_purgatory, self._fetch_expiry_listener
            self._fetch_expiry_purgatory = self._fetch_expiry_listener = None
        if channel is not None:
            self._remove_listener(channel)
        if fetch is not None and listener is not None:
            try:
                fetch.expiration_listeners.remove(listener)
            except ValueError:
                pass

    # ------------------------------------------------------------------ idle fractions
    def _idle_fraction(self, baseline: _IdleBaseline, idle_ns: float | None, threads: float | None,
                       busy_ns: float | None = None) -> float | None:
        """Idle fraction since the previous computation, clamped to [0, 1].

        With a busy counter: Δidle / (Δidle + Δbusy), which stays right when the threads add to
        their counters in chunks (after each poll); otherwise Δidle / (Δwall × threads).
        """
        if idle_ns is None or not threads:
            return None
        now = self._clock_ns()
        with self._lock:
            if baseline.wall_ns == 0:
                baseline.wall_ns, baseline.idle_ns, baseline.busy_ns = now, idle_ns, busy_ns or 0.0
                return baseline.value
            elapsed = now - baseline.wall_ns
            if elapsed <= 0 or (elapsed < self.IDLE_MIN_WINDOW_NS and baseline.value is not None):
                return baseline.value
            d_idle = idle_ns - baseline.idle_ns
            if busy_ns is not None:
                d_total = d_idle + (busy_ns - baseline.busy_ns)
                if d_total <= 0:
                    return baseline.value
            else:
                d_total = elapsed * threads
            baseline.value = min(1.0, max(0.0, d_idle / d_total))
            baseline.wall_ns, baseline.idle_ns, baseline.busy_ns = now, idle_ns, busy_ns or 0.0
            return baseline.value

    # ------------------------------------------------------------------ scrape
    def collect_into(self, out: _Samples) -> None:
        """Add this broker's samples; each section fails alone (logged) without losing the rest."""
        self.ensure_attached()
        for section in (self._collect_purgatories, self._collect_timers, self._collect_request_path,
                        self._collect_replica_manager, self._collect_coordinator):
            try:
                section(out)
            except Exception:
                _log.warning("metrics_section_failed", broker_id=self.broker_id,
                             section=section.__name__, exc_info=True)

    def _collect_purgatories(self, out: _Samples) -> None:
        b = self._label
        produce = fetch = None
        for purgatory in self.purgatories():
            name = str(purgatory.purgatory_name)
            out.add(names.PURGATORY_SIZE, purgatory.watched(), b, name)
            out.add(names.NUM_DELAYED, purgatory.num_delayed(), b, name)
            out.add(names.PURGATORY_EXPIRATIONS, purgatory.expiration_count, b, name)
            out.add(names.PURGATORY_PURGES, purgatory.purge_count, b, name)
            if name == "Produce":
                produce = purgatory
            elif name == "Fetch":
                fetch = purgatory
        stats = self._topic_stats()
        produce_expired = read_number(stats, "produce_expirations")
        if produce_expired is None and produce is not None:
            produce_expired = produce.expiration_count
        out.add(names.DELAYED_PRODUCE_EXPIRES, produce_expired, b)
        fetch_expired = read(stats, "fetch_expirations")
        if fetch_expired is None and fetch is not None:
            self._ensure_fetch_expiry_listener(fetch)
            fetch_expired = dict(self._fetch_expirations)
        if isinstance(fetch_expired, dict):
            for kind in ("follower", "consumer"):
                out.add(names.DELAYED_FETCH_EXPIRES, fetch_expired.get(kind, 0), b, kind)

    def _collect_timers(self, out: _Samples) -> None:
        for label, timer in self.timers().items():
            out.add(names.TIMER_PENDING, timer.size(), self._label, label)
            expired = getattr(timer, "expired_task_count", None)
            if expired is not None:
                out.add(names.TIMER_EXPIRED, expired, self._label, label)

    def _collect_request_path(self, out: _Samples) -> None:
        b = self._label
        channel = self.request_channel
        # Not ``queue_size``: on the RequestChannel that is the capacity (queued.max.requests).
        queue_size = read_number(channel, "request_queue_size", "size")
        if queue_size is None:
            queue = component(channel, "request_queue", "queue", "_queue")
            queue_size = read_number(queue, "qsize")
        out.add(names.REQUEST_QUEUE_SIZE, queue_size, b)
        response_queue = read_number(channel, "response_queue_size")
        if response_queue is None:
            processors = list(mapping_values(component(self.socket_server, "processors")))
            response_queue = _sum_hooks(processors, "response_queue_size")
        out.add(names.RESPONSE_QUEUE_SIZE, response_queue, b)

        pool = self.handler_pool
        handlers = list(mapping_values(component(pool, "handlers", "runnables", "threads")))
        threads = read_number(pool, "num_threads", "thread_count")
        if threads is None and handlers:
            threads = float(len(handlers))
        idle_ns = read_number(pool, "idle_time_ns", "idle_ns")
        busy_ns = read_number(pool, "busy_time_ns", "busy_ns")
        if idle_ns is None and handlers:
            idle_ns = _sum_hooks(handlers, "idle_time_ns", "idle_ns")
            busy_ns = _sum_hooks(handlers, "busy_time_ns", "busy_ns")
        out.add(names.HANDLER_IDLE, self._idle_fraction(self._handler_idle, idle_ns, threads, busy_ns), b)
        if idle_ns is not None:
            out.add(names.HANDLER_IDLE_SECONDS, idle_ns / 1e9, b)
        out.add(names.HANDLER_THREADS, threads, b)

        server = self.socket_server
        if server is not None:
            direct = read_number(server, "network_processor_avg_idle_fraction",
                                 "network_processor_avg_idle_percent")
            if direct is None:
                processors = list(mapping_values(component(server, "processors", "data_plane_processors")))
                idle = read_number(server, "network_idle_time_ns")
                if idle is None and processors:
                    idle = _sum_hooks(processors, "idle_time_ns", "idle_ns")
                count = read_number(server, "num_processors") or (float(len(processors)) or None)
                direct = self._idle_fraction(self._network_idle, idle, count)
            out.add(names.NETWORK_IDLE, direct, b)

    def _collect_replica_manager(self, out: _Samples) -> None:
        rm = self.replica_manager
        if rm is None:
            return
        b = self._label
        out.add(names.UNDER_REPLICATED, read_number(rm, "under_replicated_partitions",
                                                    "under_replicated_partition_count"), b)
        out.add(names.PARTITION_COUNT, read_number(rm, "partition_count"), b)
        out.add(names.LEADER_COUNT, read_number(rm, "leader_count", "leader_partition_count"), b)
        out.add(names.UNDER_MIN_ISR, read_number(rm, "under_min_isr_partitions",
                                                 "under_min_isr_partition_count"), b)
        stats = self._topic_stats()
        shrinks = read_number(rm, "isr_shrink_count", "isr_shrinks")
        expands = read_number(rm, "isr_expand_count", "isr_expands")
        out.add(names.ISR_SHRINKS, shrinks if shrinks is not None else read_number(stats, "isr_shrinks"), b)
        out.add(names.ISR_EXPANDS, expands if expands is not None else read_number(stats, "isr_expands"), b)
        out.add(names.MESSAGES_IN, read_number(stats, "messages_in", "messages_in_count"), b)
        out.add(names.BYTES_IN, read_number(stats, "bytes_in", "bytes_in_count"), b)
        out.add(names.BYTES_OUT, read_number(stats, "bytes_out", "bytes_out_count"), b)

    def _collect_coordinator(self, out: _Samples) -> None:
        gc = self.group_coordinator
        if gc is None:
            return
        b = self._label
        counts = read(gc, "groups_by_state", "group_counts_by_state")
        members = read_number(gc, "num_members", "member_count")
        offsets = read_number(gc, "num_offsets", "offset_count")
        if counts is None:
            # Fallback: walk the group map without taking group locks (reads of a state field
            # and of len() are atomic; a group mid-transition is counted in either state).
            holder = component(gc, "group_manager", "group_metadata_manager") or gc
            groups = mapping_values(component(holder, "current_groups", "groups", "_groups"))
            counts = {}
            member_total = offset_total = 0
            for group in groups:
                state = normalize_group_state(getattr(group, "state", getattr(group, "current_state", "")))
                counts[state] = counts.get(state, 0) + 1
                member_total += len(getattr(group, "members", ()) or ())
                offset_total += len(getattr(group, "offsets", ()) or ())
            members = members if members is not None else member_total
            offsets = offsets if offsets is not None else offset_total
        counts = {normalize_group_state(k): v for k, v in dict(counts).items()}
        out.add(names.NUM_GROUPS, sum(counts.values()), b)
        for state, spec in names.GROUP_STATE_METRICS.items():
            out.add(spec, counts.get(state, 0), b)
        out.add(names.NUM_OFFSETS, offsets, b)
        out.add(names.GROUP_MEMBERS, members, b)
        # The coordinator's ``rebalance_count`` counts completed rebalances (→ Stable).
        completed = read_number(gc, "completed_rebalance_count", "rebalance_count")
        out.add(names.COMPLETED_REBALANCES, completed, b)
        out.add(names.REBALANCES_STARTED, read_number(gc, "rebalances_started", "prepare_rebalance_count"), b)
        total_ms = read_number(gc, "rebalance_time_ms_total")
        if completed is not None and total_ms is not None:
            out.add(names.REBALANCE_TIME, (completed, total_ms), b)
        out.add(names.REBALANCE_TIME_MAX, read_number(gc, "rebalance_time_ms_max"), b)
        expirations = read_number(gc, "heartbeat_expiration_count", "heartbeat_expirations")
        if expirations is None:
            heartbeat = next((p for p in self.purgatories() if p.purgatory_name == "Heartbeat"), None)
            expirations = heartbeat.expiration_count if heartbeat is not None else None
        out.add(names.HEARTBEAT_EXPIRATIONS, expirations, b)
