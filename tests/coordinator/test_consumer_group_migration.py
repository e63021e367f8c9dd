"""Classic members in consumer groups and the conversions between the group types: ports of
Kafka 4.1's GroupMetadataManagerTest migration cases (testConsumerGroupHeartbeatWithNonEmptyClassicGroup,
testConsumerGroupHeartbeatWithClassicGroupAndUpgradeDisabled, testJoiningConsumerGroupWithNewDynamicMember,
testClassicGroupSyncToConsumerGroup..., testClassicGroupHeartbeatToConsumerGroup...,
testLastConsumerProtocolMemberLeavingConsumerGroup, testConsumerGroupHeartbeatWithEmptyClassicGroup,
testClassicGroupJoinWithEmptyConsumerGroup)."""
from __future__ import annotations

from typing import Any

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import GroupMetadata, PreparingRebalance
from kafka_emu.coordinator.group.modern.consumer.consumer_group import ConsumerGroup
from kafka_emu.coordinator.group.records import (
    consumer_protocol_assignment, consumer_subscription, read_consumer_assignment,
)
from kafka_emu.coordinator.group.results import JoinGroupResult, OffsetAndMetadata

from consumer_harness import GROUP, ConsumerHarness, owned
from coordinator_harness import Box

SUBSCRIPTION = [("range", consumer_subscription(["foo"]))]


def classic_join(h: ConsumerHarness, member_id: str = "", generation_wait: bool = True,
                 protocols: list[tuple[str, bytes]] | None = None) -> Any:
    box = Box()
    h.coordinator.handle_join_group(GROUP, member_id, None, False, "client", "host", 5000, 10_000, "consumer",
                                    protocols or SUBSCRIPTION, box)
    if generation_wait:
        until_done(h, box)
    return box


def until_done(h: ConsumerHarness, box: Box) -> None:
    """Advance the clock past the initial rebalance delays until the JoinGroup is answered."""
    for _ in range(60):
        if box.done:
            return
        h.advance(101)


def classic_sync(h: ConsumerHarness, member_id: str, generation: int, assignment: dict[str, bytes] | None = None) -> Any:
    box = Box()
    h.coordinator.handle_sync_group(GROUP, generation, member_id, "consumer", "range", None, assignment or {}, box)
    return box.value


def classic_heartbeat(h: ConsumerHarness, member_id: str, generation: int) -> int:
    box = Box()
    h.coordinator.handle_heartbeat(GROUP, member_id, None, generation, box)
    return box.value


def stable_classic_group(h: ConsumerHarness) -> tuple[JoinGroupResult, JoinGroupResult]:
    """Two classic members of "fooup" with foo's 4 partitions split 2 and 2 (generation 1)."""
    b1, b2 = classic_join(h, generation_wait=False), classic_join(h, generation_wait=False)
    until_done(h, b2)
    j1, j2 = b1.value, b2.value
    assert j1.error == j2.error == Errors.NONE and j1.generation_id == 1
    leader, follower = (j1, j2) if j1.leader_id == j1.member_id else (j2, j1)
    assignment = {leader.member_id: consumer_protocol_assignment({"foo": [0, 1]}),
                  follower.member_id: consumer_protocol_assignment({"foo": [2, 3]})}
    assert classic_sync(h, leader.member_id, 1, assignment).error == Errors.NONE
    assert classic_sync(h, follower.member_id, 1).error == Errors.NONE
    return leader, follower


def harness(**config: Any) -> ConsumerHarness:
    config.setdefault("group.initial.rebalance.delay.ms", 100)
    h = ConsumerHarness(**config).own()
    h.foo = h.image.add_topic("foo", 4)
    return h


def test_consumer_member_joining_a_classic_group_upgrades_it() -> None:
    """testConsumerGroupHeartbeatWithNonEmptyClassicGroup: the classic members keep their
    generation as member epoch and their partitions; the new member waits for them."""
    h = harness()
    leader, follower = stable_classic_group(h)
    r = h.join("new")
    assert r.error == Errors.NONE and r.member_epoch == 2 and r.assignment == {}
    group = h.group()
    assert group.members[leader.member_id].member_epoch == 1
    assert group.members[leader.member_id].assigned_partitions == {h.foo: frozenset({0, 1})}
    assert group.num_classic_protocol_members == 2
    # the classic members rejoin (their heartbeat says so); one of them gives a partition up
    kept = set()
    for m in (leader, follower):
        assert classic_heartbeat(h, m.member_id, 1) == Errors.REBALANCE_IN_PROGRESS
        rejoin = classic_join(h, m.member_id, generation_wait=False).value
        assert (rejoin.error, rejoin.member_id, rejoin.protocol_name, rejoin.leader_id) == \
            (Errors.NONE, m.member_id, "range", "")
        sync = classic_sync(h, m.member_id, rejoin.generation_id)
        assert sync.error == Errors.NONE
        partitions, _ = read_consumer_assignment(sync.member_assignment)
        kept |= set(partitions["foo"])
    assert len(kept) == 3
    r = h.heartbeat(member_id="new", member_epoch=2, topic_partitions=())
    assert r.assignment is not None and len(r.assignment[h.foo]) == 1 and not r.assignment[h.foo] & kept


