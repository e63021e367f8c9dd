"""Ports of the transaction version 2 cases of Kafka's TransactionCoordinatorTest (the
``clientTransactionVersion`` = 2 runs of its parameterized EndTxn tests and the ``...V2`` cases),
against a real TransactionStateManager over an in-memory ``__transaction_state`` (``txn_harness``),
plus a property of EndTxn v5: every completed EndTxn moves the epoch up by one, and the producer
id changes exactly when the epoch runs out."""
from __future__ import annotations

from typing import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from txn_harness import TP1, TP2, TXN_ID, TxnHarness

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.transaction_log import read_value
from kafka_emu.coordinator.transaction.transaction_metadata import SHORT_MAX, TransactionMetadata, TransactionState

S = TransactionState
TV2 = 2
PID, EPOCH = 10, 5
NO_ANSWER = (-1, -1)


@pytest.fixture
def t() -> Iterator[TxnHarness]:
    h = TxnHarness()
    yield h
    h.shutdown()


def put_v2(t: TxnHarness, state: S, epoch: int = EPOCH, last_epoch: int = EPOCH - 1, partitions=(),
           next_producer_id: int = -1, producer_id: int = PID, previous_producer_id: int = -1) -> TransactionMetadata:
    """A transaction whose last EndTxn / add came from a transaction version 2 client."""
    md = t.put(state, producer_id=producer_id, epoch=epoch, partitions=set(partitions), last_epoch=last_epoch)
    md.client_transaction_version = TV2
    md.next_producer_id = next_producer_id
    md.previous_producer_id = previous_producer_id
    return md


def end_v2(t: TxnHarness, epoch: int, commit: bool, producer_id: int = PID) -> tuple[int, int, int]:
    return t.end_txn_answer(producer_id, epoch, commit, client_transaction_version=TV2)


def complete_markers(t: TxnHarness) -> None:
    t.channel.send_pending()
    t.sender.respond_all()


def records(t: TxnHarness) -> list:
    return [read_value(TXN_ID, value) for _, _, value in t.records()]


# --------------------------------------------------------------------------- retries of a completed EndTxn
def test_ok_on_end_txn_when_complete_commit_and_commit_retried(t):
    """shouldReturnOkOnEndTxnWhenStatusIsCompleteCommitAndResultIsCommit (TV_2): the retry carries
    the epoch before the bump and gets the current producer id and epoch; nothing is written."""
    put_v2(t, S.COMPLETE_COMMIT)
    assert end_v2(t, EPOCH - 1, True) == (Errors.NONE, PID, EPOCH)
    assert t.records() == []


def test_ok_on_end_txn_when_complete_abort_and_abort_retried(t):
    """shouldReturnOkOnEndTxnWhenStatusIsCompleteAbortAndResultIsAbort (TV_2)"""
    put_v2(t, S.COMPLETE_ABORT)
    assert end_v2(t, EPOCH - 1, False) == (Errors.NONE, PID, EPOCH)


def test_invalid_txn_state_when_complete_abort_and_commit(t):
    """shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort (TV_2)"""
    put_v2(t, S.COMPLETE_ABORT)
    assert end_v2(t, EPOCH - 1, True) == (Errors.INVALID_TXN_STATE, *NO_ANSWER)


def test_invalid_txn_state_when_complete_commit_and_abort_retried(t):
    """shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteCommitAndResultIsNotCommit (TV_2)"""
    put_v2(t, S.COMPLETE_COMMIT)
    assert end_v2(t, EPOCH - 1, False) == (Errors.INVALID_TXN_STATE, *NO_ANSWER)


def test_concurrent_transactions_when_prepare_commit_retried(t):
    """shouldReturnConcurrentTransactionsOnEndTxnRequestWhenStatusIsPrepareCommit (TV_2)"""
    put_v2(t, S.PREPARE_COMMIT)
    assert end_v2(t, EPOCH - 1, True) == (Errors.CONCURRENT_TRANSACTIONS, *NO_ANSWER)


