"""GroupCoordinatorTest ports: join, capacity, validation, new/pending members, initial delay."""
from __future__ import annotations

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import CompletingRebalance, Dead, Empty, PreparingRebalance, Stable
from coordinator_harness import (
    GROUP_ID, INITIAL_DELAY, MAX_SIZE, OTHER_GROUP_ID, PROTOCOL_TYPE, REBALANCE_TIMEOUT,
    SESSION_TIMEOUT, Harness,
)

pytestmark = pytest.mark.timeout(30)


def test_join_group_wrong_coordinator(h: Harness) -> None:
    assert h.join(OTHER_GROUP_ID, require_known_member_id=True).error == Errors.NOT_COORDINATOR
    assert h.join(OTHER_GROUP_ID, instance_id="i").error == Errors.NOT_COORDINATOR


def test_join_group_should_receive_error_if_group_over_max_size(h: Harness) -> None:
    boxes = [h.send_join() for _ in range(MAX_SIZE)]
    over = h.send_join()
    assert over.value.error == Errors.GROUP_MAX_SIZE_REACHED
    assert over.value.member_id == ""
    h.advance(INITIAL_DELAY + 1)
    h.advance(INITIAL_DELAY + 1)
    assert all(b.value.error == Errors.NONE for b in boxes)


def _split(results):
    return (sum(1 for r in results if r.error == Errors.NONE),
            sum(1 for r in results if r.error == Errors.GROUP_MAX_SIZE_REACHED))


def test_dynamic_members_join_group_with_max_size_and_required_known_member(h: Harness) -> None:
    ids = [h.join(require_known_member_id=True).member_id for _ in range(MAX_SIZE + 1)]
    boxes = [h.send_join(member_id=m, require_known_member_id=True) for m in ids]
    h.advance(INITIAL_DELAY + 1)
    h.advance(REBALANCE_TIMEOUT + 1)
    results = [b.value for b in boxes]
    assert _split(results) == (MAX_SIZE, 1)
    assert h.group().is_(CompletingRebalance)
    # Rejoin while CompletingRebalance: same split.
    boxes = [h.send_join(member_id=m, require_known_member_id=True) for m in ids]
    h.advance(REBALANCE_TIMEOUT + 1)
    assert _split([b.value for b in boxes]) == (MAX_SIZE, 1)


def test_dynamic_members_join_group_with_max_size(h: Harness) -> None:
    boxes = [h.send_join() for _ in range(MAX_SIZE + 1)]
    h.advance(INITIAL_DELAY + 1)
    h.advance(REBALANCE_TIMEOUT + 1)
    results = [b.value for b in boxes]
    assert _split(results) == (MAX_SIZE, 1)
    assert h.group().size() == MAX_SIZE
    ids = [r.member_id for r in results if r.error == Errors.NONE] + ["unknown-x"]
    boxes = [h.send_join(member_id=m) for m in ids[:-1]] + [h.send_join()]
    h.advance(REBALANCE_TIMEOUT + 1)
    assert _split([b.value for b in boxes]) == (MAX_SIZE, 1)


def test_static_members_join_group_with_max_size(h: Harness) -> None:
    instances = [f"instance-{i}" for i in range(MAX_SIZE + 1)]
    boxes = [h.send_join(instance_id=i) for i in instances]
    group = h.group()
    assert group.size() == MAX_SIZE and group.num_members_awaiting_join == MAX_SIZE
    assert group.is_(PreparingRebalance)
    h.advance(INITIAL_DELAY + 1)
    h.advance(INITIAL_DELAY + 1)
    results = [b.value for b in boxes]
    assert _split(results) == (MAX_SIZE, 1)
    # Accepted members can rejoin (immediate answer while CompletingRebalance); others are rejected.
    boxes = [h.send_join(member_id=r.member_id, instance_id=i) for r, i in zip(results, instances)]
    assert [b.value.error for b in boxes] == [r.error for r in results]
    assert group.size() == MAX_SIZE


def test_dynamic_members_can_rejoin_group_with_max_size_while_rebalancing(h: Harness) -> None:
    ids = [h.join(require_known_member_id=True).member_id for _ in range(MAX_SIZE + 1)]
    boxes = [h.send_join(member_id=m, require_known_member_id=True) for m in ids]
    assert h.group().is_(PreparingRebalance)
    # Rejoin while still PreparingRebalance: accepted members are not counted twice.
    boxes2 = [h.send_join(member_id=m, require_known_member_id=True) for m in ids]
    h.advance(INITIAL_DELAY + 1)
    h.advance(REBALANCE_TIMEOUT + 1)
    # As in Kafka, a rejoin while parked replaces the parked callback (the superseded JoinGroup
    # of an accepted member is never answered); only the rejected member's first one was.
    assert sum(1 for b in boxes if b.done) == 1
    results = [b.value for b in boxes2]
    assert _split(results) == (MAX_SIZE, 1)
    assert h.group().size() == MAX_SIZE


