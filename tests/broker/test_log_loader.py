"""PersistentLog on disk and its loader: Kafka's LogLoaderTest, UnifiedLogTest and LogSegmentTest
recovery scenarios (tag 4.0.0) ported to the emulator's files, on MockTime."""
from __future__ import annotations

import errno
import mmap
import os
import struct
from pathlib import Path

import pytest

from kafka_emu.broker.storage.checkpoint_file import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile
from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.storage.file_records import FileRecords, read_offset_index, segment_path
from kafka_emu.broker.storage.log_cleaner import LogCleaner
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_manager import LogManager
from kafka_emu.broker.storage.persistent_log import PersistentLog, valid_bytes
from kafka_emu.broker.storage.record_batch import build_batch, iter_records
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import MockTime

pytestmark = pytest.mark.timeout(30)

NOW = MockTime().milliseconds()


def config(**configs: object) -> LogConfig:
    return LogConfig.for_topic(configs)


def new_log(directory: Path, time: MockTime | None = None, **configs: object) -> PersistentLog:
    return PersistentLog(directory / "t-0", "t", 0, config=config(**configs), time=time or MockTime())


def reload(log: PersistentLog, *, clean: bool, recovery_point: int = 0, log_start: int | None = None,
           hw: int | None = None, **configs: object) -> PersistentLog:
    """A new process opening the directory (Kafka's LogLoader.load): ``clean`` as if the
    previous one shut down cleanly (``close``), else as after a crash."""
    if clean:
        log.close()
    cfg = config(**configs) if configs else log.config
    return PersistentLog.load(log.dir, "t", 0, cfg, log.time, recovery_point if not clean else log.recovery_point,
                              log_start, hw, clean)


def batch(*values: bytes, ts: int = NOW, **kw: object) -> bytes:
    return build_batch([(b"k", v) for v in values], timestamp_ms=ts, **kw)


def records(log: PersistentLog) -> list[tuple[int, bytes | None]]:
    return [(o, v) for _, data in log.batches_from(log.log_start_offset) for o, _, v in iter_records(data)]


def fill(log: PersistentLog, n: int, size: int = 100) -> None:
    for i in range(n):
        log.append_as_leader(batch(bytes([65 + i % 26]) * size), 0)


def test_log_recovers_to_correct_offset_after_clean_shutdown(tmp_path: Path) -> None:
    """LogLoaderTest.testLogRecoversToCorrectOffset / LogLoaderTest.testCleanShutdownFile: the
    reopened log has the same segments, LEO and records; nothing is re-validated."""
    log = new_log(tmp_path, **{"segment.bytes": 1000})
    fill(log, 30)
    before = records(log)
    bases = [s.base_offset for s in log.segments]
    again = reload(log, clean=True)
    assert [s.base_offset for s in again.segments] == bases
    assert again.log_end_offset == 30 and again.recovery_point == 30
    assert records(again) == before
    again.append_as_leader(batch(b"more"), 0)
    assert records(again)[-1] == (30, b"more")


def test_recovery_after_crash_with_torn_tail(tmp_path: Path) -> None:
    """LogLoaderTest.testLogRecoveryIsCalledUponBrokerCrash / UnifiedLogTest recovery after an
    unclean shutdown: a half-written last batch is cut off, the batches before it stay."""
    log = new_log(tmp_path)
    fill(log, 10)
    active = segment_path(log.dir, 0, ".log")
    size = active.stat().st_size
    os.truncate(active, size - 7)   # the last batch torn in the middle
    again = reload(log, clean=False)
    assert again.log_end_offset == 9
    assert [o for o, _ in records(again)] == list(range(9))
    assert active.stat().st_size < size - 7
    info = again.append_as_leader(batch(b"after"), 0)
    assert info.first_offset == 9


