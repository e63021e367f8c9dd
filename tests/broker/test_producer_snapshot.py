"""Producer-state snapshot files and transaction index files of persistent logs: Kafka's
ProducerStateManagerTest and LogLoaderTest snapshot and transaction-index cases (tag 4.0.0)
ported to ``PersistentLog`` on MockTime."""
from __future__ import annotations

import struct
from collections import deque
from pathlib import Path

import pytest

from kafka_emu.broker.storage.file_records import segment_path
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.persistent_log import PersistentLog
from kafka_emu.broker.storage.producer_snapshot import (
    CorruptSnapshotError,
    decode_snapshot,
    encode_snapshot,
    list_snapshot_files,
    snapshot_path,
)
from kafka_emu.broker.storage.producer_state import CachedBatch, ProducerStateEntry
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.broker.storage.transaction_index import AbortedTxn
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import MockTime

from log_batches import append_end_txn, append_txn

pytestmark = pytest.mark.timeout(30)

NOW = MockTime().milliseconds()


def new_log(tmp_path: Path, **configs: object) -> PersistentLog:
    return PersistentLog(tmp_path / "t-0", "t", 0, config=LogConfig.for_topic(configs), time=MockTime())


def reload(log: PersistentLog, *, clean: bool, recovery_point: int = 0) -> PersistentLog:
    """A new process opening the directory: after ``close`` when ``clean``, else as after a crash
    with the given recovery point."""
    if clean:
        log.close()
    return PersistentLog.load(log.dir, "t", 0, log.config, log.time, log.recovery_point if clean else recovery_point,
                              None, log.high_watermark, clean)


def idempotent(log: PersistentLog, pid: int, seq: int, value: bytes = b"v", epoch: int = 0):
    return log.append_as_leader(build_batch([(b"k", value)], timestamp_ms=NOW, producer_id=pid, producer_epoch=epoch,
                                            base_sequence=seq), 0)


def snapshot_offsets(log: PersistentLog) -> list[int]:
    return sorted(list_snapshot_files(log.dir))


def state(log: PersistentLog) -> dict[int, tuple]:
    """What a snapshot keeps of each producer: epoch, last batch, coordinator epoch, open transaction."""
    return {pid: (e.producer_epoch, e.batches[-1] if e.batches else None, e.coordinator_epoch,
                  e.current_txn_first_offset) for pid, e in log.producers.items()}


def test_read_write_snapshot() -> None:
    """ProducerStateManagerTest.testReadWriteSnapshot: entries with and without a last batch and
    an open transaction round-trip; the layout is version 1, CRC-32C, count, 46-byte entries; a
    last batch whose sequence wrapped keeps its first sequence."""
    entries = [
        ProducerStateEntry(1, 2, deque([CachedBatch(1 - 0, 1, 2, 2, -1)]), 3, 100, -1),
        ProducerStateEntry(11, 12, deque(), 13, -1, 123456),
        ProducerStateEntry(5, 0, deque([CachedBatch(0x7FFFFFFE, 1, 10, 13, 77)]), -1, -1, 77),
    ]
    data = encode_snapshot(entries)
    assert struct.unpack_from(">hIi", data)[0] == 1 and len(data) == 10 + 3 * 46
    decoded = decode_snapshot(data)
    assert [(e.producer_id, e.producer_epoch, list(e.batches), e.coordinator_epoch, e.current_txn_first_offset,
             e.last_timestamp) for e in decoded] == \
        [(1, 2, [CachedBatch(1, 1, 2, 2, -1)], 3, 100, -1), (11, 12, [], 13, -1, 123456),
         (5, 0, [CachedBatch(0x7FFFFFFE, 1, 10, 13, 77)], -1, -1, 77)]


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "version"])
def test_corrupt_snapshot_is_refused(damage: str) -> None:
    """ProducerStateManagerTest.testLoadFromEmptySnapshotFile / testLoadFromTruncatedSnapshotFile /
    testLoadFromCorruptSnapshotFile: an empty, truncated or overwritten file, or another version,
    is a CorruptSnapshotError."""
    data = bytearray(encode_snapshot([ProducerStateEntry(1, 0, deque([CachedBatch(0, 0, 0, 0, 5)]), -1, -1, 5)]))
    if damage == "empty":
        data = bytearray()
    elif damage == "truncated":
        data = data[:len(data) // 2]
    elif damage == "garbage":
        data[20:57] = bytes(37)
    else:
        data[1] = 2
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(data))