def test_last_joining_members_are_kicked_out_when_rejoining_group_with_max_size(h: Harness) -> None:
    big = Harness(**{"group.max.size": 10})
    try:
        boxes = [big.send_join() for _ in range(MAX_SIZE + 2)]
        big.advance(INITIAL_DELAY + 1)
        big.advance(REBALANCE_TIMEOUT + 1)
        results = [b.value for b in boxes]
        assert all(r.error == Errors.NONE for r in results)
        leader = results[0]
        big.sync(GROUP_ID, 1, leader.member_id, {})
        for r in results[1:]:
            big.sync(GROUP_ID, 1, r.member_id)
        group = big.group()
        assert group.is_(Stable) and group.size() == MAX_SIZE + 2
        # Lower the limit (as Kafka's test does by reconfiguring) and force a rebalance.
        classic = big.coordinator.classic
        classic.config = type(classic.config)(**{**classic.config.__dict__, "group_max_size": MAX_SIZE})
        with group.lock:
            classic.prepare_rebalance(group, "test")
        boxes = [big.send_join(member_id=r.member_id) for r in results]
        rejoin = [b.value for b in boxes]
        assert [r.error for r in rejoin[:MAX_SIZE]] == [Errors.NONE] * MAX_SIZE
        assert [r.error for r in rejoin[MAX_SIZE:]] == [Errors.GROUP_MAX_SIZE_REACHED] * 2
        assert group.size() == MAX_SIZE
    finally:
        big.shutdown()


@pytest.mark.parametrize("session", [9, 600001])
def test_join_group_session_timeout_out_of_range(h: Harness, session: int) -> None:
    assert h.join(session_timeout=session).error == Errors.INVALID_SESSION_TIMEOUT


def test_join_group_unknown_consumer_new_group(h: Harness) -> None:
    assert h.join(member_id="memberId").error == Errors.UNKNOWN_MEMBER_ID
    assert h.join(member_id="memberId", instance_id="i").error == Errors.UNKNOWN_MEMBER_ID


def test_invalid_group_id(h: Harness) -> None:
    assert h.join("").error == Errors.INVALID_GROUP_ID
    assert h.join(None).error == Errors.INVALID_GROUP_ID


def test_valid_join_group(h: Harness) -> None:
    assert h.dynamic_join().error == Errors.NONE


def test_join_group_inconsistent_protocol_type(h: Harness) -> None:
    box = h.send_join()
    assert h.join(protocol_type="connect").error == Errors.INCONSISTENT_GROUP_PROTOCOL
    h.advance(INITIAL_DELAY + 1)
    assert box.value.error == Errors.NONE


def test_join_group_with_empty_protocol_type(h: Harness) -> None:
    assert h.join(protocol_type="", require_known_member_id=True).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="", instance_id="i").error == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_with_empty_group_protocol(h: Harness) -> None:
    assert h.join(protocols=[]).error == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_join_group_inconsistent_group_protocol(h: Harness) -> None:
    box = h.send_join(protocols=[("range", b"")])
    other = h.join(protocols=[("roundrobin", b"")])
    assert other.error == Errors.INCONSISTENT_GROUP_PROTOCOL
    h.advance(INITIAL_DELAY + 1)
    assert box.value.error == Errors.NONE


def test_join_group_unknown_consumer_existing_group(h: Harness) -> None:
    first = h.dynamic_join()
    assert first.error == Errors.NONE
    assert h.join(member_id="made-up").error == Errors.UNKNOWN_MEMBER_ID


def test_join_group_unknown_consumer_new_dead_group(h: Harness) -> None:
    group = h.coordinator.group_manager.add_group(h.coordinator.group_manager.new_group(GROUP_ID))
    with group.lock:
        group.transition_to(Dead)
    assert h.join().error == Errors.COORDINATOR_NOT_AVAILABLE


def test_join_group_second_join_inconsistent_protocol(h: Harness) -> None:
    first = h.join(require_known_member_id=True)
    assert first.error == Errors.MEMBER_ID_REQUIRED
    assert h.join(member_id=first.member_id, protocols=[], require_known_member_id=True).error == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    box = h.send_join(member_id=first.member_id, require_known_member_id=True)
    h.advance(INITIAL_DELAY + 1)
    assert box.value.error == Errors.NONE


