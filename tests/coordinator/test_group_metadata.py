"""GroupMetadataTest and MemberMetadataTest ports (state table, protocols, members, offsets)."""
from __future__ import annotations

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import (
    CompletingRebalance, Dead, Empty, GroupMetadata, IllegalStateError, PreparingRebalance, Stable,
)
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.records import consumer_subscription
from kafka_emu.coordinator.group.results import JoinGroupResult, OffsetAndMetadata, SyncGroupResult
from kafka_emu.timer import MockTime

pytestmark = pytest.mark.timeout(30)

GROUP = "groupId"
CLIENT = "clientId"
HOST = "clientHost"
RT = 60000
ST = 10000


@pytest.fixture
def group() -> GroupMetadata:
    return GroupMetadata(GROUP, Empty, MockTime())


def member(mid: str, protocols=None, instance: str | None = None, ptype: str = "consumer") -> MemberMetadata:
    return MemberMetadata(mid, instance, CLIENT, HOST, RT, ST, ptype,
                          protocols if protocols is not None else [("range", b""), ("roundrobin", b"")])


def test_can_rebalance_when_stable(group) -> None:  # (Empty in fact, as in Kafka)
    assert group.can_rebalance()


def test_can_rebalance_when_completing_rebalance(group) -> None:
    group.transition_to(PreparingRebalance)
    group.transition_to(CompletingRebalance)
    assert group.can_rebalance()


def test_cannot_rebalance_when_preparing_rebalance(group) -> None:
    group.transition_to(PreparingRebalance)
    assert not group.can_rebalance()


def test_cannot_rebalance_when_dead(group) -> None:
    group.transition_to(PreparingRebalance)
    group.transition_to(Empty)
    group.transition_to(Dead)
    assert not group.can_rebalance()


LEGAL = [
    ([], PreparingRebalance),
    ([], Dead),
    ([PreparingRebalance, CompletingRebalance], PreparingRebalance),
    ([PreparingRebalance], Dead),
    ([PreparingRebalance], Empty),
    ([PreparingRebalance, Empty], Dead),
    ([PreparingRebalance, CompletingRebalance], Stable),
    ([Dead], Dead),
]
ILLEGAL = [
    ([], Stable),
    ([PreparingRebalance, CompletingRebalance, Stable], Stable),
    ([], CompletingRebalance),
    ([PreparingRebalance], PreparingRebalance),
    ([PreparingRebalance], Stable),
    ([PreparingRebalance, CompletingRebalance], CompletingRebalance),
    ([Dead], Stable),
    ([Dead], PreparingRebalance),
    ([Dead], CompletingRebalance),
    ([], Empty),
]


@pytest.mark.parametrize("path,target", LEGAL)
def test_legal_transitions(group, path, target) -> None:
    for s in path:
        group.transition_to(s)
    group.transition_to(target)
    assert group.is_(target)


@pytest.mark.parametrize("path,target", ILLEGAL)
def test_illegal_transitions(group, path, target) -> None:
    for s in path:
        group.transition_to(s)
    before = group.state
    with pytest.raises(IllegalStateError):
        group.transition_to(target)
    assert group.state is before


def test_select_protocol(group) -> None:
    group.add(member("m1", [("range", b""), ("roundrobin", b"")]))
    assert group.select_protocol() == "range"
    group.add(member("m2", [("roundrobin", b""), ("range", b"")]))
    assert group.select_protocol() in ("range", "roundrobin")
    group.add(member("m3", [("roundrobin", b""), ("range", b"")]))
    assert group.select_protocol() == "roundrobin"


def test_select_protocol_raises_if_no_members(group) -> None:
    with pytest.raises(IllegalStateError):
        group.select_protocol()


def test_select_protocol_chooses_compatible_protocol(group) -> None:
    group.add(member("m1", [("range", b""), ("roundrobin", b"")]))
    group.add(member("m2", [("roundrobin", b""), ("blah", b"")]))
    assert group.select_protocol() == "roundrobin"


