"""GroupCoordinatorTest ports: OffsetCommit/OffsetFetch, Describe/List/Delete, loading state."""
from __future__ import annotations

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import CompletingRebalance, Dead
from kafka_emu.coordinator.group.results import OffsetAndMetadata
from coordinator_harness import (
    GROUP_ID, INITIAL_DELAY, LEADER_INSTANCE, OTHER_GROUP_ID, PROTOCOL_TYPE, Harness,
)

pytestmark = pytest.mark.timeout(30)
TP = ("topic", 0)


def _dead_group(h: Harness) -> None:
    g = h.coordinator.group_manager.add_group(h.coordinator.group_manager.new_group(GROUP_ID))
    g.transition_to(Dead)


# ---------------------------------------------------------------------------- OffsetCommit / Fetch
def test_offset_commit_dead_group(h: Harness) -> None:
    _dead_group(h)
    assert h.commit(GROUP_ID, "m", 1, {TP: OffsetAndMetadata(0)})[TP] == Errors.COORDINATOR_NOT_AVAILABLE


def test_commit_offset_from_unknown_group(h: Harness) -> None:
    assert h.commit(GROUP_ID, "m", 1, {TP: OffsetAndMetadata(0)})[TP] == Errors.ILLEGAL_GENERATION


def test_commit_offset_with_default_generation(h: Harness) -> None:
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(0)})[TP] == Errors.NONE


def test_commit_offsets_after_group_is_empty(h: Harness) -> None:
    m = h.join_and_sync_single()
    assert h.leave_one(m.member_id).member_responses[0].error == Errors.NONE
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(0)})[TP] == Errors.NONE
    err, data = h.fetch(GROUP_ID, [TP])
    assert err == Errors.NONE and data[TP].offset == 0


def test_fetch_offsets(h: Harness) -> None:
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(97, 15, "some metadata")})[TP] == Errors.NONE
    err, data = h.fetch(GROUP_ID, [TP])
    d = data[TP]
    assert err == Errors.NONE and (d.offset, d.leader_epoch, d.metadata, d.error) == (97, 15, "some metadata", Errors.NONE)


def test_commit_and_fetch_offsets_with_empty_group_id(h: Harness) -> None:
    assert h.commit("", "", -1, {TP: OffsetAndMetadata(0)})[TP] == Errors.NONE
    err, data = h.fetch("", [TP])
    assert err == Errors.NONE and data[TP].offset == 0
    err, summary = h.coordinator.handle_describe_group("")
    assert err == Errors.NONE and summary.state == "Empty"
    assert h.coordinator.handle_delete_groups([""]) == {"": Errors.NONE}
    err, data = h.fetch("", [TP])
    assert data[TP].offset == -1


def test_fetch_offset_for_unknown_partition(h: Harness) -> None:
    err, data = h.fetch(GROUP_ID, [TP])
    assert err == Errors.NONE and data[TP].offset == -1 and data[TP].error == Errors.NONE


def test_fetch_offset_not_coordinator_for_group(h: Harness) -> None:
    assert h.fetch(OTHER_GROUP_ID, [TP]) == (Errors.NOT_COORDINATOR, {})


def test_fetch_all_offsets(h: Harness) -> None:
    assert h.fetch(GROUP_ID, None) == (Errors.NONE, {})
    offsets = {("topic", 0): OffsetAndMetadata(15), ("topic", 1): OffsetAndMetadata(16),
               ("other", 0): OffsetAndMetadata(17)}
    assert set(h.commit(GROUP_ID, "", -1, offsets).values()) == {Errors.NONE}
    err, data = h.fetch(GROUP_ID, None)
    assert err == Errors.NONE and {tp: d.offset for tp, d in data.items()} == {
        ("topic", 0): 15, ("topic", 1): 16, ("other", 0): 17}


def test_commit_offset_in_completing_rebalance(h: Harness) -> None:
    r = h.dynamic_join()
    assert h.group().is_(CompletingRebalance)
    assert h.commit(GROUP_ID, r.member_id, 1, {TP: OffsetAndMetadata(0)})[TP] == Errors.REBALANCE_IN_PROGRESS