def test_corrupt_log_tail_is_truncated(tmp_path: Path) -> None:
    """LogLoaderTest.testCorruptLog: random bytes appended after the last batch are removed."""
    log = new_log(tmp_path)
    fill(log, 5)
    with open(segment_path(log.dir, 0, ".log"), "ab") as f:
        f.write(os.urandom(300))
    again = reload(log, clean=False)
    assert again.log_end_offset == 5
    assert segment_path(log.dir, 0, ".log").stat().st_size == again.active_segment.size


def test_recovery_with_corrupt_message_deletes_later_segments(tmp_path: Path) -> None:
    """LogSegmentTest.testRecoveryWithCorruptMessage and LogLoader's rule that everything after a
    truncated segment is deleted: a flipped byte fails the CRC, the log ends before that batch."""
    log = new_log(tmp_path, **{"segment.bytes": 1000})
    fill(log, 30)
    assert log.num_segments() >= 3
    second = log.segments[1]
    path = segment_path(log.dir, second.base_offset, ".log")
    data = bytearray(path.read_bytes())
    headers = list(second.batches())
    data[headers[2].position + 70] ^= 0xFF           # inside the third batch's records
    path.write_bytes(bytes(data))
    again = reload(log, clean=False)
    assert again.log_end_offset == headers[2].base_offset
    assert again.num_segments() == 2
    assert sorted(p.name for p in again.dir.glob("*.log")) == \
        [f"{s.base_offset:020d}.log" for s in again.segments]


def test_recovery_starts_at_the_recovery_point(tmp_path: Path) -> None:
    """UnifiedLogTest/LogLoaderTest.testRecoverOnlyLastSegment: segments wholly below the
    checkpointed recovery point are trusted (not re-validated); those from it on are."""
    log = new_log(tmp_path, **{"segment.bytes": 1000})
    fill(log, 30)
    first, last = log.segments[0], log.active_segment
    flushed_to = log.segments[1].base_offset
    log.flush(flushed_to)
    assert log.recovery_point == flushed_to
    for seg, index in ((first, 1), (last, 0)):
        path = segment_path(log.dir, seg.base_offset, ".log")
        data = bytearray(path.read_bytes())
        data[list(seg.batches())[index].position + 70] ^= 0xFF
        path.write_bytes(bytes(data))
    again = reload(log, clean=False, recovery_point=flushed_to)
    assert again.segments[0].next_offset == first.next_offset       # below the recovery point: kept
    assert again.log_end_offset == last.base_offset                  # after it: truncated at the bad batch
    assert again.recovery_point == flushed_to


def test_missing_index_is_rebuilt(tmp_path: Path) -> None:
    """LogLoaderTest.testIndexRebuild: deleted index files are rebuilt from the log."""
    log = new_log(tmp_path, **{"segment.bytes": 3000, "index.interval.bytes": 1})
    fill(log, 30)
    seg = log.segments[0]
    entries = seg.offset_index.items()
    log.close()
    for suffix in (".index", ".timeindex"):
        segment_path(log.dir, seg.base_offset, suffix).unlink()
    again = reload(log, clean=True)
    assert again.segments[0].offset_index.items() == entries
    data = segment_path(log.dir, seg.base_offset, ".index").read_bytes()
    assert read_offset_index(data, seg.base_offset, 1 << 20, seg.size).items() == entries
    assert [o for o, _, _ in iter_records(again.read(5, 1))][0] == 5


def test_corrupt_index_is_rebuilt(tmp_path: Path) -> None:
    """LogLoaderTest.testCorruptIndexRebuild, LogSegmentTest.testRecoveryFixesCorruptIndex and
    testRecoveryFixesCorruptTimeIndex: garbage in the index files fails the sanity check and the
    indexes are rebuilt; reads by offset and by timestamp work."""
    time = MockTime()
    log = new_log(tmp_path, time, **{"segment.bytes": 3000, "index.interval.bytes": 1})
    for i in range(30):
        log.append_as_leader(batch(b"x" * 100, ts=NOW + i), 0)
    seg = log.segments[0]
    entries, times = seg.offset_index.items(), seg.time_index.items()
    log.close()
    segment_path(log.dir, seg.base_offset, ".index").write_bytes(os.urandom(13))
    segment_path(log.dir, seg.base_offset, ".timeindex").write_bytes(b"\xff" * 24)
    again = reload(log, clean=True)
    assert again.segments[0].offset_index.items() == entries
    assert again.segments[0].time_index.items() == times
    assert again.fetch_offset_by_timestamp(NOW + 7, again.log_end_offset) == (7, NOW + 7)
    assert [o for o, _, _ in iter_records(again.read(7, 1))][0] == 7


