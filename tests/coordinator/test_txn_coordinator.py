"""Ports of Kafka's TransactionCoordinatorTest (TV1 cases) against a real TransactionStateManager
over an in-memory ``__transaction_state`` and a recording marker sender (``txn_harness``)."""
from __future__ import annotations

from typing import Iterator

import pytest
from txn_harness import TP1, TP2, TXN_ID, TXN_TIMEOUT, TxnHarness

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.config import TRANSACTION_VERSION
from kafka_emu.coordinator.transaction.transaction_log import read_value
from kafka_emu.coordinator.transaction.transaction_metadata import SHORT_MAX, TransactionState

S = TransactionState


@pytest.fixture
def t() -> Iterator[TxnHarness]:
    h = TxnHarness()
    yield h
    h.shutdown()


@pytest.fixture
def t1() -> Iterator[TxnHarness]:
    """A coordinator of a cluster with ``transaction.version`` 1 finalized: its own aborts
    (fencing, timeouts) take the TV1 path, whose fence bumps the epoch."""
    h = TxnHarness(**{TRANSACTION_VERSION: 1})
    yield h
    h.shutdown()


def last_record_state(t: TxnHarness) -> TransactionState:
    _, key, value = t.records()[-1]
    return read_value(TXN_ID, value).state


# --------------------------------------------------------------------------- InitProducerId
def test_invalid_request_when_transactional_id_is_empty(t):
    """shouldReturnInvalidRequestWhenTransactionalIdIsEmpty"""
    r = t.init_pid("")
    assert (r.producer_id, r.producer_epoch, r.error) == (-1, -1, Errors.INVALID_REQUEST)


def test_accept_init_pid_and_return_next_pid_when_transactional_id_is_null(t):
    """shouldAcceptInitPidAndReturnNextPidWhenTransactionalIdIsNull"""
    r = t.init_pid(None)
    assert (r.producer_id, r.producer_epoch, r.error) == (1000, 0, Errors.NONE)
    assert t.init_pid(None).producer_id == 1001


def test_init_pid_with_epoch_zero_for_new_transactional_id(t):
    """shouldInitPidWithEpochZeroForNewTransactionalId"""
    r = t.init_pid()
    assert (r.producer_id, r.producer_epoch, r.error) == (1000, 0, Errors.NONE)
    md = t.metadata()
    assert (md.state, md.producer_epoch, md.txn_timeout_ms) == (S.EMPTY, 0, TXN_TIMEOUT)
    assert last_record_state(t) is S.EMPTY


def test_generate_new_producer_id_if_no_state_and_producer_id_and_epoch_provided(t):
    """shouldGenerateNewProducerIdIfNoStateAndProducerIdAndEpochProvided"""
    r = t.init_pid(expected=(55, 3))
    assert (r.producer_id, r.producer_epoch, r.error) == (1000, 0, Errors.NONE)


def test_generate_new_producer_id_if_epochs_exhausted(t):
    """shouldGenerateNewProducerIdIfEpochsExhausted"""
    t.put(S.EMPTY, producer_id=10, epoch=SHORT_MAX - 1)
    r = t.init_pid()
    assert (r.producer_id, r.producer_epoch, r.error) == (1000, 0, Errors.NONE)
    assert t.metadata().previous_producer_id == 10


def test_not_coordinator_on_init_pid_when_not_coordinator(t):
    """shouldRespondWithNotCoordinatorOnInitPidWhenNotCoordinator"""
    t.coordinator.on_resigned(t.txn_partition)
    assert t.init_pid().error == Errors.NOT_COORDINATOR


def test_coordinator_load_in_progress_on_init_pid_when_coordinator_loading():
    """shouldRespondWithCoordinatorLoadInProgressOnInitPidWhenCoordinatorLoading"""
    h = TxnHarness()
    held = []
    h.manager.scheduler = type("Held", (), {"schedule": lambda self, name, fn: held.append(fn),
                                            "shutdown": lambda self: None})()
    h.coordinator.on_resigned(h.txn_partition)
    h.coordinator.on_elected(h.txn_partition, 1)
    assert h.init_pid().error == Errors.COORDINATOR_LOAD_IN_PROGRESS
    held[0]()
    assert h.init_pid().error == Errors.NONE
    h.shutdown()


