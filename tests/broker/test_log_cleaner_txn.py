"""Transaction-aware compaction: Kafka's LogCleanerTest transactional cases (tag 4.0.0) ported
on MockTime, and a hypothesis property of what a read_committed reader sees after cleaning.

Helpers mirror LogCleanerTest's: ``offsets_in_log`` lists the offsets of every keyed record with a
value (markers included), ``keys_in_log`` the keys of data records, ``last_offsets_per_batch`` the
last offset of every batch (empty ones included)."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.storage.control_record import end_txn_marker_batch
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_cleaner import DELETE_HORIZON_BIT, LogCleaner
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_manager import LogManager
from kafka_emu.broker.storage.log_validator import records_payload, walk_records
from kafka_emu.broker.storage.producer_state import AppendOrigin
from kafka_emu.broker.storage.record_batch import build_batch, parse_batches
from kafka_emu.broker.storage.transaction_index import AbortedTxn
from kafka_emu.timer.time import MockTime

pytestmark = pytest.mark.timeout(60)

TOMBSTONE_RETENTION_MS = 86_400_000
LARGE_TIMESTAMP = (1 << 63) - 1 - TOMBSTONE_RETENTION_MS - 1
LONG_MAX = (1 << 63) - 1
TXN = 0x10


# ---------------------------------------------------------------------- LogCleanerTest's helpers

def make_log(time: MockTime | None = None, **configs) -> UnifiedLog:
    configs.setdefault("cleanup.policy", "compact")
    configs.setdefault("segment.bytes", 1024)
    return UnifiedLog("test", 0, config=LogConfig.for_topic(configs), time=time or MockTime())


def make_cleaner(log: UnifiedLog, capacity: int = 1 << 20) -> LogCleaner:
    """``makeCleaner(capacity)``: an offset map of ``capacity`` slots at load factor 0.75."""
    manager = LogManager(KafkaConfig(), {("test", 0): log}, log.time)
    return LogCleaner(manager, 15000, log.time, dedupe_buffer_size=24 * capacity, load_factor=0.75)


def clean(cleaner: LogCleaner, log: UnifiedLog, first_dirty: int = 0, now: int | None = None) -> int:
    """``cleaner.doClean(LogToClean(tp, log, first_dirty, activeSegment.baseOffset), now)``: the end offset.

    An empty dirty section is mapped from 0 instead: Kafka's test ``FakeOffsetMap`` keeps its
    latest offset across an empty mapping, so there the whole log is cleaned again (with nothing
    new to map, mapping it all again removes nothing more)."""
    now = log.time.milliseconds() if now is None else now
    active = log.active_segment.base_offset
    return cleaner.do_clean(log, first_dirty if first_dirty < active else 0, active, now)[0]


def run_two_pass_clean(cleaner: LogCleaner, log: UnifiedLog, first_dirty: int, now: int) -> int:
    """``runTwoPassClean``: the first pass stamps delete horizons, the second runs past them."""
    clean(cleaner, log, first_dirty, now)
    return clean(cleaner, log, first_dirty, now + TOMBSTONE_RETENTION_MS + 1)


def transactional(log: UnifiedLog, pid: int, epoch: int = 0, origin: AppendOrigin = AppendOrigin.CLIENT,
                  transactional_batch: bool = True):
    """``appendTransactionalAsLeader`` / ``appendIdempotentAsLeader``: appends keys (value = key)
    with the producer's running sequence."""
    sequence = 0

    def append(keys: list[int]):
        nonlocal sequence
        records = [(str(k).encode(), str(k).encode()) for k in keys]
        batch = build_batch(records, timestamp_ms=log.time.milliseconds(), producer_id=pid, producer_epoch=epoch,
                            base_sequence=sequence, attributes=TXN if transactional_batch else 0)
        guard = log.maybe_start_transaction_verification(pid, epoch) if transactional_batch else None
        sequence += len(keys)
        return log.append_as_leader(batch, 0, origin=origin, verification_guard=guard)
    return append


def marker(log: UnifiedLog, pid: int, commit: bool, epoch: int = 0) -> None:
    log.append_as_leader(end_txn_marker_batch(pid, epoch, 0, commit, log.time.milliseconds()), 0,
                         origin=AppendOrigin.COORDINATOR)


