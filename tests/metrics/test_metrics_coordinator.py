"""Group coordinator series: groups by state, members, offsets, rebalances, heartbeat expiry.

Two sources are checked: the coordinator's own counters (preferred, cheap) and, when it has
none, a lock-free walk of its group map using the coordinator package's real GroupMetadata, so
the dashboard's "groups by state" panel works with either.
"""
from __future__ import annotations

from types import SimpleNamespace

import importlib
import pytest

from kafka_emu.metrics import ClusterMetrics
from kafka_emu.metrics.broker_metrics import normalize_group_state

from metrics_support import broker_namespace

pytestmark = pytest.mark.timeout(30)

GMM = "kafka_coordinator_group_groupmetadatamanager_"


def test_state_names_normalize_to_kafkas() -> None:
    assert normalize_group_state("AWAITING_SYNC") == "CompletingRebalance"
    assert normalize_group_state("PreparingRebalance") == "PreparingRebalance"
    assert normalize_group_state(SimpleNamespace(name="STABLE", value=3)) == "Stable"


def test_groups_by_state_members_and_offsets_from_the_group_map() -> None:
    gm = importlib.import_module("kafka_emu.coordinator.group_metadata")
    groups = {}
    for gid, state, members, offsets in (("a", gm.GroupState.STABLE, 3, 2), ("b", gm.GroupState.STABLE, 1, 0),
                                         ("c", gm.GroupState.PREPARING_REBALANCE, 2, 1),
                                         ("d", gm.GroupState.EMPTY, 0, 4)):
        group = gm.GroupMetadata(gid, state)
        group.members = {f"m{i}": object() for i in range(members)}
        group.offsets = {("t", p): object() for p in range(offsets)}
        groups[gid] = group
    manager = SimpleNamespace(current_groups=lambda: list(groups.values()))
    coordinator = SimpleNamespace(group_manager=manager)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(0, group_coordinator=coordinator))
        b = {"broker_id": "0"}
        assert metrics.sample(GMM + "numgroups", b) == 4
        assert metrics.sample(GMM + "numgroupsstable", b) == 2
        assert metrics.sample(GMM + "numgroupspreparingrebalance", b) == 1
        assert metrics.sample(GMM + "numgroupsempty", b) == 1
        assert metrics.sample(GMM + "numgroupscompletingrebalance", b) == 0
        assert metrics.sample(GMM + "numgroupsdead", b) == 0
        assert metrics.sample(GMM + "numoffsets", b) == 7
        assert metrics.sample("kafka_emu_coordinator_members", b) == 6


def test_rebalance_counters_and_time_from_coordinator_hooks() -> None:
    coordinator = SimpleNamespace(
        # the names coordinator.group_coordinator.GroupCoordinator uses
        groups_by_state=lambda: {"Stable": 1, "CompletingRebalance": 2, "Empty": 0},
        num_members=lambda: 9, num_offsets=lambda: 3,
        rebalance_count=4, rebalances_started=5,
        rebalance_time_ms_total=1200, rebalance_time_ms_max=700.0,
        heartbeat_expirations=2)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(2, group_coordinator=coordinator))
        b = {"broker_id": "2"}
        assert metrics.sample(GMM + "numgroups", b) == 3
        assert metrics.sample(GMM + "numgroupscompletingrebalance", b) == 2
        assert metrics.sample("kafka_emu_coordinator_members", b) == 9
        assert metrics.sample("kafka_server_group_coordinator_metrics_group_completed_rebalance_total", b) == 4
        assert metrics.sample("kafka_emu_coordinator_rebalances_started_total", b) == 5
        assert metrics.sample("kafka_emu_coordinator_rebalance_time_ms_count", b) == 4
        assert metrics.sample("kafka_emu_coordinator_rebalance_time_ms_sum", b) == 1200
        assert metrics.sample("kafka_emu_coordinator_rebalance_time_ms_max", b) == 700
        assert metrics.sample("kafka_emu_coordinator_heartbeat_expirations_total", b) == 2
