"""Ports of Kafka's ``ShareCoordinatorShardTest`` (share-coordinator): writes as ShareUpdate
records combined into the state and a ShareSnapshot every N updates, fenced state and leader
epochs, initialize, delete, and the state rebuilt by a load of ``__share_group_state`` in
Kafka's record formats; and ``PersisterStateBatchCombinerTest`` cases."""
from __future__ import annotations

import uuid

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.group_metadata_manager import InlineScheduler
from kafka_emu.coordinator.share.config import ShareCoordinatorConfig
from kafka_emu.coordinator.share.share_coordinator import UNINITIALIZED, ShareCoordinator
from kafka_emu.coordinator.share.share_coordinator_records import (
    SHARE_SNAPSHOT_KEY_TYPE, SHARE_UPDATE_KEY_TYPE, ShareStateKey, StateBatch, combine_state_batches, read_key,
    read_snapshot_value, read_update_value,
)
from kafka_emu.timer import MockTime

from coordinator_harness import Box, InMemoryCoordinatorLog

pytestmark = pytest.mark.timeout(30)
KEY = ShareStateKey("group1", uuid.UUID(int=5), 0)


def coordinator(log: InMemoryCoordinatorLog | None = None, per_snapshot: int = 2,
                epoch: int = 1) -> tuple[ShareCoordinator, InMemoryCoordinatorLog]:
    log = log or InMemoryCoordinatorLog()
    c = ShareCoordinator(0, ShareCoordinatorConfig(num_partitions=1, snapshot_update_records_per_snapshot=per_snapshot),
                         log, MockTime(), InlineScheduler())
    c.startup()
    c.on_elected(0, epoch)
    return c, log


def write(c: ShareCoordinator, start: int, *batches: StateBatch, state_epoch: int = 0, leader_epoch: int = 0) -> int:
    box = Box()
    c.write_state(KEY, state_epoch, leader_epoch, start, batches, lambda error, _msg: box(error))
    return box.value


def records(log: InMemoryCoordinatorLog) -> list[tuple[int, object]]:
    out = []
    for _offset, key, value in log.read_records(0):
        key_type, k = read_key(key)
        assert k == KEY
        out.append((key_type, None if value is None else read_snapshot_value(value)
                    if key_type == SHARE_SNAPSHOT_KEY_TYPE else read_update_value(value)))
    return out


def test_write_first_is_a_snapshot_then_updates_then_a_snapshot() -> None:
    """testWriteStateSuccess / testSubsequentWriteStateSnapshotNewKey: the first write of a key is
    a ShareSnapshot, later ones ShareUpdates, and after N updates a snapshot again."""
    c, log = coordinator(per_snapshot=2)
    assert write(c, 0, StateBatch(0, 9, 0, 1)) == Errors.NONE
    assert write(c, -1, StateBatch(0, 4, 2, 1)) == Errors.NONE
    assert write(c, 5, StateBatch(5, 9, 2, 1)) == Errors.NONE
    assert write(c, 10) == Errors.NONE
    kinds = [k for k, _ in records(log)]
    assert kinds == [SHARE_SNAPSHOT_KEY_TYPE, SHARE_UPDATE_KEY_TYPE, SHARE_UPDATE_KEY_TYPE, SHARE_SNAPSHOT_KEY_TYPE]
    snapshot = records(log)[-1][1]
    assert snapshot.snapshot_epoch == 1 and snapshot.start_offset == 10 and snapshot.state_batches == ()
    r = c.read_state(KEY, 0)
    assert (r.error, r.start_offset, r.state_batches) == (Errors.NONE, 10, ())


