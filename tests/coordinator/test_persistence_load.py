"""__consumer_offsets formats, loading (failover in) and unloading (failover out)."""
from __future__ import annotations

import struct

import pytest

from kafka_emu.coordinator.group import GroupCoordinator
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import Dead, Empty, PreparingRebalance, Stable
from kafka_emu.coordinator.group.records import (
    GroupMetadataKey, GroupValue, MemberValue, OffsetKey, group_metadata_key, group_metadata_value,
    java_string_hashcode, offset_commit_key, offset_commit_value, partition_for, read_group_value,
    read_key, read_offset_value,
)
from kafka_emu.coordinator.group.results import OffsetAndMetadata
from coordinator_harness import (
    GROUP_ID, INITIAL_DELAY, NUM_PARTITIONS, SESSION_TIMEOUT, Harness, InMemoryCoordinatorLog,
    default_config,
)
from kafka_emu.timer import MockTime, MockTimer

pytestmark = pytest.mark.timeout(30)
TP = ("topic", 3)


# ---------------------------------------------------------------------------- formats and hashing
@pytest.mark.parametrize("s,expected", [
    ("", 0), ("a", 97), ("groupId", 293428218), ("hello", 99162322),
    ("polygenelubricants", -2147483648), ("\u00e9t\u00e9", 227742), ("\U0001F600", 1772899),
])
def test_java_string_hashcode(s: str, expected: int) -> None:
    assert java_string_hashcode(s) == expected


def test_partition_for_uses_utils_abs() -> None:
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(Integer.MIN_VALUE) == 0
    assert partition_for("groupId", 50) == 293428218 % 50


def test_key_layouts() -> None:
    assert group_metadata_key("g") == b"\x00\x02\x00\x01g"
    assert offset_commit_key("g", "t", 5) == b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x05"
    assert read_key(group_metadata_key("grp")) == GroupMetadataKey("grp")
    assert read_key(offset_commit_key("grp", "top", 7)) == OffsetKey("grp", "top", 7)


def test_offset_value_v3_layout_and_roundtrip() -> None:
    v = offset_commit_value(97, 15, "meta", 1234)
    assert v == struct.pack(">hqih", 3, 97, 15, 4) + b"meta" + struct.pack(">q", 1234)
    r = read_offset_value(v)
    assert (r.offset, r.leader_epoch, r.metadata, r.commit_timestamp) == (97, 15, "meta", 1234)
    assert read_offset_value(offset_commit_value(1, None, "", 0)).leader_epoch is None
    v1 = struct.pack(">hqh", 1, 5, 0) + struct.pack(">qq", 10, 20)
    r1 = read_offset_value(v1)
    assert (r1.offset, r1.commit_timestamp, r1.expire_timestamp) == (5, 10, 20)


def test_group_value_v3_roundtrip() -> None:
    gv = GroupValue("consumer", 3, "range", "m1", 42, [
        MemberValue("m1", "i1", "c", "h", 100, 10, b"sub", b"asg"),
        MemberValue("m2", None, "c2", "h2", 200, 20, b"", b"x")])
    raw = group_metadata_value(gv)
    assert raw[:2] == b"\x00\x03"
    assert read_group_value(raw) == gv
    empty = GroupValue("consumer", 4, None, None, 7, [])
    assert read_group_value(group_metadata_value(empty)) == empty


# ---------------------------------------------------------------------------- writes
def test_sync_and_commit_write_records(h: Harness) -> None:
    m = h.join_and_sync_single()
    assert h.commit(GROUP_ID, m.member_id, 1, {TP: OffsetAndMetadata(11, 2, "md", 99)})[TP] == Errors.NONE
    records = h.log.read_records(0)
    (_, k1, v1), (_, k2, v2) = records[-2:]
    assert read_key(k1) == GroupMetadataKey(GROUP_ID)
    gv = read_group_value(v1)
    assert gv.generation == 1 and gv.leader == m.member_id and gv.protocol == "range"
    assert [(x.member_id, x.assignment, x.session_timeout) for x in gv.members] == [(m.member_id, b"a", SESSION_TIMEOUT)]
    assert read_key(k2) == OffsetKey(GROUP_ID, "topic", 3)
    ov = read_offset_value(v2)
    assert (ov.offset, ov.leader_epoch, ov.metadata, ov.commit_timestamp) == (11, 2, "md", 99)


