"""Ports of Kafka's reconciliation and assignor tests (group-coordinator, Kafka 4.1):
CurrentAssignmentBuilderTest, RangeAssignorTest, OptimizedUniformAssignmentBuilderTest (the
homogeneous builder), UniformHeterogeneousAssignmentBuilderTest and TargetAssignmentBuilderTest.
Members are given in Kafka's ``TreeMap`` order (sorted ids)."""
from __future__ import annotations

import uuid

import pytest

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.group.assignor import (
    GroupSpec, MemberSubscriptionAndAssignment, PartitionAssignorError, RangeAssignor, UniformAssignor,
)
from kafka_emu.coordinator.group.modern.consumer.consumer_group_member import ConsumerGroupMember
from kafka_emu.coordinator.group.modern.consumer.current_assignment_builder import CurrentAssignmentBuilder
from kafka_emu.coordinator.group.modern.member_state import MemberState
from kafka_emu.coordinator.group.modern.subscription import SubscriptionType
from kafka_emu.coordinator.group.modern.target_assignment_builder import TargetAssignmentBuilder

from kafka_emu.coordinator.metadata_image import StaticMetadataImage

T1, T2, T3 = uuid.UUID(int=1 << 100), uuid.UUID(int=2 << 100), uuid.UUID(int=3 << 100)
HOMO, HETERO = SubscriptionType.HOMOGENEOUS, SubscriptionType.HETEROGENEOUS
STABLE, UNREVOKED, UNRELEASED = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS


def a(*topics: tuple[uuid.UUID, tuple[int, ...]]) -> dict[uuid.UUID, frozenset[int]]:
    """Kafka's ``mkAssignment(mkTopicAssignment(...), ...)``."""
    return {t: frozenset(ps) for t, ps in topics}


def member(state: MemberState, epoch: int, previous: int, assigned: dict, pending: dict | None = None
           ) -> ConsumerGroupMember:
    return ConsumerGroupMember("member", member_epoch=epoch, previous_member_epoch=previous, state=state,
                               assigned_partitions=assigned, partitions_pending_revocation=pending or {})


def reconcile(m: ConsumerGroupMember, epoch: int, target: dict, partition_epoch, owned=None) -> ConsumerGroupMember:
    return (CurrentAssignmentBuilder(m).with_target_assignment(epoch, target)
            .with_current_partition_epoch(partition_epoch).with_owned_topic_partitions(owned).build())


# ----------------------------------------------------------------------------- CurrentAssignmentBuilderTest
def test_stable_to_stable() -> None:
    """CurrentAssignmentBuilderTest.testStableToStable"""
    m = member(STABLE, 10, 10, a((T1, (1, 2, 3)), (T2, (4, 5, 6))))
    assert reconcile(m, 11, a((T1, (1, 2, 3)), (T2, (4, 5, 6))), lambda t, p: 10) == \
        member(STABLE, 11, 10, a((T1, (1, 2, 3)), (T2, (4, 5, 6))))


def test_stable_to_stable_with_new_partitions() -> None:
    """CurrentAssignmentBuilderTest.testStableToStableWithNewPartitions"""
    m = member(STABLE, 10, 10, a((T1, (1, 2, 3)), (T2, (4, 5, 6))))
    assert reconcile(m, 11, a((T1, (1, 2, 3, 4)), (T2, (4, 5, 6, 7))), lambda t, p: -1) == \
        member(STABLE, 11, 10, a((T1, (1, 2, 3, 4)), (T2, (4, 5, 6, 7))))


def test_stable_to_unrevoked_partitions() -> None:
    """CurrentAssignmentBuilderTest.testStableToUnrevokedPartitions"""
    m = member(STABLE, 10, 10, a((T1, (1, 2, 3)), (T2, (4, 5, 6))))
    assert reconcile(m, 11, a((T1, (2, 3, 4)), (T2, (5, 6, 7))), lambda t, p: -1) == \
        member(UNREVOKED, 10, 10, a((T1, (2, 3)), (T2, (5, 6))), a((T1, (1,)), (T2, (4,))))


