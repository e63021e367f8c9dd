"""Ports of Kafka's TransactionStateManagerTest, TransactionMarkerChannelManagerTest and
TransactionMarkerRequestCompletionHandlerTest (TV1 cases)."""
from __future__ import annotations

from typing import Iterator

import pytest
from coordinator_harness import Box
from txn_harness import TP1, TP2, TXN_ID, TXN_TIMEOUT, TxnHarness

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.transaction_log import key_bytes, read_value, value_bytes
from kafka_emu.coordinator.transaction.transaction_metadata import (
    TransactionMetadata, TransactionState, TxnTransitMetadata,
)

S = TransactionState


@pytest.fixture
def t() -> Iterator[TxnHarness]:
    h = TxnHarness()
    yield h
    h.shutdown()


def write(t: TxnHarness, state: S, producer_id: int = 10, epoch: int = 1, partitions=frozenset()) -> None:
    """Append a record of ``TXN_ID`` to its partition directly (as a previous coordinator did)."""
    transit = TxnTransitMetadata(producer_id, -1, -1, epoch, -1, TXN_TIMEOUT, state, frozenset(partitions),
                                 -1 if state is S.EMPTY else t.time.milliseconds(), t.time.milliseconds())
    t.log.append_batch(t.txn_partition, [(key_bytes(TXN_ID), value_bytes(transit))])


def reload(t: TxnHarness, epoch: int = 1) -> None:
    t.coordinator.on_resigned(t.txn_partition)
    t.coordinator.on_elected(t.txn_partition, epoch)


# --------------------------------------------------------------------------- TransactionStateManagerTest
def test_add_get_pids(t):
    """testAddGetPids"""
    assert t.manager.get_transaction_state(TXN_ID) == (Errors.NONE, None)
    md = t.put(S.EMPTY)
    _, em = t.manager.get_transaction_state(TXN_ID)
    assert em.transaction_metadata is md and em.coordinator_epoch == 0
    other = TransactionMetadata(TXN_ID, 99, -1, -1, 0, -1, 1, S.EMPTY, set(), -1, 0)
    assert t.manager.put_transaction_state_if_not_exists(other)[1].transaction_metadata is md


def test_delete_loading_partition_and_make_follower(t):
    """testDeletePartition / testDeleteLoadingPartition / testMakeFollowerLoadingPartition"""
    held = []
    t.manager.scheduler = type("Held", (), {"schedule": lambda self, n, fn: held.append(fn),
                                            "shutdown": lambda self: None})()
    reload(t)
    assert t.manager.get_transaction_state(TXN_ID)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    t.coordinator.on_resigned(t.txn_partition)
    held[0]()   # the load finishes after the resignation: nothing is installed
    assert t.manager.get_transaction_state(TXN_ID)[0] == Errors.NOT_COORDINATOR


def test_load_and_remove_transactions_for_partition(t):
    """testLoadAndRemoveTransactionsForPartition: the last value per id wins, tombstones delete."""
    write(t, S.ONGOING, partitions={TP1})
    write(t, S.COMPLETE_ABORT, epoch=1)
    reload(t, 5)
    md = t.metadata()
    assert (md.state, md.producer_id, md.producer_epoch, md.last_producer_epoch) == (S.COMPLETE_ABORT, 10, 1, -1)
    assert t.manager.get_transaction_state(TXN_ID)[1].coordinator_epoch == 5
    t.log.append_batch(t.txn_partition, [(key_bytes(TXN_ID), None)])
    reload(t, 6)
    assert t.metadata() is None
    t.coordinator.on_resigned(t.txn_partition)
    assert t.manager.get_transaction_state(TXN_ID)[0] == Errors.NOT_COORDINATOR


def test_ignore_unknown_record_type(t):
    """testIgnoreUnknownRecordType: a key of an unknown version is skipped."""
    t.log.append_batch(t.txn_partition, [(b"\x7f\x7f\x00\x01a", b"junk")])
    write(t, S.EMPTY)
    reload(t)
    assert t.metadata().producer_id == 10