def test_upgrade_disabled_by_policy() -> None:
    """testConsumerGroupHeartbeatWithClassicGroupAndUpgradeDisabled: GROUP_ID_NOT_FOUND."""
    h = harness(**{"group.consumer.migration.policy": "downgrade"})
    stable_classic_group(h)
    assert h.join("new").error == Errors.GROUP_ID_NOT_FOUND
    assert isinstance(h.coordinator.group_manager.get_group(GROUP), GroupMetadata)


def test_empty_classic_group_becomes_consumer_group_with_its_offsets() -> None:
    """testConsumerGroupHeartbeatWithEmptyClassicGroup: an empty (offsets-only) classic group is
    replaced, its offsets kept."""
    h = harness()
    box: list = []
    h.coordinator.handle_commit_offsets(GROUP, "", None, -1, {("foo", 0): OffsetAndMetadata(9)}, box.append)
    assert isinstance(h.coordinator.group_manager.get_group(GROUP), GroupMetadata)
    assert h.join("m1").error == Errors.NONE
    assert isinstance(h.coordinator.group_manager.get_group(GROUP), ConsumerGroup)
    assert h.coordinator.handle_fetch_offsets(GROUP)[1][("foo", 0)].offset == 9


def test_classic_join_to_empty_consumer_group_makes_a_classic_group() -> None:
    """testClassicGroupJoinWithEmptyConsumerGroup"""
    h = harness()
    h.join("m1")
    h.heartbeat(member_id="m1", member_epoch=-1)
    box = classic_join(h)
    assert box.value.error == Errors.NONE
    assert isinstance(h.coordinator.group_manager.get_group(GROUP), GroupMetadata)


def test_classic_member_joins_consumer_group() -> None:
    """testJoiningConsumerGroupWithNewDynamicMember: MEMBER_ID_REQUIRED first (v4+), then the
    member gets its epoch as generation and its assignment in SyncGroup."""
    h = harness()
    first = h.join("m1")
    box = Box()
    h.coordinator.handle_join_group(GROUP, "", None, True, "client", "host", 5000, 10_000, "consumer",
                                    SUBSCRIPTION, box)
    assert box.value.error == Errors.MEMBER_ID_REQUIRED
    member_id = box.value.member_id
    joined = classic_join(h, member_id, generation_wait=False).value
    assert joined.error == Errors.NONE and joined.generation_id == 2
    h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(first))   # m1 revokes
    h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=((h.foo, (0, 1)),))
    assert classic_heartbeat(h, member_id, 2) == Errors.REBALANCE_IN_PROGRESS   # partitions now free
    again = classic_join(h, member_id, generation_wait=False).value
    sync = classic_sync(h, member_id, again.generation_id)
    partitions, _ = read_consumer_assignment(sync.member_assignment)
    assert sorted(partitions["foo"]) == [2, 3]
    assert classic_heartbeat(h, member_id, again.generation_id) == Errors.NONE
    assert classic_heartbeat(h, member_id, 99) == Errors.ILLEGAL_GENERATION
    assert classic_sync(h, member_id, 99).error == Errors.ILLEGAL_GENERATION


def test_classic_member_session_timeout_in_consumer_group() -> None:
    """A classic member of a consumer group is fenced after its own session timeout."""
    h = harness()
    h.join("m1")
    joined = classic_join(h, "c1", generation_wait=False).value
    assert joined.error == Errors.NONE
    h.heartbeat(member_id="m1", member_epoch=2)
    h.advance(10_001)
    assert "c1" not in h.group().members


def test_last_consumer_protocol_member_leaving_downgrades() -> None:
    """testLastConsumerProtocolMemberLeavingConsumerGroup: only classic members left, the group
    becomes a classic group that rebalances, with its members and their partitions."""
    h = harness()
    leader, follower = stable_classic_group(h)
    h.join("new")
    assert isinstance(h.group(), ConsumerGroup)
    r = h.heartbeat(member_id="new", member_epoch=-1)
    assert r.error == Errors.NONE
    group = h.coordinator.group_manager.get_group(GROUP)
    assert isinstance(group, GroupMetadata) and group.is_(PreparingRebalance)
    assert set(group.members) == {leader.member_id, follower.member_id}
    # and a reload sees the classic group, not the consumer group
    assert isinstance(h.reloaded().coordinator.group_manager.get_group(GROUP), GroupMetadata)


def test_downgrade_disabled_by_policy() -> None:
    """With group.consumer.migration.policy=upgrade the group stays a consumer group."""
    h = harness(**{"group.consumer.migration.policy": "upgrade"})
    stable_classic_group(h)
    h.join("new")
    h.heartbeat(member_id="new", member_epoch=-1)
    assert isinstance(h.coordinator.group_manager.get_group(GROUP), ConsumerGroup)


def test_classic_member_leaves_consumer_group() -> None:
    """testConsumerGroupLeaveWithClassicMember... (LeaveGroup to a consumer group)"""
    h = harness()
    h.join("m1")
    joined = classic_join(h, "c1", generation_wait=False).value
    box = Box()
    h.coordinator.handle_leave_group(GROUP, [(joined.member_id, None, "bye"), ("nope", None, None)], box)
    result = box.value
    assert [m.error for m in result.member_responses] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert set(h.group().members) == {"m1"}
