"""The log with transactions: first unstable offset, last stable offset, the aborted-transaction
index across segments, truncation and retention. Kafka's UnifiedLogTest and LogValidatorTest
transactional cases (tag 4.0.0) ported, and a hypothesis property on the LSO."""
import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.storage.control_record import end_txn_marker_batch
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.record_batch import build_batch, parse_batches
from kafka_emu.broker.storage.transaction_index import AbortedTxn
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import MockTime

from log_batches import append_end_txn, append_txn

pytestmark = pytest.mark.timeout(60)

NOW = MockTime().milliseconds()
TXN = 0x10


def make_log(**configs):
    return UnifiedLog("t", 0, config=LogConfig.for_topic(configs), time=MockTime())


def plain(log, n=1):
    return log.append_as_leader(build_batch([(b"k", b"p")] * n, timestamp_ms=NOW), 0)


def txn(log, pid, seq, n=1, epoch=0):
    return append_txn(log, pid, seq, n, epoch, NOW)


def end(log, pid, commit, epoch=0, coordinator_epoch=0):
    return append_end_txn(log, pid, commit, epoch, coordinator_epoch, NOW)


def replicate(log):
    log.maybe_increment_high_watermark(log.log_end_offset)


def test_first_unstable_offset_no_transactional_data():
    """UnifiedLogTest.testFirstUnstableOffsetNoTransactionalData."""
    log = make_log()
    plain(log, 3)
    log.append_as_leader(build_batch([(b"k", b"i")], timestamp_ms=NOW, producer_id=5, producer_epoch=0,
                                     base_sequence=0), 0)
    replicate(log)
    assert log.first_unstable_offset is None and log.last_stable_offset == log.high_watermark == 4


def test_first_unstable_offset_with_transactional_data():
    """UnifiedLogTest.testFirstUnstableOffsetWithTransactionalData: the LSO stays at the first
    offset of the open transaction while more data arrives, and moves past it once the commit
    marker is replicated."""
    log = make_log()
    plain(log)                            # 0
    first = txn(log, 1, 0, n=3).first_offset
    plain(log, 2)
    txn(log, 1, 3)
    replicate(log)
    assert first == 1 and log.first_unstable_offset == 1 and log.last_stable_offset == 1
    marker = end(log, 1, True).first_offset
    assert log.last_stable_offset == 1    # the marker is not below the HW yet
    replicate(log)
    assert log.first_unstable_offset is None and log.last_stable_offset == marker + 1


def test_control_records_not_allowed_from_clients():
    """LogValidatorTest.testControlRecordsNotAllowedFromClients: INVALID_RECORD."""
    with pytest.raises(KafkaError) as info:
        make_log().append_as_leader(end_txn_marker_batch(1, 0, 0, True, NOW), 0)
    assert info.value.code == Errors.INVALID_RECORD


def test_zombie_coordinator_fenced():
    """UnifiedLogTest.testZombieCoordinatorFenced."""
    log = make_log()
    txn(log, 1, 0)
    end(log, 1, False, coordinator_epoch=1)
    txn(log, 1, 1)
    with pytest.raises(KafkaError) as info:
        end(log, 1, True, coordinator_epoch=0)
    assert info.value.code == Errors.TRANSACTION_COORDINATOR_FENCED
    end(log, 1, True, coordinator_epoch=1)


def test_transaction_index_updated():
    """UnifiedLogTest.testTransactionIndexUpdated: only aborts are indexed, each with the LSO at
    its completion (another producer's open transaction, else its marker + 1)."""
    log = make_log()
    txn(log, 1, 0)                        # 0
    txn(log, 2, 0)                        # 1
    plain(log)                            # 2
    txn(log, 3, 0)                        # 3
    end(log, 2, False)                    # 4: abort of 2, LSO = 0 (producer 1 open)
    end(log, 1, True)                     # 5: commit, not indexed
    end(log, 3, False)                    # 6: abort of 3, nothing else open
    assert log.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(2, 1, 4, 0), AbortedTxn(3, 3, 6, 7)]
    assert log.collect_aborted_transactions(0, 7) == [AbortedTxn(2, 1, 4, 0), AbortedTxn(3, 3, 6, 7)]
    assert log.collect_aborted_transactions(5, 7) == [AbortedTxn(3, 3, 6, 7)]