def test_snapshot_taken_on_roll_and_at_clean_shutdown(tmp_path: Path) -> None:
    """UnifiedLogTest.testProducerSnapshotAfterSegmentRollOnAppend and LogLoaderTest
    testLoadingLogKeepsLargestStrayProducerStateSnapshot: a snapshot at each rolled segment's base
    offset and one at the LEO on close; at load a stray snapshot inside the log goes, the
    largest one (the shutdown's) stays."""
    log = new_log(tmp_path)
    idempotent(log, 1, 0, b"a")
    log.roll()
    idempotent(log, 1, 1, b"b")
    log.roll()
    idempotent(log, 1, 2, b"c")
    idempotent(log, 1, 3, b"d")
    log.close()
    assert log.num_segments() == 3
    assert snapshot_offsets(log) == [1, 2, 4]
    snapshot_path(log.dir, 3).write_bytes(b"")
    again = PersistentLog.load(log.dir, "t", 0, log.config, log.time, 0, None, None, False)
    assert snapshot_offsets(again) == [1, 2, 4]
    assert state(again)[1][1].last_seq == 3


@pytest.mark.parametrize("finished", [False, True])
def test_recover_from_snapshot_transaction(tmp_path: Path, finished: bool) -> None:
    """ProducerStateManagerTest.testRecoverFromSnapshotUnfinishedTransaction /
    testRecoverFromSnapshotFinishedTransaction: the snapshot keeps only the last batch (first
    and last data offset and sequence 1) and the open transaction's first offset; the producer
    goes on after the reload."""
    log = new_log(tmp_path)
    append_txn(log, 1, 0, timestamp_ms=NOW)
    append_txn(log, 1, 1, timestamp_ms=NOW)
    if finished:
        append_end_txn(log, 1, False, timestamp_ms=NOW)
    log.maybe_increment_high_watermark(log.log_end_offset)
    again = reload(log, clean=True)
    entry = again.producers[1]
    assert list(entry.batches) == [CachedBatch(1, 1, 1, 1, NOW)]
    assert entry.current_txn_first_offset == (-1 if finished else 0)
    assert again.last_stable_offset == (3 if finished else 0)
    if not finished:
        append_txn(again, 1, 2, timestamp_ms=NOW)
        assert again.producers[1].batches[-1].last_seq == 2


def test_corrupt_snapshot_at_load_is_deleted_and_state_rebuilt(tmp_path: Path) -> None:
    """LogLoader with ProducerStateManager.loadFromSnapshot: the latest snapshot fails its CRC,
    is deleted, and the state comes from the next older one plus the batches after it."""
    log = new_log(tmp_path, **{"segment.bytes": 200})
    for seq in range(12):
        idempotent(log, 7, seq)
    expected = state(log)
    log.close()
    latest = max(list_snapshot_files(log.dir))
    path = snapshot_path(log.dir, latest)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    again = PersistentLog.load(log.dir, "t", 0, log.config, log.time, log.log_end_offset, None, None, True)
    assert latest not in list_snapshot_files(again.dir)
    assert state(again)[7][1] == expected[7][1]
    info = idempotent(again, 7, 11)
    assert info.duplicate and info.first_offset == 11
    assert idempotent(again, 7, 12).first_offset == 12


@pytest.mark.parametrize("clean", [True, False])
def test_idempotent_sequence_survives_restart(tmp_path: Path, clean: bool) -> None:
    """LogLoaderTest.testProducerSnapshotsRecoveryAfterUncleanShutdown (what it protects): after
    a clean or an unclean restart the producer's next sequence is accepted, a retry of its last
    batch is a duplicate with the original offsets, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER."""
    log = new_log(tmp_path, **{"segment.bytes": 300})
    for seq in range(20):
        idempotent(log, 3, seq)
    log.maybe_increment_high_watermark(log.log_end_offset)
    again = reload(log, clean=clean, recovery_point=log.segments[-2].base_offset)
    assert again.log_end_offset == 20
    dup = idempotent(again, 3, 19)
    assert dup.duplicate and dup.first_offset == 19
    with pytest.raises(KafkaError) as err:
        idempotent(again, 3, 21)
    assert err.value.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert idempotent(again, 3, 20).first_offset == 20