# ---------------------------------------------------------------------------- loading
def _new_coordinator(log: InMemoryCoordinatorLog, time: MockTime | None = None, scheduler=None):
    time = time or MockTime()
    timer = MockTimer(time)
    c = GroupCoordinator.create(1, default_config(), log, time, timer=timer, scheduler=scheduler)
    c.startup(enable_metadata_expiration=False)
    return c, timer


def test_load_restores_stable_group_members_assignment_and_offsets(h: Harness) -> None:
    m = h.join_and_sync_single()
    h.commit(GROUP_ID, m.member_id, 1, {TP: OffsetAndMetadata(11, 2, "md", 99)})
    h.commit(GROUP_ID, m.member_id, 1, {TP: OffsetAndMetadata(12, 2, "md2", 100)})  # last write wins
    c, timer = _new_coordinator(h.log)
    try:
        assert c.handle_describe_group(GROUP_ID)[0] == Errors.NOT_COORDINATOR
        c.on_elected(0, 1)
        group = c.group_manager.get_group(GROUP_ID)
        assert group.is_(Stable) and group.generation_id == 1 and group.leader_id == m.member_id
        assert group.protocol_type == "consumer" and group.protocol_name == "range"
        assert group.get(m.member_id).assignment == b"a"
        err, data = c.handle_fetch_offsets(GROUP_ID, False, [TP])
        assert (data[TP].offset, data[TP].metadata) == (12, "md2")
        # The member resumes: heartbeat and sync (Stable: immediate assignment).
        hb = []
        c.handle_heartbeat(GROUP_ID, m.member_id, None, 1, hb.append)
        assert hb == [Errors.NONE]
        sync = []
        c.handle_sync_group(GROUP_ID, 1, m.member_id, None, None, None, {}, sync.append)
        assert sync[0].member_assignment == b"a"
        # Loaded members get a session deadline.
        timer.advance_clock(SESSION_TIMEOUT + 1)
        assert group.is_(Empty) and group.size() == 0
    finally:
        c.shutdown()


def test_load_offsets_only_group_and_tombstones(h: Harness) -> None:
    assert h.commit("g2", "", -1, {TP: OffsetAndMetadata(1)}) == {TP: Errors.NONE} or True
    # "g2" may hash to the unowned partition; use groups of partition 0 only.
    groups = [g for g in ("a", "b", "c", "d", "e", "f", "x", "y") if partition_for(g, NUM_PARTITIONS) == 0][:2]
    keep, gone = groups
    assert h.commit(keep, "", -1, {TP: OffsetAndMetadata(1), ("t", 0): OffsetAndMetadata(2)})[TP] == Errors.NONE
    assert h.commit(gone, "", -1, {TP: OffsetAndMetadata(3)})[TP] == Errors.NONE
    assert h.coordinator.handle_delete_groups([gone]) == {gone: Errors.NONE}
    c, _ = _new_coordinator(h.log)
    try:
        c.on_elected(0, 1)
        assert c.group_manager.get_group(keep).is_(Empty)
        assert c.handle_fetch_offsets(keep, False, None)[1][TP].offset == 1
        assert c.group_manager.get_group(gone) is None
        assert c.handle_fetch_offsets(gone, False, [TP])[1][TP].offset == -1
    finally:
        c.shutdown()


def test_load_empty_group_record(h: Harness) -> None:
    m = h.join_and_sync_single()
    h.leave_one(m.member_id)  # writes an Empty generation-2 record
    c, _ = _new_coordinator(h.log)
    try:
        c.on_elected(0, 1)
        g = c.group_manager.get_group(GROUP_ID)
        assert g.is_(Empty) and g.generation_id == 2 and g.size() == 0
    finally:
        c.shutdown()


