"""GroupCoordinatorTest ports: static membership (KIP-345)."""
from __future__ import annotations

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import CompletingRebalance, Dead, Empty, IllegalStateError, PreparingRebalance, Stable
from coordinator_harness import (
    FOLLOWER_INSTANCE, GROUP_ID, INITIAL_DELAY, LEADER_INSTANCE, PROTOCOL_SUPERSET, REBALANCE_TIMEOUT,
    SESSION_TIMEOUT, Harness,
)

pytestmark = pytest.mark.timeout(30)


def test_static_member_join_as_first_member(h: Harness) -> None:
    assert h.static_join().error == Errors.NONE


def test_static_member_rejoin_with_explicit_unknown_member_id(h: Harness) -> None:
    assert h.static_join().error == Errors.NONE
    assert h.static_join(member_id="unknown_member").error == Errors.FENCED_INSTANCE_ID


def test_static_member_fence_duplicate_rejoined_follower(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    h.send_join()  # a third (dynamic) member triggers a rebalance
    h.advance(1)
    assert h.group().is_(PreparingRebalance)
    old = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE)
    h.advance(1)
    dup = h.send_join(instance_id=FOLLOWER_INSTANCE)
    h.advance(1)
    assert old.value.error == Errors.FENCED_INSTANCE_ID and old.value.generation_id == -1
    assert not dup.done
    assert h.group().is_(PreparingRebalance)


def test_static_member_fence_duplicate_syncing_follower_after_member_id_changed(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    lbox = h.send_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE)
    h.advance(1)
    assert h.group().is_(PreparingRebalance)
    fbox = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE)
    h.advance(1)
    l2, f2 = lbox.value, fbox.value
    assert l2.error == Errors.NONE and l2.generation_id == 2 and len(l2.members) == 2
    assert l2.member_id == leader.member_id == l2.leader_id
    assert f2.error == Errors.NONE and f2.members == [] and f2.leader_id == leader.member_id
    assert h.group().is_(CompletingRebalance)
    old_sync = h.send_sync(GROUP_ID, 2, follower.member_id, instance_id=FOLLOWER_INSTANCE,
                           protocol_name=l2.protocol_name)
    assert not old_sync.done
    dup = h.send_join(instance_id=FOLLOWER_INSTANCE)
    h.advance(1)
    assert old_sync.value.error == Errors.FENCED_INSTANCE_ID
    assert h.group().is_(PreparingRebalance)
    h.advance(INITIAL_DELAY + 1)
    h.advance(REBALANCE_TIMEOUT + 1)
    d = dup.value
    assert d.error == Errors.NONE and d.generation_id == 3 and d.leader_id == d.member_id
    assert {m.group_instance_id for m in d.members} == {FOLLOWER_INSTANCE}
    assert h.group().is_(CompletingRebalance)


def test_static_member_fence_duplicate_rejoining_follower_after_member_id_changed(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    lbox = h.send_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE)
    h.advance(1)
    dup = h.send_join(instance_id=FOLLOWER_INSTANCE)
    h.advance(1)
    old = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE)
    assert lbox.value.error == Errors.NONE and lbox.value.generation_id == 2
    assert {m.group_instance_id for m in lbox.value.members} == {LEADER_INSTANCE, FOLLOWER_INSTANCE}
    assert dup.value.error == Errors.NONE and dup.value.member_id != follower.member_id
    assert old.value.error == Errors.FENCED_INSTANCE_ID and old.value.generation_id == -1


def test_static_member_rejoin_with_known_member_id(h: Harness) -> None:
    r = h.static_join(instance_id="i")
    assert r.error == Errors.NONE
    again = h.send_join(member_id=r.member_id, instance_id="i")
    h.advance(1)
    assert again.value.error == Errors.NONE and h.group().is_(CompletingRebalance)
    s = h.sync(GROUP_ID, again.value.generation_id, r.member_id, {r.member_id: b""}, "i")
    assert s.error == Errors.NONE and h.group().is_(Stable)