def test_commit_offset_in_completing_rebalance_from_unknown_member_id(h: Harness) -> None:
    h.dynamic_join()
    assert h.commit(GROUP_ID, "", 1, {TP: OffsetAndMetadata(0)})[TP] == Errors.UNKNOWN_MEMBER_ID


def test_commit_offset_in_completing_rebalance_from_illegal_generation(h: Harness) -> None:
    r = h.dynamic_join()
    assert h.commit(GROUP_ID, r.member_id, 2, {TP: OffsetAndMetadata(0)})[TP] == Errors.ILLEGAL_GENERATION


def test_manual_commit_offset_should_not_validate_member_id_and_instance_id(h: Harness) -> None:
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(0)}, instance_id="instance")[TP] == Errors.NONE
    assert h.commit(GROUP_ID, "unknown", -1, {TP: OffsetAndMetadata(0)})[TP] == Errors.NONE


def test_commit_in_preparing_rebalance_is_stored(h: Harness) -> None:
    m = h.join_and_sync_single()
    h.send_join()  # PreparingRebalance
    assert h.commit(GROUP_ID, m.member_id, 1, {TP: OffsetAndMetadata(5)})[TP] == Errors.NONE
    assert h.fetch(GROUP_ID, [TP])[1][TP].offset == 5


def test_commit_from_non_member_on_non_empty_group(h: Harness) -> None:
    h.join_and_sync_single()
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(0)})[TP] == Errors.UNKNOWN_MEMBER_ID


def test_offset_metadata_too_large(h: Harness) -> None:
    big = OffsetAndMetadata(1, None, "x" * 4097)
    ok = OffsetAndMetadata(2, None, "x" * 4096)
    res = h.commit(GROUP_ID, "", -1, {TP: big})
    assert res[TP] == Errors.OFFSET_METADATA_TOO_LARGE
    res = h.commit(GROUP_ID, "", -1, {TP: big, ("t", 1): ok})
    assert res == {TP: Errors.OFFSET_METADATA_TOO_LARGE, ("t", 1): Errors.NONE}


@pytest.mark.parametrize("log_error,expected", [
    (Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_COORDINATOR),
    (Errors.NOT_ENOUGH_REPLICAS, Errors.COORDINATOR_NOT_AVAILABLE),
    (Errors.MESSAGE_TOO_LARGE, Errors.INVALID_COMMIT_OFFSET_SIZE),
    (Errors.REQUEST_TIMED_OUT, Errors.REQUEST_TIMED_OUT),
    (Errors.NETWORK_EXCEPTION, Errors.COORDINATOR_LOAD_IN_PROGRESS),
])
def test_commit_append_error_mapping(h: Harness, log_error: int, expected: int) -> None:
    h.log.error = log_error
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(3)})[TP] == expected
    h.log.error = Errors.NONE
    assert h.fetch(GROUP_ID, [TP])[1][TP].offset == -1
    assert not h.group().has_pending_offset_commits()


def test_require_stable_fetch_sees_pending_commit(h: Harness) -> None:
    h.log.hold = True
    box = []
    h.coordinator.handle_commit_offsets(GROUP_ID, "", None, -1, {TP: OffsetAndMetadata(7)}, box.append)
    assert box == []
    assert h.fetch(GROUP_ID, [TP], require_stable=True)[1][TP].error == Errors.UNSTABLE_OFFSET_COMMIT
    assert h.fetch(GROUP_ID, [TP])[1][TP].offset == -1
    h.log.complete_pending()
    assert box == [{TP: Errors.NONE}]
    assert h.fetch(GROUP_ID, [TP], require_stable=True)[1][TP].offset == 7


# ---------------------------------------------------------------------------- List / Describe / Delete
def test_list_groups_includes_stable_groups(h: Harness) -> None:
    h.join_and_sync_single()
    err, groups = h.coordinator.handle_list_groups()
    assert err == Errors.NONE
    assert [(g.group_id, g.protocol_type, g.state, g.group_type) for g in groups] == [
        (GROUP_ID, PROTOCOL_TYPE, "Stable", "classic")]


def test_list_groups_includes_rebalancing_groups(h: Harness) -> None:
    h.dynamic_join()
    err, groups = h.coordinator.handle_list_groups()
    assert [g.state for g in groups] == ["CompletingRebalance"]