def record(log: UnifiedLog, key: int, value: int, pid: int = -1, epoch: int = -1, seq: int = -1) -> None:
    log.append_as_leader(build_batch([(str(key).encode(), str(value).encode())], timestamp_ms=log.time.milliseconds(),
                                     producer_id=pid, producer_epoch=epoch, base_sequence=seq), 0)


def _batches(log: UnifiedLog):
    for seg in log.segments:
        if seg.is_empty():
            continue
        for info in parse_batches(seg.records, check_crc=False):
            batch = bytes(seg.records[info.position:info.position + info.size])
            payload = records_payload(batch, info.attributes)
            yield info, batch, payload, walk_records(payload, info.record_count)


def _key(payload, r) -> bytes | None:
    return None if r.key_length < 0 else bytes(payload[r.key_start:r.key_start + r.key_length])


def offsets_in_log(log: UnifiedLog) -> list[int]:
    return [info.base_offset + r.offset_delta for info, _, _, recs in _batches(log) for r in recs
            if r.key_length >= 0 and r.value_length >= 0]


def keys_in_log(log: UnifiedLog) -> list[int]:
    return [int(_key(payload, r)) for info, _, payload, recs in _batches(log) if not info.is_control
            for r in recs if r.key_length >= 0 and r.value_length >= 0]


def last_offsets_per_batch(log: UnifiedLog) -> list[int]:
    return [info.base_offset + info.last_offset_delta for info, _, _, _ in _batches(log)]


def batch_base_offsets(log: UnifiedLog) -> list[int]:
    return [info.base_offset for info, _, _, _ in _batches(log)]


def last_sequences(log: UnifiedLog) -> dict[int, int]:
    return {info.producer_id: info.last_sequence for info, _, _, _ in _batches(log) if not info.is_control}


def all_aborted(log: UnifiedLog) -> list[AbortedTxn]:
    return log.collect_aborted_transactions(0, log.log_end_offset)


# ---------------------------------------------------------------------- ported cases

def test_multi_pass_segment_cleaning_with_aborted_transactions():
    """LogCleanerTest.testMultiPassSegmentCleaningWithAbortedTransactions: an offset map of 3
    keys cleans in passes; aborted data goes, the aborted transactions stay indexed while data
    of theirs was seen in the pass, and the abort markers go once delete.retention.ms passed."""
    time = MockTime()
    log = make_log(time, **{"delete.retention.ms": 50000})
    cleaner = make_cleaner(log, capacity=4)
    p1, p2 = transactional(log, 1), transactional(log, 2)
    p1([1, 2]); p2([2, 3]); p1([3, 4])                                      # [0,1] [2,3] [4,5]
    marker(log, 1, True); marker(log, 2, True)                              # 6, 7
    p1([2, 3]); marker(log, 1, False)                                       # [8,9] 10
    p2([4, 5]); p1([5, 6]); marker(log, 1, True); marker(log, 2, False)     # [11,12] [13,14] 15 16
    p2([6, 7]); marker(log, 2, True)                                        # [17,18] 19
    log.roll()
    assert log.log_end_offset == 20
    expected = [AbortedTxn(1, 8, 10, 11), AbortedTxn(2, 11, 16, 17)]
    assert all(e.current_txn_first_offset == -1 for e in log.producers.values())
    assert all_aborted(log) == expected

    dirty = clean(cleaner, log, 0)
    assert dirty == 4
    assert batch_base_offsets(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert all_aborted(log) == expected

    dirty = clean(cleaner, log, dirty)
    assert dirty == 14
    assert batch_base_offsets(log) == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 10, 13, 14, 15, 16, 17, 18, 19]
    assert all_aborted(log) == []

    time.advance(50000)
    dirty = clean(cleaner, log, dirty)
    assert dirty == 20
    assert batch_base_offsets(log) == [0, 2, 4, 6, 7, 13, 15, 17, 19]
    assert offsets_in_log(log) == [0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]
    assert all_aborted(log) == []


