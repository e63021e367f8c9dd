"""BrokerMetrics: the samples one broker contributes to its cluster's registry.

Everything is read from one ``BrokerSnapshot`` per scrape (``KafkaServer.snapshot()``, made of
each component's own snapshot, see ``metrics.sources``), so a request never pays for a metric it
does not feed and a scrape reads nothing else of the broker. Request histograms and error counts
are fed by a listener on the broker's ``request_listeners``, attached once at registration.

Idle fractions (Kafka's RequestHandlerAvgIdlePercent and NetworkProcessorAvgIdlePercent) are
Δidle / Δcapacity between two computations; the first scrape after start uses the time since
the threads started, so both gauges are there from the first scrape on. Kafka's own gauges are
one-minute rates; here the window is the time since the previous computation, at least
``IDLE_MIN_WINDOW_NS`` (scrapes in between report the last value, so two scrapers do not shrink
each other's windows to nothing).

Locking: ``_lock`` guards the idle baselines; it is never held while calling into a component.
``retired`` is guarded by ``ClusterMetrics``' lock.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

from kafka_emu.metrics import names
from kafka_emu.metrics.request_metrics import RequestMetrics
from kafka_emu.metrics.sources import BrokerSnapshotView, BrokerSource

SampleValue = float | tuple[float, float]   # a number, or (count, sum) for a summary


@dataclass
class _IdleBaseline:
    """Previous (idle, capacity) reading of an idle-fraction gauge and the value reported."""

    at_ns: int = 0
    idle_ns: int = 0
    capacity_ns: int = 0
    value: float | None = None


@dataclass
class Samples:
    """The samples of one scrape: family name → list of (label values, value)."""

    values: dict[str, list[tuple[tuple[str, ...], SampleValue]]] = field(default_factory=dict)

    def add(self, spec: names.MetricSpec, value: SampleValue, *labels: str) -> None:
        self.values.setdefault(spec.name, []).append((labels, value))


def leader_high_watermarks(snapshots: list[BrokerSnapshotView]) -> dict[tuple[str, int], int]:
    """(topic, partition) → HW on its leader, over a cluster's brokers (for consumer lag)."""
    out: dict[tuple[str, int], int] = {}
    for snapshot in snapshots:
        rm = snapshot.replica_manager
        for log in rm.logs:
            if (log.topic, log.partition) in rm.leaders:
                out[(log.topic, log.partition)] = log.high_watermark
    return out


