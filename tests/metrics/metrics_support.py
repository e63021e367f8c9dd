"""Shared pieces for the metrics tests: a controllable delayed operation, a broker whose
snapshot a test sets, and scrape helpers.

``FakeBroker`` is a broker as ``ClusterMetrics`` sees it (``metrics.sources.BrokerSource``): its
snapshot is built from the real snapshot classes and the real snapshots of real purgatories and
``BrokerTopicStats``, with the other values set by the test. Real brokers are measured in
test_metrics_cluster.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from prometheus_client.parser import text_string_to_metric_families

import time as _time

from kafka_emu.broker.server.kafka_server import BrokerSnapshot
from kafka_emu.broker.storage.unified_log import LogSnapshot
from kafka_emu.broker.network.socket_server import SocketServerSnapshot
from kafka_emu.broker.server.replica_manager import ReplicaManagerSnapshot
from kafka_emu.broker.network.request_channel import RequestChannelSnapshot
from kafka_emu.broker.server.request_handler import HandlerPoolSnapshot
from kafka_emu.broker.server.stats import BrokerTopicStats
from kafka_emu.coordinator.group.group_coordinator import GroupCoordinatorSnapshot
from kafka_emu.timer import DelayedOperation, DelayedOperationPurgatory, MockTime, SystemTimer


class Op(DelayedOperation):
    """Completes when ``ready`` is set and a trigger (check_and_complete) arrives."""

    def __init__(self, delay_ms: int, **attrs: Any) -> None:
        super().__init__(delay_ms)
        self.ready = False
        self.expired = False
        for key, value in attrs.items():
            setattr(self, key, value)

    def try_complete(self) -> bool:
        return self.force_complete() if self.ready else False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.expired = True


def mock_purgatory(name: str, time: MockTime, broker_id: int = 0, purge_interval: int = 1000) -> DelayedOperationPurgatory:
    """A purgatory whose clock moves only when the test says so and that has no reaper thread.

    Its timer is the production SystemTimer on MockTime, so expirations run on the timer's
    executor thread as they do in a broker (see ``expire``), and the counters the metrics read
    are written by the threads that write them in production.
    """
    return DelayedOperationPurgatory(name, timer=SystemTimer(name, time=time), broker_id=broker_id,
                                     purge_interval=purge_interval, reaper_enabled=False)


def eventually(check: Callable[[], bool], timeout_s: float = 5.0, what: str = "condition") -> None:
    """Poll ``check`` every 5 ms until true; fail after ``timeout_s``."""
    deadline = _time.monotonic() + timeout_s
    while not check():
        if _time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        _time.sleep(0.005)


def expire(purgatory: DelayedOperationPurgatory, time: MockTime, ms: int, expected_total: int) -> None:
    """Move the mock clock by ``ms``, run due expirations, wait until the purgatory has recorded
    ``expected_total`` expirations in all (they run on the timer's executor thread)."""
    time.sleep(ms)
    purgatory.advance_clock(0)
    eventually(lambda: purgatory.expiration_count >= expected_total, what=f"{expected_total} expirations")


@dataclass
class FakeRequest:
    """The fields of broker.request_channel.Request that metrics and logs read."""

    api_name: str
    api_version: int = 0
    is_from_follower: bool = False
    correlation_id: int = 1
    client_id: str | None = "client"
    response_body: Any = None
    start_time_ns: int = 0
    dequeue_time_ns: int = 0
    api_local_complete_time_ns: int = 0
    response_complete_time_ns: int = 0
    response_dequeue_time_ns: int = 0
    end_time_ns: int = 0


def coordinator_snapshot(**values: Any) -> GroupCoordinatorSnapshot:
    """A coordinator snapshot with no groups unless ``values`` say otherwise."""
    fields: dict[str, Any] = dict(
        groups_by_state={s: 0 for s in ("Empty", "PreparingRebalance", "CompletingRebalance",
                                        "Stable", "Dead")},
        consumer_groups_by_state={s: 0 for s in ("Empty", "Assigning", "Reconciling", "Stable", "Dead")},
        members=0, committed_offsets={}, rebalances_started=0, rebalances_completed=0,
        rebalance_time_ms_total=0, rebalance_time_ms_max=0, heartbeat_expirations=0,
        consumer_rebalances=0, purgatories=(),
        share_groups_by_state={s: 0 for s in ("Empty", "Stable", "Dead")}, share_rebalances=0)
    fields.update(values)
    return GroupCoordinatorSnapshot(**fields)


@dataclass
class FakeBroker:
    """A running broker whose component values the test sets (see the module docstring)."""

    broker_id: int
    stopped: bool = False
    started: bool = True
    request_listeners: list[Callable[[Any], None]] = field(default_factory=list)
    request_queue_size: int = 0
    handler_pool: HandlerPoolSnapshot = HandlerPoolSnapshot(1, 0, 0)
    socket_server: SocketServerSnapshot | None = None
    stats: BrokerTopicStats = field(default_factory=BrokerTopicStats)
    partition_counts: tuple[int, int, int, int] = (0, 0, 0, 0)  # partitions, leaders, URP, under min ISR
    logs: tuple[LogSnapshot, ...] = ()
    leaders: frozenset[tuple[str, int]] = frozenset()
    purgatories: list[DelayedOperationPurgatory] = field(default_factory=list)
    coordinator: GroupCoordinatorSnapshot | None = None
    quotas: tuple[Any, ...] = ()   # QuotaManagerSnapshots

    def snapshot(self) -> BrokerSnapshot | None:
        if not self.started or self.stopped:
            return None
        purgatories = tuple(p.snapshot() for p in self.purgatories)
        rm = ReplicaManagerSnapshot(*self.partition_counts, self.stats.snapshot(), self.logs,
                                    self.leaders, purgatories)
        return BrokerSnapshot(self.broker_id, RequestChannelSnapshot(self.request_queue_size),
                              self.handler_pool, self.socket_server, rm, self.coordinator, purgatories,
                              quotas=self.quotas)

    def complete(self, request: Any) -> None:
        """A request finished: what the request channel or a processor does."""
        for listener in list(self.request_listeners):
            listener(request)


class FakeControl:
    """metrics.sources.ControlSource: no test-control action taken."""

    def action_counts(self) -> dict[str, int]:
        return {}


@dataclass
class FakeCluster:
    servers: dict[int, FakeBroker] = field(default_factory=dict)
    control: FakeControl = field(default_factory=FakeControl)
    schema_registry: None = None   # metrics.sources.ClusterSource: no registry runs


def parse(text: str) -> dict[str, Any]:
    """name → family, failing on what Prometheus itself would reject (e.g. repeated TYPE)."""
    families: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        assert family.name not in families, f"family {family.name} emitted twice"
        families[family.name] = family
    return families