def test_basic_transaction_aware_cleaning():
    """LogCleanerTest.testBasicTransactionAwareCleaning: aborted records go and do not hide the
    committed ones; the transaction index is unchanged."""
    log = make_log(**{"segment.bytes": 2048})
    cleaner = make_cleaner(log)
    p1, p2 = transactional(log, 1), transactional(log, 2)
    p1([1, 2]); p2([2, 3]); p1([3, 4])
    marker(log, 1, False); marker(log, 2, True)
    p1([2]); marker(log, 1, True)
    aborted = log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset)
    log.roll()
    clean(cleaner, log, 0)
    assert keys_in_log(log) == [3, 2]
    assert offsets_in_log(log) == [3, 6, 7, 8, 9]
    assert log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset) == aborted


def test_clean_with_transactions_spanning_segments():
    """LogCleanerTest.testCleanWithTransactionsSpanningSegments."""
    log = make_log()
    cleaner = make_cleaner(log)
    p1, p2, p3 = transactional(log, 1), transactional(log, 2), transactional(log, 3)
    p1([1, 2]); p3([2, 3]); p2([3, 4])
    log.roll()
    p2([5, 6]); p3([6, 7]); p1([7, 8])
    marker(log, 2, False)
    p3([8, 9]); marker(log, 3, True)
    p1([9, 10]); marker(log, 1, False)
    dirty = clean(cleaner, log, 0)        # only the first segment is cleaned
    assert keys_in_log(log) == [2, 3, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10]
    log.roll()
    p2([11]); p1([12])
    clean(cleaner, log, dirty)
    assert keys_in_log(log) == [2, 3, 6, 7, 8, 9, 11, 12]


def test_commit_marker_removal():
    """LogCleanerTest.testCommitMarkerRemoval: a COMMIT marker stays while records of its
    transaction do, then gets a delete horizon, then goes once the horizon passed."""
    log = make_log(**{"segment.bytes": 256})
    cleaner = make_cleaner(log)
    p = transactional(log, 1)
    p([1]); p([2, 3]); marker(log, 1, True)
    p([2]); marker(log, 1, True)
    log.roll()
    dirty = clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [1, 3, 2]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5]
    p([1, 3]); marker(log, 1, True)
    log.roll()
    dirty = clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    dirty = clean(cleaner, log, dirty, LARGE_TIMESTAMP)      # not removed early
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    clean(cleaner, log, dirty, LONG_MAX)
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8]


def test_deleted_batches_with_no_messages_read():
    """LogCleanerTest.testDeletedBatchesWithNoMessagesRead."""
    log = make_log(**{"max.message.bytes": 100, "segment.bytes": 1000})
    cleaner = make_cleaner(log)
    p = transactional(log, 1)
    p([1]); marker(log, 1, False)
    p([2]); p([2]); marker(log, 1, True)
    log.roll()
    clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [1, 3, 4]
    run_two_pass_clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2]
    assert offsets_in_log(log) == [3, 4]


def test_commit_marker_retention_with_empty_batch():
    """LogCleanerTest.testCommitMarkerRetentionWithEmptyBatch: each producer's last batch stays
    (emptied) to keep its sequence; its commit marker stays with it."""
    log = make_log(**{"segment.bytes": 256})
    cleaner = make_cleaner(log)
    p1, p2 = transactional(log, 1), transactional(log, 2)
    p1([2, 3])                                       # 0, 1
    log.roll()
    p2([2, 3]); marker(log, 2, True)                 # 2, 3; 4
    log.roll()
    record(log, 2, 2); record(log, 3, 3); marker(log, 1, True)   # 5, 6, 7
    log.roll()
    dirty = clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch(log) == [1, 3, 4, 5, 6, 7]
    dirty = clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [4, 5, 6, 7]
    assert last_offsets_per_batch(log) == [1, 3, 4, 5, 6, 7]
    p2([1]); marker(log, 2, True)                    # 8; 9
    log.roll()
    dirty = clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8, 9]
    assert last_offsets_per_batch(log) == [1, 4, 5, 6, 7, 8, 9]
    run_two_pass_clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3, 1]
    assert offsets_in_log(log) == [5, 6, 7, 8, 9]
    assert last_offsets_per_batch(log) == [1, 5, 6, 7, 8, 9]


