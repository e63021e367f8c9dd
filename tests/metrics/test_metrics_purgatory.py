"""Purgatory, delayed-operation expiry and timer series against known activity.

Each test drives real purgatories on a mock clock (deterministic: nothing expires unless the test
advances it) and checks the exact values a scrape reports, because these are the series an
operator reads to tell "requests are parked" from "requests are timing out". The values travel
through the purgatories' own ``snapshot()``.
"""
from __future__ import annotations

from typing import Callable, Iterator

import pytest

from kafka_emu.metrics import ClusterMetrics
from kafka_emu.timer import DelayedOperationPurgatory, MockTime, MockTimer, TimerTask
from kafka_emu.timer import TopicPartitionOperationKey as TP

from metrics_support import FakeBroker, Op, expire, mock_purgatory, parse

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
    """Kafka's DelayedOperationTest.testRequestSatisfaction / testRequestExpiry, read as metrics."""
    produce = purgatory("Produce")
    with ClusterMetrics() as metrics:
        metrics.register_broker(FakeBroker(0, purgatories=[produce]))
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
        timer = {"broker_id": "0", "timer": "Produce"}
        assert metrics.sample("kafka_emu_timer_pendingtasks", timer) == 0
        assert metrics.sample("kafka_emu_timer_expiredtasks_total", timer) == 2


def test_purge_counter_counts_reaper_purges(purgatory) -> None:
    """Kafka's DelayedOperationTest.testRequestPurge."""
    fetch = purgatory("Fetch", purge_interval=1)
    with ClusterMetrics() as metrics:
        metrics.register_broker(FakeBroker(2, purgatories=[fetch]))
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


def test_delayed_produce_and_fetch_expiry_meters_come_from_broker_stats() -> None:
    """DelayedProduceMetrics / DelayedFetchMetrics{fetcherType}: what the delayed operations
    recorded (the replica-manager tests check that they record it)."""
    broker = FakeBroker(0)
    broker.stats.record_produce_expiration()
    for follower in (True, True, False):
        broker.stats.record_fetch_expiration(follower)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        name = "kafka_server_delayedfetchmetrics_expirespersec_total"
        assert metrics.sample(name, {"broker_id": "0", "fetcherType": "follower"}) == 2
        assert metrics.sample(name, {"broker_id": "0", "fetcherType": "consumer"}) == 1
        assert metrics.sample("kafka_server_delayedproducemetrics_expirespersec_total", {"broker_id": "0"}) == 1


def test_purgatories_sharing_one_timer_export_it_once(time: MockTime) -> None:
    """The coordinator's test set-up shares one MockTimer between Heartbeat and Rebalance."""

    class Noop(TimerTask):
        def run(self) -> None:
            pass

    timer = MockTimer(time, name="coordinator")
    heartbeat = DelayedOperationPurgatory("Heartbeat", timer=timer, reaper_enabled=False)
    rebalance = DelayedOperationPurgatory("Rebalance", timer=timer, reaper_enabled=False)
    with ClusterMetrics() as metrics:
        metrics.register_broker(FakeBroker(0, purgatories=[heartbeat, rebalance]))
        tasks = [Noop(60_000) for _ in range(4)]
        for task in tasks:
            timer.add(task)
        tasks[0].cancel()
        timer.advance_clock(1)
        families = parse(metrics.exposition())
        assert [s.labels["timer"] for s in families["kafka_emu_timer_pendingtasks"].samples] == ["coordinator"]
        labels = {"broker_id": "0", "timer": "coordinator"}
        assert metrics.sample("kafka_emu_timer_pendingtasks", labels) == 3
        time.advance(60_000)   # MockTime: a minute passes at once
        timer.advance_clock(0)
        assert metrics.sample("kafka_emu_timer_expiredtasks_total", labels) == 3


def test_two_brokers_share_one_family_per_metric(purgatory) -> None:
    """Each family appears once with one sample per broker: Prometheus rejects a repeated TYPE."""
    p0, p1 = purgatory("Produce", 0), purgatory("Produce", 1)
    with ClusterMetrics() as metrics:
        metrics.register_broker(FakeBroker(0, purgatories=[p0]))
        metrics.register_broker(FakeBroker(1, purgatories=[p1]))
        p1.try_complete_else_watch(Op(1000), [TP("t", 0)])
        families = parse(metrics.exposition())
        samples = {s.labels["broker_id"]: s.value for s in families[DELAYED].samples}
        assert samples == {"0": 0, "1": 1}
