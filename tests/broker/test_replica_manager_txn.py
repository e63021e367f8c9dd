"""ReplicaManager with transactions: Kafka's ReplicaManagerTest and KafkaApisTest transactional
cases (tag 4.0.0) ported on the threadless harness (MockTime/MockTimer): verification of
transactional produces (KIP-890 part 1), read_committed fetches limited at the LSO with their
aborted transactions, DelayedFetch completing on LSO movement, and write_txn_markers."""
from dataclasses import replace

import pytest

from kafka_emu.broker.server.fetch_params import ISOLATION_TXN_COMMITTED
from kafka_emu.broker.storage.record_batch import build_batch, iter_records
from kafka_emu.broker.server.transaction_verification import no_transaction_coordinator
from kafka_emu.broker.storage.transaction_index import AbortedTxn
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.txn_marker import TxnMarkerEntry

from broker_harness import TP, Harness

pytestmark = pytest.mark.timeout(30)

TXN_ID = "txn-a"


class Verifier:
    """A transaction coordinator stand-in for ``ReplicaManager.verify_transaction``: the
    partitions each producer added to its transaction."""

    def __init__(self, answer: int = Errors.NONE) -> None:
        self.answer = answer
        self.calls: list[tuple[str, int, int, tuple[str, int]]] = []

    def __call__(self, transactional_id, producer_id, producer_epoch, tp):
        self.calls.append((transactional_id, producer_id, producer_epoch, tp))
        return self.answer


def txn_produce(h, pid=7, epoch=0, seq=0, n=1, acks=1, txn_id=TXN_ID, abortable=False):
    box = {}
    h.rm.append_records(1000, acks, {TP: build_batch([(b"k", b"t")] * n, producer_id=pid, producer_epoch=epoch,
                                                     base_sequence=seq, attributes=0x10)},
                        lambda st: box.update(st), transactional_id=txn_id,
                        transaction_abortable_supported=abortable)
    return box[TP] if TP in box else None


def write_markers(h, *markers):
    box = []
    h.rm.write_txn_markers(list(markers), box.append)
    return box


def replicate(h):
    """Both followers fetch up to the leader's LEO (twice: the second fetch carries the HW)."""
    leo = h.partition.log.log_end_offset
    h.follower_fetch(1, leo)
    h.follower_fetch(2, leo)
    h.drain()


def test_default_verifier_refuses_transactional_batches():
    """Without a transaction coordinator no transaction is ongoing: INVALID_TXN_STATE (issue 13)."""
    h = Harness()
    assert h.rm.verify_transaction is no_transaction_coordinator
    st = txn_produce(h)
    assert st.error == Errors.INVALID_TXN_STATE and h.partition.log.log_end_offset == 0


def test_transaction_verification_flow():
    """ReplicaManagerTest.testTransactionVerificationFlow: the first transactional batch of a
    producer on a partition is verified; once its transaction is open here, later ones are not."""
    h = Harness()
    h.rm.verify_transaction = verifier = Verifier()
    assert txn_produce(h, seq=0).error == Errors.NONE
    assert verifier.calls == [(TXN_ID, 7, 0, TP)]
    assert txn_produce(h, seq=1).error == Errors.NONE
    assert len(verifier.calls) == 1
    assert h.partition.log.producers[7].current_txn_first_offset == 0


def test_verification_for_transactional_partitions_only():
    """ReplicaManagerTest.testVerificationForTransactionalPartitionsOnly: idempotent batches of a
    transactional request's other partitions are not verified."""
    h = Harness()
    h.rm.verify_transaction = verifier = Verifier(Errors.INVALID_TXN_STATE)
    box = {}
    h.rm.append_records(1000, 1, {TP: build_batch([(b"k", b"i")], producer_id=7, producer_epoch=0,
                                                  base_sequence=0)}, box.update, transactional_id=TXN_ID)
    assert box[TP].error == Errors.NONE and verifier.calls == []


def test_exception_when_unverified_transaction_has_multiple_producer_ids():
    """ReplicaManagerTest.testExceptionWhenUnverifiedTransactionHasMultipleProducerIds."""
    h = Harness()
    info = h.metadata.create_topic("u", 1, 3)
    h.rm.apply_partition_states([replace(info.partitions[0], leader=0, replicas=(0, 1, 2), isr=(0, 1, 2))])
    h.rm.verify_transaction = Verifier()
    box = {}
    h.rm.append_records(1000, 1, {
        TP: build_batch([(b"k", b"t")], producer_id=7, producer_epoch=0, base_sequence=0, attributes=0x10),
        ("u", 0): build_batch([(b"k", b"t")], producer_id=8, producer_epoch=0, base_sequence=0, attributes=0x10)},
        box.update, transactional_id=TXN_ID)
    assert {st.error for st in box.values()} == {Errors.INVALID_PRODUCER_ID_MAPPING}


