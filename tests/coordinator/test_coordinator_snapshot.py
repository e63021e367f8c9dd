"""GroupCoordinator.snapshot(): what the metrics read of a coordinator, after known activity.

Scenario from Kafka's GroupCoordinatorTest (testSyncGroupFromUnknownMember-style single member
join + sync, then a member's commit and a session expiry), read through the snapshot.
"""
from __future__ import annotations

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.results import OffsetAndMetadata

from coordinator_harness import GROUP_ID, INITIAL_DELAY, SESSION_TIMEOUT, Harness

pytestmark = pytest.mark.timeout(30)


def test_snapshot_counts_groups_members_offsets_rebalances_and_expiry(h: Harness) -> None:
    empty = h.coordinator.snapshot()
    assert sum(empty.groups_by_state.values()) == 0 and empty.members == 0
    assert set(empty.groups_by_state) == {"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}
    assert [p.name for p in empty.purgatories] == ["Heartbeat", "Rebalance"]

    join = h.join_and_sync_single()
    offsets = {("t", 0): OffsetAndMetadata(7), ("t", 1): OffsetAndMetadata(3)}
    assert h.commit(GROUP_ID, join.member_id, join.generation_id, offsets) \
        == {("t", 0): Errors.NONE, ("t", 1): Errors.NONE}
    snap = h.coordinator.snapshot()
    assert snap.groups_by_state["Stable"] == 1 and snap.members == 1
    assert snap.committed_offsets == {(GROUP_ID, "t", 0): 7, (GROUP_ID, "t", 1): 3}
    assert (snap.rebalances_started, snap.rebalances_completed) == (1, 1)
    assert snap.rebalance_time_ms_total == snap.rebalance_time_ms_max == INITIAL_DELAY + 1
    heartbeat = next(p for p in snap.purgatories if p.name == "Heartbeat")
    assert heartbeat.num_delayed == 1 and heartbeat.watched == 1

    h.advance(SESSION_TIMEOUT + 1)   # no heartbeat: the member's session expires
    after = h.coordinator.snapshot()
    assert after.heartbeat_expirations == 1 and after.members == 0
    assert after.groups_by_state["Empty"] == 1   # the group keeps its offsets
    assert after.committed_offsets == snap.committed_offsets