@pytest.mark.parametrize("state,commit", [(S.PREPARE_COMMIT, True), (S.PREPARE_ABORT, False)])
def test_write_txn_markers_for_transaction_in_prepared_state(t, state, commit):
    """shouldWriteTxnMarkersForTransactionInPreparedCommitState / ...PreparedAbortState and
    TransactionMarkerChannelManagerTest.shouldNotLoseTxnCompletionAfterLoad"""
    write(t, state, partitions={TP1, TP2})
    reload(t, 3)
    t.channel.send_pending()
    entries = [e for _, es, _ in t.sender.calls for e in es]
    assert {e.partitions for e in entries} == {(TP1,), (TP2,)}
    assert all(e.committed is commit and e.coordinator_epoch == 3 for e in entries)
    t.sender.respond_all()
    assert t.metadata().state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)


@pytest.mark.parametrize("produce_error,expected", [
    (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.COORDINATOR_NOT_AVAILABLE),
    (Errors.NOT_ENOUGH_REPLICAS, Errors.COORDINATOR_NOT_AVAILABLE),
    (Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.COORDINATOR_NOT_AVAILABLE),
    (Errors.REQUEST_TIMED_OUT, Errors.COORDINATOR_NOT_AVAILABLE),
    (Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_COORDINATOR),
    (Errors.KAFKA_STORAGE_ERROR, Errors.NOT_COORDINATOR),
    (Errors.MESSAGE_TOO_LARGE, Errors.UNKNOWN_SERVER_ERROR),
    (Errors.RECORD_LIST_TOO_LARGE, Errors.UNKNOWN_SERVER_ERROR),
    (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_LOAD_IN_PROGRESS),
])
def test_append_fail_error_mapping(t, produce_error, expected):
    """testAppendFailToCoordinatorNotAvailableError / testAppendFailToNotCoordinatorError /
    testAppendFailToCoordinatorLoadingError / testAppendFailToUnknownError: the pending state is reset."""
    md = t.put(S.EMPTY)
    transit = md.prepare_add_partitions({TP1}, t.time.milliseconds())
    t.log.error = produce_error
    box = Box()
    t.manager.append_transaction_to_log(TXN_ID, 0, transit, box)
    assert box.value == expected and md.pending_state is None and md.state is S.EMPTY


def test_complete_transition_when_append_succeeded(t):
    """testCompleteTransitionWhenAppendSucceeded"""
    md = t.put(S.EMPTY)
    box = Box()
    t.manager.append_transaction_to_log(TXN_ID, 0, md.prepare_add_partitions({TP1}, 5), box)
    assert box.value == Errors.NONE and md.state is S.ONGOING and md.topic_partitions == {TP1}


def test_pending_state_not_reset_on_retry_append(t):
    """testPendingStateNotResetOnRetryAppend"""
    md = t.put(S.EMPTY)
    t.log.error = Errors.NOT_ENOUGH_REPLICAS
    box = Box()
    t.manager.append_transaction_to_log(TXN_ID, 0, md.prepare_add_partitions({TP1}, 5), box,
                                        retry_on_error=lambda e: e == Errors.COORDINATOR_NOT_AVAILABLE)
    assert box.value == Errors.COORDINATOR_NOT_AVAILABLE and md.pending_state is S.ONGOING


def test_append_with_stale_coordinator_epoch(t):
    """shouldReturnNotCoordinatorErrorIfTransactionIdPartitionNotOwned and the epoch check of
    appendTransactionToLog."""
    md = t.put(S.EMPTY)
    box = Box()
    t.manager.append_transaction_to_log(TXN_ID, 7, md.prepare_add_partitions({TP1}, 5), box)
    assert box.value == Errors.NOT_COORDINATOR