def test_txnindex_written_with_the_abort_and_deleted_with_its_segment(tmp_path: Path) -> None:
    """TransactionIndex on disk: the ABORT marker's segment gets a ``.txnindex`` entry of 34 bytes
    (version 0, producer id, first offset, last offset, last stable offset) at once; a segment
    without aborts has no file; retention deletes it with its segment."""
    log = new_log(tmp_path, **{"segment.bytes": 300, "retention.ms": 1000})
    append_txn(log, 1, 0, timestamp_ms=NOW)            # 0
    append_end_txn(log, 1, False, timestamp_ms=NOW)    # 1
    assert log.collect_aborted_transactions(0, 2) == [AbortedTxn(1, 0, 1, 2)]
    path = segment_path(log.dir, 0, ".txnindex")
    assert path.read_bytes() == struct.pack(">hqqqq", 0, 1, 0, 1, 2)
    for seq in range(10):
        idempotent(log, 9, seq)
    assert not segment_path(log.dir, log.active_segment.base_offset, ".txnindex").exists()
    log.maybe_increment_high_watermark(log.log_end_offset)
    log.time.advance(10_000)
    log.append_as_leader(build_batch([(b"k", b"late")], timestamp_ms=log.time.milliseconds()), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    assert not path.exists()
    assert all(o >= log.segments[0].base_offset for o in snapshot_offsets(log))


def _transactions(log: PersistentLog) -> None:
    """LogLoaderTest.testFullTransactionIndexRecovery's log: four producers, transactional and
    plain data mixed, two aborts."""
    def txn(pid: int, n: int) -> None:
        seq = seqs.get(pid, 0)
        guard = log.maybe_start_transaction_verification(pid, 0)
        log.append_as_leader(build_batch([(b"k", b"v")] * n, timestamp_ms=NOW, producer_id=pid, producer_epoch=0,
                                         base_sequence=seq, attributes=0x10), 0, verification_guard=guard)
        seqs[pid] = seq + n

    def plain(n: int) -> None:
        log.append_as_leader(build_batch([(b"k", b"p")] * n, timestamp_ms=NOW), 0)

    seqs: dict[int, int] = {}
    txn(1, 5); plain(3); txn(2, 2); txn(1, 4); txn(3, 3); plain(2); txn(1, 10)
    append_end_txn(log, 1, False, timestamp_ms=NOW)      # 29
    txn(2, 6); txn(4, 3); plain(10); txn(3, 9)
    append_end_txn(log, 3, True, timestamp_ms=NOW)       # 58
    txn(4, 8); txn(2, 7)
    append_end_txn(log, 2, False, timestamp_ms=NOW)      # 74
    plain(10); txn(4, 4)
    append_end_txn(log, 4, True, timestamp_ms=NOW)       # 89
    log.maybe_increment_high_watermark(log.log_end_offset)


EXPECTED_ABORTED = [AbortedTxn(1, 0, 29, 8), AbortedTxn(2, 8, 74, 36)]


@pytest.mark.parametrize("which", ["all", "last"])
def test_transaction_index_recovery(tmp_path: Path, which: str) -> None:
    """LogLoaderTest.testFullTransactionIndexRecovery / testRecoverOnlyLastSegment: with the
    ``.txnindex`` files of every segment (recovery from offset 0) or of the last one (recovery
    point at its base) deleted, an unclean load rebuilds them from the batches."""
    log = new_log(tmp_path, **{"segment.bytes": 128 * 5})
    _transactions(log)
    assert log.collect_aborted_transactions(0, log.log_end_offset) == EXPECTED_ABORTED
    victims = log.segments if which == "all" else log.segments[-1:]
    recovery_point = victims[0].base_offset
    log.flush()
    for seg in victims:
        segment_path(log.dir, seg.base_offset, ".txnindex").unlink(missing_ok=True)
    again = reload(log, clean=False, recovery_point=recovery_point)
    assert again.collect_aborted_transactions(0, again.log_end_offset) == EXPECTED_ABORTED
    assert sum(segment_path(again.dir, s.base_offset, ".txnindex").exists() for s in again.segments) == 2


@pytest.mark.parametrize("clean", [True, False])
def test_aborted_transactions_and_open_one_after_restart(tmp_path: Path, clean: bool) -> None:
    """What read_committed fetches need after a restart: the aborted transactions (from the
    ``.txnindex`` files, not replayed) and the open transaction bounding the LSO (from the
    snapshot)."""
    log = new_log(tmp_path, **{"segment.bytes": 128 * 5})
    _transactions(log)
    append_txn(log, 5, 0, timestamp_ms=NOW)
    open_at = log.log_end_offset - 1
    log.maybe_increment_high_watermark(log.log_end_offset)
    log.flush()
    again = reload(log, clean=clean, recovery_point=log.log_end_offset)
    assert again.collect_aborted_transactions(0, again.log_end_offset) == EXPECTED_ABORTED
    assert again.last_stable_offset == open_at
    append_end_txn(again, 5, False, timestamp_ms=NOW)
    again.maybe_increment_high_watermark(again.log_end_offset)
    assert again.collect_aborted_transactions(0, again.log_end_offset)[-1] == \
        AbortedTxn(5, open_at, open_at + 1, open_at + 2)


def test_corrupt_txnindex_is_rebuilt(tmp_path: Path) -> None:
    """TransactionIndexTest.testSanityCheck at load: a ``.txnindex`` whose size is not a multiple
    of 34 is rebuilt from the batches (from the snapshot below its segment)."""
    log = new_log(tmp_path, **{"segment.bytes": 128 * 5})
    _transactions(log)
    log.close()
    path = next(p for p in sorted(log.dir.glob("*.txnindex")))
    path.write_bytes(path.read_bytes()[:-3])
    again = PersistentLog.load(log.dir, "t", 0, log.config, log.time, log.log_end_offset, None,
                               log.high_watermark, True)
    assert again.collect_aborted_transactions(0, again.log_end_offset) == EXPECTED_ABORTED


def test_truncation_deletes_snapshots_past_the_new_end(tmp_path: Path) -> None:
    """ProducerStateManagerTest.testTruncateAndReloadRemovesOutOfRangeSnapshots on disk: a
    truncation deletes the snapshot files past the new log end."""
    log = new_log(tmp_path, **{"segment.bytes": 200})
    for seq in range(12):
        idempotent(log, 7, seq)
    offsets = snapshot_offsets(log)
    assert len(offsets) >= 3
    log.truncate_to(offsets[1])
    assert snapshot_offsets(log) == [o for o in offsets if o <= offsets[1]]
    assert log.producers[7].last_seq == offsets[1] - 1


@pytest.mark.parametrize("clean", [True, False])
def test_load_replays_only_the_batches_after_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          clean: bool) -> None:
    """LogLoaderTest.testProducerSnapshotsRecoveryAfterUncleanShutdown (post KAFKA-5829): a clean
    load replays nothing (the shutdown snapshot is at the LEO); an unclean one with the recovery
    point in the last segment replays that segment only."""
    log = new_log(tmp_path, **{"segment.bytes": 300})
    for seq in range(30):
        idempotent(log, 3, seq)
    log.maybe_increment_high_watermark(log.log_end_offset)
    last = log.segments[-1]
    last_batches = sum(1 for _ in last.batches())
    replayed: list[int] = []
    original = PersistentLog._update_producer_state

    def spy(self, buf, info, segment):
        replayed.append(info.base_offset)
        return original(self, buf, info, segment)

    if clean:
        log.close()
    monkeypatch.setattr(PersistentLog, "_update_producer_state", spy)
    again = PersistentLog.load(log.dir, "t", 0, log.config, log.time,
                               log.log_end_offset if clean else last.base_offset, None, log.high_watermark, clean)
    assert len(replayed) == (0 if clean else last_batches)
    assert all(o >= last.base_offset for o in replayed)
    assert again.producers[3].last_seq == 29