def test_valid_indexes_are_loaded_not_rebuilt(tmp_path: Path) -> None:
    """The sanity check passes on a clean file, so the stored entries are used: a truncated but
    valid .index (fewer entries) is kept as it is (a sparse index stays correct)."""
    log = new_log(tmp_path, **{"segment.bytes": 3000, "index.interval.bytes": 1})
    fill(log, 30)
    seg = log.segments[0]
    log.close()
    path = segment_path(log.dir, seg.base_offset, ".index")
    path.write_bytes(path.read_bytes()[:16])
    again = reload(log, clean=True)
    assert again.segments[0].offset_index.entries == 2
    assert [o for o, _, _ in iter_records(again.read(20, 1))][0] == 20


def test_bogus_index_files_are_removed(tmp_path: Path) -> None:
    """LogLoaderTest.testBogusIndexSegmentsAreRemoved and testOpenDeletesObsoleteFiles: index files
    without a .log, .deleted and .cleaned files go at load."""
    log = new_log(tmp_path)
    fill(log, 3)
    log.close()
    for name in ("00000000000000000500.index", "00000000000000000500.timeindex", "00000000000000000500.txnindex",
                 "00000000000000000000.log.deleted", "00000000000000000000.log.cleaned"):
        (log.dir / name).write_bytes(b"junk")
    again = reload(log, clean=True)
    assert sorted(p.name for p in again.dir.iterdir() if p.name[0].isdigit()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
        "00000000000000000003.snapshot"]     # the clean shutdown's producer snapshot at the LEO
    assert again.log_end_offset == 3


def test_interrupted_swap_is_completed(tmp_path: Path) -> None:
    """LogLoaderTest.testRecoveryAfterCrashDuringSplitPhase*: a ``.swap`` file left by a crash
    replaces the segments whose offsets it covers."""
    log = new_log(tmp_path, **{"segment.bytes": 1000})
    fill(log, 20)
    bases = [s.base_offset for s in log.segments]
    merged = b"".join(bytes(s.records) for s in log.segments[:2])
    log.close()
    (log.dir / f"{bases[0]:020d}.log.swap").write_bytes(merged)
    again = reload(log, clean=True)
    assert [s.base_offset for s in again.segments] == [bases[0]] + bases[2:]
    assert [o for o, _ in records(again)] == list(range(20))


def test_log_start_offset_checkpoint_restores_the_start(tmp_path: Path) -> None:
    """UnifiedLogTest.testLoadProducersAfterDeleteRecordsMidSegment / LogManagerTest.
    testCheckpointLogStartOffsetForNormalTopic: a log start offset inside the first segment comes
    back from log-start-offset-checkpoint and reads below it stay out of range."""
    tmp = tmp_path / "broker"
    manager = LogManager(KafkaConfig({"log.dirs": str(tmp)}), time=MockTime())
    log = manager.get_or_create_log(("t", 0))
    fill(log, 10)
    log.high_watermark = 10
    assert log.maybe_increment_log_start_offset(4)
    manager.shutdown()
    text = (tmp / "log-start-offset-checkpoint").read_text()
    assert text == "0\n1\nt 0 4\n"
    assert (tmp / "replication-offset-checkpoint").read_text() == "0\n1\nt 0 10\n"
    again = PersistentLog.load(log.dir, "t", 0, log.config, log.time, 10, 4, 10, True)
    assert again.log_start_offset == 4 and again.high_watermark == 10 and again.log_end_offset == 10