def test_invalid_txn_state_when_prepare_abort_and_commit(t):
    """shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsPrepareAbort (TV_2)"""
    put_v2(t, S.PREPARE_ABORT)
    assert end_v2(t, EPOCH - 1, True) == (Errors.INVALID_TXN_STATE, *NO_ANSWER)


def test_producer_fenced_when_not_a_retry(t):
    """shouldReturnInvalidTxnRequestOnEndTxnV2IfNotEndTxnV2Retry: in Prepare*/Complete* the
    current epoch is not a retry but the next EndTxn; PrepareCommit answers PRODUCER_FENCED and
    CompleteCommit INVALID_TXN_STATE for a commit (an abort would start an empty one)."""
    put_v2(t, S.PREPARE_COMMIT)
    assert end_v2(t, EPOCH, True) == (Errors.PRODUCER_FENCED, *NO_ANSWER)
    t.coordinator.txn_manager.remove_transactions_for_txn_topic_partition(t.txn_partition)
    t.coordinator.on_elected(t.txn_partition, 1)
    put_v2(t, S.COMPLETE_COMMIT)
    assert end_v2(t, EPOCH, True) == (Errors.INVALID_TXN_STATE, *NO_ANSWER)


def test_ok_on_end_txn_v2_retry_after_epoch_overflow(t):
    """shouldReturnOkOnEndTxnV2IfEndTxnV2RetryEpochOverflow: while completing, the retry with the
    last epoch is CONCURRENT_TRANSACTIONS; once complete on the new producer id, NONE with it."""
    put_v2(t, S.PREPARE_COMMIT, epoch=SHORT_MAX, last_epoch=SHORT_MAX - 1, next_producer_id=11)
    assert end_v2(t, SHORT_MAX - 1, True) == (Errors.CONCURRENT_TRANSACTIONS, *NO_ANSWER)
    t.coordinator.txn_manager.remove_transactions_for_txn_topic_partition(t.txn_partition)
    t.coordinator.on_elected(t.txn_partition, 1)
    put_v2(t, S.COMPLETE_COMMIT, producer_id=11, epoch=0, last_epoch=SHORT_MAX - 1, previous_producer_id=PID)
    assert end_v2(t, SHORT_MAX - 1, True) == (Errors.NONE, 11, 0)


@pytest.mark.parametrize("server_epoch,request_epoch", [(1, 2), (2, 0)])
def test_producer_fenced_when_epoch_is_larger_or_smaller(t, server_epoch, request_epoch):
    """shouldReturnInvalidEpochOnEndTxnWhenEpochIsLarger / ...IsSmaller (TV_2: the smaller epoch
    is two behind, one behind being a retry)."""
    put_v2(t, S.COMPLETE_COMMIT, epoch=server_epoch, last_epoch=1)
    assert end_v2(t, request_epoch, True)[0] == Errors.PRODUCER_FENCED


# --------------------------------------------------------------------------- new EndTxn: epoch bump
@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_when_ongoing_bumps_epoch_and_markers_carry_it(t, commit):
    """shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit /
    ...PrepareAbort...Abort (TV_2): PrepareX is written with epoch + 1 (last epoch = the old one)
    and the client's transaction version; the answer is the bumped epoch; the markers carry it;
    the Complete record keeps it."""
    t.put(S.ONGOING, producer_id=PID, epoch=EPOCH, partitions={TP1, TP2})
    assert end_v2(t, EPOCH, commit) == (Errors.NONE, PID, EPOCH + 1)
    prepare = records(t)[-1]
    assert prepare.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert (prepare.producer_id, prepare.producer_epoch, prepare.client_transaction_version) == (PID, EPOCH + 1, TV2)
    t.channel.send_pending()
    assert {(e.producer_id, e.producer_epoch, e.committed) for _, es, _ in t.sender.calls for e in es} == \
        {(PID, EPOCH + 1, commit)}
    t.sender.respond_all()
    md = t.metadata()
    assert md.state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PID, EPOCH + 1, EPOCH)
    assert records(t)[-1].producer_epoch == EPOCH + 1
    # the old epoch is now a retry, the new one starts the next transaction
    assert end_v2(t, EPOCH, commit) == (Errors.NONE, PID, EPOCH + 1)


