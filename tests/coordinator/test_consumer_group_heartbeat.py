"""ConsumerGroupHeartbeat at the coordinator: ports of Kafka 4.1's GroupMetadataManagerTest
consumer-group cases, ConsumerGroupTest, and OffsetMetadataManagerTest's consumer-group offset
cases, on a MockTimer (``consumer_harness``)."""
from __future__ import annotations

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.modern.consumer.consumer_group import ConsumerGroupState
from kafka_emu.coordinator.group.modern.member_state import MemberState
from kafka_emu.coordinator.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey, read_consumer_group_value, read_key,
)
from kafka_emu.coordinator.group.results import OffsetAndMetadata

from consumer_harness import GROUP, REBALANCE_TIMEOUT, SESSION_TIMEOUT, ConsumerHarness, owned, settle


@pytest.fixture
def h() -> ConsumerHarness:
    harness = ConsumerHarness().own()
    harness.foo = harness.image.add_topic("foo", 6)
    harness.bar = harness.image.add_topic("bar", 3)
    return harness


def test_member_id_generation(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testMemberIdGeneration: v0 lets the coordinator generate the
    member id (22 characters, a Kafka Uuid)."""
    r = h.heartbeat(member_id="", member_epoch=0, subscribed_topic_names=("foo",), api_version=0)
    assert r.error == Errors.NONE and len(r.member_id) == 22 and r.member_epoch == 1


def test_request_validation(h: ConsumerHarness) -> None:
    """ConsumerGroupHeartbeatRequestTest.testConsumerGroupHeartbeatFailureIfMemberIdMissingForVersionsAbove0
    and GroupCoordinatorServiceTest.testConsumerGroupHeartbeatRequestValidation."""
    assert h.heartbeat(member_id="", subscribed_topic_names=("foo",), api_version=1).error == Errors.INVALID_REQUEST
    assert h.heartbeat(group_id="", member_id="m", subscribed_topic_names=("foo",)).error == Errors.INVALID_REQUEST
    assert h.heartbeat(member_id="m", subscribed_topic_names=("foo",), instance_id="").error == Errors.INVALID_REQUEST
    assert h.heartbeat(member_id="m", subscribed_topic_names=("foo",), rebalance_timeout_ms=-1).error == \
        Errors.INVALID_REQUEST
    assert h.heartbeat(member_id="m", subscribed_topic_names=("foo",), topic_partitions=None).error == \
        Errors.INVALID_REQUEST
    assert h.heartbeat(member_id="m").error == Errors.INVALID_REQUEST   # neither names nor regex
    assert h.heartbeat(member_id="m", member_epoch=-2).error == Errors.INVALID_REQUEST   # no instance id
    assert h.heartbeat(member_id="m", member_epoch=-3).error == Errors.INVALID_REQUEST
    assert h.heartbeat(member_id="m", subscribed_topic_names=("foo",), server_assignor="sticky").error == \
        Errors.UNSUPPORTED_ASSIGNOR


def test_unknown_group_id(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testUnknownGroupId"""
    assert h.heartbeat(member_id="m", member_epoch=100).error == Errors.GROUP_ID_NOT_FOUND


def test_unknown_member_id_joins_consumer_group(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testUnknownMemberIdJoinsConsumerGroup"""
    h.join("m1")
    assert h.heartbeat(member_id="unknown", member_epoch=1).error == Errors.UNKNOWN_MEMBER_ID


def test_member_epoch_validation(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testConsumerGroupMemberEpochValidation: a greater epoch, a
    smaller one, or the previous one without owned partitions is fenced; the previous epoch with
    a subset of the assignment gets the current epoch back."""
    first = h.join("m1")
    h.join("m2")
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(first))   # revokes 3
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(r))       # moves to epoch 2
    assert r.member_epoch == 2
    assert h.heartbeat(member_id="m1", member_epoch=3).error == Errors.FENCED_MEMBER_EPOCH
    assert h.heartbeat(member_id="m1", member_epoch=0, subscribed_topic_names=("foo",)).error == \
        Errors.FENCED_MEMBER_EPOCH
    assert h.heartbeat(member_id="m1", member_epoch=1).error == Errors.FENCED_MEMBER_EPOCH
    ok = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=((h.foo, (0,)),))
    assert ok.error == Errors.NONE and ok.member_epoch == 2