def test_list_groups_with_states(h: Harness) -> None:
    r = h.dynamic_join()
    assert len(h.coordinator.handle_list_groups(["completingrebalance"])[1]) == 1
    assert len(h.coordinator.handle_list_groups(["Stable"])[1]) == 0
    h.sync(GROUP_ID, 1, r.member_id, {})
    assert len(h.coordinator.handle_list_groups(["Stable"])[1]) == 1
    h.leave_one(r.member_id)
    assert len(h.coordinator.handle_list_groups(["Empty"])[1]) == 1


@pytest.mark.parametrize("types,count", [(["classic"], 1), (["Classic"], 1), (None, 1), (["consumer"], 0), (["Invalid"], 0)])
def test_list_groups_with_types(h: Harness, types, count) -> None:
    h.join_and_sync_single()
    assert len(h.coordinator.handle_list_groups(None, types)[1]) == count


def test_describe_group_wrong_coordinator(h: Harness) -> None:
    assert h.coordinator.handle_describe_group(OTHER_GROUP_ID)[0] == Errors.NOT_COORDINATOR


def test_describe_group_inactive_group(h: Harness) -> None:
    err, summary = h.coordinator.handle_describe_group(GROUP_ID)
    assert err == Errors.NONE and summary.state == "Dead" and summary.members == []


def test_describe_group_stable_for_dynamic_member(h: Harness) -> None:
    m = h.join_and_sync_single()
    err, s = h.coordinator.handle_describe_group(GROUP_ID)
    assert err == Errors.NONE and s.state == "Stable" and s.protocol_type == PROTOCOL_TYPE
    assert s.protocol == "range" and [x.member_id for x in s.members] == [m.member_id]
    assert s.members[0].assignment == b"a" and s.members[0].metadata != b""


def test_describe_group_stable_for_static_member(h: Harness) -> None:
    r = h.static_join(instance_id=LEADER_INSTANCE)
    h.sync(GROUP_ID, 1, r.member_id, {}, LEADER_INSTANCE)
    err, s = h.coordinator.handle_describe_group(GROUP_ID)
    assert s.members[0].group_instance_id == LEADER_INSTANCE and s.protocol == "range"


def test_describe_group_rebalancing(h: Harness) -> None:
    h.dynamic_join()
    err, s = h.coordinator.handle_describe_group(GROUP_ID)
    assert s.state == "CompletingRebalance" and s.protocol == ""
    assert s.members[0].metadata == b"" and s.members[0].assignment == b""


def test_describe_groups_batch(h: Harness) -> None:
    out = h.coordinator.handle_describe_groups([GROUP_ID, OTHER_GROUP_ID])
    assert [(g, e) for g, e, _ in out] == [(GROUP_ID, Errors.NONE), (OTHER_GROUP_ID, Errors.NOT_COORDINATOR)]


def test_delete_non_empty_group(h: Harness) -> None:
    h.dynamic_join()
    assert h.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: Errors.NON_EMPTY_GROUP}


def test_delete_group_with_invalid_group_id(h: Harness) -> None:
    assert h.coordinator.handle_delete_groups([None]) == {None: Errors.INVALID_GROUP_ID}


def test_delete_group_with_wrong_coordinator(h: Harness) -> None:
    assert h.coordinator.handle_delete_groups([OTHER_GROUP_ID]) == {OTHER_GROUP_ID: Errors.NOT_COORDINATOR}


def test_delete_empty_group(h: Harness) -> None:
    m = h.join_and_sync_single()
    h.leave_one(m.member_id)
    assert h.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: Errors.NONE}
    assert h.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: Errors.GROUP_ID_NOT_FOUND}


def test_delete_empty_group_with_stored_offsets(h: Harness) -> None:
    m = h.join_and_sync_single()
    assert h.commit(GROUP_ID, m.member_id, 1, {TP: OffsetAndMetadata(5)})[TP] == Errors.NONE
    h.leave_one(m.member_id)
    assert h.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: Errors.NONE}
    assert h.coordinator.handle_describe_group(GROUP_ID)[1].state == "Dead"
    # Tombstones for the offset and the group were appended.
    tail = h.log.read_records(0)[-2:]
    assert all(v is None for _, _, v in tail)