def test_end_txn_during_prepare_with_the_bumped_epoch_is_fenced(t):
    """TransactionCoordinator.endTransaction (TV2) table: PrepareCommit, COMMIT, Current ⇒
    PRODUCER_FENCED (the bumped epoch was never handed out while preparing)."""
    t.put(S.ONGOING, producer_id=PID, epoch=EPOCH, partitions={TP1})
    end_v2(t, EPOCH, True)
    assert end_v2(t, EPOCH + 1, True) == (Errors.PRODUCER_FENCED, *NO_ANSWER)
    assert end_v2(t, EPOCH, True) == (Errors.CONCURRENT_TRANSACTIONS, *NO_ANSWER)


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_abort_with_no_partition_added_bumps_epoch(t, state):
    """TransactionCoordinator.endTransaction (TV2) table: Empty/CompleteAbort/CompleteCommit,
    ABORT, Current ⇒ epoch bump (``prepareAbortOrCommit(..., noPartitionAdded = true)``): the
    abort starts now, has no partition to mark, and completes at once."""
    put_v2(t, state)
    t.time.advance(7)
    assert end_v2(t, EPOCH, False) == (Errors.NONE, PID, EPOCH + 1)
    prepare, complete = records(t)[-2:]
    assert prepare.state is S.PREPARE_ABORT and prepare.txn_start_timestamp == t.time.milliseconds()
    assert complete.state is S.COMPLETE_ABORT and not complete.topic_partitions
    md = t.metadata()
    assert (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, EPOCH + 1)


def test_commit_with_no_partition_added_is_invalid(t):
    """TransactionCoordinator.endTransaction (TV2) table: Empty, COMMIT, Current ⇒ INVALID_TXN_STATE;
    Retry ⇒ PRODUCER_FENCED."""
    put_v2(t, S.EMPTY)
    assert end_v2(t, EPOCH, True)[0] == Errors.INVALID_TXN_STATE
    assert end_v2(t, EPOCH - 1, True)[0] == Errors.PRODUCER_FENCED


def test_epoch_overflow_rotates_producer_id(t):
    """TransactionMetadataTest.testEpochBumpOnEndTxnOverflow through the coordinator: EndTxn at
    the last client epoch (32766) allocates the next producer id; PrepareCommit carries epoch
    32767 and ``NextProducerId``; the answer is (new id, 0); the markers go out with the old id
    and epoch 32767; the Complete record moves to the new id with ``PreviousProducerId``."""
    t.put(S.ONGOING, producer_id=PID, epoch=SHORT_MAX - 1, partitions={TP1})
    assert end_v2(t, SHORT_MAX - 1, True) == (Errors.NONE, 1000, 0)
    prepare = records(t)[-1]
    assert (prepare.producer_id, prepare.producer_epoch, prepare.next_producer_id) == (PID, SHORT_MAX, 1000)
    t.channel.send_pending()
    [(_, [entry], _)] = t.sender.calls
    assert (entry.producer_id, entry.producer_epoch) == (PID, SHORT_MAX)
    t.sender.respond_all()
    complete = records(t)[-1]
    assert (complete.producer_id, complete.producer_epoch, complete.previous_producer_id,
            complete.next_producer_id) == (1000, 0, PID, -1)
    md = t.metadata()
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch, md.previous_producer_id) == \
        (1000, 0, SHORT_MAX - 1, PID)
    # the client's retry with the old id and last epoch is recognised
    assert end_v2(t, SHORT_MAX - 1, True, producer_id=PID) == (Errors.NONE, 1000, 0)
    # and the new id continues at epoch 0
    assert t.add_partitions(1000, 0, {TP1}) == Errors.NONE