def test_join_group_protocol_type_is_not_provided_when_an_error_occurs(h: Harness) -> None:
    r = h.join(member_id="unknown")
    assert r.error == Errors.UNKNOWN_MEMBER_ID and r.protocol_type is None and r.generation_id == -1


def test_join_group_returns_the_protocol_type(h: Harness) -> None:
    lbox = h.send_join()
    fbox = h.send_join()
    h.advance(INITIAL_DELAY + 1)
    h.advance(INITIAL_DELAY + 1)
    assert lbox.value.protocol_type == PROTOCOL_TYPE and fbox.value.protocol_type == PROTOCOL_TYPE
    assert lbox.value.error == fbox.value.error == Errors.NONE


def _two_member_stable(h: Harness):
    lbox, fbox = h.send_join(), h.send_join()
    h.advance(INITIAL_DELAY + 1)
    h.advance(INITIAL_DELAY + 1)
    leader, follower = lbox.value, fbox.value
    assert leader.leader_id == leader.member_id and leader.generation_id == 1
    assert len(leader.members) == 2 and follower.members == []
    assert h.sync(GROUP_ID, 1, leader.member_id, {leader.member_id: b"l", follower.member_id: b"f"}).error == Errors.NONE
    assert h.sync(GROUP_ID, 1, follower.member_id).member_assignment == b"f"
    assert h.group().is_(Stable)
    return leader, follower


def test_join_group_from_unchanged_follower_does_not_rebalance(h: Harness) -> None:
    leader, follower = _two_member_stable(h)
    r = h.join(member_id=follower.member_id)
    assert r.error == Errors.NONE and r.generation_id == 1 and r.members == []
    assert h.group().is_(Stable)


def test_join_group_from_unchanged_leader_should_rebalance(h: Harness) -> None:
    leader, follower = _two_member_stable(h)
    box = h.send_join(member_id=leader.member_id)
    assert h.group().is_(PreparingRebalance)
    h.advance(REBALANCE_TIMEOUT + 1)
    assert box.value.generation_id == 2


def test_generation_id_increments_on_rebalance(h: Harness) -> None:
    first = h.dynamic_join()
    assert first.generation_id == 1
    assert h.sync(GROUP_ID, 1, first.member_id, {}).error == Errors.NONE
    box = h.send_join(member_id=first.member_id)
    assert box.value.generation_id == 2 and box.value.error == Errors.NONE


# ---------------------------------------------------------------------------- new/pending members
def test_new_member_timeout_completion(h: Harness) -> None:
    session = 300000 + 1000
    box = h.send_join(session_timeout=session, rebalance_timeout=1000)
    h.advance(INITIAL_DELAY + 1)
    r = box.value
    assert r.error == Errors.NONE
    member = h.group().get(r.member_id)
    assert not member.is_new
    assert h.sync(GROUP_ID, 1, r.member_id, {r.member_id: b""}).error == Errors.NONE
    h.advance(300000 + 100)
    assert h.group().has(r.member_id)
    h.advance(session - 300000 + 100)
    assert not h.group().has(r.member_id)


def test_new_member_join_expiration(h: Harness) -> None:
    first = h.dynamic_join(session_timeout=600000, rebalance_timeout=600000)
    assert first.error == Errors.NONE
    assert h.sync(GROUP_ID, 1, first.member_id, {}).error == Errors.NONE
    new_box = h.send_join(session_timeout=600000, rebalance_timeout=600000)
    group = h.group()
    assert group.is_(PreparingRebalance) and group.size() == 2
    new_id = next(m for m in group.members if m != first.member_id)
    h.advance(300000 + 1)
    assert new_box.value.error == Errors.UNKNOWN_MEMBER_ID
    assert not group.has(new_id)
    assert group.size() == 1 and group.has(first.member_id)


def test_new_member_failure_after_join_group_completion(h: Harness) -> None:
    r = h.dynamic_join()
    assert r.error == Errors.NONE and h.group().is_(CompletingRebalance)
    h.advance(SESSION_TIMEOUT + 1)
    group = h.group()
    assert group.is_(Empty) and group.size() == 0


def test_new_member_failure_after_sync_group_completion(h: Harness) -> None:
    r = h.join_and_sync_single()
    assert h.group().is_(Stable)
    h.advance(SESSION_TIMEOUT + 1)
    group = h.group()
    assert group.is_(Empty) and group.size() == 0


def test_second_member_partially_join_and_timeout(h: Harness) -> None:
    first = h.join_and_sync_single()
    pending = h.join(require_known_member_id=True, session_timeout=100)
    assert pending.error == Errors.MEMBER_ID_REQUIRED
    group = h.group()
    assert group.is_(Stable) and len(group.pending_members) == 1
    for _ in range(3):  # keep the real member alive
        h.advance(60)
        assert h.heartbeat(member_id=first.member_id) == Errors.NONE
    assert len(group.pending_members) == 0
    assert group.is_(Stable) and group.size() == 1