def test_invalid_transaction_timeout(t):
    """TransactionStateManagerTest.testValidateTransactionTimeout through InitProducerId."""
    assert t.init_pid(timeout=0).error == Errors.INVALID_TRANSACTION_TIMEOUT
    assert t.init_pid(timeout=900_001).error == Errors.INVALID_TRANSACTION_TIMEOUT
    assert t.init_pid(timeout=900_000).error == Errors.NONE


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT])
def test_increment_epoch_and_update_metadata_on_init_pid_when_existing_transaction(t, state):
    """shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingEmptyTransaction /
    ...ExistingCompleteTransaction / ...ExistingCompleteCommitTransaction"""
    t.put(state, producer_id=10, epoch=1)
    r = t.init_pid(timeout=2000)
    assert (r.producer_id, r.producer_epoch, r.error) == (10, 2, Errors.NONE)
    md = t.metadata()
    assert (md.state, md.txn_timeout_ms, md.topic_partitions) == (S.EMPTY, 2000, set())


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_wait_for_commit_to_complete_on_init_pid_and_existing_prepare(t, state):
    """shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareCommitState /
    ...InPrepareAbortState"""
    t.put(state, epoch=1, partitions={TP1})
    assert t.init_pid().error == Errors.CONCURRENT_TRANSACTIONS


def test_abort_transaction_on_init_pid_when_existing_transaction_in_ongoing_state(t):
    """shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState: the epoch is
    fenced, PrepareAbort written with it, CONCURRENT_TRANSACTIONS answered; after the markers the
    retry gets the next epoch."""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    assert t.init_pid().error == Errors.CONCURRENT_TRANSACTIONS
    md = t.metadata()
    assert md.state is S.PREPARE_ABORT and md.producer_epoch == 2
    assert last_record_state(t) is S.PREPARE_ABORT
    assert t.init_pid().error == Errors.CONCURRENT_TRANSACTIONS   # markers pending
    t.channel.send_pending()
    [(broker, entries, _)] = t.sender.calls
    assert broker == 1 and entries[0].producer_epoch == 2 and not entries[0].committed
    t.sender.respond_all()
    assert t.metadata().state is S.COMPLETE_ABORT
    r = t.init_pid()
    assert (r.producer_id, r.producer_epoch, r.error) == (10, 3, Errors.NONE)


def test_fail_to_abort_transaction_on_init_pid_when_producer_epoch_is_smaller(t):
    """shouldFailToAbortTransactionOnHandleInitPidWhenProducerEpochIsSmaller: another fence is
    still pending (the first fence's abort has not been written)."""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    t.log.hold = True
    box_errors = []
    t.coordinator.handle_init_producer_id(TXN_ID, TXN_TIMEOUT, None, lambda r: box_errors.append(r.error))
    assert t.init_pid().error == Errors.CONCURRENT_TRANSACTIONS   # pending PrepareAbort
    t.log.complete_pending()
    assert box_errors == [Errors.CONCURRENT_TRANSACTIONS]


def test_not_repeatedly_bump_epoch_due_to_init_pid_during_ongoing_txn_if_append_fails(t1):
    """shouldNotRepeatedlyBumpEpochDueToInitPidDuringOngoingTxnIfAppendToLogFails"""
    t1.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    t1.log.error = Errors.NOT_ENOUGH_REPLICAS
    assert t1.init_pid().error == Errors.COORDINATOR_NOT_AVAILABLE
    md = t1.metadata()
    assert md.producer_epoch == 2 and md.has_failed_epoch_fence and md.pending_state is None
    assert t1.init_pid().error == Errors.COORDINATOR_NOT_AVAILABLE
    assert t1.metadata().producer_epoch == 2   # not bumped a second time
    t1.log.error = Errors.NONE
    assert t1.init_pid().error == Errors.CONCURRENT_TRANSACTIONS
    assert t1.metadata().producer_epoch == 2 and t1.metadata().state is S.PREPARE_ABORT


def test_use_last_epoch_to_fence_when_epochs_are_exhausted(t1):
    """shouldUseLastEpochToFenceWhenEpochsAreExhausted: the fence takes the last epoch, the retry
    rotates the producer id."""
    t1.put(S.ONGOING, producer_id=10, epoch=SHORT_MAX - 1, partitions={TP1})
    assert t1.init_pid().error == Errors.CONCURRENT_TRANSACTIONS
    assert t1.metadata().producer_epoch == SHORT_MAX
    t1.channel.send_pending()
    t1.sender.respond_all()
    r = t1.init_pid()
    assert (r.producer_id, r.producer_epoch, r.error) == (1000, 0, Errors.NONE)