def test_snapshots_pruned_after_recovery_point_checkpoint(tmp_path: Path) -> None:
    """UnifiedLog.deleteSnapshotsAfterRecoveryPointCheckpoint / minSnapshotsOffsetToRetain
    (LogLoaderTest.testProducerSnapshotsRecoveryAfterUncleanShutdown's setup): with the recovery
    point in the middle of the log, the snapshots from the segment below it stay; once it is at
    the LEO, only the last two segments' snapshots; an unclean load from there still recovers the
    producer."""
    log = new_log(tmp_path, **{"segment.bytes": 200})
    for seq in range(20):
        idempotent(log, 4, seq)
    bases = [s.base_offset for s in log.segments]
    assert snapshot_offsets(log) == bases[1:]
    log.flush(bases[3] + 1)
    assert log.delete_snapshots_after_recovery_point_checkpoint() == bases[3]
    assert snapshot_offsets(log) == bases[3:]
    log.flush()
    assert log.delete_snapshots_after_recovery_point_checkpoint() == bases[-2]
    assert snapshot_offsets(log) == bases[-2:]
    assert sorted(log.producer_state.snapshots) == bases[-2:]
    again = reload(log, clean=False, recovery_point=bases[-2])
    assert again.producers[4].last_seq == 19
    assert idempotent(again, 4, 20).first_offset == 20