# ---------------------------------------------------------------------------- loading / inactive
def test_request_handling_while_loading_in_progress(h: Harness) -> None:
    mgr = h.coordinator.group_manager
    with mgr._partition_lock:
        mgr._owned_partitions.discard(0)
        mgr._loading_partitions.add(0)
    assert h.join().error == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.join(instance_id="i").error == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.sync(GROUP_ID, 1, "m").error == Errors.REBALANCE_IN_PROGRESS
    assert h.commit(GROUP_ID, "m", 1, {TP: OffsetAndMetadata(0)})[TP] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.heartbeat(member_id="m") == Errors.NONE
    assert h.coordinator.handle_describe_group(GROUP_ID)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coordinator.handle_list_groups()[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coordinator.handle_delete_groups([GROUP_ID]) == {GROUP_ID: Errors.COORDINATOR_LOAD_IN_PROGRESS}
    assert h.fetch(GROUP_ID, [TP])[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.join(OTHER_GROUP_ID).error == Errors.NOT_COORDINATOR  # other groups unaffected
    mgr.add_owned_partition(0)
    assert h.coordinator.handle_list_groups()[0] == Errors.NONE
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(0)})[TP] == Errors.NONE


def test_inactive_coordinator(h: Harness) -> None:
    h.coordinator._active = False
    assert h.join().error == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.coordinator.handle_list_groups() == (Errors.COORDINATOR_NOT_AVAILABLE, [])


def test_offsets_retention_ms_integer_overflow() -> None:
    h = Harness(**{"offsets.retention.minutes": 2**31 - 1})
    try:
        assert h.coordinator.config.offsets_retention_ms == (2**31 - 1) * 60 * 1000
    finally:
        h.shutdown()


def test_offsets_expire_for_empty_group_after_retention() -> None:
    h = Harness(**{"offsets.retention.minutes": 1})
    try:
        m = h.join_and_sync_single()
        assert h.commit(GROUP_ID, m.member_id, 1, {TP: OffsetAndMetadata(5)})[TP] == Errors.NONE
        h.leave_one(m.member_id)
        h.time.advance(30_000)
        assert h.coordinator.cleanup_group_metadata() == 0
        h.time.advance(30_001)
        assert h.coordinator.cleanup_group_metadata() == 1
        assert h.coordinator.handle_describe_group(GROUP_ID)[1].state == "Dead"
    finally:
        h.shutdown()


# ---------------------------------------------------------------------------- DeleteOffsets
def _consumer_group_stable(h: Harness, topics=("foo",)):
    from coordinator_harness import subscription
    box = h.send_join(protocols=[("range", subscription(*topics))])
    h.advance(INITIAL_DELAY + 1)
    r = box.value
    assert h.sync(GROUP_ID, 1, r.member_id, {r.member_id: b""}).error == Errors.NONE
    return r


def test_delete_offset_of_non_existing_group(h: Harness) -> None:
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [TP]) == (Errors.GROUP_ID_NOT_FOUND, {})


def test_delete_offset_of_non_empty_non_consumer_group(h: Harness) -> None:
    box = h.send_join(protocol_type="connect")
    h.advance(INITIAL_DELAY + 1)
    assert box.value.error == Errors.NONE
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [TP]) == (Errors.NON_EMPTY_GROUP, {})


def test_delete_offset_of_empty_non_consumer_group(h: Harness) -> None:
    box = h.send_join(protocol_type="connect")
    h.advance(INITIAL_DELAY + 1)
    r = box.value
    h.sync(GROUP_ID, 1, r.member_id, {}, protocol_type="connect")
    other = ("t", 1)
    assert set(h.commit(GROUP_ID, r.member_id, 1, {TP: OffsetAndMetadata(1), other: OffsetAndMetadata(2)}).values()) == {Errors.NONE}
    h.leave_one(r.member_id)
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [TP]) == (Errors.NONE, {TP: Errors.NONE})
    data = h.fetch(GROUP_ID, [TP, other])[1]
    assert data[TP].offset == -1 and data[other].offset == 2