def test_clean_empty_control_batch():
    """LogCleanerTest.testCleanEmptyControlBatch: a marker that is a producer's last entry is
    emptied, not removed, and an empty control batch cleans without error."""
    log = make_log(**{"segment.bytes": 256})
    cleaner = make_cleaner(log)
    marker(log, 1, True)
    record(log, 2, 2); record(log, 3, 3)
    log.roll()
    dirty = run_two_pass_clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [2, 3]
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch(log) == [0, 1, 2]
    clean(cleaner, log, dirty, LONG_MAX)
    assert offsets_in_log(log) == [1, 2]
    assert last_offsets_per_batch(log) == [0, 1, 2]


def test_committed_transaction_spanning_segments():
    """LogCleanerTest.testCommittedTransactionSpanningSegments."""
    log = make_log(**{"segment.bytes": 128})
    cleaner = make_cleaner(log)
    transactional(log, 1)([1])
    log.roll()
    marker(log, 1, True)
    log.roll()
    run_two_pass_clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [0, 1]
    assert last_offsets_per_batch(log) == [0, 1]


def test_aborted_transaction_spanning_segments():
    """LogCleanerTest.testAbortedTransactionSpanningSegments: the emptied batch stays (the
    producer's last), so its abort marker does too."""
    log = make_log(**{"segment.bytes": 128})
    cleaner = make_cleaner(log)
    transactional(log, 1)([1])
    log.roll()
    marker(log, 1, False)
    log.roll()
    clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch(log) == [0, 1]
    clean(cleaner, log, 0, LONG_MAX)
    assert offsets_in_log(log) == [1]
    assert last_offsets_per_batch(log) == [0, 1]


def test_abort_marker_removal():
    """LogCleanerTest.testAbortMarkerRemoval."""
    log = make_log(**{"segment.bytes": 256})
    cleaner = make_cleaner(log)
    p = transactional(log, 1)
    p([1]); p([2, 3]); marker(log, 1, False)
    p([3]); marker(log, 1, True)
    log.roll()
    dirty = clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [3, 4, 5]
    run_two_pass_clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [4, 5]


def test_empty_batch_removal_with_sequence_reuse():
    """LogCleanerTest.testEmptyBatchRemovalWithSequenceReuse: transactions that each start at
    sequence 0 (as the group coordinator writes them); only the last batch stays emptied."""
    log = make_log(**{"segment.bytes": 2048})
    cleaner = make_cleaner(log)
    transactional(log, 1, origin=AppendOrigin.REPLICATION)([1]); marker(log, 1, True)
    transactional(log, 1, origin=AppendOrigin.REPLICATION)([2]); marker(log, 1, True)
    record(log, 1, 1); record(log, 2, 1)
    log.roll()
    clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [1, 3, 4, 5]
    assert last_offsets_per_batch(log) == [1, 2, 3, 4, 5]
    run_two_pass_clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert offsets_in_log(log) == [3, 4, 5]
    assert last_offsets_per_batch(log) == [2, 3, 4, 5]


def test_abort_marker_retention_with_empty_batch():
    """LogCleanerTest.testAbortMarkerRetentionWithEmptyBatch: the emptied last batch keeps the
    abort marker and its index entry; once the producer wrote again both go."""
    log = make_log(**{"segment.bytes": 256})
    cleaner = make_cleaner(log)
    p = transactional(log, 1)
    p([2, 3]); marker(log, 1, False)
    log.roll()

    def assert_aborted_indexed():
        aborted = log.collect_aborted_transactions(0, 100)
        assert [(a.producer_id, a.first_offset, a.last_offset) for a in aborted] == [(1, 0, 2)]

    assert_aborted_indexed()
    dirty = clean(cleaner, log, 0, LARGE_TIMESTAMP)
    assert_aborted_indexed()
    assert keys_in_log(log) == [] and offsets_in_log(log) == [2]
    assert last_offsets_per_batch(log) == [1, 2]
    dirty = run_two_pass_clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert_aborted_indexed()
    assert offsets_in_log(log) == [2] and last_offsets_per_batch(log) == [1, 2]
    p([1])
    log.roll()
    dirty = clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert_aborted_indexed()
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [2, 3] and last_offsets_per_batch(log) == [2, 3]
    run_two_pass_clean(cleaner, log, dirty, LARGE_TIMESTAMP)
    assert keys_in_log(log) == [1]
    assert offsets_in_log(log) == [3] and last_offsets_per_batch(log) == [3]
    assert log.collect_aborted_transactions(0, 100) == []