@pytest.mark.parametrize("clean", [True, False])
def test_epoch_of_a_producer_whose_last_entry_is_a_marker_survives_restart(tmp_path: Path, clean: bool) -> None:
    """ProducerStateManagerTest.testRecoverFromSnapshotEmptyTransaction and
    testProducerStateAfterFencingAbortMarker: a producer whose last entry is a marker of a newer
    epoch (a fencing abort, or any transaction version 2 marker) has no batch in its snapshot
    entry (last offset -1) and keeps that epoch across a restart, so its zombie is still fenced."""
    log = new_log(tmp_path, **{"segment.bytes": 300})
    append_txn(log, 8, 0, timestamp_ms=NOW)
    log.append_as_leader(build_batch([(b"k", b"v")] * 20, timestamp_ms=NOW), 0)
    append_end_txn(log, 8, False, epoch=1, timestamp_ms=NOW)
    log.roll()
    log.maybe_increment_high_watermark(log.log_end_offset)
    entry = decode_snapshot(snapshot_path(log.dir, log.active_segment.base_offset).read_bytes())
    assert [(e.producer_id, e.producer_epoch, list(e.batches), e.current_txn_first_offset) for e in entry] == \
        [(8, 1, [], -1)]
    again = reload(log, clean=clean, recovery_point=log.log_end_offset)
    assert again.producers[8].producer_epoch == 1
    with pytest.raises(KafkaError) as err:
        append_txn(again, 8, 1, epoch=0, timestamp_ms=NOW)
    assert err.value.code in (Errors.INVALID_PRODUCER_EPOCH, Errors.INVALID_TXN_STATE)


def test_expired_producers_are_not_loaded_from_the_snapshot(tmp_path: Path) -> None:
    """ProducerStateManagerTest.testLoadFromSnapshotRetainsNonExpiredProducers /
    testRemoveExpiredPidsOnReload: a producer idle for producer.id.expiration.ms when its
    snapshot is loaded is not restored; a recent one is."""
    from kafka_emu.broker.server.config import KafkaConfig

    log = PersistentLog(tmp_path / "t-0", "t", 0, time=MockTime(),
                        config=LogConfig.for_topic({}, KafkaConfig({"producer.id.expiration.ms": 60_000})))
    log.append_as_leader(build_batch([(b"k", b"old")], timestamp_ms=NOW - 120_000, producer_id=1,
                                     producer_epoch=0, base_sequence=0), 0)
    idempotent(log, 2, 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    again = reload(log, clean=True)
    assert sorted(again.producers) == [2]