def test_member_joins_empty_consumer_group(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup: epoch 1, the whole topic, and
    the records Kafka writes (member metadata, group epoch, target, target epoch, current)."""
    r = h.join("m1", ("foo", "bar"))
    assert (r.error, r.member_epoch, r.heartbeat_interval_ms) == (Errors.NONE, 1, 5000)
    assert r.assignment == {h.foo: frozenset(range(6)), h.bar: frozenset(range(3))}
    keys = [type(read_key(k)) for _, k, _ in h.log.read_records(0)]
    assert keys[:2] == [ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataKey]
    assert keys[2:] == [ConsumerGroupTargetAssignmentMemberKey, type(read_key(
        h.log.read_records(0)[3][1])), ConsumerGroupCurrentMemberAssignmentKey]
    assert h.group().state is ConsumerGroupState.STABLE


def test_updating_subscription_triggers_new_target_assignment(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testUpdatingSubscriptionTriggersNewTargetAssignment"""
    r = h.join("m1", ("foo",))
    r = h.heartbeat(member_id="m1", member_epoch=1, subscribed_topic_names=("foo", "bar"))
    assert r.member_epoch == 2 and r.assignment == {h.foo: frozenset(range(6)), h.bar: frozenset(range(3))}


def test_leaving_member_bumps_group_epoch(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testLeavingMemberBumpsGroupEpoch: -1 removes the member, frees its
    partitions and bumps the epoch; the answer echoes epoch -1."""
    h.join("m1")
    h.join("m2")
    r = h.heartbeat(member_id="m2", member_epoch=-1)
    assert (r.error, r.member_id, r.member_epoch) == (Errors.NONE, "m2", -1)
    g = h.group()
    assert "m2" not in g.members and g.group_epoch == 3


def test_reconciliation_process(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testReconciliationProcess (shape): a new member gets partitions
    only once their previous owner has revoked them; in between, every partition has one owner."""
    first = h.join("m1")
    second = h.join("m2")
    assert second.assignment == {}
    g = h.group()
    assert g.members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(first))
    assert g.members["m1"].state is MemberState.UNREVOKED_PARTITIONS and len(r.assignment[h.foo]) == 3
    r2 = h.heartbeat(member_id="m2", member_epoch=2, topic_partitions=())
    assert r2.assignment is None   # nothing released yet
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(r))
    assert r.member_epoch == 2 and g.members["m1"].state is MemberState.STABLE
    r2 = h.heartbeat(member_id="m2", member_epoch=2, topic_partitions=())
    assert len(r2.assignment[h.foo]) == 3 and g.state is ConsumerGroupState.STABLE