def test_log_end_less_than_start_after_reopen(tmp_path: Path) -> None:
    """LogLoaderTest.testLogEndLessThanStartAfterReopen: a checkpointed log start beyond the
    segments (removed behind the broker's back) restarts the log empty at that offset."""
    log = new_log(tmp_path)
    fill(log, 5)
    again = reload(log, clean=True, log_start=50)
    assert (again.log_start_offset, again.log_end_offset, again.num_segments()) == (50, 50, 1)
    assert again.append_as_leader(batch(b"x"), 0).first_offset == 50


def test_high_watermark_clamped_into_log(tmp_path: Path) -> None:
    """The HW from replication-offset-checkpoint is clamped into [log start, LEO] (a checkpoint
    written before a torn tail was cut)."""
    log = new_log(tmp_path)
    fill(log, 5)
    assert reload(log, clean=False, hw=99).high_watermark == 5


def test_leader_epochs_survive_and_are_rebuilt(tmp_path: Path) -> None:
    """LogLoaderTest.testLogRecoversForLeaderEpoch and LogSegmentTest.testRecoveryRebuildsEpochCache:
    the leader-epoch-checkpoint is read back; without it, recovery rebuilds it from the batches."""
    log = new_log(tmp_path)
    log.append_as_leader(batch(b"a"), 1)
    log.append_as_leader(batch(b"b"), 1)
    log.append_as_leader(batch(b"c"), 3)
    epochs = [(1, 0), (3, 2)]
    assert LeaderEpochCheckpointFile(log.dir / LEADER_EPOCH_CHECKPOINT).read() == epochs
    again = reload(log, clean=True)
    assert again.end_offset_for_epoch(1) == (1, 2)
    (log.dir / LEADER_EPOCH_CHECKPOINT).unlink()
    rebuilt = PersistentLog.load(log.dir, "t", 0, log.config, log.time, 0, None, None, False)
    assert rebuilt.leader_epoch_cache.entries() == epochs
    assert LeaderEpochCheckpointFile(log.dir / LEADER_EPOCH_CHECKPOINT).read() == epochs


def test_producer_state_rebuilt_by_replay(tmp_path: Path) -> None:
    """LogLoaderTest.testProducerSnapshotsRecoveryAfterUncleanShutdown (by replay, no .snapshot
    files): after a crash a retried batch is still recognised as a duplicate, and a sequence
    gap is still out of order."""
    log = new_log(tmp_path)
    first = batch(b"a", producer_id=7, producer_epoch=0, base_sequence=0)
    log.append_as_leader(first, 0)
    log.append_as_leader(batch(b"b", producer_id=7, producer_epoch=0, base_sequence=1), 0)
    again = reload(log, clean=False)
    dup = again.append_as_leader(first, 0)
    assert dup.duplicate and dup.first_offset == 0
    assert again.append_as_leader(batch(b"c", producer_id=7, producer_epoch=0, base_sequence=2), 0).first_offset == 2


def test_control_and_transactional_batches_recover(tmp_path: Path) -> None:
    """Recovery checks batches, not what they carry: a transactional batch and a control batch
    (a commit marker, as the transactions work writes them) survive a crash."""
    log = new_log(tmp_path)
    txn = build_batch([(b"k", b"v")], timestamp_ms=NOW, producer_id=9, producer_epoch=0, base_sequence=0,
                      attributes=0x10, base_offset=0, leader_epoch=0)
    marker = build_batch([(struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 0))], timestamp_ms=NOW,
                         producer_id=9, producer_epoch=0, attributes=0x30, base_offset=1, leader_epoch=0)
    assert log.append_as_follower(txn + marker) == 2
    again = reload(log, clean=False)
    assert again.log_end_offset == 2
    assert [h.base_offset for h in again.active_segment.batches()] == [0, 1]