def test_append_completes_as_not_coordinator_after_reload(t):
    """testAppendTransactionToLogWhilePendingStateChanged: the partition was reloaded at another
    epoch while the append was in flight: not applied, NOT_COORDINATOR."""
    md = t.put(S.EMPTY)
    t.log.hold = True
    box = Box()
    t.manager.append_transaction_to_log(TXN_ID, 0, md.prepare_add_partitions({TP1}, 5), box)
    t.log.hold = False
    reload(t, 1)
    t.log.complete_pending()
    assert box.value == Errors.NOT_COORDINATOR


@pytest.mark.parametrize("state,removed", [
    (S.COMPLETE_COMMIT, True), (S.COMPLETE_ABORT, True), (S.EMPTY, True),
    (S.ONGOING, False), (S.PREPARE_ABORT, False), (S.PREPARE_COMMIT, False)])
def test_remove_expired_transactional_ids(t, state, removed):
    """shouldRemoveCompleteCommitExpiredTransactionalIds / ...CompleteAbort... / shouldRemoveEmptyExpiredTransactionalIds /
    shouldNotRemoveOngoingTransactionalIds / shouldNotRemovePrepareAbortTransactionalIds /
    shouldNotRemovePrepareCommitTransactionalIds"""
    t.put(state, partitions={TP1} if state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT) else set())
    t.time.sleep(t.manager.config.transactional_id_expiration_ms + 1)
    t.manager.remove_expired_transactional_ids()
    assert (t.metadata() is None) is removed
    if removed:
        assert t.records()[-1][1:] == (key_bytes(TXN_ID), None)


def test_not_remove_expired_transactional_ids_if_log_append_fails(t):
    """shouldNotRemoveExpiredTransactionalIdsIfLogAppendFails"""
    t.put(S.COMPLETE_COMMIT)
    t.time.sleep(t.manager.config.transactional_id_expiration_ms + 1)
    t.log.error = Errors.NOT_ENOUGH_REPLICAS
    t.manager.remove_expired_transactional_ids()
    md = t.metadata()
    assert md is not None and md.pending_state is None


def test_only_consider_transactions_in_the_ongoing_state_to_abort(t):
    """shouldOnlyConsiderTransactionsInTheOngoingStateToAbort"""
    ids = [tid for tid in (f"id{i}" for i in range(500)) if t.coordinator.partition_for(tid) == t.txn_partition][:6]
    for tid, state in zip(ids, [S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT, S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY]):
        t.put(state, txn_id=tid, start=t.time.milliseconds(),
              partitions={TP1} if state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT) else set())
    t.time.sleep(TXN_TIMEOUT + 1)
    assert [x.transactional_id for x in t.manager.timed_out_transactions()] == [ids[0]]


def test_partition_load_metric(t):
    """testPartitionLoadMetric"""
    write(t, S.EMPTY)
    loads = t.manager.loads
    reload(t)
    snap = t.coordinator.snapshot()
    assert snap.partition_loads == loads + 1 and snap.partitions_owned == 1
    assert snap.transactions_by_state["Empty"] == 1 and set(snap.transactions_by_state) == {s.state_name for s in S}


# --------------------------------------------------------------------------- TransactionMarkerChannelManagerTest
def _prepare(t: TxnHarness, commit: bool = True, partitions=frozenset({TP1, TP2})):
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions=set(partitions))
    assert t.end_txn(10, 1, commit) == Errors.NONE


def test_generate_empty_map_when_no_requests_outstanding(t):
    """shouldGenerateEmptyMapWhenNoRequestsOutstanding"""
    assert t.channel.send_pending() == 0 and t.sender.calls == []