def test_duplicate_check_after_cleaning():
    """LogCleanerTest.testDuplicateCheckAfterCleaning: cleaned batches keep their offsets and
    sequences, so after producer state is rebuilt from them (a reload) a retried batch is still
    answered as a duplicate with its original offsets."""
    log = make_log(**{"segment.bytes": 2048})
    cleaner = make_cleaner(log)
    p1, p2, p3 = (transactional(log, pid, transactional_batch=False) for pid in (1, 2, 3))
    p1([1, 2, 3]); p2([3, 1, 4]); p3([1, 4])
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [2, 5, 7]
    assert last_sequences(log) == {1: 2, 2: 2, 3: 1}
    assert keys_in_log(log) == [2, 3, 1, 4]
    assert offsets_in_log(log) == [1, 3, 6, 7]
    log.reload_producer_state()

    def retry(pid, keys):
        return log.append_as_leader(build_batch([(str(k).encode(),) * 2 for k in keys],
                                                timestamp_ms=log.time.milliseconds(), producer_id=pid,
                                                producer_epoch=0, base_sequence=0), 0)
    for pid, keys, first, last in ((1, [1, 2, 3], 0, 2), (3, [1, 4], 6, 7), (2, [3, 1, 4], 3, 5)):
        info = retry(pid, keys)
        assert info.duplicate and (info.first_offset, info.last_offset) == (first, last)


def test_log_cleaner_retains_producer_last_sequence():
    """LogCleanerTest.testLogCleanerRetainsProducerLastSequence."""
    log = make_log()
    cleaner = make_cleaner(log, capacity=10)
    record(log, 0, 0)
    record(log, 0, 1, pid=1, epoch=0, seq=0)
    record(log, 0, 2, pid=2, epoch=0, seq=0)
    record(log, 0, 3, pid=3, epoch=0, seq=0)
    record(log, 1, 1, pid=2, epoch=0, seq=1)
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [1, 3, 4]
    assert last_sequences(log) == {1: 0, 2: 1, 3: 0}
    assert keys_in_log(log) == [0, 1]
    assert offsets_in_log(log) == [3, 4]


def test_log_cleaner_retains_last_sequence_even_if_transaction_aborted():
    """LogCleanerTest.testLogCleanerRetainsLastSequenceEvenIfTransactionAborted."""
    log = make_log()
    cleaner = make_cleaner(log, capacity=10)
    p = transactional(log, 1)
    p([1]); p([2, 3]); marker(log, 1, False)
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [2, 3]
    assert last_sequences(log) == {1: 2}
    assert keys_in_log(log) == [] and offsets_in_log(log) == [3]
    p([1, 5])
    log.roll()
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [3, 5]
    assert last_sequences(log) == {1: 4}
    assert keys_in_log(log) == [1, 5]
    assert offsets_in_log(log) == [3, 4, 5]


def test_cleaning_with_keys_conflicting_with_txn_marker_keys():
    """LogCleanerTest.testCleaningWithKeysConflictingWithTxnMarkerKeys: a data record whose key
    is a COMMIT marker's key does not make the cleaner drop the marker."""
    log = make_log()
    cleaner = make_cleaner(log, capacity=10)
    transactional(log, 1)([1]); marker(log, 1, True)
    commit_key = struct.pack(">hh", 0, 1)
    guard = log.maybe_start_transaction_verification(2, 0)
    log.append_as_leader(build_batch([(commit_key, b"foo")], timestamp_ms=log.time.milliseconds(), producer_id=2,
                                     producer_epoch=0, base_sequence=0, attributes=TXN), 0, verification_guard=guard)
    marker(log, 2, True)
    log.roll()
    assert offsets_in_log(log) == [0, 1, 2, 3]
    clean(cleaner, log, 0)
    assert last_offsets_per_batch(log) == [0, 1, 2, 3]
    assert offsets_in_log(log) == [0, 1, 2, 3]