@pytest.mark.parametrize("skip", [True, False])
def test_static_member_rejoin_with_leader_id_and_unknown_member_id(h: Harness, skip: bool) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    r = h.static_join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET, clock_advance=1,
                      supports_skipping_assignment=skip)
    assert r.error == Errors.NONE and r.generation_id == 1 and h.group().is_(Stable)
    if skip:
        assert {m.group_instance_id for m in r.members} == {LEADER_INSTANCE, FOLLOWER_INSTANCE}
        assert r.leader_id == r.member_id and r.skip_assignment
    else:
        assert r.members == [] and r.leader_id == leader.member_id and not r.skip_assignment
    old = h.static_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE,
                        protocols=PROTOCOL_SUPERSET, clock_advance=1)
    assert old.error == Errors.FENCED_INSTANCE_ID
    assert h.sync(GROUP_ID, 1, leader.member_id, {}, LEADER_INSTANCE).error == Errors.FENCED_INSTANCE_ID
    assert h.sync(GROUP_ID, 1, leader.member_id, {}).error == Errors.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_leader_id_and_known_member_id(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance(session_timeout=REBALANCE_TIMEOUT // 2)
    r = h.static_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET,
                      session_timeout=REBALANCE_TIMEOUT // 2, clock_advance=REBALANCE_TIMEOUT + 1)
    assert not h.group().has_static_member(FOLLOWER_INSTANCE)
    assert r.error == Errors.NONE and r.generation_id == 2
    assert {m.group_instance_id for m in r.members} == {LEADER_INSTANCE}
    assert r.member_id == r.leader_id == leader.member_id
    assert h.group().is_(CompletingRebalance)


def test_static_member_rejoin_with_leader_id_and_unexpected_dead_group(h: Harness) -> None:
    leader, _ = h.static_members_join_and_rebalance()
    h.group().transition_to(Dead)
    r = h.static_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE, clock_advance=1)
    assert r.error == Errors.COORDINATOR_NOT_AVAILABLE


def test_static_member_rejoin_with_leader_id_and_unexpected_empty_group(h: Harness) -> None:
    leader, _ = h.static_members_join_and_rebalance()
    h.group().transition_to(PreparingRebalance)
    h.group().transition_to(Empty)
    r = h.static_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE, clock_advance=1)
    assert r.error == Errors.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_follower_id_and_change_of_protocol(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance(session_timeout=SESSION_TIMEOUT * 2)
    r = h.static_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE,
                      protocols=[("roundrobin", b"\x03")], session_timeout=SESSION_TIMEOUT * 2,
                      clock_advance=SESSION_TIMEOUT + 1)
    group = h.group()
    assert r.member_id == follower.member_id
    assert group.has_static_member(LEADER_INSTANCE) and group.is_leader(follower.member_id)
    assert r.error == Errors.NONE and r.generation_id == 2 and r.leader_id == follower.member_id
    assert {m.group_instance_id for m in r.members} == {LEADER_INSTANCE, FOLLOWER_INSTANCE}
    assert group.is_(CompletingRebalance)


def test_static_member_rejoin_unknown_id_change_of_protocol_selected_protocol_changed(h: Harness) -> None:
    # Sessions longer than the rebalance timeout so that the DelayedJoin, not a session expiry
    # falling on the same millisecond, decides the outcome (Kafka's MockTimer breaks ties arbitrarily).
    leader, follower = h.static_members_join_and_rebalance(session_timeout=SESSION_TIMEOUT * 2)
    assert h.group().select_protocol() == "range"
    r = h.static_join(instance_id=FOLLOWER_INSTANCE, protocols=[("roundrobin", b"\x03")],
                      clock_advance=SESSION_TIMEOUT + 1)
    assert r.error == Errors.NONE and r.generation_id == 2
    assert {m.group_instance_id for m in r.members} == {LEADER_INSTANCE, FOLLOWER_INSTANCE}
    assert h.group().is_leader(r.member_id) and r.member_id != follower.member_id
    assert r.protocol_name == "roundrobin"