def test_truncation_and_retention_reach_the_files(tmp_path: Path) -> None:
    """UnifiedLogTest.testTruncateTo and testDeleteOldSegments on disk: what the log drops is gone
    from the directory after a reload, including a truncation into an older (mapped) segment."""
    log = new_log(tmp_path, **{"segment.bytes": 1000})
    fill(log, 30)
    cut = log.segments[1].base_offset + 2
    assert log.truncate_to(cut)
    assert isinstance(log.active_segment.records, bytearray)
    fill(log, 3)
    log.high_watermark = log.log_end_offset
    log.maybe_increment_log_start_offset(log.segments[1].base_offset)
    log.delete_old_segments()
    expected = records(log)
    again = reload(log, clean=False)
    assert records(again) == expected
    assert [o for o, _ in expected] == list(range(log.log_start_offset, cut + 3))
    assert len(list(again.dir.glob("*.log"))) == again.num_segments()


def test_cleaned_segments_reach_the_files(tmp_path: Path) -> None:
    """LogCleanerTest.testCleanSegments on disk: the compacted segments replace the old files
    (through .cleaned and .swap) and a reload reads the latest value of every key."""
    time = MockTime()
    log = PersistentLog(tmp_path / "c-0", "c", 0, config=config(**{"segment.bytes": 600, "cleanup.policy": "compact"}),
                        time=time)
    for i in range(40):
        log.append_as_leader(build_batch([(b"k%d" % (i % 4), b"v%d" % i)], timestamp_ms=NOW), 0)
    log.high_watermark = log.log_end_offset
    manager = LogManager(KafkaConfig(), {("c", 0): log}, time)
    cleaner = LogCleaner(manager, 15000, time)
    cleanable = cleaner.cleanable(log, time.milliseconds())
    with log.lock:
        cleaner.clean(cleanable, time.milliseconds())
    kept = [(o, v) for _, data in log.batches_from(0) for o, _, v in iter_records(data)]
    assert len(kept) < 40
    assert not list(log.dir.glob("*.swap")) and not list(log.dir.glob("*.cleaned"))
    again = PersistentLog.load(log.dir, "c", 0, log.config, time, 0, None, None, False)
    assert [(o, v) for _, data in again.batches_from(0) for o, _, v in iter_records(data)] == kept


def test_inactive_segments_are_mapped_not_held(tmp_path: Path) -> None:
    """Rolled segments are read through a memory map of their file; only the active segment is
    in the heap (what the memory budget counts)."""
    log = new_log(tmp_path, **{"segment.bytes": 1000})
    fill(log, 30)
    assert all(isinstance(s.records, mmap.mmap) for s in log.segments[:-1])
    assert isinstance(log.active_segment.records, bytearray)
    assert log.memory_bytes() == log.active_segment.size < log.size_bytes


def test_flush_messages_moves_the_recovery_point(tmp_path: Path) -> None:
    """UnifiedLog.append's ``unflushedMessages >= flush.messages`` rule: with flush.messages=1
    every append is fsynced and the recovery point is the LEO; with the default it stays."""
    eager = new_log(tmp_path / "a", **{"flush.messages": 1})
    lazy = new_log(tmp_path / "b")
    for log in (eager, lazy):
        fill(log, 3)
    assert eager.recovery_point == 3 and lazy.recovery_point == 0


def test_flusher_task_honours_flush_ms(tmp_path: Path) -> None:
    """LogManagerTest.testTimeBasedFlush: the kafka-log-flusher flushes a log once flush.ms has
    passed since its last flush (on MockTime)."""
    time = MockTime()
    manager = LogManager(KafkaConfig({"log.dirs": str(tmp_path), "log.flush.interval.ms": 1000}), time=time)
    log = manager.get_or_create_log(("t", 0))
    fill(log, 2)
    manager.flush_dirty_logs()
    assert log.recovery_point == 0
    time.advance(1000)
    manager.flush_dirty_logs()
    assert log.recovery_point == 2