def test_partial_segment_clean():
    """LogCleanerTest.testPartialSegmentClean: an offset map of one key still makes progress,
    one record per cleaning."""
    log = make_log()
    cleaner = make_cleaner(log, capacity=2)
    for k in (0, 1, 0, 1, 0):
        record(log, k, k)
    log.roll()
    clean(cleaner, log, 2)
    assert keys_in_log(log) == [1, 0, 1, 0] and offsets_in_log(log) == [1, 2, 3, 4]
    clean(cleaner, log, 3)
    assert keys_in_log(log) == [0, 1, 0] and offsets_in_log(log) == [2, 3, 4]
    clean(cleaner, log, 4)
    assert keys_in_log(log) == [1, 0] and offsets_in_log(log) == [3, 4]


def test_tombstone_gets_a_delete_horizon_and_keeps_record_timestamps():
    """KIP-534 (MemoryRecords.filterTo): a rewritten batch holding a tombstone carries its delete
    horizon (now + delete.retention.ms) in its base timestamp with attribute bit 0x40; the
    records' timestamps are unchanged; the tombstone goes in the first cleaning past the horizon."""
    time = MockTime()
    log = make_log(time, **{"delete.retention.ms": 1000})
    cleaner = make_cleaner(log)
    ts = time.milliseconds()
    log.append_as_leader(build_batch([(b"a", b"1"), (b"a", None), (b"b", b"2")], timestamp_ms=ts), 0)
    log.roll()
    clean(cleaner, log, 0)
    (info, batch, payload, recs), = list(_batches(log))
    assert info.attributes & DELETE_HORIZON_BIT
    assert struct.unpack_from(">q", batch, 27)[0] == ts + 1000
    assert [ts + 1000 + r.timestamp_delta for r in recs] == [ts, ts]
    assert [(_key(payload, r), r.value_length) for r in recs] == [(b"a", -1), (b"b", 1)]
    time.advance(999)
    clean(cleaner, log, 0)
    assert offsets_in_log(log) == [2]
    time.advance(1)
    clean(cleaner, log, 0)
    assert [(_key(p, r)) for _, _, p, recs in _batches(log) for r in recs] == [b"b"]


# ---------------------------------------------------------------------- property

def read_committed(log: UnifiedLog) -> list[tuple[int, bytes, bytes | None]]:
    """What a read_committed consumer of the whole log gets (the client's algorithm of Kafka's
    ``CompletedFetch``: aborted transactions from the fetch response, by first offset; a
    transactional batch of a producer inside one of them is skipped until its ABORT marker)."""
    aborted = sorted(log.collect_aborted_transactions(log.log_start_offset, log.last_stable_offset),
                     key=lambda t: t.first_offset)
    inside: set[int] = set()
    out = []
    for info, _, payload, recs in _batches(log):
        if info.base_offset >= log.last_stable_offset:
            break
        while aborted and aborted[0].first_offset <= info.base_offset + info.last_offset_delta:
            inside.add(aborted.pop(0).producer_id)
        if info.is_control:
            if info.record_count and payload[recs[0].key_start + 3] == 0:   # an ABORT marker
                inside.discard(info.producer_id)
            continue
        if info.is_transactional and info.producer_id in inside:
            continue
        for r in recs:
            value = None if r.value_length < 0 else bytes(payload[r.end - 1 - r.value_length:r.end - 1])
            out.append((info.base_offset + r.offset_delta, _key(payload, r), value))
    return out


_OPS = st.lists(st.one_of(
    st.tuples(st.just("plain"), st.integers(0, 4), st.one_of(st.none(), st.integers(0, 99))),
    st.tuples(st.just("txn"), st.integers(1, 2), st.integers(0, 4), st.integers(0, 99)),
    st.tuples(st.just("end"), st.integers(1, 2), st.booleans()),
    st.tuples(st.just("roll")),
    st.tuples(st.just("clean"), st.integers(0, 3)),
    st.tuples(st.just("time"), st.integers(0, 3000)),
), max_size=50)