def test_delete_offset_of_consumer_group_with_unparsable_protocol(h: Harness) -> None:
    box = h.send_join(protocols=[("range", b"\xff")])
    h.advance(INITIAL_DELAY + 1)
    r = box.value
    h.sync(GROUP_ID, 1, r.member_id, {})
    h.commit(GROUP_ID, r.member_id, 1, {TP: OffsetAndMetadata(1)})
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [TP]) == (Errors.NONE, {TP: Errors.GROUP_SUBSCRIBED_TO_TOPIC})


def test_delete_offset_of_dead_consumer_group(h: Harness) -> None:
    _dead_group(h)
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [TP]) == (Errors.GROUP_ID_NOT_FOUND, {})


def test_delete_offset_of_empty_consumer_group(h: Harness) -> None:
    r = _consumer_group_stable(h)
    h.commit(GROUP_ID, r.member_id, 1, {("foo", 0): OffsetAndMetadata(1), ("bar", 0): OffsetAndMetadata(1)})
    h.leave_one(r.member_id)
    assert h.coordinator.handle_delete_offsets(GROUP_ID, [("foo", 0)]) == (Errors.NONE, {("foo", 0): Errors.NONE})
    assert h.fetch(GROUP_ID, [("foo", 0)])[1][("foo", 0)].offset == -1


def test_delete_offset_of_stable_consumer_group(h: Harness) -> None:
    r = _consumer_group_stable(h, ("foo",))
    h.commit(GROUP_ID, r.member_id, 1, {("foo", 0): OffsetAndMetadata(1), ("bar", 0): OffsetAndMetadata(1)})
    err, res = h.coordinator.handle_delete_offsets(GROUP_ID, [("foo", 0), ("bar", 0)])
    assert err == Errors.NONE
    assert res == {("foo", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC, ("bar", 0): Errors.NONE}
    data = h.fetch(GROUP_ID, [("foo", 0), ("bar", 0)])[1]
    assert data[("foo", 0)].offset == 1 and data[("bar", 0)].offset == -1


def test_partitions_deleted_remove_offsets_from_every_group_with_tombstones(h: Harness) -> None:
    """GroupCoordinator.onPartitionsDeleted (GroupCoordinatorTest.testOnPartitionsDeleted): a
    deleted topic's committed offsets go from every group, each with an offset tombstone; other
    partitions' offsets stay."""
    from kafka_emu.coordinator.group.records import offset_commit_key

    kept = ("other", 0)
    groups = (GROUP_ID, "second-group")
    for group in groups[1:]:
        h.coordinator.group_manager.add_owned_partition(h.coordinator.partition_for(group))
    for group in groups:
        assert set(h.commit(group, "", -1, {TP: OffsetAndMetadata(50), kept: OffsetAndMetadata(7)}).values()) == {
            Errors.NONE}
    assert h.coordinator.on_partitions_deleted([TP, ("topic", 1)]) == 2
    for group in groups:
        data = h.fetch(group, [TP, kept])[1]
        assert data[TP].offset == -1 and data[kept].offset == 7
        tombstones = [(k, v) for log in h.log.partitions.values() for _, k, v in log
                      if k == offset_commit_key(group, *TP)]
        assert tombstones[-1][1] is None


def test_load_in_progress_from_leadership_until_loaded(h: Harness) -> None:
    """GroupCoordinatorTest.testRequestHandlingWhileLoadingInProgress across a failover: from the
    moment the broker learns it leads the partition (``on_loading``) until the load that
    ``on_elected`` runs has finished, OffsetFetch and DescribeGroups answer
    COORDINATOR_LOAD_IN_PROGRESS (Kafka schedules the load at once), never NOT_COORDINATOR."""
    assert h.commit(GROUP_ID, "", -1, {TP: OffsetAndMetadata(7)})[TP] == Errors.NONE
    h.coordinator.on_resigned(0, 1)
    assert h.fetch(GROUP_ID, [TP])[0] == Errors.NOT_COORDINATOR
    h.coordinator.on_loading(0, 2)
    assert h.fetch(GROUP_ID, [TP])[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.coordinator.handle_describe_group(GROUP_ID)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    h.coordinator.on_loading(0, 1)   # a stale epoch changes nothing
    h.coordinator.on_elected(0, 2)   # the inline scheduler loads at once
    err, data = h.fetch(GROUP_ID, [TP])
    assert err == Errors.NONE and data[TP].offset == 7