def test_consumer_group_heartbeat_full_response(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testConsumerGroupHeartbeatFullResponse: a full request (rebalance
    timeout, subscription and owned partitions set) gets the assignment even if unchanged."""
    r = h.join("m1")
    assert h.heartbeat(member_id="m1", member_epoch=1).assignment is None
    full = h.heartbeat(member_id="m1", member_epoch=1, rebalance_timeout_ms=REBALANCE_TIMEOUT,
                       subscribed_topic_names=("foo",), topic_partitions=owned(r))
    assert full.assignment == r.assignment


def test_new_member_rejected_when_maximum_members_reached() -> None:
    """GroupMetadataManagerTest.testNewMemberIsRejectedWithMaximumMembersIsReached"""
    h = ConsumerHarness(**{"group.consumer.max.size": 2}).own()
    h.image.add_topic("foo", 2)
    h.join("m1")
    h.join("m2")
    assert h.join("m3").error == Errors.GROUP_MAX_SIZE_REACHED


def test_consumer_group_states(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testConsumerGroupStates: Empty -> Stable -> Reconciling -> Stable
    -> Empty (Assigning only inside a heartbeat, as the target follows the epoch at once)."""
    h.join("m1")
    g = h.group()
    assert g.state is ConsumerGroupState.STABLE
    h.join("m2")
    assert g.state is ConsumerGroupState.RECONCILING
    settle(h, {"m1": (1, ((h.foo, tuple(range(6))),)), "m2": (2, ())})
    assert g.state is ConsumerGroupState.STABLE
    h.heartbeat(member_id="m1", member_epoch=-1)
    h.heartbeat(member_id="m2", member_epoch=-1)
    assert g.state is ConsumerGroupState.EMPTY


def test_session_timeout_expiration(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testSessionTimeoutExpiration: the member is fenced after
    group.consumer.session.timeout.ms without a heartbeat (the session-timeout-<group>-<member> task)."""
    h.join("m1")
    key = f"session-timeout-{GROUP}-m1"
    assert h.coordinator.timer.is_scheduled(key)
    h.advance(SESSION_TIMEOUT - 100)
    h.heartbeat(member_id="m1", member_epoch=1)   # re-armed
    h.advance(SESSION_TIMEOUT - 100)
    assert "m1" in h.group().members
    h.advance(200)
    assert "m1" not in h.group().members and not h.coordinator.timer.is_scheduled(key)


def test_session_timeout_expiration_static_member(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testSessionTimeoutExpirationStaticMember: a static member that left
    with epoch -2 keeps its assignment until its session expires."""
    h.join("m1", instance_id="i1")
    r = h.heartbeat(member_id="m1", member_epoch=-2, instance_id="i1")
    assert r.member_epoch == -2 and h.group().members["m1"].member_epoch == -2
    h.advance(SESSION_TIMEOUT + 1)
    assert not h.group().members


def test_rebalance_timeout_expiration(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testRebalanceTimeoutExpiration: a member that does not revoke
    within its rebalance timeout is fenced (rebalance-timeout-<group>-<member>)."""
    first = h.join("m1")
    h.join("m2")
    h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(first))
    assert h.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert h.coordinator.timer.is_scheduled(f"rebalance-timeout-{GROUP}-m1")
    h.heartbeat(member_id="m2", member_epoch=2, topic_partitions=())   # keeps m2's session
    h.advance(REBALANCE_TIMEOUT + 1)
    assert "m1" not in h.group().members and "m2" in h.group().members


def test_rebalance_timeout_lifecycle(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testRebalanceTimeoutLifecycle: revoking in time cancels the timeout."""
    first = h.join("m1")
    h.join("m2")
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(first))
    h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(r))
    assert not h.coordinator.timer.is_scheduled(f"rebalance-timeout-{GROUP}-m1")


def test_static_member_gets_back_assignment_upon_rejoin(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testStaticMemberGetsBackAssignmentUponRejoin: a static member that
    left with -2 comes back under a new member id with its partitions, without an epoch bump."""
    r = h.join("m1", instance_id="i1")
    h.heartbeat(member_id="m1", member_epoch=-2, instance_id="i1")
    epoch = h.group().group_epoch
    back = h.join("m1b", instance_id="i1")
    assert back.error == Errors.NONE and back.assignment == r.assignment
    assert set(h.group().members) == {"m1b"} and h.group().group_epoch == epoch


def test_unreleased_instance_id(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId,
    testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins and
    testShouldThrowUnknownMemberIdExceptionWhenUnknownStaticMemberJoins."""
    h.join("m1", instance_id="i1")
    assert h.join("m2", instance_id="i1").error == Errors.UNRELEASED_INSTANCE_ID
    assert h.heartbeat(member_id="m2", member_epoch=1, instance_id="i1").error == Errors.FENCED_INSTANCE_ID
    assert h.heartbeat(member_id="m3", member_epoch=1, instance_id="i9").error == Errors.UNKNOWN_MEMBER_ID


def test_leaving_static_member_bumps_group_epoch(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testLeavingStaticMemberBumpsGroupEpoch"""
    h.join("m1", instance_id="i1")
    r = h.heartbeat(member_id="m1", member_epoch=-1, instance_id="i1")
    assert r.member_epoch == -1 and not h.group().members and h.group().group_epoch == 2


def test_regular_expression_subscription(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testConsumerGroupMemberJoinsWithNewRegex and
    testConsumerGroupMemberJoinRefreshesExpiredRegexes: the regex resolves to the matching topics,
    a topic created later is picked up, an invalid regex is refused."""
    r = h.heartbeat(member_id="m1", member_epoch=0, subscribed_topic_regex="fo.*")
    assert r.assignment == {h.foo: frozenset(range(6))}
    fob = h.image.add_topic("fob", 2)
    r = h.heartbeat(member_id="m1", member_epoch=r.member_epoch, topic_partitions=owned(r))
    assert r.assignment == {h.foo: frozenset(range(6)), fob: frozenset(range(2))}
    assert h.heartbeat(member_id="m2", member_epoch=0, subscribed_topic_regex="(").error == \
        Errors.INVALID_REGULAR_EXPRESSION


def test_new_partitions_and_deleted_topics_trigger_new_target_assignment(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testSubscriptionMetadataRefreshedAfterGroupIsLoaded shape: the
    metadata hash changes when a subscribed topic grows or goes, and the next heartbeat bumps the
    epoch and reassigns."""
    r = h.join("m1", ("foo", "bar"))
    h.image.grow("foo", 8)
    r = h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(r))
    assert r.member_epoch == 2 and r.assignment[h.foo] == frozenset(range(8))
    h.image.delete_topic("bar")
    r = h.heartbeat(member_id="m1", member_epoch=2, topic_partitions=owned(r))
    assert r.member_epoch == 2 and set(r.assignment) == {h.foo}   # bar's partitions to revoke first
    r = h.heartbeat(member_id="m1", member_epoch=2, topic_partitions=owned(r))
    assert r.member_epoch == 3 and h.group().group_epoch == 3


def test_range_assignor_on_request(h: ConsumerHarness) -> None:
    """The member's ServerAssignor picks the group's assignor (uniform is the default)."""
    h.join("m1", server_assignor="range")
    assert h.group().preferred_server_assignor() == "range"
    assert h.coordinator.handle_consumer_group_describe([GROUP])[0].assignor_name == "range"


def test_describe(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testConsumerGroupDescribeNoErrors / WithErrors"""
    r = h.join("m1", rack_id="r1")
    d, missing = h.coordinator.handle_consumer_group_describe([GROUP, "nope"])
    assert (d.error, d.state, d.group_epoch, d.assignment_epoch) == (Errors.NONE, "Stable", 1, 1)
    m = d.members[0]
    assert (m.member_id, m.rack_id, m.member_epoch, m.subscribed_topic_names) == ("m1", "r1", 1, ("foo",))
    assert m.assignment == [(h.foo, "foo", tuple(range(6)))] == m.target_assignment and r.error == 0
    assert missing.error == Errors.GROUP_ID_NOT_FOUND


def test_list_groups_type_filter_and_describe_groups(h: ConsumerHarness) -> None:
    """ListGroups names consumer groups with type "consumer" (KIP-848's type filter);
    DescribeGroups reads them as not found (a Dead summary)."""
    h.join("m1")
    _, groups = h.coordinator.handle_list_groups(types=["consumer"])
    assert [(g.group_id, g.group_type, g.state) for g in groups] == [(GROUP, "consumer", "Stable")]
    assert h.coordinator.handle_list_groups(types=["classic"])[1] == []
    assert h.coordinator.handle_describe_group(GROUP)[1].state == "Dead"


# ----------------------------------------------------------------------------- offsets
def commit(h: ConsumerHarness, member_id: str, epoch: int, api_version: int = 9) -> int:
    box: list = []
    h.coordinator.handle_commit_offsets(GROUP, member_id, None, epoch, {("foo", 0): OffsetAndMetadata(5)},
                                        box.append, api_version=api_version)
    return box[0][("foo", 0)]


def test_offset_commit_member_epoch_validation(h: ConsumerHarness) -> None:
    """OffsetMetadataManagerTest.testConsumerGroupOffsetCommitWithUnknownMemberId,
    testConsumerGroupOffsetCommitWithStaleMemberEpoch, testConsumerGroupOffsetCommitFromAdminClient,
    and the version check (OffsetCommit < v9 from a consumer-protocol member)."""
    h.join("m1")
    assert commit(h, "nope", 1) == Errors.UNKNOWN_MEMBER_ID
    assert commit(h, "m1", 7) == Errors.STALE_MEMBER_EPOCH
    assert commit(h, "m1", 1, api_version=8) == Errors.UNSUPPORTED_VERSION
    assert commit(h, "m1", 1) == Errors.NONE
    h.heartbeat(member_id="m1", member_epoch=-1)
    assert commit(h, "", -1) == Errors.NONE   # the admin client, group empty


def test_offset_fetch_member_epoch_validation(h: ConsumerHarness) -> None:
    """OffsetMetadataManagerTest.testConsumerGroupOffsetFetchWithStaleMemberEpoch and
    testConsumerGroupOffsetFetchWithUnknownMemberId."""
    h.join("m1")
    assert commit(h, "m1", 1) == Errors.NONE
    assert h.coordinator.handle_fetch_offsets(GROUP, False, None, "m1", 5)[0] == Errors.STALE_MEMBER_EPOCH
    assert h.coordinator.handle_fetch_offsets(GROUP, False, None, "x", 1)[0] == Errors.UNKNOWN_MEMBER_ID
    err, data = h.coordinator.handle_fetch_offsets(GROUP, False, None, "m1", 1)
    assert err == Errors.NONE and data[("foo", 0)].offset == 5
    assert h.coordinator.handle_fetch_offsets(GROUP, False, None)[1][("foo", 0)].offset == 5


def test_txn_offset_commit_member_epoch(h: ConsumerHarness) -> None:
    """TxnOffsetCommit from a consumer-protocol member: the member epoch is checked
    (STALE_MEMBER_EPOCH), and a commit naming no member is accepted."""
    h.join("m1")
    box: list = []
    h.coordinator.handle_txn_commit_offsets(GROUP, "tx", 7, 0, "m1", None, 9, {("foo", 0): OffsetAndMetadata(1)},
                                            box.append)
    assert box == [{("foo", 0): Errors.STALE_MEMBER_EPOCH}]


# ----------------------------------------------------------------------------- durability
def test_load_resumes_epochs_and_assignments(h: ConsumerHarness) -> None:
    """A coordinator loading the partition resumes each member's epoch, state and assignment,
    the target assignment and the group epoch (the records in Kafka's formats, replayed)."""
    first = h.join("m1")
    h.join("m2", instance_id="i2")
    h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(first))   # m1 mid-revocation
    before = h.group()
    h2 = h.reloaded()
    after = h2.group()
    assert (after.group_epoch, after.target_assignment_epoch, after.state) == \
        (before.group_epoch, before.target_assignment_epoch, before.state)
    assert after.members == before.members and after.target_assignment == before.target_assignment
    assert after.current_partition_epochs == before.current_partition_epochs
    assert after.static_members == {"i2": "m2"}
    # the loaded members have their timeouts again
    assert h2.coordinator.timer.is_scheduled(f"session-timeout-{GROUP}-m1")
    assert h2.coordinator.timer.is_scheduled(f"rebalance-timeout-{GROUP}-m1")


def test_records_round_trip(h: ConsumerHarness) -> None:
    """Every record written decodes to what was written (the flexible value formats, with the
    tagged fields)."""
    h.join("m1", ("foo", "bar"), instance_id="i1", rack_id="rack")
    h.heartbeat(member_id="m2", member_epoch=0, subscribed_topic_regex="b.*")
    for _, key, value in h.log.read_records(0):
        k = read_key(key)
        if value is not None and hasattr(k, "TYPE"):
            decoded = read_consumer_group_value(k, value)
            if decoded is not None:
                assert decoded.encode() == value


def test_group_deleted_when_empty(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testConsumerGroupDelete: an empty consumer group is deleted with
    tombstones of every record; a reload does not bring it back."""
    h.join("m1")
    h.heartbeat(member_id="m1", member_epoch=-1)
    assert h.coordinator.handle_delete_groups([GROUP]) == {GROUP: Errors.NONE}
    assert h.coordinator.group_manager.get_group(GROUP) is None
    assert h.reloaded().coordinator.group_manager.get_group(GROUP) is None


def test_non_empty_group_not_deleted(h: ConsumerHarness) -> None:
    """GroupMetadataManagerTest.testConsumerGroupMaybeDelete: NON_EMPTY_GROUP while members remain."""
    h.join("m1")
    assert h.coordinator.handle_delete_groups([GROUP]) == {GROUP: Errors.NON_EMPTY_GROUP}


def test_dynamic_group_configs() -> None:
    """GroupMetadataManagerTest.testConsumerGroupDynamicConfigs: the group's
    consumer.heartbeat.interval.ms and consumer.session.timeout.ms override the broker's."""
    h = ConsumerHarness(group_config={GROUP: {"consumer.heartbeat.interval.ms": 500,
                                              "consumer.session.timeout.ms": 1000}}).own()
    h.image.add_topic("foo", 1)
    assert h.join("m1").heartbeat_interval_ms == 500
    h.advance(1001)
    assert not h.group().members


def test_snapshot_counts_consumer_groups_rebalances_and_expiry(h: ConsumerHarness) -> None:
    """What the metrics read (GroupCoordinatorMetrics' consumer-group-count by state,
    group-count protocol=consumer, consumer-group-rebalance-count): two members joining bump the
    epoch twice; m1 still owns what it must give up, so the group is Reconciling; m1's expired
    session is a heartbeat expiration and a third bump."""
    first = h.join("m1")
    h.join("m2")
    h.heartbeat(member_id="m1", member_epoch=1, topic_partitions=owned(first))
    snap = h.coordinator.snapshot()
    assert snap.consumer_groups_by_state == {"Empty": 0, "Assigning": 0, "Reconciling": 1, "Stable": 0, "Dead": 0}
    assert sum(snap.groups_by_state.values()) == 0 and snap.members == 2
    assert snap.consumer_rebalances == 2 and snap.heartbeat_expirations == 0
    h.heartbeat(member_id="m2", member_epoch=2, topic_partitions=())
    h.advance(REBALANCE_TIMEOUT + 1)   # m1 fenced by its rebalance timeout: not a session expiry
    h.advance(SESSION_TIMEOUT)         # m2 sent nothing since: its session expires
    after = h.coordinator.snapshot()
    assert after.consumer_groups_by_state["Empty"] == 1 and after.members == 0
    assert after.consumer_rebalances == 4 and after.heartbeat_expirations == 1