def test_init_producer_id_with_no_last_producer_data(t):
    """testInitProducerIdWithNoLastProducerData"""
    t.put(S.EMPTY, producer_id=10, epoch=10)
    r = t.init_pid(expected=(10, 10))
    assert (r.producer_id, r.producer_epoch) == (10, 11)
    assert t.metadata().last_producer_epoch == 10


def test_fence_producer_when_mapping_exists_with_different_producer_id(t):
    """testFenceProducerWhenMappingExistsWithDifferentProducerId"""
    t.put(S.EMPTY, producer_id=10, epoch=10)
    assert t.init_pid(expected=(11, 10)).error == Errors.PRODUCER_FENCED


def test_init_producer_id_with_current_epoch_provided_and_retry(t):
    """testInitProducerIdWithCurrentEpochProvided / testInitProducerIdStaleCurrentEpochProvided:
    a retried bump with the last epoch gets the same answer, an older epoch is fenced."""
    t.put(S.EMPTY, producer_id=10, epoch=10)
    r = t.init_pid(expected=(10, 10))
    assert (r.producer_id, r.producer_epoch) == (10, 11)
    retry = t.init_pid(expected=(10, 10))
    assert (retry.producer_id, retry.producer_epoch, retry.error) == (10, 11, Errors.NONE)
    assert t.init_pid(expected=(10, 9)).error == Errors.PRODUCER_FENCED


def test_retry_init_producer_id_after_producer_id_rotation(t):
    """testRetryInitProducerIdAfterProducerIdRotation / testInitProducerIdWithInvalidEpochAfterProducerIdRotation"""
    t.put(S.EMPTY, producer_id=10, epoch=SHORT_MAX - 1)
    r = t.init_pid(expected=(10, SHORT_MAX - 1))
    assert (r.producer_id, r.producer_epoch) == (1000, 0)
    retry = t.init_pid(expected=(10, SHORT_MAX - 1))
    assert (retry.producer_id, retry.producer_epoch, retry.error) == (1000, 0, Errors.NONE)
    assert t.init_pid(expected=(10, SHORT_MAX - 2)).error == Errors.PRODUCER_FENCED


# --------------------------------------------------------------------------- AddPartitionsToTxn
def test_invalid_pid_mapping_on_add_partitions_when_transactional_id_not_present(t):
    """shouldRespondWithInvalidPidMappingOnAddPartitionsToTransactionWhenTransactionalIdNotPresent"""
    assert t.add_partitions(0, 1, {TP1}) == Errors.INVALID_PRODUCER_ID_MAPPING


@pytest.mark.parametrize("txn_id", ["", None])
def test_invalid_request_add_partitions_when_transactional_id_empty_or_null(t, txn_id):
    """shouldRespondWithInvalidRequestAddPartitionsToTransactionWhenTransactionalIdIsEmpty / IsNull"""
    assert t.add_partitions(0, 1, {TP1}, txn_id=txn_id) == Errors.INVALID_REQUEST


def test_not_coordinator_on_add_partitions_when_not_coordinator(t):
    """shouldRespondWithNotCoordinatorOnAddPartitionsWhenNotCoordinator"""
    t.coordinator.on_resigned(t.txn_partition)
    assert t.add_partitions(0, 1, {TP1}) == Errors.NOT_COORDINATOR


@pytest.mark.parametrize("state", [S.PREPARE_COMMIT, S.PREPARE_ABORT])
def test_concurrent_transactions_on_add_partitions_when_state_is_prepare(t, state):
    """shouldRespondWithConcurrentTransactionsOnAddPartitionsWhenStateIsPrepareCommit /
    shouldRespondWithConcurrentTransactionOnAddPartitionsWhenStateIsPrepareAbort"""
    t.put(state, producer_id=10, epoch=1, partitions={TP1})
    assert t.add_partitions(10, 1, {TP2}) == Errors.CONCURRENT_TRANSACTIONS


def test_producer_fenced_on_add_partitions_when_epochs_are_different(t):
    """shouldRespondWithProducerFencedOnAddPartitionsWhenEpochsAreDifferent"""
    t.put(S.EMPTY, producer_id=10, epoch=10)
    assert t.add_partitions(10, 9, {TP1}) == Errors.PRODUCER_FENCED