def test_overflowed_commit_completes_after_coordinator_failover(t):
    """TransactionStateManager.loadTransactionsForTxnTopicPartition with a TV2 PrepareCommit that
    overflowed: ``NextProducerId`` and ``ClientTransactionVersion`` come back from the log, the
    markers are sent again with the old id and epoch 32767, and the transaction completes on the
    new producer id."""
    t.put(S.ONGOING, producer_id=PID, epoch=SHORT_MAX - 1, partitions={TP1})
    assert end_v2(t, SHORT_MAX - 1, True) == (Errors.NONE, 1000, 0)
    t.coordinator.on_resigned(t.txn_partition)
    t.sender.calls.clear()
    t.coordinator.on_elected(t.txn_partition, 1)
    md = t.metadata()
    assert (md.state, md.next_producer_id, md.client_transaction_version) == (S.PREPARE_COMMIT, 1000, TV2)
    t.channel.send_pending()
    [(_, [entry], _)] = t.sender.calls
    assert (entry.producer_id, entry.producer_epoch, entry.coordinator_epoch) == (PID, SHORT_MAX, 1)
    t.sender.respond_all()
    md = t.metadata()
    assert (md.state, md.producer_id, md.producer_epoch, md.previous_producer_id) == (S.COMPLETE_COMMIT, 1000, 0, PID)
    assert end_v2(t, SHORT_MAX - 1, True, producer_id=PID) == (Errors.NONE, 1000, 0)


def test_implicit_add_records_client_transaction_version(t):
    """MINOR: Add clientTransactionVersion to AddPartitionsToTxn requests and persist the value
    across transitions (apache/kafka#18086): the leader's add for Produce v12 is TV_2."""
    r = t.init_pid()
    box = []
    t.coordinator.handle_add_partitions_to_transaction(TXN_ID, r.producer_id, r.producer_epoch, {TP1},
                                                      box.append, client_transaction_version=TV2)
    assert box == [Errors.NONE]
    assert t.metadata().client_transaction_version == TV2 and records(t)[-1].client_transaction_version == TV2
    # a TV1 client's AddPartitionsToTxn makes it TV_0 again
    assert t.add_partitions(r.producer_id, r.producer_epoch, {TP2}) == Errors.NONE
    assert t.metadata().client_transaction_version == 0


def test_tv1_end_txn_after_tv2_add_keeps_epoch(t):
    """TransactionCoordinator.endTransactionWithTV1: EndTxn v4 does not bump, whatever the
    transaction's previous version."""
    put_v2(t, S.ONGOING, partitions={TP1})
    assert t.end_txn_answer(PID, EPOCH, True) == (Errors.NONE, PID, EPOCH)
    assert t.metadata().producer_epoch == EPOCH


# --------------------------------------------------------------------------- coordinator's own aborts
def test_timeout_abort_under_tv2_bumps_epoch_once(t):
    """shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch with transaction.version 2 (and
    shouldHandleTimeoutAtEpochOverflowBoundaryCorrectly: one bump in all): the fence leaves the
    epoch, the TV2 abort bumps it; the markers carry epoch + 1; the zombie is fenced."""
    t.put(S.ONGOING, producer_id=PID, epoch=EPOCH, partitions={TP1}, start=t.time.milliseconds())
    t.time.advance(2000)
    assert t.coordinator.abort_timed_out_transactions() == 1
    md = t.metadata()
    assert (md.state, md.producer_epoch, md.client_transaction_version) == (S.PREPARE_ABORT, EPOCH + 1, TV2)
    complete_markers(t)
    assert t.metadata().state is S.COMPLETE_ABORT
    assert end_v2(t, EPOCH, True)[0] == Errors.INVALID_TXN_STATE   # a retry of an abort, not a commit
    assert t.end_txn(PID, EPOCH, True) == Errors.PRODUCER_FENCED   # the TV1 zombie