@pytest.mark.parametrize("coordinator_error, abortable, expected", [
    (Errors.PRODUCER_FENCED, False, Errors.INVALID_PRODUCER_EPOCH),
    (Errors.TRANSACTION_ABORTABLE, False, Errors.INVALID_TXN_STATE),
    (Errors.TRANSACTION_ABORTABLE, True, Errors.TRANSACTION_ABORTABLE),
    (Errors.COORDINATOR_NOT_AVAILABLE, False, Errors.NOT_ENOUGH_REPLICAS),
    (Errors.NOT_COORDINATOR, False, Errors.NOT_ENOUGH_REPLICAS),
    (Errors.COORDINATOR_LOAD_IN_PROGRESS, False, Errors.NOT_ENOUGH_REPLICAS),
    (Errors.CONCURRENT_TRANSACTIONS, False, Errors.NOT_ENOUGH_REPLICAS),
    (Errors.INVALID_PRODUCER_ID_MAPPING, False, Errors.INVALID_PRODUCER_ID_MAPPING),
])
def test_verification_error_conversions_tv1(coordinator_error, abortable, expected):
    """ReplicaManagerTest.testVerificationErrorConversionsTV1: coordinator answers as the
    producer gets them (TRANSACTION_ABORTABLE only for Produce v11+)."""
    h = Harness()
    h.rm.verify_transaction = Verifier(coordinator_error)
    st = txn_produce(h, abortable=abortable)
    assert st.error == expected and h.partition.log.log_end_offset == 0


def test_write_txn_markers_completes_transaction_and_lso():
    """KafkaApisTest.shouldAppendToLogOnWriteTxnMarkersWhenCorrectMagicVersion: the marker is
    appended with acks=-1 and answered once replicated; the LSO then passes the transaction."""
    h = Harness()
    h.rm.verify_transaction = Verifier()
    txn_produce(h, n=2)
    h.produce(1, acks=1)
    replicate(h)
    log = h.partition.log
    assert log.high_watermark == 3 and log.last_stable_offset == 0
    box = write_markers(h, TxnMarkerEntry(7, 0, 0, True, (TP,)))
    assert box == []                       # waiting for the ISR
    replicate(h)
    assert box == [{7: {TP: Errors.NONE}}]
    assert log.last_stable_offset == log.high_watermark == 4