class HeldScheduler:
    def __init__(self) -> None:
        self.jobs = []

    def schedule(self, name, fn) -> None:
        self.jobs.append(fn)

    def run_all(self) -> None:
        jobs, self.jobs = self.jobs, []
        for fn in jobs:
            fn()

    def shutdown(self) -> None:
        pass


def test_requests_while_loading_then_after(h: Harness) -> None:
    m = h.join_and_sync_single()
    sched = HeldScheduler()
    c, _ = _new_coordinator(h.log, scheduler=sched)
    try:
        c.on_elected(0, 1)
        assert c.is_partition_loading(0)
        got = []
        c.handle_join_group(GROUP_ID, "", None, True, "c", "h", 500, 500, "consumer", [("range", b"")], got.append)
        assert got[0].error == Errors.COORDINATOR_LOAD_IN_PROGRESS
        c.handle_sync_group(GROUP_ID, 1, m.member_id, None, None, None, {}, got.append)
        assert got[1].error == Errors.REBALANCE_IN_PROGRESS
        c.handle_heartbeat(GROUP_ID, m.member_id, None, 1, got.append)
        assert got[2] == Errors.NONE
        sched.run_all()
        assert c.is_partition_owned(0) and not c.is_partition_loading(0)
        c.handle_heartbeat(GROUP_ID, m.member_id, None, 1, got.append)
        assert got[3] == Errors.NONE
    finally:
        c.shutdown()


def test_stale_election_is_ignored(h: Harness) -> None:
    c, _ = _new_coordinator(h.log, scheduler=HeldScheduler())
    try:
        c.on_elected(0, 5)
        c.on_elected(0, 4)
        assert len(c.group_manager.scheduler.jobs) == 1
    finally:
        c.shutdown()


# ---------------------------------------------------------------------------- unloading
def test_unload_answers_parked_join_with_not_coordinator(h: Harness) -> None:
    box = h.send_join()
    assert not box.done and h.group().is_(PreparingRebalance)
    group = h.group()
    h.coordinator.on_resigned(0, 1)
    assert box.value.error == Errors.NOT_COORDINATOR
    assert group.is_(Dead) and h.group() is None
    assert h.join().error == Errors.NOT_COORDINATOR
    assert not h.coordinator.is_partition_owned(0)


def test_unload_answers_parked_sync_with_not_coordinator(h: Harness) -> None:
    lbox, fbox = h.send_join(), h.send_join()
    h.advance(INITIAL_DELAY + 1)
    h.advance(INITIAL_DELAY + 1)
    follower = fbox.value
    sbox = h.send_sync(GROUP_ID, 1, follower.member_id)
    assert not sbox.done
    h.coordinator.on_resigned(0, 1)
    assert sbox.value.error == Errors.NOT_COORDINATOR
    assert h.heartbeat(member_id=follower.member_id) == Errors.NOT_COORDINATOR


def test_fail_over_round_trip(h: Harness) -> None:
    """Coordinator A resigns; B (same log) loads; the member resumes; then B resigns and A takes
    the partition back with a newer epoch and still sees everything."""
    m = h.join_and_sync_single()
    h.commit(GROUP_ID, m.member_id, 1, {TP: OffsetAndMetadata(40)})
    h.coordinator.on_resigned(0, 1)
    b, _ = _new_coordinator(h.log)
    try:
        b.on_elected(0, 2)
        out = []
        b.handle_commit_offsets(GROUP_ID, m.member_id, None, 1, {TP: OffsetAndMetadata(41)}, out.append)
        assert out == [{TP: Errors.NONE}]
        b.on_resigned(0, 3)
        h.coordinator.on_elected(0, 4)
        assert h.fetch(GROUP_ID, [TP])[1][TP].offset == 41
        assert h.group().is_(Stable) and h.group().has(m.member_id)
    finally:
        b.shutdown()