def test_aborted_transaction_spanning_segments():
    """UnifiedLogTest.testAbortedTransactionSpanningMultipleSegments: a transaction begun in one
    segment and aborted in a later one is found from a fetch in between."""
    size = len(build_batch([(b"k", b"t")] * 2, timestamp_ms=NOW, producer_id=1, producer_epoch=0,
                           base_sequence=0, attributes=TXN))
    log = make_log(**{"segment.bytes": size})
    txn(log, 1, 0, n=2)                   # 0-1, segment 0
    txn(log, 1, 2, n=2)                   # 2-3, segment 2
    end(log, 1, False)                    # 4, segment 4
    replicate(log)
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    assert log.collect_aborted_transactions(2, 4) == [AbortedTxn(1, 0, 4, 5)]
    assert log.collect_aborted_transactions(5, 6) == []


def test_full_transaction_index_recovery_after_truncation():
    """UnifiedLogTest.testFullTransactionIndexRecovery (in-memory form): truncating away an
    abort marker removes its index entry and reopens the transaction; appending the marker again
    indexes it again."""
    log = make_log()
    txn(log, 1, 0, n=2)
    plain(log)
    end(log, 1, False)                    # 3
    replicate(log)
    log.truncate_to(3)
    assert log.collect_aborted_transactions(0, 10) == []
    assert log.producers[1].current_txn_first_offset == 0 and log.last_stable_offset == 0
    end(log, 1, False)
    replicate(log)
    assert log.collect_aborted_transactions(0, 10) == [AbortedTxn(1, 0, 3, 4)]
    assert log.last_stable_offset == 4


def test_follower_builds_the_same_state_and_index():
    """A follower appending the leader's batches (origin REPLICATION) gets the same open
    transactions, LSO and aborted-transaction index."""
    leader = make_log()
    txn(leader, 1, 0)
    txn(leader, 2, 0)
    end(leader, 1, False)
    follower = make_log()
    follower.append_as_follower(b"".join(b for _, b in leader.batches_from(0)))
    replicate(leader)
    follower.update_high_watermark(leader.high_watermark)
    assert follower.last_stable_offset == leader.last_stable_offset == 1
    assert follower.collect_aborted_transactions(0, 3) == leader.collect_aborted_transactions(0, 3)
    assert follower.producers[2].current_txn_first_offset == 1


def test_last_stable_offset_does_not_exceed_log_start_offset_after_segment_deletion():
    """UnifiedLogTest.testLastStableOffsetDoesNotExceedLogStartOffsetAfterSegmentDeletion: an open
    transaction whose first segments were deleted keeps the LSO at the log start offset; the
    state survives a later truncation (it is restored from the snapshot at the first segment
    left, not rebuilt from the deleted batches)."""
    size = len(build_batch([(b"k", b"t")], timestamp_ms=NOW, producer_id=1, producer_epoch=0,
                           base_sequence=0, attributes=TXN))
    log = make_log(**{"segment.bytes": size, "retention.bytes": size * 2})
    txn(log, 1, 0)                        # 0: the transaction opens
    for _ in range(4):
        plain(log)                        # 1..4
    replicate(log)
    log.delete_old_segments()
    assert log.log_start_offset > 0
    assert log.last_stable_offset == log.log_start_offset
    assert log.producers[1].current_txn_first_offset == 0   # kept: its transaction is open
    log.truncate_to(log.log_end_offset - 1)
    assert log.producers[1].current_txn_first_offset == 0
    assert log.last_stable_offset == log.log_start_offset


def test_cleaner_stops_at_the_last_stable_offset():
    """LogCleanerManager.cleanableOffsets: nothing at or past the LSO is cleanable."""
    from kafka_emu.broker.storage.log_cleaner import LogCleaner
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.storage.log_manager import LogManager

    size = len(build_batch([(b"k", b"t")], timestamp_ms=NOW, producer_id=1, producer_epoch=0,
                           base_sequence=0, attributes=TXN))
    log = make_log(**{"segment.bytes": size, "cleanup.policy": "compact"})
    plain(log)
    txn(log, 1, 0)                        # 1: open
    for _ in range(3):
        plain(log)
    replicate(log)
    manager = LogManager(KafkaConfig({}), {("t", 0): log}, log.time)
    cleaner = LogCleaner(manager, 15000, log.time)
    assert cleaner.cleanable(log, NOW).first_uncleanable_offset == 1


# ---------------------------------------------------------------------- property

_ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("plain"), st.integers(1, 3)),
    st.tuples(st.just("txn"), st.integers(1, 3)),
    st.tuples(st.just("end"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("hw"), st.integers(0, 4)),
    st.tuples(st.just("truncate"), st.integers(0, 6)),
), max_size=40)