def test_static_member_rejoin_unknown_id_selected_protocol_unchanged_persistence_failure(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    selected = h.group().select_protocol()
    new_protocols = [(selected, b"\x09")]
    h.log.error = Errors.MESSAGE_TOO_LARGE
    r = h.static_join(instance_id=FOLLOWER_INSTANCE, protocols=new_protocols, clock_advance=1)
    h.log.error = Errors.NONE
    assert r.error == Errors.UNKNOWN_SERVER_ERROR and r.generation_id == 1 and r.members == []
    assert r.member_id == "" and h.group().is_(Stable)
    old = h.static_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE, protocols=new_protocols,
                        clock_advance=1)
    assert old.error == Errors.NONE
    s = h.sync(GROUP_ID, 1, follower.member_id, instance_id=FOLLOWER_INSTANCE, protocol_type=None)
    assert s.error == Errors.NONE


def test_static_member_rejoin_with_updated_timeouts_but_cannot_persist_change(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    h.log.error = Errors.MESSAGE_TOO_LARGE
    r = h.static_join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET, clock_advance=1,
                      session_timeout=2 * SESSION_TIMEOUT, rebalance_timeout=2 * REBALANCE_TIMEOUT)
    h.log.error = Errors.NONE
    assert r.error == Errors.UNKNOWN_SERVER_ERROR and h.group().is_(Stable)
    m = h.group().get(follower.member_id)
    assert m.session_timeout_ms == SESSION_TIMEOUT and m.rebalance_timeout_ms == REBALANCE_TIMEOUT


def test_static_member_rejoin_with_updated_timeouts_and_persist_change(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    f = h.static_join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET, clock_advance=1,
                      session_timeout=2 * SESSION_TIMEOUT, rebalance_timeout=2 * REBALANCE_TIMEOUT,
                      supports_skipping_assignment=True)
    assert f.error == Errors.NONE and f.generation_id == 1 and not f.skip_assignment
    l = h.static_join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET, clock_advance=1,
                      session_timeout=3 * SESSION_TIMEOUT, rebalance_timeout=3 * REBALANCE_TIMEOUT,
                      supports_skipping_assignment=True)
    assert l.error == Errors.NONE and l.skip_assignment and l.leader_id == l.member_id
    group = h.group()
    assert group.is_(Stable) and group.generation_id == 1
    assert group.get(f.member_id).session_timeout_ms == 2 * SESSION_TIMEOUT
    assert group.get(l.member_id).rebalance_timeout_ms == 3 * REBALANCE_TIMEOUT


def test_static_member_rejoin_unknown_id_change_of_protocol_while_select_protocol_unchanged(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    assignment_before = h.group().get(follower.member_id).assignment
    r = h.static_join(instance_id=FOLLOWER_INSTANCE, protocols=[("range", b"\x07")], clock_advance=1)
    assert r.error == Errors.NONE and r.generation_id == 1 and h.group().is_(Stable)
    assert r.member_id != follower.member_id
    assert h.static_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE,
                         clock_advance=1).error == Errors.FENCED_INSTANCE_ID
    assert h.sync(GROUP_ID, 1, follower.member_id, instance_id=FOLLOWER_INSTANCE).error == Errors.FENCED_INSTANCE_ID
    s = h.sync(GROUP_ID, 1, r.member_id, instance_id=FOLLOWER_INSTANCE)
    assert s.error == Errors.NONE and s.member_assignment == assignment_before