def test_updates_combine_and_load_rebuilds_the_same_state() -> None:
    """testReplayWithShareSnapshot / testReadStateSuccess after a load: a new coordinator on the
    same log has the same state."""
    c, log = coordinator(per_snapshot=10)
    write(c, 0, StateBatch(0, 9, 0, 1))
    write(c, -1, StateBatch(3, 5, 2, 1))
    write(c, -1, StateBatch(7, 7, 4, 3))
    expected = (StateBatch(0, 2, 0, 1), StateBatch(3, 5, 2, 1), StateBatch(6, 6, 0, 1), StateBatch(7, 7, 4, 3),
                StateBatch(8, 9, 0, 1))
    assert c.read_state(KEY, 0).state_batches == expected
    loaded, _ = coordinator(log, epoch=2)
    r = loaded.read_state(KEY, 0)
    assert (r.start_offset, r.state_batches) == (0, expected)


def test_fenced_state_and_leader_epochs() -> None:
    """testWriteStateInvalidStateEpoch / testWriteStateFencedLeaderEpochError /
    testReadStateLeaderEpochUpdateError."""
    c, log = coordinator()
    write(c, 0, StateBatch(0, 0, 0, 1), state_epoch=1, leader_epoch=5)
    appends = log.appends
    assert write(c, 0, state_epoch=0, leader_epoch=5) == Errors.FENCED_STATE_EPOCH
    assert write(c, 0, state_epoch=1, leader_epoch=4) == Errors.FENCED_LEADER_EPOCH
    assert c.read_state(KEY, 4).error == Errors.FENCED_LEADER_EPOCH
    assert log.appends == appends


def test_initialize_and_delete() -> None:
    """testInitializeStateSuccess / testDeleteStateSuccess: an unknown key reads start offset -1;
    initialize writes a snapshot; delete writes tombstones of both keys."""
    c, log = coordinator()
    assert c.read_state(KEY, 0).start_offset == UNINITIALIZED
    box = Box()
    c.initialize_state(KEY, 0, 42, lambda error, _m: box(error))
    assert box.value == Errors.NONE and c.read_state(KEY, 0).start_offset == 42
    box = Box()
    c.delete_state(KEY, lambda error, _m: box(error))
    assert box.value == Errors.NONE and c.read_state(KEY, 0).start_offset == UNINITIALIZED
    assert [v for _k, v in records(log)][-2:] == [None, None]
    loaded, _ = coordinator(log, epoch=2)
    assert loaded.read_state(KEY, 0).start_offset == UNINITIALIZED


def test_status_errors() -> None:
    """ShareCoordinatorServiceTest: not started, a partition not led here."""
    c = ShareCoordinator(0, ShareCoordinatorConfig(num_partitions=1), InMemoryCoordinatorLog(), MockTime(),
                         InlineScheduler())
    assert c.read_state(KEY, 0).error == Errors.COORDINATOR_NOT_AVAILABLE
    c.startup()
    assert c.read_state(KEY, 0).error == Errors.NOT_COORDINATOR
    c.on_loading(0, 1)
    assert c.read_state(KEY, 0).error == Errors.COORDINATOR_LOAD_IN_PROGRESS


@pytest.mark.parametrize("current,new,start,expected", [
    ([], [StateBatch(0, 9, 0, 1)], 0, [StateBatch(0, 9, 0, 1)]),
    ([StateBatch(0, 9, 0, 1)], [StateBatch(2, 4, 2, 1)], 0,
     [StateBatch(0, 1, 0, 1), StateBatch(2, 4, 2, 1), StateBatch(5, 9, 0, 1)]),
    ([StateBatch(0, 4, 0, 1), StateBatch(5, 9, 0, 1)], [], 0, [StateBatch(0, 9, 0, 1)]),
    ([StateBatch(0, 9, 0, 1)], [StateBatch(8, 12, 4, 2)], 5, [StateBatch(5, 7, 0, 1), StateBatch(8, 12, 4, 2)]),
    ([StateBatch(0, 9, 2, 1)], [], 10, []),
])
def test_persister_state_batch_combiner(current: list, new: list, start: int, expected: list) -> None:
    """PersisterStateBatchCombinerTest: overlaps resolved for the new batches, merged neighbours,
    nothing below the start offset."""
    assert list(combine_state_batches(current, new, start)) == expected
