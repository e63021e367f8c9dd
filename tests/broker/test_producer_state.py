"""ProducerStateManager, transactional parts: Kafka's ProducerStateManagerTest (storage module,
tag 4.0.0) ported, through the manager as Kafka's tests drive it (check, then update) and
through the UnifiedLog where the case is about the log (first unstable offset, truncation)."""
import pytest

from kafka_emu.broker.storage.control_record import ControlRecordType, EndTransactionMarker
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.producer_state import AppendOrigin, CompletedTxn, ProducerStateManager
from kafka_emu.broker.storage.record_batch import NO_SEQUENCE, BatchInfo, build_batch
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import MockTime

from log_batches import append_end_txn, append_txn

pytestmark = pytest.mark.timeout(30)

PID = 1
TXN, CONTROL = 0x10, 0x20


def batch_info(pid, epoch, seq, offset, count=1, transactional=False, control=False, ts=0):
    attrs = (TXN if transactional or control else 0) | (CONTROL if control else 0)
    return BatchInfo(0, 0, offset, count - 1, 0, attrs, ts, pid, epoch,
                     NO_SEQUENCE if control else seq, 0 if control else count)


def append(psm, pid, epoch, seq, offset, transactional=False, origin=AppendOrigin.CLIENT, guard=None):
    """Kafka's ProducerStateManagerTest.append: validate then update one data batch."""
    info = batch_info(pid, epoch, seq, offset, transactional=transactional)
    if transactional and guard is None and not psm.has_ongoing_transaction(pid, epoch):
        guard = psm.maybe_start_transaction_verification(pid, epoch)
    psm.check_batch(info, {}, origin, None, guard)
    return psm.update(info, None)


def append_marker(psm, pid, epoch, control_type, offset, coordinator_epoch=0, origin=AppendOrigin.COORDINATOR):
    """Kafka's appendEndTxnMarker: validate, update, index and complete (what the log does)."""
    info = batch_info(pid, epoch, -1, offset, control=True)
    marker = EndTransactionMarker(control_type, coordinator_epoch)
    psm.check_batch(info, {}, origin, marker)
    completed = psm.update(info, marker)
    if completed is not None:
        psm.complete_txn(completed)
    return completed


def code_of(fn, *args, **kw):
    with pytest.raises(KafkaError) as info:
        fn(*args, **kw)
    return info.value.code


def test_append_txn_marker_with_no_producer_state():
    """testAppendTxnMarkerWithNoProducerState: a marker for an unknown producer creates its
    entry (epoch, coordinator epoch) and completes nothing."""
    psm = ProducerStateManager("t-0")
    assert append_marker(psm, PID, 2, ControlRecordType.COMMIT, 27, coordinator_epoch=3) is None
    entry = psm.producers[PID]
    assert (entry.producer_epoch, entry.coordinator_epoch, entry.current_txn_first_offset) == (2, 3, -1)
    assert psm.first_unstable_offset() is None


def test_control_record_bumps_producer_epoch():
    """testControlRecordBumpsProducerEpoch: an abort marker at a newer epoch bumps the epoch; the
    old epoch is then fenced; the new epoch starts at sequence 0."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0)
    append_marker(psm, PID, 1, ControlRecordType.ABORT, 1)
    assert psm.producers[PID].producer_epoch == 1
    assert code_of(append, psm, PID, 0, 1, 2) == Errors.INVALID_PRODUCER_EPOCH
    append(psm, PID, 1, 0, 2)
    assert psm.producers[PID].last_seq == 0


def test_out_of_sequence_after_control_record_epoch_bump():
    """testOutOfSequenceAfterControlRecordEpochBump: after the bump a data batch must start at 0."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0)
    append(psm, PID, 0, 1, 1)
    append_marker(psm, PID, 1, ControlRecordType.ABORT, 2)
    assert code_of(append, psm, PID, 1, 2, 3) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    append(psm, PID, 1, 0, 3)


def test_non_transactional_append_with_ongoing_transaction():
    """testNonTransactionalAppendWithOngoingTransaction: INVALID_TXN_STATE."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0, transactional=True)
    assert code_of(append, psm, PID, 0, 1, 1) == Errors.INVALID_TXN_STATE


def test_old_epoch_for_control_record():
    """testOldEpochForControlRecord: a marker older than the producer's epoch is refused."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 3, 0, 99, transactional=True)
    assert code_of(append_marker, psm, PID, 1, ControlRecordType.COMMIT, 100) == Errors.INVALID_PRODUCER_EPOCH