def test_static_member_rejoin_as_follower_with_unknown_member_id(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    r = h.static_join(instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET, clock_advance=1)
    assert r.error == Errors.NONE and r.generation_id == 1 and r.members == []
    assert r.member_id != follower.member_id and r.leader_id == leader.member_id
    assert h.sync(GROUP_ID, 1, r.member_id, instance_id=FOLLOWER_INSTANCE).error == Errors.NONE


def test_static_member_rejoin_as_follower_with_known_member_id_and_no_protocol_change(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    r = h.static_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET,
                      clock_advance=1)
    assert r.error == Errors.NONE and r.generation_id == 1 and h.group().is_(Stable)


@pytest.mark.parametrize("as_leader", [True, False])
def test_static_member_rejoin_with_mismatched_member_id(h: Harness, as_leader: bool) -> None:
    leader, follower = h.static_members_join_and_rebalance()
    if as_leader:
        r = h.static_join(member_id=follower.member_id, instance_id=LEADER_INSTANCE, clock_advance=1)
    else:
        r = h.static_join(member_id=leader.member_id, instance_id=FOLLOWER_INSTANCE, clock_advance=1)
    assert r.error == Errors.FENCED_INSTANCE_ID


def test_static_member_sync_as_leader_with_invalid_member_id(h: Harness) -> None:
    leader, _ = h.static_members_join_and_rebalance()
    assert h.sync(GROUP_ID, 1, "invalid", {}, LEADER_INSTANCE).error == Errors.FENCED_INSTANCE_ID


def test_static_member_heartbeat_leader_with_invalid_member_id(h: Harness) -> None:
    leader, _ = h.static_members_join_and_rebalance()
    assert h.heartbeat(member_id=leader.member_id, generation=1, instance_id=LEADER_INSTANCE) == Errors.NONE
    assert h.heartbeat(member_id="invalid", generation=1, instance_id=LEADER_INSTANCE) == Errors.FENCED_INSTANCE_ID


def test_should_get_different_static_member_id_after_each_rejoin(h: Harness) -> None:
    h.static_members_join_and_rebalance()
    last = None
    for _ in range(5):
        r = h.static_join(instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET, clock_advance=1)
        assert r.error == Errors.NONE and r.member_id.startswith(LEADER_INSTANCE)
        assert r.member_id != last
        last = r.member_id


def test_static_member_commit_offset_with_invalid_member_id(h: Harness) -> None:
    from kafka_emu.coordinator.group.results import OffsetAndMetadata
    leader, _ = h.static_members_join_and_rebalance()
    tp = ("topic", 0)
    ok = h.commit(GROUP_ID, leader.member_id, 1, {tp: OffsetAndMetadata(0)}, LEADER_INSTANCE)
    assert ok[tp] == Errors.NONE
    bad = h.commit(GROUP_ID, "invalid", 1, {tp: OffsetAndMetadata(0)}, LEADER_INSTANCE)
    assert bad[tp] == Errors.FENCED_INSTANCE_ID


def test_static_member_join_with_unknown_instance_id_and_known_member_id(h: Harness) -> None:
    leader, _ = h.static_members_join_and_rebalance()
    r = h.static_join(member_id=leader.member_id, instance_id="unknown_instance", clock_advance=1)
    assert r.error == Errors.UNKNOWN_MEMBER_ID


def test_static_member_rejoin_with_illegal_state_as_unknown_member(h: Harness) -> None:
    h.static_members_join_and_rebalance()
    group = h.group()
    group.transition_to(PreparingRebalance)
    group.transition_to(Empty)
    with pytest.raises(IllegalStateError) as exc:
        h.send_join(instance_id=LEADER_INSTANCE)
    assert GROUP_ID in str(exc.value) and LEADER_INSTANCE in str(exc.value)


def _three_static_members_stable(h: Harness):
    """Leader + follower static (gen 1), then a third static member joins -> gen 2."""
    leader, follower = h.static_members_join_and_rebalance()
    newbox = h.send_join(instance_id="newcomer")
    lbox = h.send_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE)
    fbox = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE)
    return leader, follower, newbox, lbox, fbox


def test_static_member_follower_fail_to_rejoin_before_rebalance_timeout(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance(session_timeout=REBALANCE_TIMEOUT * 4)
    newbox = h.send_join(instance_id="newcomer", session_timeout=REBALANCE_TIMEOUT * 4)
    lbox = h.send_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE, session_timeout=REBALANCE_TIMEOUT * 4)
    h.advance(REBALANCE_TIMEOUT + 1)
    n, l = newbox.value, lbox.value
    assert n.error == l.error == Errors.NONE and l.generation_id == 2
    assert l.leader_id == leader.member_id
    group = h.group()
    assert group.size() == 3 and group.has_static_member(FOLLOWER_INSTANCE)
    assert {m.group_instance_id for m in l.members} == {LEADER_INSTANCE, FOLLOWER_INSTANCE, "newcomer"}