def test_valid_bytes_stops_at_the_first_bad_batch() -> None:
    """LogSegment.recover's checks one by one: short header, bad length, bad magic, bad CRC,
    offsets going backwards."""
    good = build_batch([(b"k", b"v")], timestamp_ms=NOW, base_offset=10)
    second = build_batch([(b"k", b"w")], timestamp_ms=NOW, base_offset=11)
    assert valid_bytes(good + second, 10) == len(good) * 2
    assert valid_bytes(good + second[:30], 10) == len(good)
    assert valid_bytes(good + build_batch([(b"k", b"w")], timestamp_ms=NOW, base_offset=5), 10) == len(good)
    bad_magic = bytearray(second)
    bad_magic[16] = 1
    assert valid_bytes(good + bytes(bad_magic), 10) == len(good)
    assert valid_bytes(good, 11) == 0                   # below the segment base


def test_checkpoint_recovery_points(tmp_path: Path) -> None:
    """LogManagerTest.testCheckpointRecoveryPoints: recovery-point-offset-checkpoint holds each
    log's recovery point (what was flushed), per log directory; a new log goes to the directory
    with the fewest logs (Kafka's nextLogDirs)."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = LogManager(KafkaConfig({"log.dirs": f"{a},{b}"}), time=MockTime())
    one, two = manager.get_or_create_log(("t", 0)), manager.get_or_create_log(("t", 1))
    assert {one.dir.parent, two.dir.parent} == {a, b}
    fill(one, 4)
    fill(two, 4)
    with one.lock:
        one.flush(3)
    manager.checkpoint_recovery_points()
    assert (one.dir.parent / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 3\n"
    assert (two.dir.parent / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 1 0\n"


def test_log_dir_is_used_without_log_dirs(tmp_path: Path) -> None:
    """``log.dir`` is the directory when ``log.dirs`` is not set (Kafka's fallback)."""
    manager = LogManager(KafkaConfig({"log.dir": str(tmp_path)}), time=MockTime())
    log = manager.get_or_create_log(("t", 0))
    assert isinstance(log, PersistentLog) and log.dir == tmp_path / "t-0"


def test_write_error_is_kafka_storage_error_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed write (disk full) answers KAFKA_STORAGE_ERROR and takes the batch back out of
    memory and file, so no reader sees what is not on disk; the log takes writes again after."""
    log = new_log(tmp_path)
    fill(log, 3)

    def full(self: object, data: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(FileRecords, "append", full)
        with pytest.raises(KafkaError) as info:
            log.append_as_leader(batch(b"lost"), 0)
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR and "No space left" in str(info.value)
    assert log.log_end_offset == 3 and [o for o, _ in records(log)] == [0, 1, 2]
    assert log.append_as_leader(batch(b"next"), 0).first_offset == 3
    assert records(reload(log, clean=False))[-1] == (3, b"next")


@pytest.mark.parametrize("clean", [True, False])
def test_transaction_state_and_aborted_index_rebuilt_on_load(tmp_path: Path, clean: bool) -> None:
    """LogSegment.recover / rebuildProducerState: after a restart the open transaction, the LSO
    and the aborted-transaction indexes (not persisted here) come back from the batches."""
    from log_batches import append_end_txn, append_txn
    from kafka_emu.broker.storage.transaction_index import AbortedTxn

    size = len(batch(b"x" * 10, producer_id=1, producer_epoch=0, base_sequence=0, attributes=0x10))
    log = new_log(tmp_path, **{"segment.bytes": size * 2})
    append_txn(log, 1, 0, timestamp_ms=NOW)          # 0
    append_txn(log, 2, 0, timestamp_ms=NOW)          # 1
    append_end_txn(log, 1, False, timestamp_ms=NOW)  # 2: abort, LSO then 1
    append_txn(log, 3, 0, timestamp_ms=NOW)          # 3: stays open
    append_end_txn(log, 2, True, timestamp_ms=NOW)   # 4
    log.maybe_increment_high_watermark(log.log_end_offset)
    loaded = reload(log, clean=clean, recovery_point=0, hw=log.high_watermark)
    assert loaded.last_stable_offset == 3
    assert loaded.collect_aborted_transactions(0, 5) == [AbortedTxn(1, 0, 2, 1)]
    assert loaded.producers[3].current_txn_first_offset == 3
