"""Group coordinator series: groups by state, members, offsets, rebalances, heartbeat expiry, and
consumer-group offsets and lag joined across brokers.

The snapshot itself is checked against a real coordinator in
tests/coordinator/test_coordinator_snapshot.py; here a coordinator snapshot is set by the test
so every series can be compared with exact values.
"""
from __future__ import annotations

import pytest

from kafka_emu.broker.storage.unified_log import LogSnapshot
from kafka_emu.metrics import ClusterMetrics

from metrics_support import FakeBroker, FakeCluster, coordinator_snapshot

pytestmark = pytest.mark.timeout(30)

GMM = "kafka_coordinator_group_groupmetadatamanager_"


def test_groups_members_offsets_and_rebalances() -> None:
    snapshot = coordinator_snapshot(
        groups_by_state={"Stable": 2, "PreparingRebalance": 1, "Empty": 1, "CompletingRebalance": 0, "Dead": 0},
        members=6, committed_offsets={("a", "t", p): 1 for p in range(7)},
        rebalances_started=5, rebalances_completed=4, rebalance_time_ms_total=1200,
        rebalance_time_ms_max=700, heartbeat_expirations=2)
    with ClusterMetrics() as metrics:
        metrics.register_broker(FakeBroker(2, coordinator=snapshot))
        b = {"broker_id": "2"}
        assert metrics.sample(GMM + "numgroups", b) == 4
        assert metrics.sample(GMM + "numgroupsstable", b) == 2
        assert metrics.sample(GMM + "numgroupspreparingrebalance", b) == 1
        assert metrics.sample(GMM + "numgroupsempty", b) == 1
        assert metrics.sample(GMM + "numgroupscompletingrebalance", b) == 0
        assert metrics.sample(GMM + "numgroupsdead", b) == 0
        assert metrics.sample(GMM + "numoffsets", b) == 7
        assert metrics.sample("kafka_emu_coordinator_members", b) == 6
        assert metrics.sample("kafka_server_group_coordinator_metrics_group_completed_rebalance_total", b) == 4
        assert metrics.sample("kafka_emu_coordinator_rebalances_started_total", b) == 5
        assert metrics.sample("kafka_emu_coordinator_rebalance_time_ms_count", b) == 4
        assert metrics.sample("kafka_emu_coordinator_rebalance_time_ms_sum", b) == 1200
        assert metrics.sample("kafka_emu_coordinator_rebalance_time_ms_max", b) == 700
        assert metrics.sample("kafka_emu_coordinator_heartbeat_expirations_total", b) == 2


def test_consumer_protocol_groups_by_state_protocol_and_rebalances() -> None:
    """Kafka 4's group-coordinator-metrics: group-count by protocol, consumer-group-count by
    state, consumer-group-rebalance-count."""
    snapshot = coordinator_snapshot(
        groups_by_state={"Stable": 1, "PreparingRebalance": 0, "Empty": 1, "CompletingRebalance": 0, "Dead": 0},
        consumer_groups_by_state={"Empty": 1, "Assigning": 0, "Reconciling": 2, "Stable": 3, "Dead": 0},
        consumer_rebalances=9)
    with ClusterMetrics() as metrics:
        metrics.register_broker(FakeBroker(1, coordinator=snapshot))
        gcm = "kafka_server_group_coordinator_metrics_"
        assert metrics.sample(gcm + "group_count", {"broker_id": "1", "protocol": "classic"}) == 2
        assert metrics.sample(gcm + "group_count", {"broker_id": "1", "protocol": "consumer"}) == 6
        assert [metrics.sample(gcm + "consumer_group_count", {"broker_id": "1", "state": s})
                for s in ("Empty", "Assigning", "Reconciling", "Stable", "Dead")] == [1, 0, 2, 3, 0]
        assert metrics.sample(gcm + "consumer_group_rebalance_total", {"broker_id": "1"}) == 9
        assert metrics.sample(GMM + "numgroups", {"broker_id": "1"}) == 2   # classic only, as Kafka's


def test_lag_joins_the_coordinators_offsets_with_the_leaders_high_watermark() -> None:
    """Group "g" on coordinator 0 committed 4 on orders-0 (HW 10 on leader 1) and 7 on orders-1
    (HW 7 on leader 0); orders-2 has no leader, so only its committed offset is known."""
    committed = {("g", "orders", 0): 4, ("g", "orders", 1): 7, ("g", "orders", 2): 1}
    coordinator = FakeBroker(0, coordinator=coordinator_snapshot(committed_offsets=committed),
                             logs=(LogSnapshot("orders", 1, 0, 9, 7, 0, 1), LogSnapshot("orders", 0, 0, 10, 9, 0, 1)),
                             leaders=frozenset({("orders", 1)}))   # a follower of orders-0 (HW 9)
    leader = FakeBroker(1, logs=(LogSnapshot("orders", 0, 0, 12, 10, 0, 1),), leaders=frozenset({("orders", 0)}))
    with ClusterMetrics(FakeCluster({0: coordinator, 1: leader})) as metrics:
        def sample(name: str, partition: int) -> float | None:
            return metrics.sample(name, {"broker_id": "0", "consumergroup": "g", "topic": "orders",
                                         "partition": str(partition)})

        assert [sample("kafka_consumergroup_current_offset", p) for p in range(3)] == [4, 7, 1]
        assert [sample("kafka_consumergroup_lag", p) for p in range(3)] == [6, 0, None]
        assert 'broker_id="1",consumergroup' not in metrics.exposition()  # only the coordinator reports


def test_a_broker_without_coordinator_has_no_group_series() -> None:
    with ClusterMetrics() as metrics:
        metrics.register_broker(FakeBroker(0))
        assert metrics.sample(GMM + "numgroups", {"broker_id": "0"}) is None