def test_supports_protocols(group) -> None:
    assert group.supports_protocols("consumer", {"roundrobin", "range"})
    assert not group.supports_protocols("", {"range"})
    assert not group.supports_protocols("consumer", set())
    group.add(member("m1", [("range", b""), ("roundrobin", b"")]))
    group.transition_to(PreparingRebalance)
    assert group.supports_protocols("consumer", {"roundrobin", "foo"})
    assert group.supports_protocols("consumer", {"range", "foo"})
    assert not group.supports_protocols("consumer", {"foo", "bar"})
    group.add(member("m2", [("roundrobin", b""), ("blah", b"")]))
    assert group.supports_protocols("consumer", {"roundrobin", "foo"})
    assert not group.supports_protocols("consumer", {"range", "foo"})
    assert not group.supports_protocols("connect", {"roundrobin"})


def test_offset_removal_during_transition_from_empty_to_non_empty() -> None:
    time = MockTime()
    group = GroupMetadata("foo", Empty, time)
    # Rebalance once to a member-less Empty so the group has a protocol type and an Empty timestamp.
    group.add(member("m1"))
    group.transition_to(PreparingRebalance)
    group.init_next_generation()
    group.remove("m1")
    group.transition_to(PreparingRebalance)
    group.init_next_generation()
    assert group.is_(Empty)
    tp = ("foo", 0)
    commit_ts = time.milliseconds()
    group.prepare_offset_commit({tp: OffsetAndMetadata(37, None, "", commit_ts)})
    group.on_offset_commit_append(tp, OffsetAndMetadata(37, None, "", commit_ts))
    retention = 1000
    time.advance(500)
    assert group.remove_expired_offsets(time.milliseconds(), retention) == {}
    group.add(member("m2"))
    group.transition_to(PreparingRebalance)
    time.advance(600)  # past retention since commit, but the group is not Empty any more
    assert group.remove_expired_offsets(time.milliseconds(), retention) == {}
    assert group.offset(tp).offset == 37


def test_subscribed_topics(group) -> None:
    assert group.subscribed_topics is None
    group.add(member("m1", [("range", consumer_subscription(["foo"]))]))
    group.transition_to(PreparingRebalance)
    group.init_next_generation()
    assert group.subscribed_topics == {"foo"}
    group.transition_to(PreparingRebalance)
    group.remove("m1")
    group.init_next_generation()
    assert group.subscribed_topics == set()
    group.add(member("m2", [("range", b"\xff")]))
    group.transition_to(PreparingRebalance)
    group.init_next_generation()
    assert group.subscribed_topics is None


def test_subscribed_topics_non_consumer_group(group) -> None:
    group.add(member("m1", [("range", consumer_subscription(["foo"]))], ptype="connect"))
    group.transition_to(PreparingRebalance)
    group.init_next_generation()
    assert group.subscribed_topics is None


def test_init_next_generation(group) -> None:
    group.add(member("m1", [("roundrobin", b"")]), lambda r: None)
    group.transition_to(PreparingRebalance)
    group.init_next_generation()
    assert group.generation_id == 1 and group.protocol_name == "roundrobin"


def test_init_next_generation_empty_group(group) -> None:
    group.transition_to(PreparingRebalance)
    group.init_next_generation()
    assert group.generation_id == 1 and group.protocol_name is None and group.is_(Empty)


def _commit(group, tp, om):
    group.prepare_offset_commit({tp: om})


def test_offset_commit(group) -> None:
    tp = ("foo", 0)
    om = OffsetAndMetadata(37, None, "", 0)
    _commit(group, tp, om)
    assert group.has_offsets() and group.offset(tp) is None
    group.on_offset_commit_append(tp, om)
    assert group.offset(tp) == om and not group.has_pending_offset_commits()


def test_offset_commit_failure(group) -> None:
    tp = ("foo", 0)
    om = OffsetAndMetadata(37, None, "", 0)
    _commit(group, tp, om)
    group.fail_pending_offset_write(tp, om)
    assert not group.has_offsets() and group.offset(tp) is None