def test_stable_to_unreleased_partitions() -> None:
    """CurrentAssignmentBuilderTest.testStableToUnreleasedPartitions"""
    m = member(STABLE, 10, 10, a((T1, (1, 2, 3)), (T2, (4, 5, 6))))
    assert reconcile(m, 11, a((T1, (1, 2, 3, 4)), (T2, (4, 5, 6, 7))), lambda t, p: 10) == \
        member(UNRELEASED, 11, 10, a((T1, (1, 2, 3)), (T2, (4, 5, 6))))


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions() -> None:
    """CurrentAssignmentBuilderTest.testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions:
    an owned list without the revoked partitions skips UNREVOKED_PARTITIONS."""
    m = member(STABLE, 10, 10, a((T1, (1, 2, 3)), (T2, (4, 5, 6))))
    assert reconcile(m, 11, a((T1, (1, 2, 3)), (T2, (4, 5, 7))), lambda t, p: 10 if t == T2 else -1, []) == \
        member(UNRELEASED, 11, 10, a((T1, (1, 2, 3)), (T2, (4, 5))))


def test_unrevoked_partitions_to_stable() -> None:
    """CurrentAssignmentBuilderTest.testUnrevokedPartitionsToStable"""
    m = member(UNREVOKED, 10, 10, a((T1, (2, 3)), (T2, (5, 6))), a((T1, (1,)), (T2, (4,))))
    assert reconcile(m, 11, a((T1, (2, 3)), (T2, (5, 6))), lambda t, p: -1, [(T1, [2, 3]), (T2, [5, 6])]) == \
        member(STABLE, 11, 10, a((T1, (2, 3)), (T2, (5, 6))))


def test_remains_in_unrevoked_partitions() -> None:
    """CurrentAssignmentBuilderTest.testRemainsInUnrevokedPartitions: owned partitions not given,
    or still including a revoked one, keep the member where it is."""
    m = member(UNREVOKED, 10, 10, a((T1, (2, 3)), (T2, (5, 6))), a((T1, (1,)), (T2, (4,))))
    target = a((T1, (3,)), (T2, (6,)))
    for owned in (None, [(T1, [1, 2, 3]), (T2, [5, 6])], [(T1, [2, 3]), (T2, [4, 5, 6])]):
        assert reconcile(m, 12, target, lambda t, p: -1, owned) == m


def test_unrevoked_partitions_to_unrevoked_partitions() -> None:
    """CurrentAssignmentBuilderTest.testUnrevokedPartitionsToUnrevokedPartitions"""
    m = member(UNREVOKED, 10, 10, a((T1, (2, 3)), (T2, (5, 6))), a((T1, (1,)), (T2, (4,))))
    assert reconcile(m, 12, a((T1, (3,)), (T2, (6,))), lambda t, p: -1, [(T1, [2, 3]), (T2, [5, 6])]) == \
        member(UNREVOKED, 11, 10, a((T1, (3,)), (T2, (6,))), a((T1, (2,)), (T2, (5,))))


def test_unrevoked_partitions_to_unreleased_partitions() -> None:
    """CurrentAssignmentBuilderTest.testUnrevokedPartitionsToUnreleasedPartitions"""
    m = member(UNREVOKED, 11, 10, a((T1, (2, 3)), (T2, (5, 6))))
    assert reconcile(m, 11, a((T1, (2, 3, 4)), (T2, (5, 6, 7))), lambda t, p: 10,
                     [(T1, [2, 3]), (T2, [5, 6])]) == member(UNRELEASED, 11, 11, a((T1, (2, 3)), (T2, (5, 6))))