def test_timeout_abort_at_epoch_overflow_boundary_rotates_producer_id(t):
    """shouldHandleTimeoutAtEpochOverflowBoundaryCorrectly (and ...AndLateClientAbortRequestTV2):
    a timed-out transaction at epoch 32766 is aborted at 32767 and completes on a new producer id
    at epoch 0; the client's late abort with the old id and epoch is a retry."""
    t.put(S.ONGOING, producer_id=PID, epoch=SHORT_MAX - 1, partitions={TP1}, start=t.time.milliseconds())
    t.time.advance(2000)
    assert t.coordinator.abort_timed_out_transactions() == 1
    assert t.metadata().producer_epoch == SHORT_MAX
    complete_markers(t)
    md = t.metadata()
    assert (md.state, md.producer_id, md.producer_epoch) == (S.COMPLETE_ABORT, 1000, 0)
    assert end_v2(t, SHORT_MAX - 1, False) == (Errors.NONE, 1000, 0)


def test_init_pid_during_ongoing_tv2_fences_with_one_bump(t):
    """shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState with
    transaction.version 2: the abort carries epoch + 1, the retried InitProducerId gets + 2."""
    put_v2(t, S.ONGOING, partitions={TP1})
    assert t.init_pid().error == Errors.CONCURRENT_TRANSACTIONS
    assert t.metadata().producer_epoch == EPOCH + 1
    complete_markers(t)
    r = t.init_pid()
    assert (r.producer_id, r.producer_epoch, r.error) == (PID, EPOCH + 2, Errors.NONE)


def test_init_pid_keeps_client_transaction_version(t):
    """shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteTransaction (TV_2)"""
    put_v2(t, S.COMPLETE_COMMIT)
    r = t.init_pid()
    assert (r.producer_id, r.producer_epoch) == (PID, EPOCH + 1)
    assert t.metadata().client_transaction_version == TV2


def test_describe_transactions_unaffected(t):
    """DescribeTransactions shows the bumped epoch and the state, nothing TV2-specific."""
    t.put(S.ONGOING, producer_id=PID, epoch=EPOCH, partitions={TP1})
    end_v2(t, EPOCH, True)
    d = t.coordinator.handle_describe_transactions(TXN_ID)
    assert (d.error, d.state, d.producer_id, d.producer_epoch) == (Errors.NONE, "PrepareCommit", PID, EPOCH + 1)


# --------------------------------------------------------------------------- property
@settings(max_examples=40, deadline=None)
@given(start=st.integers(0, SHORT_MAX - 1),
       ops=st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=12))
def test_epochs_increase_and_producer_id_changes_exactly_on_overflow(start, ops):
    """Any sequence of EndTxn v5 (commit or abort, with or without a partition added, some
    retried): each new EndTxn answers the previous (id, epoch + 1), or (a new id, 0) exactly
    when the previous epoch was the last one a client may use (32766); a retry answers the same."""
    t = TxnHarness()
    try:
        put_v2(t, S.EMPTY, epoch=start, last_epoch=-1)
        pid, epoch = PID, start
        for add, commit, retry in ops:
            if add:
                assert t.add_partitions(pid, epoch, {TP1}) == Errors.NONE
            elif commit:
                continue   # a commit needs a partition (INVALID_TXN_STATE otherwise)
            error, new_pid, new_epoch = end_v2(t, epoch, commit, producer_id=pid)
            assert error == Errors.NONE
            if epoch >= SHORT_MAX - 1:
                assert new_pid != pid and new_epoch == 0
            else:
                assert (new_pid, new_epoch) == (pid, epoch + 1)
            complete_markers(t)
            if retry:
                assert end_v2(t, epoch, commit, producer_id=pid) == (Errors.NONE, new_pid, new_epoch)
            pid, epoch = new_pid, new_epoch
    finally:
        t.shutdown()