def test_coordinator_fencing():
    """testCoordinatorFencing: a marker of an older coordinator epoch is refused; its producer's
    transaction stays open."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0, transactional=True)
    append_marker(psm, PID, 0, ControlRecordType.COMMIT, 1, coordinator_epoch=1)
    append(psm, PID, 0, 1, 2, transactional=True)
    assert code_of(append_marker, psm, PID, 0, ControlRecordType.COMMIT, 3,
                   coordinator_epoch=0) == Errors.TRANSACTION_COORDINATOR_FENCED
    assert psm.producers[PID].current_txn_first_offset == 2


def test_producer_state_after_fencing_abort_marker():
    """testProducerStateAfterFencingAbortMarker: the coordinator's abort at a bumped epoch closes
    the transaction and fences the old epoch."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0, transactional=True)
    completed = append_marker(psm, PID, 1, ControlRecordType.ABORT, 1)
    assert completed == CompletedTxn(PID, 0, 1, True)
    entry = psm.producers[PID]
    assert (entry.producer_epoch, entry.current_txn_first_offset) == (1, -1)
    assert code_of(append, psm, PID, 0, 1, 2, transactional=True) == Errors.INVALID_PRODUCER_EPOCH


def test_skip_empty_transactions():
    """testSkipEmptyTransactions: a marker for a producer without an open transaction completes
    nothing (no index entry, no effect on the LSO)."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0)
    assert append_marker(psm, PID, 0, ControlRecordType.ABORT, 1) is None
    assert not psm.unreplicated_txns and psm.first_unstable_offset() is None


def test_append_empty_control_batch():
    """testAppendEmptyControlBatch: an empty control batch (cleaned away) changes nothing."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0, transactional=True)
    assert psm.update(batch_info(PID, 0, -1, 5, control=True)._replace(record_count=0), None) is None
    assert psm.producers[PID].current_txn_first_offset == 0


def test_first_unstable_offset():
    """testFirstUnstableOffset: the earliest open transaction, then the earliest completed one
    whose marker is not yet below the HW."""
    psm = ProducerStateManager("t-0")
    append(psm, 1, 0, 0, 99, transactional=True)
    assert psm.first_unstable_offset() == 99
    append(psm, 2, 0, 0, 100, transactional=True)
    assert psm.first_unstable_offset() == 99
    append_marker(psm, 1, 0, ControlRecordType.COMMIT, 101)
    assert psm.first_unstable_offset() == 99        # marker not replicated yet
    psm.on_high_watermark_updated(102)
    assert psm.first_unstable_offset() == 100
    append_marker(psm, 2, 0, ControlRecordType.ABORT, 102)
    psm.on_high_watermark_updated(103)
    assert psm.first_unstable_offset() is None


def test_last_stable_offset_completed_txn():
    """testLastStableOffsetCompletedTxn: the LSO recorded with a completed transaction is the
    first offset of another producer's earliest open transaction, else the marker + 1."""
    psm = ProducerStateManager("t-0")
    append(psm, 1, 0, 0, 99, transactional=True)
    append(psm, 2, 0, 0, 100, transactional=True)
    append(psm, 3, 0, 0, 105, transactional=True)
    completed = CompletedTxn(1, 99, 106, False)
    assert psm.last_stable_offset(completed) == 100
    psm.complete_txn(completed)
    assert psm.last_stable_offset(CompletedTxn(2, 100, 107, False)) == 105
    assert psm.last_stable_offset(CompletedTxn(3, 105, 108, False)) == 100
    psm.complete_txn(CompletedTxn(2, 100, 107, False))
    assert psm.last_stable_offset(CompletedTxn(3, 105, 108, False)) == 109


def test_accept_append_without_producer_state_on_replica():
    """testAcceptAppendWithoutProducerStateOnReplica / WithSequenceGapsOnReplica: replication
    checks nothing (the leader did)."""
    psm = ProducerStateManager("t-0")
    info = batch_info(PID, 0, 1000, 0, transactional=True)
    psm.check_batch(info, {}, AppendOrigin.REPLICATION)
    psm.update(info, None)
    psm.check_batch(batch_info(PID, 0, 5000, 1, transactional=True), {}, AppendOrigin.REPLICATION)


def test_entry_for_verification():
    """testEntryForVerification: a verification guard is handed out once per producer until a
    transactional append clears it; an open transaction needs none."""
    psm = ProducerStateManager("t-0")
    guard = psm.maybe_start_transaction_verification(PID, 0)
    assert guard is not None and psm.maybe_start_transaction_verification(PID, 0) is guard
    append(psm, PID, 0, 0, 0, transactional=True, guard=guard)
    assert PID not in psm.verification_states
    assert psm.maybe_start_transaction_verification(PID, 0) is None