def test_static_member_leader_fail_to_rejoin_before_rebalance_timeout(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance(session_timeout=REBALANCE_TIMEOUT * 4)
    newbox = h.send_join(instance_id="newcomer", session_timeout=REBALANCE_TIMEOUT * 4)
    fbox = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE, session_timeout=REBALANCE_TIMEOUT * 4)
    h.advance(REBALANCE_TIMEOUT + 1)
    n, f = newbox.value, fbox.value
    assert n.error == f.error == Errors.NONE and f.generation_id == 2
    assert f.leader_id != leader.member_id and f.leader_id in (n.member_id, f.member_id)
    assert h.group().size() == 3


def _leader_stuck_setup(h: Harness):
    """Kafka's testLeader*BeforeFinalRebalanceTimeoutWithLongSessionTimeout set-up: a dynamic member
    joins the static pair (gen 2); the static follower leaves; the next rebalance times out with
    nobody rejoined except... nobody, so the group stays PreparingRebalance at gen 2."""
    leader, follower = h.static_members_join_and_rebalance(session_timeout=SESSION_TIMEOUT * 4,
                                                           rebalance_timeout=REBALANCE_TIMEOUT)
    dbox = h.send_join(session_timeout=SESSION_TIMEOUT * 4)
    lbox = h.send_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE, session_timeout=SESSION_TIMEOUT * 4)
    fbox = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE, session_timeout=SESSION_TIMEOUT * 4)
    assert dbox.value.generation_id == 2 and lbox.value.generation_id == 2 and fbox.value.generation_id == 2
    dyn = dbox.value
    # Follower leaves -> rebalance; nobody rejoins before the rebalance timeout.
    assert h.leave_one(follower.member_id, instance_id=FOLLOWER_INSTANCE).member_responses[0].error == Errors.NONE
    group = h.group()
    assert group.is_(PreparingRebalance)
    h.advance(REBALANCE_TIMEOUT + 1)
    # The dynamic member was removed; the static leader is kept; nobody rejoined -> still preparing.
    assert group.is_(PreparingRebalance) and group.generation_id == 2
    assert not group.has(dyn.member_id) and group.has_static_member(LEADER_INSTANCE)
    return leader


def test_leader_fail_to_rejoin_before_final_rebalance_timeout_with_long_session_timeout(h: Harness) -> None:
    leader = _leader_stuck_setup(h)
    h.advance(SESSION_TIMEOUT * 4 + 1)
    group = h.group()
    assert group.is_(Empty) and group.size() == 0 and group.leader_id is None and group.generation_id == 3


def test_leader_rejoin_before_final_rebalance_timeout_with_long_session_timeout(h: Harness) -> None:
    leader = _leader_stuck_setup(h)
    r = h.send_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE, session_timeout=SESSION_TIMEOUT * 4)
    assert r.value.error == Errors.NONE and r.value.generation_id == 3
    group = h.group()
    assert group.is_(CompletingRebalance) and group.size() == 1


def test_static_member_rejoin_known_leader_id_then_follower_with_change_of_protocol(h: Harness) -> None:
    leader, follower = h.static_members_join_and_rebalance(session_timeout=SESSION_TIMEOUT * 4)
    lbox = h.send_join(member_id=leader.member_id, instance_id=LEADER_INSTANCE, protocols=PROTOCOL_SUPERSET,
                       session_timeout=SESSION_TIMEOUT * 4)
    fbox = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE, protocols=PROTOCOL_SUPERSET,
                       session_timeout=SESSION_TIMEOUT * 4)
    l2, f2 = lbox.value, fbox.value
    assert l2.generation_id == f2.generation_id == 2 and l2.leader_id == leader.member_id
    # The follower changes protocol: a rebalance; the leader does not rejoin in time.
    fbox = h.send_join(member_id=follower.member_id, instance_id=FOLLOWER_INSTANCE, protocols=[("roundrobin", b"\x03")],
                       session_timeout=SESSION_TIMEOUT * 4)
    assert h.group().is_(PreparingRebalance)
    h.advance(REBALANCE_TIMEOUT + 1)
    f3 = fbox.value
    assert f3.error == Errors.NONE and f3.generation_id == 3 and f3.leader_id == follower.member_id
    assert {m.group_instance_id for m in f3.members} == {LEADER_INSTANCE, FOLLOWER_INSTANCE}