def _pending_member_setup(h: Harness, pending_session: int = SESSION_TIMEOUT):
    """Two members Stable, a third gets MEMBER_ID_REQUIRED, both members rejoin (PreparingRebalance)."""
    leader, follower = _two_member_stable(h)
    pending = h.join(require_known_member_id=True, session_timeout=pending_session)
    assert pending.error == Errors.MEMBER_ID_REQUIRED
    lbox = h.send_join(member_id=leader.member_id)
    fbox = h.send_join(member_id=follower.member_id)
    group = h.group()
    assert group.is_(PreparingRebalance) and len(group.pending_members) == 1
    assert not lbox.done and not fbox.done
    return leader, follower, pending, lbox, fbox


def test_join_group_completion_when_pending_member_joins(h: Harness) -> None:
    _, _, pending, lbox, fbox = _pending_member_setup(h)
    pbox = h.send_join(member_id=pending.member_id, require_known_member_id=True)
    group = h.group()
    assert pbox.value.error == Errors.NONE and lbox.done and fbox.done
    assert group.is_(CompletingRebalance) and group.size() == 3 and len(group.pending_members) == 0


def test_join_group_completion_when_pending_member_times_out(h: Harness) -> None:
    _, _, pending, lbox, fbox = _pending_member_setup(h, pending_session=100)
    h.advance(120)
    group = h.group()
    assert lbox.done and fbox.done
    assert group.is_(CompletingRebalance) and group.size() == 2 and len(group.pending_members) == 0


def test_pending_members_leaves_group(h: Harness) -> None:
    _, _, pending, lbox, fbox = _pending_member_setup(h)
    r = h.leave_one(pending.member_id)
    assert r.top_level_error == Errors.NONE and r.member_responses[0].error == Errors.NONE
    group = h.group()
    assert lbox.done and fbox.done
    assert group.is_(CompletingRebalance) and group.size() == 2 and len(group.pending_members) == 0


# ---------------------------------------------------------------------------- initial delay
def test_should_delay_initial_rebalance_by_initial_delay_on_empty_group(h: Harness) -> None:
    box = h.send_join()
    h.advance(INITIAL_DELAY // 2)
    assert not box.done
    h.advance(INITIAL_DELAY // 2 + 1)
    assert box.value.error == Errors.NONE


def test_should_reset_rebalance_delay_when_new_member_joins_group_in_initial_rebalance(h: Harness) -> None:
    rebalance_timeout = INITIAL_DELAY * 3
    first = h.send_join(rebalance_timeout=rebalance_timeout)
    h.advance(INITIAL_DELAY - 1)
    second = h.send_join(rebalance_timeout=rebalance_timeout)
    h.advance(2)
    assert not first.done and not second.done
    h.advance(INITIAL_DELAY // 2)  # not done yet
    assert not first.done and not second.done
    h.advance(INITIAL_DELAY // 2 + 1)
    assert first.value.error == Errors.NONE and second.value.error == Errors.NONE


def test_should_delay_rebalance_up_to_rebalance_timeout(h: Harness) -> None:
    rebalance_timeout = INITIAL_DELAY * 2
    first = h.send_join(rebalance_timeout=rebalance_timeout)
    second = h.send_join(rebalance_timeout=rebalance_timeout)
    h.advance(INITIAL_DELAY + 1)
    third = h.send_join(rebalance_timeout=rebalance_timeout)
    h.advance(INITIAL_DELAY)
    assert not first.done and not second.done and not third.done
    h.advance(2)
    assert first.value.error == second.value.error == third.value.error == Errors.NONE


def test_initial_rebalance_delay_reset_by_new_member() -> None:
    """KIP-134 initial rebalance delay of 3000 ms; a second member at 1000 ms extends it once, so the
    rebalance completes at ~6000 ms (as ``GroupCoordinatorTest.
    shouldResetRebalanceDelayWhenNewMemberJoinsGroupInInitialRebalance``)."""
    h = Harness(**{"group.initial.rebalance.delay.ms": 3000, "group.max.session.timeout.ms": 1800000})
    try:
        a = h.send_join(session_timeout=10000, rebalance_timeout=300000)
        h.advance(1000)
        b = h.send_join(session_timeout=10000, rebalance_timeout=300000)
        h.advance(2001)  # t=3001: extended
        assert not a.done
        h.advance(2999)  # t=6000
        assert not a.done
        h.advance(2)
        assert a.value.generation_id == 1 and b.value.generation_id == 1
    finally:
        h.shutdown()