def test_offset_commit_failure_with_another_pending(group) -> None:
    tp = ("foo", 0)
    first, second = OffsetAndMetadata(37, None, "", 0), OffsetAndMetadata(57, None, "", 0)
    _commit(group, tp, first)
    _commit(group, tp, second)
    group.fail_pending_offset_write(tp, first)
    assert group.has_pending_offset_commits() and group.offset(tp) is None
    group.on_offset_commit_append(tp, second)
    assert group.offset(tp) == second and not group.has_pending_offset_commits()


def test_offset_commit_with_another_pending(group) -> None:
    tp = ("foo", 0)
    first, second = OffsetAndMetadata(37, None, "", 0), OffsetAndMetadata(57, None, "", 0)
    _commit(group, tp, first)
    _commit(group, tp, second)
    group.on_offset_commit_append(tp, first)
    assert group.offset(tp) == first and group.has_pending_offset_commits()
    group.on_offset_commit_append(tp, second)
    assert group.offset(tp) == second and not group.has_pending_offset_commits()


def test_update_member(group) -> None:
    m = member("m1")
    group.add(m)
    group.update_member(m, [("range", b"")], RT + 1, ST + 1, None)
    assert m.rebalance_timeout_ms == RT + 1 and m.session_timeout_ms == ST + 1
    assert group.rebalance_timeout_ms() == RT + 1


def test_replace_group_instance_with_non_existing_member(group) -> None:
    with pytest.raises(ValueError):
        group.replace_static_member("instance", "unknown", "new")


def test_replace_group_instance(group) -> None:
    m = member("m1", instance="instance")
    joins, syncs = [], []
    group.add(m, joins.append)
    m.awaiting_sync_callback = syncs.append
    assert group.is_leader("m1")
    group.replace_static_member("instance", "m1", "m2")
    assert group.is_leader("m2") and group.current_static_member_id("instance") == "m2"
    assert joins[0].error == Errors.FENCED_INSTANCE_ID and joins[0].member_id == "m1"
    assert syncs[0].error == Errors.FENCED_INSTANCE_ID
    assert not m.is_awaiting_join() and not m.is_awaiting_sync()


def test_invoke_join_callback(group) -> None:
    got = []
    m = member("m1")
    group.add(m, got.append)
    assert group.has_all_members_joined()
    group.maybe_invoke_join_callback(m, JoinGroupResult.error_result("m1", Errors.NONE))
    assert got and got[0].error == Errors.NONE
    assert not m.is_awaiting_join() and group.num_members_awaiting_join == 0


def test_invoke_join_callback_fails(group) -> None:
    got = []

    def cb(result):
        got.append(result)
        if len(got) == 1:
            raise RuntimeError("boom")

    m = member("m1")
    group.add(m, cb)
    group.maybe_invoke_join_callback(m, JoinGroupResult.error_result("m1", Errors.NONE))
    assert [r.error for r in got] == [Errors.NONE, Errors.UNKNOWN_SERVER_ERROR]
    assert not m.is_awaiting_join()


def test_not_invoke_join_callback(group) -> None:
    m = member("m1")
    group.add(m)
    assert not m.is_awaiting_join()
    group.maybe_invoke_join_callback(m, JoinGroupResult.error_result("m1", Errors.NONE))
    assert not m.is_awaiting_join()


def test_invoke_sync_callback(group) -> None:
    got = []
    m = member("m1")
    group.add(m)
    m.awaiting_sync_callback = got.append
    assert group.maybe_invoke_sync_callback(m, SyncGroupResult(error=Errors.NONE))
    assert got and not m.is_awaiting_sync()


def test_invoke_sync_callback_fails(group) -> None:
    got = []

    def cb(result):
        got.append(result)
        if len(got) == 1:
            raise RuntimeError("boom")

    m = member("m1")
    group.add(m)
    m.awaiting_sync_callback = cb
    assert group.maybe_invoke_sync_callback(m, SyncGroupResult(error=Errors.NONE))
    assert [r.error for r in got] == [Errors.NONE, Errors.UNKNOWN_SERVER_ERROR]