def test_unreleased_partitions_to_stable() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToStable"""
    m = member(UNRELEASED, 11, 11, a((T1, (2, 3)), (T2, (5, 6))))
    assert reconcile(m, 12, a((T1, (2, 3)), (T2, (5, 6))), lambda t, p: 10) == \
        member(STABLE, 12, 11, a((T1, (2, 3)), (T2, (5, 6))))


def test_unreleased_partitions_to_stable_with_new_partitions() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToStableWithNewPartitions"""
    m = member(UNRELEASED, 11, 11, a((T1, (2, 3)), (T2, (5, 6))))
    assert reconcile(m, 11, a((T1, (2, 3, 4)), (T2, (5, 6, 7))), lambda t, p: -1) == \
        member(STABLE, 11, 11, a((T1, (2, 3, 4)), (T2, (5, 6, 7))))


def test_unreleased_partitions_to_unreleased_partitions() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToUnreleasedPartitions"""
    m = member(UNRELEASED, 11, 11, a((T1, (2, 3)), (T2, (5, 6))))
    assert reconcile(m, 11, a((T1, (2, 3, 4)), (T2, (5, 6, 7))), lambda t, p: 10) == m


def test_unreleased_partitions_to_unrevoked_partitions() -> None:
    """CurrentAssignmentBuilderTest.testUnreleasedPartitionsToUnrevokedPartitions"""
    m = member(UNRELEASED, 11, 11, a((T1, (2, 3)), (T2, (5, 6))))
    assert reconcile(m, 12, a((T1, (3,)), (T2, (6,))), lambda t, p: 10) == \
        member(UNREVOKED, 11, 11, a((T1, (3,)), (T2, (6,))), a((T1, (2,)), (T2, (5,))))


def test_unknown_state() -> None:
    """CurrentAssignmentBuilderTest.testUnknownState: fenced unless the member owns nothing."""
    m = member(MemberState.UNKNOWN, 11, 11, a((T1, (3,)), (T2, (6,))), a((T1, (2,)), (T2, (5,))))
    with pytest.raises(KafkaError) as e:
        reconcile(m, 12, a((T1, (3,)), (T2, (6,))), lambda t, p: 10)
    assert e.value.code == Errors.FENCED_MEMBER_EPOCH
    assert reconcile(m, 12, a((T1, (3,)), (T2, (6,))), lambda t, p: -1, []) == \
        member(STABLE, 12, 11, a((T1, (3,)), (T2, (6,))))


# ----------------------------------------------------------------------------- assignors
def image(*topics: tuple[uuid.UUID, int]) -> StaticMetadataImage:
    img = StaticMetadataImage()
    for i, (topic_id, partitions) in enumerate(topics):
        img.add_topic(f"topic{i + 1}", partitions, topic_id)
    return img


def spec(members: dict[str, tuple], subscription_type: SubscriptionType) -> GroupSpec:
    """members: id -> (topic ids, assignment[, instance id])."""
    specs = {mid: MemberSubscriptionAndAssignment(None, m[2] if len(m) > 2 else None, frozenset(m[0]), m[1])
             for mid, m in sorted(members.items())}
    inverted: dict = {}
    for mid, s in specs.items():
        for t, ps in s.assignment.items():
            for p in ps:
                inverted.setdefault(t, {})[p] = mid
    return GroupSpec(specs, subscription_type, inverted)


def assign(assignor, img: StaticMetadataImage, members: dict[str, tuple], subscription_type: SubscriptionType) -> dict:
    from kafka_emu.coordinator.group.modern.target_assignment_builder import MetadataImageDescriber
    out = assignor.assign(spec(members, subscription_type), MetadataImageDescriber(img))
    return {mid: {t: set(ps) for t, ps in asg.items() if ps} for mid, asg in out.items()}


def test_range_first_assignment_three_members_three_topics_different_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions"""
    img = image((T1, 3), (T2, 3), (T3, 2))
    got = assign(RangeAssignor(), img, {"A": ({T1, T2}, {}), "B": ({T3}, {}), "C": ({T2, T3}, {})}, HETERO)
    assert got == {"A": {T1: {0, 1, 2}, T2: {0, 1}}, "B": {T3: {0}}, "C": {T2: {2}, T3: {1}}}