def test_generate_request_per_partition_per_broker(t):
    """shouldGenerateRequestPerPartitionPerBroker: two transactions, markers batched per leader."""
    t.sender.leaders[("topic1", 2)] = 1
    other = next(tid for tid in (f"o{i}" for i in range(500)) if t.coordinator.partition_for(tid) == t.txn_partition)
    t.put(S.ONGOING, producer_id=10, epoch=1, partitions={TP1, TP2})
    t.put(S.ONGOING, producer_id=11, epoch=1, partitions={("topic1", 2)}, txn_id=other)
    assert t.end_txn(10, 1, True) == Errors.NONE
    assert t.end_txn(11, 1, False, txn_id=other) == Errors.NONE
    t.channel.send_pending()
    by_broker = {b: sorted((e.producer_id, e.partitions) for e in es) for b, es, _ in t.sender.calls}
    assert by_broker == {1: [(10, (TP1,)), (11, (("topic1", 2),))], 2: [(10, (TP2,))]}


def test_skip_send_markers_when_leader_not_found(t):
    """shouldSkipSendMarkersWhenLeaderNotFound: the partition is gone: dropped from the transaction."""
    del t.sender.leaders[TP2]
    _prepare(t)
    t.channel.send_pending()
    assert [e.partitions for _, es, _ in t.sender.calls for e in es] == [(TP1,)]
    t.sender.respond_all()
    assert t.metadata().state is S.COMPLETE_COMMIT


def test_save_for_later_when_leader_unknown_but_not_available(t):
    """shouldSaveForLaterWhenLeaderUnknownButNotAvailable"""
    t.sender.leaders[TP2] = -1
    _prepare(t)
    t.channel.send_pending()
    assert t.channel.queue_size() == 1
    t.sender.respond_all()
    assert t.metadata().state is S.PREPARE_COMMIT
    t.sender.leaders[TP2] = 2
    t.channel.send_pending()
    t.sender.respond_all()
    assert t.metadata().state is S.COMPLETE_COMMIT


def test_remove_markers_for_txn_partition_when_partition_emigrated(t):
    """shouldRemoveMarkersForTxnPartitionWhenPartitionEmigrated"""
    _prepare(t)
    t.channel.remove_markers_for_txn_topic_partition(t.txn_partition)
    assert t.channel.send_pending() == 0 and t.channel.pending_completion_count() == 0


def test_abort_append_to_log_on_end_txn_when_not_coordinator_error(t):
    """shouldAbortAppendToLogOnEndTxnWhenNotCoordinatorError"""
    _prepare(t)
    t.channel.send_pending()
    t.log.error = Errors.NOT_LEADER_OR_FOLLOWER
    t.sender.respond_all()
    md = t.metadata()
    assert md.state is S.PREPARE_COMMIT and md.pending_state is None
    t.channel.send_pending()
    assert t.sender.calls == []


def test_retry_append_to_log_on_end_txn_when_coordinator_not_available_error(t):
    """shouldRetryAppendToLogOnEndTxnWhenCoordinatorNotAvailableError"""
    _prepare(t)
    t.channel.send_pending()
    t.log.error = Errors.NOT_ENOUGH_REPLICAS
    t.sender.respond_all()
    assert t.metadata().pending_state is S.COMPLETE_COMMIT
    t.log.error = Errors.NONE
    t.channel.send_pending()
    assert t.metadata().state is S.COMPLETE_COMMIT


def test_only_write_txn_completion_once(t):
    """shouldOnlyWriteTxnCompletionOnce"""
    _prepare(t)
    t.channel.send_pending()
    appends = t.log.appends
    calls = list(t.sender.calls)
    t.sender.calls.clear()
    for _, entries, cb in calls:
        cb([{tp: Errors.NONE for tp in e.partitions} for e in entries])
    t.channel.maybe_write_txn_completion(TXN_ID)
    assert t.log.appends == appends + 1


# --------------------------------------------------------------------------- completion handler
@pytest.mark.parametrize("error", [Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER,
                                   Errors.NOT_ENOUGH_REPLICAS, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                   Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR])
