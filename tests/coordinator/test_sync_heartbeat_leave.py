"""GroupCoordinatorTest ports: SyncGroup, Heartbeat/session, LeaveGroup."""
from __future__ import annotations

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import CompletingRebalance, Dead, Empty, GroupMetadata, PreparingRebalance, Stable
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.results import OffsetAndMetadata
from coordinator_harness import (
    FOLLOWER_INSTANCE, GROUP_ID, INITIAL_DELAY, LEADER_INSTANCE, OTHER_GROUP_ID, PROTOCOL_TYPE,
    PROTOCOLS, REBALANCE_TIMEOUT, SESSION_TIMEOUT, Harness,
)

pytestmark = pytest.mark.timeout(30)


def _dead_group(h: Harness, group_id: str = GROUP_ID) -> GroupMetadata:
    g = h.coordinator.group_manager.add_group(h.coordinator.group_manager.new_group(group_id))
    g.transition_to(Dead)
    return g


def _two_members_joined(h: Harness):
    lbox, fbox = h.send_join(), h.send_join()
    h.advance(INITIAL_DELAY + 1)
    h.advance(INITIAL_DELAY + 1)
    return lbox.value, fbox.value


# ---------------------------------------------------------------------------- SyncGroup
def test_sync_dead_group(h: Harness) -> None:
    _dead_group(h)
    assert h.sync(GROUP_ID, 1, "memberId").error == Errors.COORDINATOR_NOT_AVAILABLE


@pytest.mark.parametrize("ptype,pname", [("connect", None), (None, "roundrobin")])
def test_sync_group_returns_an_error_when_protocol_is_inconsistent(h: Harness, ptype, pname) -> None:
    r = h.dynamic_join()
    s = h.sync(GROUP_ID, 1, r.member_id, {r.member_id: b""}, protocol_type=ptype, protocol_name=pname)
    assert s.error == Errors.INCONSISTENT_GROUP_PROTOCOL and s.protocol_type is None and s.protocol_name is None


@pytest.mark.parametrize("given", [False, True])
def test_sync_group_succeeds_with_or_without_protocol_type_and_name(h: Harness, given: bool) -> None:
    leader, follower = _two_members_joined(h)
    kw = dict(protocol_type=PROTOCOL_TYPE, protocol_name="range") if given else dict(protocol_type=None, protocol_name=None)
    ls = h.sync(GROUP_ID, 1, leader.member_id, {}, **kw)
    fs = h.sync(GROUP_ID, 1, follower.member_id, **kw)
    for s in (ls, fs):
        assert s.error == Errors.NONE and s.protocol_type == PROTOCOL_TYPE and s.protocol_name == "range"


def test_sync_group_empty_assignment(h: Harness) -> None:
    r = h.dynamic_join()
    s = h.sync(GROUP_ID, 1, r.member_id, {})
    assert s.error == Errors.NONE and s.member_assignment == b""
    assert h.heartbeat(member_id=r.member_id) == Errors.NONE


def test_sync_group_not_coordinator(h: Harness) -> None:
    assert h.sync(OTHER_GROUP_ID, 1, "m").error == Errors.NOT_COORDINATOR


def test_sync_group_from_unknown_group(h: Harness) -> None:
    assert h.sync(GROUP_ID, 1, "m").error == Errors.UNKNOWN_MEMBER_ID


def test_sync_group_from_unknown_member(h: Harness) -> None:
    r = h.dynamic_join()
    assert h.sync(GROUP_ID, 1, r.member_id, {r.member_id: b""}).error == Errors.NONE
    assert h.sync(GROUP_ID, 1, "unknown").error == Errors.UNKNOWN_MEMBER_ID


def test_sync_group_from_illegal_generation(h: Harness) -> None:
    r = h.dynamic_join()
    assert h.sync(GROUP_ID, 2, r.member_id, {r.member_id: b""}).error == Errors.ILLEGAL_GENERATION