def test_range_first_assignment_two_members_two_topics_same_subscriptions() -> None:
    """RangeAssignorTest.testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions: co-partitioned."""
    img = image((T1, 3), (T3, 2))
    got = assign(RangeAssignor(), img, {"A": ({T1, T3}, {}), "B": ({T1, T3}, {})}, HOMO)
    assert got == {"A": {T1: {0, 1}, T3: {0}}, "B": {T1: {2}, T3: {1}}}


def test_range_num_members_greater_than_num_partitions() -> None:
    """RangeAssignorTest.testFirstAssignmentNumMembersGreaterThanNumPartitions"""
    got = assign(RangeAssignor(), image((T1, 2)), {"A": ({T1}, {}), "B": ({T1}, {}), "C": ({T1}, {})}, HOMO)
    assert got == {"A": {T1: {0}}, "B": {T1: {1}}, "C": {}}


def test_range_static_membership() -> None:
    """RangeAssignorTest.testStaticMembership: a static member coming back under a new member id
    gets the same range (members sorted by instance id)."""
    img = image((T1, 3))
    first = assign(RangeAssignor(), img, {"A": ({T1}, {}, "instanceA"), "B": ({T1}, {}, "instanceB")}, HOMO)
    second = assign(RangeAssignor(), img, {"A1": ({T1}, {}, "instanceA"), "B": ({T1}, {}, "instanceB")}, HOMO)
    assert first["A"] == second["A1"] and first["B"] == second["B"]


def test_range_reassignment_when_one_member_added() -> None:
    """RangeAssignorTest.testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics"""
    img = image((T1, 3), (T2, 3))
    got = assign(RangeAssignor(), img, {"A": ({T1, T2}, a((T1, (0, 1)), (T2, (0, 1)))),
                                        "B": ({T1, T2}, a((T1, (2,)), (T2, (2,)))), "C": ({T1, T2}, {})}, HOMO)
    assert got == {"A": {T1: {0}, T2: {0}}, "B": {T1: {1}, T2: {1}}, "C": {T1: {2}, T2: {2}}}


def test_range_member_subscribed_to_non_existent_topic() -> None:
    """RangeAssignorTest.testOneMemberSubscribedToNonExistentTopic"""
    with pytest.raises(PartitionAssignorError):
        assign(RangeAssignor(), image((T1, 3)), {"A": ({T2}, {})}, HOMO)


def test_uniform_homogeneous_first_assignment_is_balanced() -> None:
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks:
    6 partitions over 2 members, 3 each, every partition once."""
    got = assign(UniformAssignor(), image((T1, 3), (T3, 3)), {"A": ({T1, T3}, {}), "B": ({T1, T3}, {})}, HOMO)
    assert sorted(sum(len(ps) for ps in m.values()) for m in got.values()) == [3, 3]
    assert sorted((t, p) for m in got.values() for t, ps in m.items() for p in ps) == \
        sorted((t, p) for t in (T1, T3) for p in range(3))


def test_uniform_homogeneous_reassignment_keeps_what_fits_the_quota() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberAddedAfterInitialAssignment:
    the new member takes one partition from each of the others, nothing else moves."""
    members = {"A": ({T1}, a((T1, (0, 1, 2)))), "B": ({T1}, a((T1, (3, 4, 5)))), "C": ({T1}, {})}
    got = assign(UniformAssignor(), image((T1, 6)), members, HOMO)
    assert got["A"] == {T1: {0, 1}} and got["B"] == {T1: {3, 4}} and got["C"] == {T1: {2, 5}}