def test_retry_partition_on_retriable_error(t, error):
    """shouldRetryPartitionWhenUnknownTopicOrPartitionError / ...NotLeaderOrFollowerError /
    ...NotEnoughReplicasError / ...NotEnoughReplicasAfterAppendError / ...KafkaStorageError"""
    _prepare(t, partitions={TP1})
    t.channel.send_pending()
    t.sender.respond_all(error)
    assert t.metadata().topic_partitions == {TP1} and t.channel.queue_size() == 1
    t.channel.send_pending()
    t.sender.respond_all()
    assert t.metadata().state is S.COMPLETE_COMMIT


def test_re_enqueue_partitions_when_broker_disconnected(t):
    """shouldReEnqueuePartitionsWhenBrokerDisconnected"""
    _prepare(t, partitions={TP1})
    t.channel.send_pending()
    [(_, _, cb)] = t.sender.calls
    t.sender.calls.clear()
    cb(None)
    assert t.channel.queue_size() == 1
    t.channel.send_pending()
    t.sender.respond_all()
    assert t.metadata().state is S.COMPLETE_COMMIT


@pytest.mark.parametrize("error", [Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED])
def test_complete_delayed_operation_when_fenced(t, error):
    """shouldCompleteDelayedOperationWhenInvalidProducerEpoch / ...WhenCoordinatorEpochFenced:
    sending stops, the transaction stays prepared for its newer owner."""
    _prepare(t, partitions={TP1})
    t.channel.send_pending()
    t.sender.respond_all(error)
    assert t.channel.pending_completion_count() == 0 and t.metadata().state is S.PREPARE_COMMIT


def test_complete_delayed_operation_when_coordinator_epoch_changed(t):
    """shouldCompleteDelayedOperationWhenCoordinatorEpochChanged / ...WhenNotCoordinator"""
    _prepare(t, partitions={TP1})
    t.channel.send_pending()
    calls = list(t.sender.calls)
    t.sender.calls.clear()
    t.coordinator.on_resigned(t.txn_partition)
    for _, entries, cb in calls:
        cb([{tp: Errors.NONE for tp in e.partitions} for e in entries])
    assert t.channel.pending_completion_count() == 0


def test_remove_partition_on_unsupported_for_message_format(t):
    """shouldRemoveTopicPartitionFromWaitingSetOnUnsupportedForMessageFormat"""
    _prepare(t, partitions={TP1})
    t.channel.send_pending()
    t.sender.respond_all(Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT)
    assert t.metadata().state is S.COMPLETE_COMMIT


def test_loaded_records_read_back(t):
    """Every state written while the coordinator works reads back as the same metadata."""
    r = t.init_pid()
    t.add_partitions(r.producer_id, r.producer_epoch, {TP1, TP2})
    before = t.metadata()
    state = (before.state, before.producer_id, before.producer_epoch, set(before.topic_partitions), before.txn_start_timestamp)
    reload(t, 9)
    after = t.metadata()
    assert (after.state, after.producer_id, after.producer_epoch, after.topic_partitions, after.txn_start_timestamp) == state
    assert read_value(TXN_ID, t.records()[-1][2]).state is S.ONGOING


def test_partition_marked_loading_before_its_load_starts(t):
    """A new leader whose HW has not caught up yet (the broker calls ``on_loading`` then, and
    ``on_elected`` once it can read): COORDINATOR_LOAD_IN_PROGRESS in between, not NOT_COORDINATOR;
    a newer epoch replaces an older mark."""
    t.put(S.EMPTY)
    t.coordinator.on_resigned(t.txn_partition)
    t.coordinator.on_loading(t.txn_partition, 3)
    t.coordinator.on_loading(t.txn_partition, 4)
    assert t.manager.get_transaction_state(TXN_ID)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    t.coordinator.on_elected(t.txn_partition, 4)
    assert t.manager.get_transaction_state(TXN_ID) == (Errors.NONE, None)
    assert not t.manager.is_loading()