def test_leader_failure_in_sync_group(h: Harness) -> None:
    leader, follower = _two_members_joined(h)
    fbox = h.send_sync(GROUP_ID, 1, follower.member_id)
    assert not fbox.done
    h.advance(SESSION_TIMEOUT + 100)
    assert fbox.value.error == Errors.REBALANCE_IN_PROGRESS


def test_sync_group_follower_after_leader(h: Harness) -> None:
    leader, follower = _two_members_joined(h)
    ls = h.sync(GROUP_ID, 1, leader.member_id, {leader.member_id: b"L", follower.member_id: b"F"})
    assert ls.error == Errors.NONE and ls.member_assignment == b"L"
    fs = h.sync(GROUP_ID, 1, follower.member_id)
    assert fs.error == Errors.NONE and fs.member_assignment == b"F"


def test_sync_group_leader_after_follower(h: Harness) -> None:
    leader, follower = _two_members_joined(h)
    fbox = h.send_sync(GROUP_ID, 1, follower.member_id)
    assert not fbox.done
    ls = h.sync(GROUP_ID, 1, leader.member_id, {leader.member_id: b"L", follower.member_id: b"F"})
    assert ls.member_assignment == b"L" and fbox.value.member_assignment == b"F"
    assert fbox.value.error == Errors.NONE and h.group().is_(Stable)


def _three_members_joined(h: Harness):
    boxes = [h.send_join() for _ in range(3)]
    h.advance(INITIAL_DELAY + 1)
    h.advance(INITIAL_DELAY + 1)
    results = [b.value for b in boxes]
    leader = next(r for r in results if r.leader_id == r.member_id)
    followers = [r for r in results if r is not leader]
    assert all(r.generation_id == 1 and r.error == Errors.NONE for r in results)
    return leader, followers