@pytest.mark.parametrize("state", [S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_append_new_metadata_on_add_partitions(t, state):
    """shouldAppendNewMetadataToLogOnAddPartitionsWhenPartitionsAdded /
    shouldRespondWithSuccessOnAddPartitionsWhenStateIsOngoing / ...CompleteCommit / ...CompleteAbort"""
    t.put(state, producer_id=10, epoch=1, partitions={TP1} if state is S.ONGOING else set())
    before = len(t.records())
    assert t.add_partitions(10, 1, {TP2}) == Errors.NONE
    md = t.metadata()
    assert md.state is S.ONGOING and TP2 in md.topic_partitions
    assert len(t.records()) == before + 1 and last_record_state(t) is S.ONGOING


def test_errors_none_on_add_partition_when_no_errors_and_partitions_the_same(t):
    """shouldRespondWithErrorsNoneOnAddPartitionWhenNoErrorsAndPartitionsTheSame: no write."""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    before = t.log.appends
    assert t.add_partitions(10, 1, {TP1}) == Errors.NONE
    assert t.log.appends == before


def test_verify_partition_handling(t):
    """testVerifyPartitionHandling / shouldRespondWithErrorsNoneOnAddPartitionWhenOngoingVerifyOnlyAndPartitionsTheSame /
    shouldRespondWithInvalidTxnStateWhenVerifyOnlyAndPartitionNotPresent (TRANSACTION_ABORTABLE in 4.0)"""
    c = t.coordinator
    assert c.handle_verify_partitions_in_transaction(TXN_ID, 10, 1, {TP1}) == {TP1: Errors.INVALID_PRODUCER_ID_MAPPING}
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    assert c.handle_verify_partitions_in_transaction(TXN_ID, 10, 1, {TP1, TP2}) == {
        TP1: Errors.NONE, TP2: Errors.TRANSACTION_ABORTABLE}
    assert c.handle_verify_partitions_in_transaction(TXN_ID, 10, 0, {TP1}) == {TP1: Errors.PRODUCER_FENCED}
    assert c.handle_verify_partitions_in_transaction("", 10, 1, {TP1}) == {TP1: Errors.INVALID_REQUEST}


# --------------------------------------------------------------------------- EndTxn
def test_invalid_pid_mapping_on_end_txn_when_txn_id_doesnt_exist(t):
    """shouldReplyWithInvalidPidMappingOnEndTxnWhenTxnIdDoesntExist"""
    assert t.end_txn(0, 1, True) == Errors.INVALID_PRODUCER_ID_MAPPING


def test_invalid_pid_mapping_on_end_txn_when_pid_doesnt_match(t):
    """shouldReplyWithInvalidPidMappingOnEndTxnWhenPidDosentMatchMapped"""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    assert t.end_txn(11, 1, True) == Errors.INVALID_PRODUCER_ID_MAPPING


@pytest.mark.parametrize("epoch", [0, 2])
def test_producer_fenced_on_end_txn_when_epoch_differs(t, epoch):
    """shouldReplyWithProducerFencedOnEndTxnWhenEpochIsNotSameAsTransaction /
    shouldReturnInvalidEpochOnEndTxnWhenEpochIsLarger / ...IsSmaller"""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    assert t.end_txn(10, epoch, True) == Errors.PRODUCER_FENCED


@pytest.mark.parametrize("state,commit,expected", [
    (S.COMPLETE_COMMIT, True, Errors.NONE),
    (S.COMPLETE_ABORT, False, Errors.NONE),
    (S.COMPLETE_ABORT, True, Errors.INVALID_TXN_STATE),
    (S.COMPLETE_COMMIT, False, Errors.INVALID_TXN_STATE),
    (S.PREPARE_COMMIT, True, Errors.CONCURRENT_TRANSACTIONS),
    (S.PREPARE_COMMIT, False, Errors.INVALID_TXN_STATE),
    (S.PREPARE_ABORT, False, Errors.CONCURRENT_TRANSACTIONS),
    (S.PREPARE_ABORT, True, Errors.INVALID_TXN_STATE),
    (S.EMPTY, False, Errors.INVALID_TXN_STATE),
    (S.EMPTY, True, Errors.INVALID_TXN_STATE),
])
def test_end_txn_by_state_v1(t, state, commit, expected):
    """testEndTxnWhenStatusIsCompleteCommitAndResultIsCommitInV1, testEndTxnWhenStatusIsCompleteAbortAndResultIsAbortInV1,
    shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort,
    shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteCommitAndResultIsNotCommit,
    testEndTxnRequestWhenStatusIsCompleteCommitAndResultIsAbortInV1,
    shouldReturnConcurrentTransactionsOnEndTxnRequestWhenStatusIsPrepareCommit,
    shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsPrepareAbort,
    TestEndTxnRequestWhenEmptyTransactionStateForAbortInV1"""
    t.put(state, producer_id=10, epoch=1,
          partitions={TP1} if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT) else set())
    before = t.log.appends
    assert t.end_txn(10, 1, commit) == expected
    assert t.log.appends == before


@pytest.mark.parametrize("commit", [True, False])
def test_append_prepare_on_end_txn_when_ongoing(t, commit):
    """shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit /
    shouldAppendPrepareAbortToLogOnEndTxnWhenStatusIsOngoingAndResultIsAbort: answered NONE once
    Prepare* is written; Complete* follows the markers (TransactionMarkerChannelManagerTest
    shouldCompleteAppendToLogOnEndTxnWhenSendMarkersSucceed)."""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1, TP2})
    assert t.end_txn(10, 1, commit) == Errors.NONE
    assert last_record_state(t) is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert t.channel.send_pending() == 2   # one entry per leader
    assert sorted(b for b, _, _ in t.sender.calls) == [1, 2]
    t.sender.respond_all()
    assert t.metadata().state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert last_record_state(t) is t.metadata().state
    assert t.metadata().topic_partitions == set()


