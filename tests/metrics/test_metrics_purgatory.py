"""Purgatory, delayed-operation expiry and timer series against known activity.

Each test drives real purgatories on a MockTimer (deterministic: nothing expires unless the test
advances the clock) and checks the exact values a scrape reports, because these are the series
an operator reads to tell "requests are parked" from "requests are timing out".
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, Iterator

import pytest

from kafka_emu.metrics import ClusterMetrics
from kafka_emu.metrics.broker_metrics import fetcher_type
from kafka_emu.timer import DelayedOperationPurgatory, MockTime, SystemTimer, TimerTask
from kafka_emu.timer import TopicPartitionOperationKey as TP
from kafka_emu.timer.operation_keys import MemberKey

from metrics_support import Op, broker_namespace, expire, mock_purgatory, parse

pytestmark = pytest.mark.timeout(30)

SIZE = "kafka_server_delayedoperationpurgatory_purgatorysize"
DELAYED = "kafka_server_delayedoperationpurgatory_numdelayedoperations"


@pytest.fixture
def time() -> MockTime:
    return MockTime()


@pytest.fixture
def purgatory(time: MockTime) -> Iterator[Callable[..., DelayedOperationPurgatory]]:
    """Factory of mock-clock purgatories, all shut down (timer threads joined) after the test."""
    made: list[DelayedOperationPurgatory] = []

    def make(name: str, broker_id: int = 0, purge_interval: int = 1000) -> DelayedOperationPurgatory:
        made.append(mock_purgatory(name, time, broker_id, purge_interval))
        return made[-1]

    yield make
    for p in made:
        p.shutdown()


def test_purgatory_size_and_delayed_count_follow_watch_complete_expire(time: MockTime, purgatory) -> None:
    produce = purgatory("Produce")
    broker = broker_namespace(0, replica_manager=SimpleNamespace(produce_purgatory=produce))
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        labels = {"broker_id": "0", "delayedOperation": "Produce"}

        ops = [Op(1000) for _ in range(3)]
        for op in ops:  # each produce watched on two partitions
            assert not produce.try_complete_else_watch(op, [TP("t", 0), TP("t", 1)])
        assert metrics.sample(SIZE, labels) == 6
        assert metrics.sample(DELAYED, labels) == 3

        # Completed by a trigger on one key: leaves the timer at once and that key's list, but
        # stays watched (and counted in PurgatorySize) under the other key until purged.
        ops[0].ready = True
        assert produce.check_and_complete(TP("t", 0)) == 1
        assert metrics.sample(DELAYED, labels) == 2
        assert metrics.sample(SIZE, labels) == 5

        expire(produce, time, 1001, expected_total=2)
        assert metrics.sample(DELAYED, labels) == 0
        assert metrics.sample("kafka_emu_purgatory_expirations_total", labels) == 2
        # Without broker stats the produce expiry meter falls back to the Produce purgatory's count.
        assert metrics.sample("kafka_server_delayedproducemetrics_expirespersec_total", {"broker_id": "0"}) == 2
        assert metrics.sample("kafka_emu_timer_pendingtasks", {"broker_id": "0", "timer": "Produce"}) == 0


def test_purge_counter_counts_reaper_purges(purgatory) -> None:
    fetch = purgatory("Fetch", purge_interval=1)
    broker = broker_namespace(2, replica_manager=SimpleNamespace(fetch_purgatory=fetch))
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        labels = {"broker_id": "2", "delayedOperation": "Fetch"}
        ops = [Op(10_000) for _ in range(3)]
        for i, op in enumerate(ops):
            fetch.try_complete_else_watch(op, [TP("t", i), TP("u", i)])
        for op in ops:
            op.ready = True
        for i in range(3):
            fetch.check_and_complete(TP("t", i))
        assert metrics.sample(SIZE, labels) == 3  # still listed under the "u" keys
        fetch.advance_clock(0)  # estimate 3 - delayed 0 > purge interval 1: purge
        assert metrics.sample("kafka_emu_purgatory_purges_total", labels) == 1
        assert metrics.sample(SIZE, labels) == 0


def test_fetch_expiry_split_by_fetcher_type(time: MockTime, purgatory) -> None:
    """DelayedFetchMetrics.ExpiresPerSec{fetcherType}: from broker stats when present, otherwise
    counted by an expiration listener that classifies the expired operation."""
    fetch = purgatory("Fetch")
    rm = SimpleNamespace(fetch_purgatory=fetch)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(0, replica_manager=rm))
        metrics.exposition()  # first scrape installs the fallback listener
        follower = [Op(100, params=SimpleNamespace(is_from_follower=True)) for _ in range(2)]
        consumer = [Op(100, params=SimpleNamespace(replica_id=-1))]
        for i, op in enumerate(follower + consumer):
            fetch.try_complete_else_watch(op, [TP("t", i)])
        expire(fetch, time, 101, expected_total=3)
        name = "kafka_server_delayedfetchmetrics_expirespersec_total"
        assert metrics.sample(name, {"broker_id": "0", "fetcherType": "follower"}) == 2
        assert metrics.sample(name, {"broker_id": "0", "fetcherType": "consumer"}) == 1

        # Broker-kept counters (broker.stats.BrokerTopicStats) take precedence.
        rm.stats = SimpleNamespace(fetch_expirations={"follower": 7, "consumer": 5}, produce_expirations=4)
        assert metrics.sample(name, {"broker_id": "0", "fetcherType": "follower"}) == 7
        assert metrics.sample("kafka_server_delayedproducemetrics_expirespersec_total", {"broker_id": "0"}) == 4


def test_fetcher_type_classification() -> None:
    assert fetcher_type(SimpleNamespace(is_from_follower=lambda: True)) == "follower"
    assert fetcher_type(SimpleNamespace(fetch_params=SimpleNamespace(replica_id=2))) == "follower"
    assert fetcher_type(SimpleNamespace(params=SimpleNamespace(is_follower=True))) == "follower"
    assert fetcher_type(SimpleNamespace()) == "consumer"


def test_heartbeat_expirations_fall_back_to_heartbeat_purgatory(time: MockTime, purgatory) -> None:
    heartbeat = purgatory("Heartbeat")
    coordinator = SimpleNamespace(heartbeat_purgatory=heartbeat, groups={})
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(1, group_coordinator=coordinator))
        heartbeat.try_complete_else_watch(Op(10_000), [MemberKey("g", "m1")])
        assert metrics.sample(DELAYED, {"broker_id": "1", "delayedOperation": "Heartbeat"}) == 1
        expire(heartbeat, time, 10_001, expected_total=1)
        assert metrics.sample("kafka_emu_coordinator_heartbeat_expirations_total", {"broker_id": "1"}) == 1


def test_standalone_system_timer_pending_tasks() -> None:
    """A coordinator's own timer (not a purgatory's) is found and its pending tasks exported."""

    class Noop(TimerTask):
        def run(self) -> None:
            pass

    timer = SystemTimer("group-coordinator-timer")
    try:
        coordinator = SimpleNamespace(timer=timer, groups={})
        with ClusterMetrics() as metrics:
            metrics.register_broker(broker_namespace(0, group_coordinator=coordinator))
            tasks = [Noop(60_000) for _ in range(4)]
            for task in tasks:
                timer.add(task)
            tasks[0].cancel()
            labels = {"broker_id": "0", "timer": "group-coordinator-timer"}
            assert metrics.sample("kafka_emu_timer_pendingtasks", labels) == 3
            assert metrics.sample("kafka_emu_timer_expiredtasks_total", labels) == 0
    finally:
        timer.close()


def test_two_brokers_share_one_family_per_metric(purgatory) -> None:
    """Each family appears once with one sample per broker: Prometheus rejects a repeated TYPE."""
    p0, p1 = purgatory("Produce", 0), purgatory("Produce", 1)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(0, replica_manager=SimpleNamespace(p=p0)))
        metrics.register_broker(broker_namespace(1, replica_manager=SimpleNamespace(p=p1)))
        p1.try_complete_else_watch(Op(1000), [TP("t", 0)])
        families = parse(metrics.exposition())
        samples = {s.labels["broker_id"]: s.value for s in families[DELAYED].samples}
        assert samples == {"0": 0, "1": 1}