def test_rebalance_times_out_when_sync_request_is_not_received(h: Harness) -> None:
    leader, followers = _three_members_joined(h)
    h.advance(REBALANCE_TIMEOUT // 2)
    for m in [leader] + followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.NONE
    h.advance(REBALANCE_TIMEOUT // 2 + 1)
    for m in [leader] + followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.UNKNOWN_MEMBER_ID


def test_rebalance_times_out_when_sync_request_is_not_received_from_followers(h: Harness) -> None:
    leader, followers = _three_members_joined(h)
    assert h.sync(GROUP_ID, 1, leader.member_id, {}).error == Errors.NONE
    h.advance(REBALANCE_TIMEOUT // 2)
    for m in [leader] + followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.NONE
    h.advance(REBALANCE_TIMEOUT // 2 + 1)
    for m in followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat(member_id=leader.member_id) == Errors.REBALANCE_IN_PROGRESS


def test_rebalance_times_out_when_sync_request_is_not_received_from_leader(h: Harness) -> None:
    leader, followers = _three_members_joined(h)
    boxes = [h.send_sync(GROUP_ID, 1, m.member_id) for m in followers]
    h.advance(REBALANCE_TIMEOUT // 2)
    for m in [leader] + followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.NONE
    h.advance(REBALANCE_TIMEOUT // 2 + 1)
    assert all(b.value.error == Errors.REBALANCE_IN_PROGRESS for b in boxes)
    assert h.heartbeat(member_id=leader.member_id) == Errors.UNKNOWN_MEMBER_ID
    for m in followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.REBALANCE_IN_PROGRESS


def test_rebalance_does_not_time_out_when_all_sync_are_received(h: Harness) -> None:
    leader, followers = _three_members_joined(h)
    assert h.sync(GROUP_ID, 1, leader.member_id, {}).error == Errors.NONE
    for m in followers:
        assert h.sync(GROUP_ID, 1, m.member_id).error == Errors.NONE
    h.advance(REBALANCE_TIMEOUT // 2)
    for m in [leader] + followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.NONE
    h.advance(REBALANCE_TIMEOUT // 2 + 1)
    for m in [leader] + followers:
        assert h.heartbeat(member_id=m.member_id) == Errors.NONE


def test_sync_store_failure_propagates_error_and_rebalances(h: Harness) -> None:
    leader, follower = _two_members_joined(h)
    fbox = h.send_sync(GROUP_ID, 1, follower.member_id)
    h.log.error = Errors.NOT_ENOUGH_REPLICAS
    ls = h.sync(GROUP_ID, 1, leader.member_id, {})
    assert ls.error == Errors.COORDINATOR_NOT_AVAILABLE
    assert fbox.value.error == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.group().is_(PreparingRebalance)


def test_sync_answers_only_once_replicated(h: Harness) -> None:
    """acks=-1: the leader's SyncGroup is answered when the append completes (A.5)."""
    r = h.dynamic_join()
    h.log.hold = True
    box = h.send_sync(GROUP_ID, 1, r.member_id, {r.member_id: b"a"})
    assert not box.done and h.group().is_(CompletingRebalance)
    h.log.complete_pending()
    assert box.value.member_assignment == b"a" and h.group().is_(Stable)


# ---------------------------------------------------------------------------- Heartbeat
def test_heartbeat_wrong_coordinator(h: Harness) -> None:
    assert h.heartbeat(OTHER_GROUP_ID, "m") == Errors.NOT_COORDINATOR


def test_heartbeat_unknown_group(h: Harness) -> None:
    assert h.heartbeat(member_id="m") == Errors.UNKNOWN_MEMBER_ID


def test_heartbeat_dead_group(h: Harness) -> None:
    _dead_group(h)
    assert h.heartbeat(member_id="m") == Errors.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_empty_group(h: Harness) -> None:
    g = h.coordinator.group_manager.add_group(h.coordinator.group_manager.new_group(GROUP_ID))
    g.add(MemberMetadata("m", None, "c", "h", 500, 500, PROTOCOL_TYPE, PROTOCOLS))
    assert h.heartbeat(member_id="m", generation=0) == Errors.UNKNOWN_MEMBER_ID


def test_heartbeat_unknown_consumer_existing_group(h: Harness) -> None:
    r = h.dynamic_join()
    h.sync(GROUP_ID, 1, r.member_id, {})
    assert h.heartbeat(member_id="unknown") == Errors.UNKNOWN_MEMBER_ID


def test_heartbeat_rebalance_in_progress(h: Harness) -> None:
    r = h.dynamic_join()
    assert h.heartbeat(member_id=r.member_id) == Errors.NONE  # CompletingRebalance


def test_heartbeat_illegal_generation(h: Harness) -> None:
    r = h.join_and_sync_single()
    assert h.heartbeat(member_id=r.member_id, generation=2) == Errors.ILLEGAL_GENERATION


def test_valid_heartbeat(h: Harness) -> None:
    r = h.join_and_sync_single()
    assert h.heartbeat(member_id=r.member_id) == Errors.NONE


def test_session_timeout(h: Harness) -> None:
    r = h.join_and_sync_single()
    h.advance(SESSION_TIMEOUT + 100)
    assert h.heartbeat(member_id=r.member_id) == Errors.UNKNOWN_MEMBER_ID
    assert h.coordinator.heartbeat_expirations == 1


def test_heartbeat_maintains_session(h: Harness) -> None:
    r = h.join_and_sync_single()
    for _ in range(3):
        h.advance(SESSION_TIMEOUT // 2)
        assert h.heartbeat(member_id=r.member_id) == Errors.NONE
    h.advance(SESSION_TIMEOUT // 2)
    assert h.heartbeat(member_id=r.member_id) == Errors.NONE


def test_commit_maintains_session(h: Harness) -> None:
    r = h.join_and_sync_single()
    tp = ("topic", 0)
    h.advance(SESSION_TIMEOUT // 2)
    assert h.commit(GROUP_ID, r.member_id, 1, {tp: OffsetAndMetadata(0)})[tp] == Errors.NONE
    h.advance(SESSION_TIMEOUT // 2 + 100)
    assert h.heartbeat(member_id=r.member_id) == Errors.NONE


def test_session_timeout_during_rebalance(h: Harness) -> None:
    first = h.join_and_sync_single()
    other = h.send_join(session_timeout=5000, rebalance_timeout=5000)
    assert h.heartbeat(member_id=first.member_id) == Errors.REBALANCE_IN_PROGRESS
    h.advance(SESSION_TIMEOUT + 1)
    o = other.value
    assert o.error == Errors.NONE and o.generation_id == 2 and o.leader_id == o.member_id
    assert h.heartbeat(member_id=first.member_id, generation=2) == Errors.UNKNOWN_MEMBER_ID


def test_rebalance_completes_before_member_joins(h: Harness) -> None:
    """A static leader keeps heartbeating but never rejoins: the rebalance times out without it;
    its heartbeats then get ILLEGAL_GENERATION; after its session lapses a rebalance follows."""
    long_session = REBALANCE_TIMEOUT * 3
    first = h.static_join(instance_id=LEADER_INSTANCE, session_timeout=long_session)
    assert h.sync(GROUP_ID, 1, first.member_id, {}, LEADER_INSTANCE).error == Errors.NONE
    newbox = h.send_join(session_timeout=long_session)
    for _ in range(2):
        h.advance(REBALANCE_TIMEOUT // 2)
        assert h.heartbeat(member_id=first.member_id, instance_id=LEADER_INSTANCE) == Errors.REBALANCE_IN_PROGRESS
    h.advance(2)
    new = newbox.value
    assert new.error == Errors.NONE and new.generation_id == 2
    # The static member was kept (not rejoined) in generation 2.
    assert h.heartbeat(member_id=first.member_id, instance_id=LEADER_INSTANCE) == Errors.ILLEGAL_GENERATION
    assert h.sync(GROUP_ID, 2, new.member_id, {}).error == Errors.NONE
    # Let the static member's session lapse while the newcomer heartbeats.
    for _ in range(8):
        h.advance(REBALANCE_TIMEOUT // 4)
        hb = h.heartbeat(member_id=new.member_id, generation=2)
        if hb != Errors.NONE:
            break
    assert hb == Errors.REBALANCE_IN_PROGRESS
    assert not h.group().has_static_member(LEADER_INSTANCE)
    rejoin = h.send_join(member_id=new.member_id, session_timeout=long_session)
    r = rejoin.value
    assert r.error == Errors.NONE and r.generation_id == 3
    assert h.sync(GROUP_ID, 3, new.member_id, {}).error == Errors.NONE
    h.advance(REBALANCE_TIMEOUT // 2)
    assert h.heartbeat(member_id=new.member_id, generation=3) == Errors.NONE


def test_heartbeat_during_rebalance_causes_rebalance_in_progress(h: Harness) -> None:
    first = h.join_and_sync_single()
    h.send_join()
    assert h.heartbeat(member_id=first.member_id) == Errors.REBALANCE_IN_PROGRESS


def test_complete_heartbeat_with_group_dead(h: Harness) -> None:
    r = h.join_and_sync_single()
    group = h.group()
    group.transition_to(Dead)
    completed = []
    assert h.coordinator.try_complete_heartbeat(group, r.member_id, False, lambda: completed.append(1) or True)
    h.coordinator.on_expire_heartbeat(group, r.member_id, False)
    assert group.has(r.member_id)


def test_complete_heartbeat_with_member_already_removed(h: Harness) -> None:
    r = h.join_and_sync_single()
    group = h.group()
    group.remove(r.member_id)
    assert h.coordinator.try_complete_heartbeat(group, r.member_id, False, lambda: True)


# ---------------------------------------------------------------------------- LeaveGroup
def test_leave_group_wrong_coordinator(h: Harness) -> None:
    assert h.leave_one("m", OTHER_GROUP_ID).top_level_error == Errors.NOT_COORDINATOR


def test_leave_group_unknown_group(h: Harness) -> None:
    r = h.leave_one("m")
    assert r.top_level_error == Errors.NONE and r.member_responses[0].error == Errors.UNKNOWN_MEMBER_ID


def test_leave_group_unknown_consumer_existing_group(h: Harness) -> None:
    h.join_and_sync_single()
    r = h.leave_one("other")
    assert r.top_level_error == Errors.NONE and r.member_responses[0].error == Errors.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("batch", [False, True])
def test_leave_dead_group(h: Harness, batch: bool) -> None:
    _dead_group(h)
    members = [("m1", None, None), ("m2", None, None)] if batch else [("m1", None, None)]
    r = h.leave(GROUP_ID, members)
    assert r.top_level_error == Errors.COORDINATOR_NOT_AVAILABLE and r.member_responses == []


def test_valid_leave_group(h: Harness) -> None:
    m = h.join_and_sync_single()
    r = h.leave_one(m.member_id)
    assert r.top_level_error == Errors.NONE and r.member_responses[0].error == Errors.NONE


def test_leave_group_with_fenced_instance_id(h: Harness) -> None:
    h.static_members_join_and_rebalance()
    r = h.leave(GROUP_ID, [("some-id", LEADER_INSTANCE, None)])
    assert r.member_responses[0].error == Errors.FENCED_INSTANCE_ID


def test_leave_group_static_member_with_unknown_member_id(h: Harness) -> None:
    h.static_members_join_and_rebalance()
    r = h.leave(GROUP_ID, [("", LEADER_INSTANCE, "admin")])
    assert r.top_level_error == Errors.NONE and r.member_responses[0].error == Errors.NONE


def test_static_members_valid_batch_leave_group(h: Harness) -> None:
    h.static_members_join_and_rebalance()
    r = h.leave(GROUP_ID, [("", LEADER_INSTANCE, None), ("", FOLLOWER_INSTANCE, None)])
    assert [m.error for m in r.member_responses] == [Errors.NONE, Errors.NONE]


def test_static_members_wrong_coordinator_batch_leave_group(h: Harness) -> None:
    r = h.leave(OTHER_GROUP_ID, [("", LEADER_INSTANCE, None), ("", FOLLOWER_INSTANCE, None)])
    assert r.top_level_error == Errors.NOT_COORDINATOR


def test_static_members_unknown_group_batch_leave_group(h: Harness) -> None:
    r = h.leave(GROUP_ID, [("", LEADER_INSTANCE, None), ("", FOLLOWER_INSTANCE, None)])
    assert r.top_level_error == Errors.NONE
    assert [m.error for m in r.member_responses] == [Errors.UNKNOWN_MEMBER_ID] * 2


def test_static_members_fenced_instance_batch_leave_group(h: Harness) -> None:
    leader, _ = h.static_members_join_and_rebalance()
    r = h.leave(GROUP_ID, [(leader.member_id, LEADER_INSTANCE, None), ("invalid", FOLLOWER_INSTANCE, None)])
    assert [m.error for m in r.member_responses] == [Errors.NONE, Errors.FENCED_INSTANCE_ID]


def test_static_members_unknown_instance_batch_leave_group(h: Harness) -> None:
    h.static_members_join_and_rebalance()
    r = h.leave(GROUP_ID, [("", "unknown-instance", None), ("", FOLLOWER_INSTANCE, None)])
    assert [m.error for m in r.member_responses] == [Errors.UNKNOWN_MEMBER_ID, Errors.NONE]


def test_pending_member_batch_leave_group(h: Harness) -> None:
    h.join_and_sync_single()
    pending = h.join(require_known_member_id=True)
    assert pending.error == Errors.MEMBER_ID_REQUIRED
    r = h.leave(GROUP_ID, [("", "unknown-instance", None), (pending.member_id, None, None)])
    assert [m.error for m in r.member_responses] == [Errors.UNKNOWN_MEMBER_ID, Errors.NONE]


def test_leave_last_member_makes_group_empty_and_persists(h: Harness) -> None:
    m = h.join_and_sync_single()
    appends = h.log.appends
    assert h.leave_one(m.member_id).member_responses[0].error == Errors.NONE
    group = h.group()
    assert group.is_(Empty) and group.generation_id == 2
    assert h.log.appends == appends + 1  # the empty group record