def test_not_invoke_sync_callback(group) -> None:
    m = member("m1")
    group.add(m)
    assert not group.maybe_invoke_sync_callback(m, SyncGroupResult(error=Errors.NONE))


def test_callbacks_deferred_until_lock_released(group) -> None:
    got = []
    m = member("m1")
    group.add(m, got.append)
    with group.lock:
        group.maybe_invoke_join_callback(m, JoinGroupResult.error_result("m1", Errors.NONE))
        with group.lock:
            pass
        assert got == []  # still held by this thread
    assert len(got) == 1


def test_has_pending_non_txn_offsets(group) -> None:
    tp = ("foo", 0)
    _commit(group, tp, OffsetAndMetadata(37, None, "", 0))
    assert group.has_pending_offset_commits_for_partition(tp)
    assert not group.has_pending_offset_commits_for_partition(("foo", 1))


def test_cannot_add_pending_member_if_stable(group) -> None:
    group.add(member("m1"))
    with pytest.raises(IllegalStateError):
        group.add_pending_member("m1")


def test_removal_from_pending_after_member_is_stable(group) -> None:
    group.add_pending_member("m1")
    assert group.is_pending_member("m1")
    group.add(member("m1"))
    assert not group.is_pending_member("m1")


def test_removal_from_pending_when_member_is_removed(group) -> None:
    group.add_pending_member("m1")
    group.remove("m1")
    assert not group.is_pending_member("m1")


def test_cannot_add_static_member_if_already_present(group) -> None:
    group.add(member("m1", instance="instance"))
    with pytest.raises(IllegalStateError):
        group.add(member("m2", instance="instance"))


def test_cannot_add_pending_sync_of_unknown_member(group) -> None:
    with pytest.raises(IllegalStateError):
        group.add_pending_sync_member("m1")


def test_cannot_remove_pending_sync_of_unknown_member(group) -> None:
    with pytest.raises(IllegalStateError):
        group.remove_pending_sync_member("m1")


def test_can_add_and_remove_pending_sync_member(group) -> None:
    group.add(member("m1"))
    assert group.add_pending_sync_member("m1")
    assert not group.add_pending_sync_member("m1")
    assert group.pending_sync_members == {"m1"}
    assert group.remove_pending_sync_member("m1")
    assert group.pending_sync_members == set()


def test_removal_from_pending_sync_when_member_is_removed(group) -> None:
    group.add(member("m1"))
    group.add_pending_sync_member("m1")
    group.remove("m1")
    assert group.pending_sync_members == set()


def test_new_generation_clears_pending_sync_members(group) -> None:
    group.add(member("m1"))
    group.transition_to(PreparingRebalance)
    group.add_pending_sync_member("m1")
    group.init_next_generation()
    assert group.pending_sync_members == set()


# --------------------------------------------------------------------- MemberMetadataTest
def test_matches_supported_protocols() -> None:
    m = member("m", [("range", b"\x00")])
    assert m.matches([("range", b"\x00")])
    assert not m.matches([("range", b"\x01")])
    assert not m.matches([("roundrobin", b"\x00")])
    assert not m.matches([("range", b"\x00"), ("roundrobin", b"\x00")])


def test_vote_for_preferred_protocol() -> None:
    m = member("m", [("range", b""), ("roundrobin", b"")])
    assert m.vote({"range", "roundrobin"}) == "range"
    assert m.vote({"blah", "roundrobin"}) == "roundrobin"


def test_metadata() -> None:
    m = member("m", [("range", b"\x00"), ("roundrobin", b"\x01")])
    assert m.metadata("range") == b"\x00" and m.metadata("roundrobin") == b"\x01"


def test_metadata_raises_on_unsupported_protocol() -> None:
    with pytest.raises(ValueError):
        member("m").metadata("blah")


def test_vote_raises_on_no_supported_protocols() -> None:
    with pytest.raises(ValueError):
        member("m").vote({"blah"})


def test_has_valid_group_instance_id() -> None:
    assert member("m", instance="i").is_static_member()
    assert not member("m").is_static_member()