def test_uniform_homogeneous_member_leaves() -> None:
    """OptimizedUniformAssignmentBuilderTest.testReassignmentWhenOneMemberRemovedAfterInitialAssignment"""
    members = {"A": ({T1}, a((T1, (0, 1)))), "B": ({T1}, a((T1, (2, 3))))}
    spec_ = spec(members, HOMO)
    spec_ = GroupSpec(spec_.members, HOMO, {T1: {0: "A", 1: "A", 2: "B", 3: "B", 4: "C", 5: "C"}})
    from kafka_emu.coordinator.group.modern.target_assignment_builder import MetadataImageDescriber
    got = UniformAssignor().assign(spec_, MetadataImageDescriber(image((T1, 6))))
    # C's partitions are still marked assigned in the inverted map, as in Kafka until its
    # target assignment tombstone is replayed: A and B keep theirs.
    assert {m: set(ps[T1]) for m, ps in got.items()} == {"A": {0, 1}, "B": {2, 3}}


def test_uniform_heterogeneous_first_assignment() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testTwoMembersSubscribedToDifferentTopics... shape:
    each topic goes to its subscribers only, balanced across them."""
    got = assign(UniformAssignor(), image((T1, 3), (T2, 6), (T3, 2)),
                 {"A": ({T1, T2}, {}), "B": ({T2}, {}), "C": ({T2, T3}, {})}, HETERO)
    assert set(got["B"]) <= {T2} and set(got["A"]) <= {T1, T2} and set(got["C"]) <= {T2, T3}
    owned = sorted((t, p) for m in got.values() for t, ps in m.items() for p in ps)
    assert owned == sorted([(T1, p) for p in range(3)] + [(T2, p) for p in range(6)] + [(T3, p) for p in range(2)])
    sizes = sorted(sum(len(ps) for ps in m.values()) for m in got.values())
    assert sizes[-1] - sizes[0] <= 1


def test_uniform_heterogeneous_is_sticky() -> None:
    """UniformHeterogeneousAssignmentBuilderTest.testReassignmentWhenOneSubscriptionRemoved... shape:
    a member keeps the partitions of topics it still subscribes to when balance allows."""
    got = assign(UniformAssignor(), image((T1, 2), (T2, 2)),
                 {"A": ({T1}, a((T1, (0, 1)))), "B": ({T2}, a((T2, (0, 1))))}, HETERO)
    assert got == {"A": {T1: {0, 1}}, "B": {T2: {0, 1}}}


# ----------------------------------------------------------------------------- TargetAssignmentBuilderTest
def test_target_assignment_builder_writes_only_changed_members() -> None:
    """TargetAssignmentBuilderTest.testUpdateMember / testNewMember: one record per member whose
    target changed, then the target assignment epoch."""
    img = image((T1, 4))
    m1 = ConsumerGroupMember("m1", subscribed_topic_names=frozenset({"topic1"}))
    m2 = ConsumerGroupMember("m2", subscribed_topic_names=frozenset({"topic1"}))
    current = {"m1": a((T1, (0, 1, 2, 3)))}
    builder = TargetAssignmentBuilder(5, UniformAssignor(), img, lambda m: frozenset({T1}),
                                      lambda mid, asg: ("member", mid, dict(asg)), lambda e: ("epoch", e))
    builder.with_group({"m1": m1}, {}, HOMO, current, {T1: {p: "m1" for p in range(4)}})
    result = builder.add_or_update_member("m2", m2).build()
    assert [r[0] for r in result.records] == ["member", "member", "epoch"] and result.records[-1] == ("epoch", 5)
    assert sorted(len(ps[T1]) for ps in result.target_assignment.values()) == [2, 2]
    unchanged = TargetAssignmentBuilder(6, UniformAssignor(), img, lambda m: frozenset({T1}),
                                        lambda mid, asg: ("member", mid), lambda e: ("epoch", e))
    unchanged.with_group({"m1": m1, "m2": m2}, {}, HOMO, result.target_assignment,
                         {T1: {p: mid for mid, asg in result.target_assignment.items() for p in asg[T1]}})
    assert unchanged.build().records == [("epoch", 6)]