@settings(max_examples=150, deadline=None)
@given(_OPS, st.sampled_from([4, 1 << 20]), st.booleans())
def test_read_committed_sees_latest_committed_value_per_key_after_cleaning(ops, capacity, tv2):
    """Property: whatever the interleaving of plain records, tombstones, transactions committed
    and aborted, rolls, cleanings (with a small or large offset map) and time, a read_committed
    reader of the whole log sees exactly the latest committed value of every key (latest by
    offset, as compaction orders them; a deleted key absent or a tombstone), never an aborted
    record, at increasing offsets; the LEO is kept, and the producer state rebuilt from the
    cleaned log has every producer's epoch and, under transaction version 1 (markers at the
    transaction's epoch), its last sequence. With ``tv2`` each marker bumps the producer's epoch
    (KIP-890 part 2) and its next transaction starts again at sequence 0."""
    time = MockTime()
    log = make_log(time, **{"segment.bytes": 400, "delete.retention.ms": 1000})
    cleaner = make_cleaner(log, capacity=capacity)
    committed: dict[bytes, tuple[int, bytes | None]] = {}      # key -> (offset, value) of its latest committed record
    pending: dict[int, list[tuple[int, bytes, bytes]]] = {}
    seqs = {1: 0, 2: 0}
    epochs = {1: 0, 2: 0}
    last_seqs: dict[int, int] = {}
    aborted_values: set[bytes] = set()

    def end_txn(pid: int, commits: bool) -> None:
        epoch = epochs[pid] + 1 if tv2 else epochs[pid]
        log.append_as_leader(end_txn_marker_batch(pid, epoch, 0, commits, time.milliseconds()), 0,
                             origin=AppendOrigin.COORDINATOR)
        if tv2:
            epochs[pid], seqs[pid] = epoch, 0

    def commit(writes) -> None:
        for offset, key, value in writes:
            if key not in committed or committed[key][0] < offset:
                committed[key] = (offset, value)

    for n, op in enumerate(ops):
        if op[0] == "plain":
            key, value = str(op[1]).encode(), None if op[2] is None else b"p%d" % op[2]
            info = log.append_as_leader(build_batch([(key, value)], timestamp_ms=time.milliseconds()), 0)
            commit([(info.first_offset, key, value)])
        elif op[0] == "txn":
            pid, key, value = op[1], str(op[2]).encode(), b"t%d-%d-%d" % (op[1], op[3], n)
            guard = log.maybe_start_transaction_verification(pid, epochs[pid])
            info = log.append_as_leader(build_batch([(key, value)], timestamp_ms=time.milliseconds(), producer_id=pid,
                                                    producer_epoch=epochs[pid], base_sequence=seqs[pid],
                                                    attributes=TXN),
                                        0, verification_guard=guard)
            seqs[pid] += 1
            last_seqs[pid] = seqs[pid] - 1
            pending.setdefault(pid, []).append((info.first_offset, key, value))
        elif op[0] == "end":
            pid, commits = op[1], op[2]
            if pid not in pending:
                continue
            end_txn(pid, commits)
            writes = pending.pop(pid)
            if commits:
                commit(writes)
            else:
                aborted_values.update(v for _, _, v in writes)
        elif op[0] == "roll":
            log.roll()
        elif op[0] == "clean":
            log.maybe_increment_high_watermark(log.log_end_offset)
            c = cleaner.cleanable(log, time.milliseconds())
            if c.cleanable_bytes:
                cleaner.clean(c, time.milliseconds())
        else:
            time.advance(op[1])
    for pid in list(pending):     # close what is open, so the reader sees everything
        end_txn(pid, False)
        aborted_values.update(v for _, _, v in pending.pop(pid))
    log.roll()
    log.maybe_increment_high_watermark(log.log_end_offset)
    leo = log.log_end_offset
    for _ in range(2):
        c = cleaner.cleanable(log, time.milliseconds())
        if c.cleanable_bytes:
            cleaner.clean(c, time.milliseconds())
        time.advance(2000)
    seen = read_committed(log)
    offsets = [o for o, _, _ in seen]
    assert offsets == sorted(set(offsets))
    assert not aborted_values & {v for _, _, v in seen}
    latest: dict[bytes, bytes | None] = {}
    for _, k, v in seen:
        latest[k] = v
    assert {k: v for k, v in latest.items() if v is not None} == \
        {k: v for k, (_, v) in committed.items() if v is not None}
    assert log.log_end_offset == leo
    log.reload_producer_state()
    for pid, last_seq in last_seqs.items():
        assert log.producers[pid].producer_epoch == epochs[pid]
        if not tv2:
            assert log.producers[pid].last_seq == last_seq