@settings(max_examples=150, deadline=None)
@given(_ACTIONS)
def test_lso_is_the_earliest_open_transaction_under_any_interleaving(actions):
    """LSO <= HW always, and with the HW at the LEO the LSO is min(HW, first offset of the
    earliest open transaction), under any interleaving of appends, markers, HW moves and
    truncations, across segment rolls (the model replays its own record of what is in the log)."""
    size = len(build_batch([(b"k", b"t")], timestamp_ms=NOW, producer_id=1, producer_epoch=0,
                           base_sequence=0, attributes=TXN))
    log = make_log(**{"segment.bytes": size * 3})
    written: list[tuple[int, str, int]] = []     # (offset, kind, producer) of each batch, as the model sees it
    seqs: dict[int, int] = {}

    def model_open() -> dict[int, int]:
        open_txns: dict[int, int] = {}
        for offset, kind, pid in written:
            if kind == "txn":
                open_txns.setdefault(pid, offset)
            elif kind == "end":
                open_txns.pop(pid, None)
        return open_txns

    for action in actions:
        kind = action[0]
        if kind == "plain":
            written.append((plain(log).first_offset, "plain", 0))
        elif kind == "txn":
            pid = action[1]
            seq = seqs.get(pid, 0)
            info = txn(log, pid, seq)
            seqs[pid] = seq + 1
            written.append((info.first_offset, "txn", pid))
        elif kind == "end":
            written.append((end(log, action[1], action[2]).first_offset, "end", action[1]))
        elif kind == "hw":
            log.maybe_increment_high_watermark(log.high_watermark + action[1])
        else:
            target = max(log.log_end_offset - action[1], 0)
            log.truncate_to(target)
            written = [w for w in written if w[0] < target]
            seqs = {}
            for _, k, pid in written:
                if k == "txn":
                    seqs[pid] = seqs.get(pid, 0) + 1
            # a producer's sequence after truncation continues from what is left of its batches
            for pid, entry in log.producers.items():
                if entry.batches:
                    seqs[pid] = entry.last_seq + 1
        hw = log.high_watermark
        lso = log.last_stable_offset
        open_txns = model_open()
        assert lso <= hw
        if open_txns:
            assert lso <= min(open_txns.values())
        if hw == log.log_end_offset:
            assert lso == min([hw, *open_txns.values()])
        assert {pid: e.current_txn_first_offset for pid, e in log.producers.items()
                if e.current_txn_first_offset >= 0} == open_txns
    assert sum(len(parse_batches(s.records, check_crc=False)) for s in log.segments if s.size) == len(written)


def test_markers_are_never_recompressed():
    """LogValidator: an uncompressed control batch is always kept in place, whatever the topic's
    compression.type, so its marker stays readable (and the transaction completes)."""
    log = make_log(**{"compression.type": "gzip"})
    txn(log, 1, 0)
    end(log, 1, False)
    replicate(log)
    assert log.collect_aborted_transactions(0, 2) == [AbortedTxn(1, 0, 1, 2)]
    assert log.last_stable_offset == 2


def test_reload_producer_state_from_stored_batches():
    """A log whose segments come from elsewhere (files) gets the same producer state, open
    transactions, LSO and aborted-transaction indexes back from its batches alone (Kafka's
    segment recovery rebuilding the .txnindex and the producer state)."""
    size = len(build_batch([(b"k", b"t")] * 2, timestamp_ms=NOW, producer_id=1, producer_epoch=0,
                           base_sequence=0, attributes=TXN))
    log = make_log(**{"segment.bytes": size * 2})
    txn(log, 1, 0, n=2)
    txn(log, 2, 0)
    plain(log)
    end(log, 1, False)
    txn(log, 3, 0)
    end(log, 2, True)
    replicate(log)
    copy = make_log(**{"segment.bytes": size * 2})
    copy.append_as_follower(b"".join(b for _, b in log.batches_from(0)))
    copy.update_high_watermark(log.high_watermark)
    for seg in copy.segments:
        seg.txn_index.truncate_to(seg.base_offset)      # as if loaded without index files
    copy.reload_producer_state()
    assert copy.last_stable_offset == log.last_stable_offset == 5
    assert copy.collect_aborted_transactions(0, 10) == log.collect_aborted_transactions(0, 10) == \
        [AbortedTxn(1, 0, 4, 2)]
    assert {p: e.current_txn_first_offset for p, e in copy.producers.items()} == \
        {p: e.current_txn_first_offset for p, e in log.producers.items()}
    assert sorted(copy.producer_state.snapshots) == [s.base_offset for s in copy.segments]