@pytest.mark.parametrize("txn_id", ["", None])
def test_invalid_request_on_end_txn_when_transactional_id_null_or_empty(t, txn_id):
    """shouldRespondWithInvalidRequestOnEndTxnWhenTransactionalIdIsNull / ...IsEmpty"""
    assert t.end_txn(10, 1, True, txn_id=txn_id) == Errors.INVALID_REQUEST


def test_not_coordinator_on_end_txn_when_is_not_coordinator_for_id(t):
    """shouldRespondWithNotCoordinatorOnEndTxnWhenIsNotCoordinatorForId"""
    t.coordinator.on_resigned(t.txn_partition)
    assert t.end_txn(10, 1, True) == Errors.NOT_COORDINATOR


def test_full_transaction_cycle(t):
    """InitProducerId → AddPartitions → EndTxn(commit) → markers → CompleteCommit, then the next
    transaction on the same epoch."""
    r = t.init_pid()
    assert t.add_partitions(r.producer_id, r.producer_epoch, {TP1}) == Errors.NONE
    assert t.end_txn(r.producer_id, r.producer_epoch, True) == Errors.NONE
    assert t.add_partitions(r.producer_id, r.producer_epoch, {TP2}) == Errors.CONCURRENT_TRANSACTIONS
    t.channel.send_pending()
    [(_, [entry], _)] = t.sender.calls
    assert (entry.producer_id, entry.producer_epoch, entry.coordinator_epoch, entry.committed, entry.partitions) == (
        r.producer_id, r.producer_epoch, 0, True, (TP1,))
    t.sender.respond_all()
    assert t.add_partitions(r.producer_id, r.producer_epoch, {TP2}) == Errors.NONE
    assert [read_value(TXN_ID, v).state for _, _, v in t.records()] == [
        S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT, S.ONGOING]


# --------------------------------------------------------------------------- emigration / timeouts
def test_remove_transactions_for_partition_on_emigration(t):
    """shouldRemoveTransactionsForPartitionOnEmigration"""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1})
    assert t.end_txn(10, 1, True) == Errors.NONE
    t.coordinator.on_resigned(t.txn_partition)
    assert t.channel.queue_size() == 0 and t.channel.pending_completion_count() == 0
    assert t.manager.get_transaction_state(TXN_ID)[0] == Errors.NOT_COORDINATOR