def test_write_txn_markers_should_all_be_included_in_the_response():
    """KafkaApisTest.testWriteTxnMarkersShouldAllBeIncludedInTheResponse: every marker and
    partition is answered, unknown partitions with UNKNOWN_TOPIC_OR_PARTITION."""
    h = Harness(replicas=(0,))
    h.rm.verify_transaction = Verifier()
    txn_produce(h, pid=7)
    box = write_markers(h, TxnMarkerEntry(7, 0, 0, False, (TP, ("gone", 0))),
                        TxnMarkerEntry(9, 0, 0, True, (("gone", 1),)))
    assert box == [{7: {TP: Errors.NONE, ("gone", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION},
                    9: {("gone", 1): Errors.UNKNOWN_TOPIC_OR_PARTITION}}]
    assert h.partition.log.collect_aborted_transactions(0, 2) == [AbortedTxn(7, 0, 1, 2)]


def test_write_txn_markers_errors_per_partition():
    """Marker writes on a follower are NOT_LEADER_OR_FOLLOWER; a zombie coordinator is
    TRANSACTION_COORDINATOR_FENCED; an old producer epoch INVALID_PRODUCER_EPOCH."""
    h = Harness(replicas=(0,))
    h.rm.verify_transaction = Verifier()
    txn_produce(h, pid=7, epoch=2)
    assert write_markers(h, TxnMarkerEntry(7, 1, 0, True, (TP,))) == [{7: {TP: Errors.INVALID_PRODUCER_EPOCH}}]
    assert write_markers(h, TxnMarkerEntry(7, 2, 5, True, (TP,))) == [{7: {TP: Errors.NONE}}]
    txn_produce(h, pid=7, epoch=2, seq=1)
    assert write_markers(h, TxnMarkerEntry(7, 2, 4, True, (TP,))) == [
        {7: {TP: Errors.TRANSACTION_COORDINATOR_FENCED}}]
    h.become_follower()
    assert write_markers(h, TxnMarkerEntry(7, 2, 5, True, (TP,))) == [{7: {TP: Errors.NOT_LEADER_OR_FOLLOWER}}]


def test_write_txn_markers_on_offsets_partitions_complete_group_transactions():
    """KafkaApisTest.testHandleWriteTxnMarkersRequestWithOldGroupCoordinator: markers landing on
    ``__consumer_offsets`` partitions call the group coordinator's scheduleHandleTxnCompletion
    with the partitions that succeeded."""
    h = Harness(replicas=(0,))
    info = h.metadata.create_topic("__consumer_offsets", 2, 1)
    h.rm.apply_partition_states([replace(st, leader=0, replicas=(0,), isr=(0,)) for st in info.partitions.values()])
    calls = []

    class Group:
        def schedule_handle_txn_completion(self, producer_id, partitions, is_commit):
            calls.append((producer_id, sorted(partitions), is_commit))

    h.rm.group_coordinator = Group()
    box = write_markers(h, TxnMarkerEntry(7, 0, 0, True, (("__consumer_offsets", 0), ("__consumer_offsets", 1),
                                                          ("__consumer_offsets", 9), TP)))
    assert box[0][7][("__consumer_offsets", 9)] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert calls == [(7, [0, 1], True)]


def test_read_committed_fetch_limited_at_lso():
    """ReplicaManagerTest.testReadCommittedFetchLimitedAtLSO: read_committed reads stop at the
    LSO, read_uncommitted ones at the HW; both carry the LSO."""
    h = Harness(replicas=(0,))
    h.rm.verify_transaction = Verifier()
    h.produce(2, acks=1)                  # 0-1
    txn_produce(h, n=2)                   # 2-3
    h.produce(1, acks=1)                  # 4
    committed = h.consumer_fetch(0, isolation=ISOLATION_TXN_COMMITTED)[0][1]
    assert [o for o, _, _ in iter_records(committed.records)] == [0, 1]
    assert committed.last_stable_offset == 2 and committed.high_watermark == 5
    assert committed.aborted_transactions == ()
    uncommitted = h.consumer_fetch(0)[0][1]
    assert [o for o, _, _ in iter_records(uncommitted.records)] == [0, 1, 2, 3, 4]
    assert uncommitted.last_stable_offset == 2 and uncommitted.aborted_transactions is None


def test_delayed_fetch_includes_aborted_transactions():
    """ReplicaManagerTest.testDelayedFetchIncludesAbortedTransactions: a read_committed fetch
    parked at the LSO completes when the abort marker moves it, with the aborted transaction."""
    h = Harness(replicas=(0,))
    h.rm.verify_transaction = Verifier()
    txn_produce(h, n=2)                   # 0-1
    parked = h.consumer_fetch(0, max_wait_ms=1000, isolation=ISOLATION_TXN_COMMITTED)
    assert parked == []
    write_markers(h, TxnMarkerEntry(7, 0, 0, False, (TP,)))   # 2: abort
    h.drain()
    result = parked[0][1]
    assert [o for o, _, _ in iter_records(result.records)] == [0, 1]   # data; the marker is a control batch
    assert result.aborted_transactions == (AbortedTxn(7, 0, 2, 3),)
    assert result.last_stable_offset == 3


def test_disabled_transaction_verification():
    """ReplicaManagerTest.testDisabledTransactionVerification: with
    transaction.partition.verification.enable=false a transactional batch opens its transaction
    without asking the coordinator."""
    h = Harness(**{"transaction.partition.verification.enable": False})
    h.rm.verify_transaction = verifier = Verifier(Errors.INVALID_TXN_STATE)
    assert txn_produce(h).error == Errors.NONE
    assert verifier.calls == [] and h.partition.log.producers[7].current_txn_first_offset == 0


def test_open_transaction_survives_leader_failover(make_cluster):
    """An open transaction replicated to the followers holds the LSO on the new leader after the
    old one stops; the coordinator's retried ABORT marker on the new leader ends it and lists it
    (the marker channel retrying NOT_LEADER_OR_FOLLOWER on the new leader, as Kafka's does)."""
    from cluster_support import wait_until

    c = make_cluster()
    c.create_topic("t", 1, 3)
    for server in c.servers.values():
        server.replica_manager.verify_transaction = Verifier()
    assert c.produce("t", 0, [(b"k", b"plain")]) == (Errors.NONE, 0)
    old = c.leader_of("t")
    box = {}
    c.broker(old).replica_manager.append_records(
        5000, -1, {TP: build_batch([(b"k", b"t")] * 2, producer_id=7, producer_epoch=0, base_sequence=0,
                                   attributes=0x10)}, box.update, transactional_id=TXN_ID)
    wait_until(lambda: TP in box, msg="transactional produce acknowledged")
    assert box[TP].error == Errors.NONE
    c.stop_broker(old)
    new = c.leader_of("t")
    assert new not in (old, -1)
    log = c.broker(new).partition("t", 0).log
    wait_until(lambda: log.high_watermark == 3, msg="HW on the new leader")
    assert log.last_stable_offset == 1 and log.producers[7].current_txn_first_offset == 1
    stale = []
    c.servers[[b for b in c.servers if b not in (old, new)][0]].replica_manager.write_txn_markers(
        [TxnMarkerEntry(7, 0, 0, False, (TP,))], stale.append)
    assert stale == [{7: {TP: Errors.NOT_LEADER_OR_FOLLOWER}}]
    done = []
    c.broker(new).replica_manager.write_txn_markers([TxnMarkerEntry(7, 0, 0, False, (TP,))], done.append)
    wait_until(lambda: done, msg="marker replicated")
    assert done == [{7: {TP: Errors.NONE}}]
    assert log.last_stable_offset == log.high_watermark == 4
    assert log.collect_aborted_transactions(0, 4) == [AbortedTxn(7, 1, 3, 4)]