class BrokerMetrics:
    """One broker's metrics source; create through ``ClusterMetrics.register_broker``."""

    IDLE_MIN_WINDOW_NS = 500_000_000

    def __init__(self, broker: BrokerSource, request_metrics: RequestMetrics,
                 clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self.broker = broker
        self.broker_id = broker.broker_id
        self._label = str(broker.broker_id)
        self._listener = request_metrics.listener_for(broker.broker_id)
        self._clock_ns = clock_ns
        self._lock = threading.Lock()
        self._handler_idle = _IdleBaseline()
        self._network_idle = _IdleBaseline()
        self.retired = False  # set by ClusterMetrics when the broker stopped or was replaced
        broker.request_listeners.append(self._listener)

    def detach(self) -> None:
        """Remove the request listener (on unregister or cluster close); idempotent."""
        try:
            self.broker.request_listeners.remove(self._listener)
        except ValueError:
            pass

    # ------------------------------------------------------------------ idle fractions
    def _idle_fraction(self, baseline: _IdleBaseline, idle_ns: int, capacity_ns: int) -> float:
        """Idle fraction since the previous computation (since start the first time), in [0, 1].

        A window with no capacity yet (threads just started) reads 1.0: threads that have done
        nothing since they started are idle.
        """
        now = self._clock_ns()
        with self._lock:
            if baseline.value is not None and now - baseline.at_ns < self.IDLE_MIN_WINDOW_NS:
                return baseline.value
            d_capacity = capacity_ns - baseline.capacity_ns
            if d_capacity <= 0:
                value = baseline.value if baseline.value is not None else 1.0
            else:
                value = min(1.0, max(0.0, (idle_ns - baseline.idle_ns) / d_capacity))
            baseline.at_ns, baseline.idle_ns, baseline.capacity_ns = now, idle_ns, capacity_ns
            baseline.value = value
            return value

    # ------------------------------------------------------------------ scrape
    def collect_into(self, out: Samples, snapshot: BrokerSnapshotView,
                     high_watermarks: Mapping[tuple[str, int], int]) -> None:
        """Add this broker's samples from ``snapshot``; ``high_watermarks`` is the cluster's
        leader HWs (``leader_high_watermarks``), for the lag of the groups it coordinates."""
        self._collect_purgatories(out, snapshot)
        self._collect_request_path(out, snapshot)
        self._collect_replica_manager(out, snapshot)
        self._collect_coordinator(out, snapshot, high_watermarks)
        self._collect_transaction_coordinator(out, snapshot)
        self._collect_client_metrics(out, snapshot)
        self._collect_quotas(out, snapshot)
        self._collect_share_partitions(out, snapshot)

    def _collect_purgatories(self, out: Samples, snapshot: BrokerSnapshotView) -> None:
        b = self._label
        seen_timers: set[str] = set()
        for purgatory in snapshot.purgatories:
            out.add(names.PURGATORY_SIZE, purgatory.watched, b, purgatory.name)
            out.add(names.NUM_DELAYED, purgatory.num_delayed, b, purgatory.name)
            out.add(names.PURGATORY_EXPIRATIONS, purgatory.expirations, b, purgatory.name)
            out.add(names.PURGATORY_PURGES, purgatory.purges, b, purgatory.name)
            timer = purgatory.timer
            if timer.name not in seen_timers:   # purgatories may share one timer
                seen_timers.add(timer.name)
                out.add(names.TIMER_PENDING, timer.pending_tasks, b, timer.name)
                out.add(names.TIMER_EXPIRED, timer.expired_tasks, b, timer.name)
        stats = snapshot.replica_manager.stats
        out.add(names.DELAYED_PRODUCE_EXPIRES, stats.produce_expirations, b)
        out.add(names.DELAYED_FETCH_EXPIRES, stats.fetch_expirations_follower, b, "follower")
        out.add(names.DELAYED_FETCH_EXPIRES, stats.fetch_expirations_consumer, b, "consumer")
        out.add(names.DELAYED_DELETE_RECORDS_EXPIRES, stats.delete_records_expirations, b)

    def _collect_request_path(self, out: Samples, snapshot: BrokerSnapshotView) -> None:
        b = self._label
        out.add(names.REQUEST_QUEUE_SIZE, snapshot.request_channel.request_queue_size, b)
        pool = snapshot.handler_pool
        out.add(names.HANDLER_IDLE, self._idle_fraction(
            self._handler_idle, pool.idle_ns, pool.idle_ns + pool.busy_ns), b)
        out.add(names.HANDLER_IDLE_SECONDS, pool.idle_ns / 1e9, b)
        out.add(names.HANDLER_THREADS, pool.threads, b)
        server = snapshot.socket_server
        # Without listeners (in-process use) no response ever waits for a processor.
        out.add(names.RESPONSE_QUEUE_SIZE, server.response_queue_size if server is not None else 0, b)
        if server is not None:
            out.add(names.NETWORK_IDLE, self._idle_fraction(
                self._network_idle, server.idle_ns, server.capacity_ns), b)
            for listener, counters in server.authentication:
                for spec, key in names.AUTHENTICATION_METRICS:
                    out.add(spec, counters[key], b, listener)
            if server.memory_pool_size:   # only with queued.max.request.bytes
                out.add(names.MEMORY_POOL_AVAILABLE, server.memory_pool_available, b)
                out.add(names.MEMORY_POOL_USED, server.memory_pool_size - server.memory_pool_available, b)
                out.add(names.MEMORY_POOL_DEPLETED_TIME, server.memory_pool_depleted_ns / 1e6, b)

    def _collect_replica_manager(self, out: Samples, snapshot: BrokerSnapshotView) -> None:
        b = self._label
        rm = snapshot.replica_manager
        out.add(names.UNDER_REPLICATED, rm.under_replicated_partitions, b)
        out.add(names.PARTITION_COUNT, rm.partition_count, b)
        out.add(names.LEADER_COUNT, rm.leader_count, b)
        out.add(names.UNDER_MIN_ISR, rm.under_min_isr_partitions, b)
        out.add(names.ISR_SHRINKS, rm.stats.isr_shrinks, b)
        out.add(names.ISR_EXPANDS, rm.stats.isr_expands, b)
        for topic, stats in sorted(rm.stats.topics.items()):
            out.add(names.MESSAGES_IN, stats.messages_in, b, topic)
            out.add(names.BYTES_IN, stats.bytes_in, b, topic)
            out.add(names.BYTES_OUT, stats.bytes_out, b, topic)
            out.add(names.FAILED_PRODUCE, stats.failed_produce_requests, b, topic)
            out.add(names.FAILED_FETCH, stats.failed_fetch_requests, b, topic)
        out.add(names.LOG_MEMORY_BUDGET_DELETED, rm.log_memory_budget_deleted_bytes, b)
        for log in rm.logs:
            partition = str(log.partition)
            out.add(names.LOG_END_OFFSET, log.log_end_offset, b, log.topic, partition)
            out.add(names.LOG_START_OFFSET, log.log_start_offset, b, log.topic, partition)
            out.add(names.LOG_SIZE, log.size_bytes, b, log.topic, partition)
            out.add(names.LOG_NUM_SEGMENTS, log.num_segments, b, log.topic, partition)
            out.add(names.LAST_STABLE_OFFSET_LAG, log.last_stable_offset_lag, b, log.topic, partition)
        cleaner = snapshot.log_cleaner
        if cleaner is not None:
            out.add(names.CLEANER_MAX_DIRTY_PERCENT, cleaner.max_dirty_percent, b)
            out.add(names.CLEANER_TIME_SINCE_LAST_RUN, cleaner.time_since_last_run_ms, b)
            out.add(names.CLEANER_UNCLEANABLE_PARTITIONS, cleaner.uncleanable_partitions_count, b)
            out.add(names.CLEANER_RECOPY_PERCENT, cleaner.cleaner_recopy_percent, b)
            out.add(names.CLEANER_MAX_CLEAN_TIME, cleaner.max_clean_time_secs, b)

    def _collect_quotas(self, out: Samples, snapshot: BrokerSnapshotView) -> None:
        """Kafka's quota metrics, per client (metric tags) of each quota type in use."""
        b = self._label
        for manager in snapshot.quotas:
            value_spec, throttle_spec, queue_spec = names.QUOTA_METRICS[manager.quota_type]
            out.add(queue_spec, manager.queue_size, b)
            if manager.exempt_request_time is not None:
                out.add(names.QUOTA_EXEMPT_REQUEST_TIME, manager.exempt_request_time, b)
            for client in manager.clients:
                out.add(value_spec, client.value, b, client.user, client.client_id)
                out.add(throttle_spec, client.throttle_time_ms, b, client.user, client.client_id)
                if client.mutation_rate is not None:
                    out.add(names.QUOTA_MUTATION_RATE, client.mutation_rate, b, client.user, client.client_id)

    def _collect_transaction_coordinator(self, out: Samples, snapshot: BrokerSnapshotView) -> None:
        tc = snapshot.transaction_coordinator
        if tc is None:
            return
        b = self._label
        out.add(names.TXN_PARTITION_LOAD_TIME, (tc.partition_loads, tc.partition_load_time_ms_total), b)
        out.add(names.TXN_PARTITION_LOAD_TIME_MAX, tc.partition_load_time_ms_max, b)
        out.add(names.TXN_MARKER_QUEUE_SIZE, tc.marker_queue_size, b)
        out.add(names.TXN_PENDING_COMPLETION, tc.transactions_pending_completion, b)
        for state, count in tc.transactions_by_state.items():
            out.add(names.TXN_BY_STATE, count, b, state)

    def _collect_client_metrics(self, out: Samples, snapshot: BrokerSnapshotView) -> None:
        cm = snapshot.client_metrics
        if cm is None:
            return
        b = self._label
        out.add(names.CLIENT_METRICS_INSTANCES, len(cm.instances), b)
        out.add(names.CLIENT_METRICS_UNKNOWN_SUBSCRIPTION, cm.unknown_subscription_requests, b)
        for client in cm.instances:
            cid = client.client_instance_id
            out.add(names.CLIENT_METRICS_THROTTLE, client.throttles, b, cid)
            out.add(names.CLIENT_METRICS_PLUGIN_EXPORT, client.pushes, b, cid)
            out.add(names.CLIENT_METRICS_PLUGIN_ERROR, client.export_errors, b, cid)
            for metric, attributes, value in client.values:
                out.add(names.CLIENT_TELEMETRY, value, b, cid, client.client_id, metric, attributes)

    def _collect_share_partitions(self, out: Samples, snapshot: BrokerSnapshotView) -> None:
        sp = snapshot.share_partitions
        if sp is None:
            return
        b = self._label
        for ack_type, count in sp.acknowledgements.items():
            out.add(names.SHARE_RECORD_ACKNOWLEDGEMENTS, count, b, ack_type)
        out.add(names.SHARE_FETCH_REQUESTS, sp.share_fetches, b)
        out.add(names.SHARE_ACKNOWLEDGEMENT_REQUESTS, sp.share_acknowledges, b)
        out.add(names.SHARE_RECORD_LOCK_TIMEOUTS, sp.record_lock_timeouts, b)
        out.add(names.SHARE_SESSIONS, sp.share_sessions, b)
        for p in sp.partitions:
            labels = (b, p.group_id, p.topic, str(p.partition))
            out.add(names.SHARE_START_OFFSET, p.start_offset, *labels)
            out.add(names.SHARE_LAG, p.lag, *labels)

    def _collect_coordinator(self, out: Samples, snapshot: BrokerSnapshotView,
                             high_watermarks: Mapping[tuple[str, int], int]) -> None:
        gc = snapshot.group_coordinator
        if gc is None:
            return
        b = self._label
        out.add(names.NUM_GROUPS, sum(gc.groups_by_state.values()), b)
        for state, spec in names.GROUP_STATE_METRICS.items():
            out.add(spec, gc.groups_by_state[state], b)
        out.add(names.GROUP_COUNT, sum(gc.groups_by_state.values()), b, "classic")
        out.add(names.GROUP_COUNT, sum(gc.consumer_groups_by_state.values()), b, "consumer")
        for state, count in gc.consumer_groups_by_state.items():
            out.add(names.CONSUMER_GROUP_COUNT, count, b, state)
        out.add(names.CONSUMER_GROUP_REBALANCES, gc.consumer_rebalances, b)
        out.add(names.GROUP_COUNT, sum(gc.share_groups_by_state.values()), b, "share")
        for state, count in gc.share_groups_by_state.items():
            out.add(names.SHARE_GROUP_COUNT, count, b, state)
        out.add(names.SHARE_GROUP_REBALANCES, gc.share_rebalances, b)
        out.add(names.NUM_OFFSETS, len(gc.committed_offsets), b)
        out.add(names.GROUP_MEMBERS, gc.members, b)
        out.add(names.COMPLETED_REBALANCES, gc.rebalances_completed, b)
        out.add(names.REBALANCES_STARTED, gc.rebalances_started, b)
        out.add(names.REBALANCE_TIME, (gc.rebalances_completed, gc.rebalance_time_ms_total), b)
        out.add(names.REBALANCE_TIME_MAX, gc.rebalance_time_ms_max, b)
        out.add(names.HEARTBEAT_EXPIRATIONS, gc.heartbeat_expirations, b)
        for (group, topic, partition), offset in sorted(gc.committed_offsets.items()):
            labels = (b, group, topic, str(partition))
            out.add(names.CONSUMER_GROUP_CURRENT_OFFSET, offset, *labels)
            hw = high_watermarks.get((topic, partition))
            if hw is not None:
                out.add(names.CONSUMER_GROUP_LAG, hw - offset, *labels)