def test_abort_expired_transactions_in_ongoing_state_and_bump_epoch(t):
    """shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch"""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1}, start=t.time.milliseconds())
    t.time.sleep(TXN_TIMEOUT + 1)
    assert t.coordinator.abort_timed_out_transactions() == 1
    md = t.metadata()
    assert md.state is S.PREPARE_ABORT and md.producer_epoch == 2
    t.channel.send_pending()
    t.sender.respond_all()
    assert t.metadata().state is S.COMPLETE_ABORT
    assert t.end_txn(10, 1, True) == Errors.PRODUCER_FENCED   # the zombie


def test_not_abort_expired_transactions_that_have_a_pending_state_transition(t):
    """shouldNotAbortExpiredTransactionsThatHaveAPendingStateTransition"""
    md = t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1}, start=t.time.milliseconds())
    md.pending_state = S.PREPARE_COMMIT
    t.time.sleep(TXN_TIMEOUT + 1)
    assert t.coordinator.abort_timed_out_transactions() == 0


def test_not_bump_epoch_when_aborting_expired_transaction_if_append_fails(t1):
    """shouldNotBumpEpochWhenAbortingExpiredTransactionIfAppendToLogFails"""
    t1.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1}, start=t1.time.milliseconds())
    t1.time.sleep(TXN_TIMEOUT + 1)
    t1.log.error = Errors.NOT_ENOUGH_REPLICAS
    t1.coordinator.abort_timed_out_transactions()
    md = t1.metadata()
    assert md.state is S.ONGOING and md.pending_state is None and md.has_failed_epoch_fence
    fenced_epoch = md.producer_epoch
    t1.log.error = Errors.NONE
    t1.coordinator.abort_timed_out_transactions()
    assert t1.metadata().producer_epoch == fenced_epoch and t1.metadata().state is S.PREPARE_ABORT


def test_not_accept_smaller_epoch_during_transaction_expiration(t):
    """shouldNotAcceptSmallerEpochDuringTransactionExpiration: the client's commit with its old
    epoch after the coordinator aborted."""
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1}, start=t.time.milliseconds())
    t.time.sleep(TXN_TIMEOUT + 1)
    t.coordinator.abort_timed_out_transactions()
    assert t.end_txn(10, 1, True) == Errors.PRODUCER_FENCED


# --------------------------------------------------------------------------- Describe / List
def test_describe_transactions(t):
    """testDescribeTransactionsWithEmptyTransactionalId / testDescribeTransactionsWhileCoordinatorLoading /
    testDescribeTransactions"""
    c = t.coordinator
    assert c.handle_describe_transactions("").error == Errors.INVALID_REQUEST
    assert c.handle_describe_transactions(TXN_ID).error == Errors.TRANSACTIONAL_ID_NOT_FOUND
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1, TP2}, start=5)
    d = c.handle_describe_transactions(TXN_ID)
    assert (d.error, d.state, d.producer_id, d.producer_epoch, d.timeout_ms, d.start_time_ms, d.topic_partitions) == (
        Errors.NONE, "Ongoing", 10, 1, TXN_TIMEOUT, 5, (TP1, TP2))
    t.coordinator.on_resigned(t.txn_partition)
    assert c.handle_describe_transactions(TXN_ID).error == Errors.NOT_COORDINATOR


def test_list_transactions_filtering(t):
    """TransactionStateManagerTest.testListTransactionsFiltering"""
    others = [tid for tid in (f"t{i}" for i in range(200)) if t.coordinator.partition_for(tid) == t.txn_partition][:3]
    t.put(S.ONGOING, producer_id=1, epoch=0, partitions={TP1}, txn_id=others[0], start=t.time.milliseconds() - 100)
    t.put(S.EMPTY, producer_id=2, epoch=0, txn_id=others[1])
    t.put(S.COMPLETE_COMMIT, producer_id=3, epoch=0, txn_id=others[2])
    c = t.coordinator
    error, unknown, listed = c.handle_list_transactions(set(), set())
    assert error == Errors.NONE and len(listed) == 3
    _, unknown, listed = c.handle_list_transactions(set(), {"Ongoing", "Bogus"})
    assert unknown == ["Bogus"] and [x.transactional_id for x in listed] == [others[0]]
    _, _, listed = c.handle_list_transactions({2, 3}, set())
    assert sorted(x.producer_id for x in listed) == [2, 3]
    _, _, listed = c.handle_list_transactions(set(), set(), 50)
    assert [x.transactional_id for x in listed] == [others[0]]
    _, _, listed = c.handle_list_transactions(set(), set(), 500)
    assert listed == []