def test_transactional_batch_needs_the_current_guard():
    """UnifiedLog.analyzeAndValidateProducerState: a guard cleared by a marker (the transaction
    was aborted while the batch was being verified) no longer opens a transaction."""
    psm = ProducerStateManager("t-0")
    stale = psm.maybe_start_transaction_verification(PID, 0)
    append_marker(psm, PID, 0, ControlRecordType.ABORT, 0)
    assert code_of(append, psm, PID, 0, 0, 1, transactional=True, guard=stale) == Errors.INVALID_TXN_STATE
    info = batch_info(PID, 0, 0, 1, transactional=True)
    assert code_of(psm.check_batch, info, {}, AppendOrigin.CLIENT, None, None) == Errors.INVALID_TXN_STATE


def test_tv2_verification_survives_the_marker_of_the_previous_transaction():
    """Transaction version 2 (KIP-890 part 2): EndTxn bumped the epoch, the previous
    transaction's marker carries the bumped epoch, and the next transaction's first batch is
    being added with that same epoch while the marker lands: the marker leaves that verification
    in place (Kafka keeps a TV2 verification entry of the marker's epoch), so the batch opens the
    next transaction. A marker of another epoch, or a TV1 verification, still clears it."""
    psm = ProducerStateManager("t-0")
    append(psm, PID, 0, 0, 0, transactional=True)
    guard = psm.maybe_start_transaction_verification(PID, 1, supports_epoch_bump=True)
    assert guard is not None and (guard.epoch, guard.supports_epoch_bump) == (1, True)
    append_marker(psm, PID, 1, ControlRecordType.COMMIT, 1)
    assert psm.verification_states[PID] is guard
    append(psm, PID, 1, 0, 2, transactional=True, guard=guard)
    assert psm.has_ongoing_transaction(PID, 1) and PID not in psm.verification_states
    # epoch 2's TV2 verification is cleared by a marker of epoch 3 (a fence): the batch is refused
    append_marker(psm, PID, 2, ControlRecordType.COMMIT, 3)
    stale = psm.maybe_start_transaction_verification(PID, 2, supports_epoch_bump=True)
    append_marker(psm, PID, 3, ControlRecordType.ABORT, 4)
    assert code_of(append, psm, PID, 3, 0, 5, transactional=True, guard=stale) == Errors.INVALID_TXN_STATE
    # a TV1 verification is cleared by a marker of its own epoch
    tv1 = psm.maybe_start_transaction_verification(PID, 3)
    append_marker(psm, PID, 3, ControlRecordType.ABORT, 5)
    assert PID not in psm.verification_states
    assert code_of(append, psm, PID, 3, 0, 6, transactional=True, guard=tv1) == Errors.INVALID_TXN_STATE


# ---------------------------------------------------------------------- through the log

NOW = MockTime().milliseconds()


def make_log(**configs):
    return UnifiedLog("t", 0, config=LogConfig.for_topic(configs), time=MockTime())


def txn_batch(log, pid, seq, n=1, epoch=0):
    return append_txn(log, pid, seq, n, epoch, NOW)


def marker(log, pid, commit, epoch=0, coordinator_epoch=0):
    return append_end_txn(log, pid, commit, epoch, coordinator_epoch, NOW)


def test_first_unstable_offset_after_truncation():
    """testFirstUnstableOffsetAfterTruncation: truncating away a transaction's marker reopens it;
    truncating away its first batch forgets it."""
    log = make_log()
    txn_batch(log, 1, 0, n=2)            # 0-1
    log.append_as_leader(build_batch([(b"k", b"x")], timestamp_ms=NOW), 0)   # 2
    marker(log, 1, True)                 # 3
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.first_unstable_offset is None and log.last_stable_offset == 4
    log.truncate_to(3)
    assert log.first_unstable_offset == 0 and log.last_stable_offset == 0
    log.truncate_to(0)
    assert log.first_unstable_offset is None and not log.producers


def test_truncate_and_reload_removes_out_of_range_snapshots():
    """testTruncateAndReloadRemovesOutOfRangeSnapshots: snapshots past the truncation point go,
    and state is rebuilt from the latest one left (here after segments rolled mid-transaction)."""
    size = len(build_batch([(b"k", b"v")], timestamp_ms=NOW, producer_id=1, producer_epoch=0,
                           base_sequence=0, attributes=TXN))
    log = make_log(**{"segment.bytes": size})
    for seq in range(4):
        txn_batch(log, 1, seq)           # offsets 0..3, one segment each
    assert sorted(log.producer_state.snapshots) == [0, 1, 2, 3]
    log.truncate_to(2)
    assert sorted(log.producer_state.snapshots) == [0, 1, 2]
    entry = log.producers[1]
    assert entry.current_txn_first_offset == 0 and entry.last_seq == 1


def test_truncate_fully_and_start_at():
    """testTruncateFullyAndStartAt: all producer state and snapshots go."""
    log = make_log()
    txn_batch(log, 1, 0)
    log.truncate_fully_and_start_at(50)
    assert not log.producers and log.first_unstable_offset is None
    assert list(log.producer_state.snapshots) == [50]
