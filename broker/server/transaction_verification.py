"""Transaction verification (KIP-890): a transactional batch that would open its producer's
transaction on a partition is checked with the transaction coordinator before it is appended.

Part 1 (on by default since Kafka 3.6): the partition hands out a ``VerificationGuard``,
``ReplicaManager.verify_transaction`` (transactional id, producer id, epoch, partition) -> error
code asks the coordinator whether the partition is in the producer's ongoing transaction, and the
append carries the guard, so a batch verified before its transaction ended cannot open a new one
after the marker. With ``transaction.partition.verification.enable=false`` the guard is taken
without asking. Part 2 (transaction version 2, Produce v12+ ``add_partition``): the coordinator is
asked to add the partition instead (``ReplicaManager.add_to_transaction``), whether or not
verification is enabled. Coordinator errors reach the producer as Kafka's ``ReplicaManager``
translates them (``verification_error_for_produce``).

``TransactionVerifier`` is both questions against the cluster: it finds the transaction
coordinator of the transactional id (the live leader of its ``__transaction_state`` partition)
and asks it. Difference from Kafka on purpose: the question is an in-process call to that
broker's ``TransactionCoordinator`` (registered on its ``BrokerInfo``), not an inter-broker
AddPartitionsToTxn v4 ``VerifyOnly`` request sent by ``AddPartitionsToTxnManager``; the answers
are the same.

Locking: no state of its own.
"""
from __future__ import annotations

import struct
import threading
import time
from typing import TYPE_CHECKING, Callable

from kafka_emu.broker.storage.log_validator import CONTROL_BIT, TRANSACTIONAL_BIT
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction import TRANSACTION_STATE_TOPIC
from kafka_emu.coordinator.transaction.transaction_coordinator import TV_2
from kafka_emu.coordinator.transaction.transaction_log import partition_for

if TYPE_CHECKING:
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.coordinator.transaction import TransactionCoordinator

TopicPartition = tuple[str, int]
# (transactional id, producer id, producer epoch, partition) -> error code
VerifyTransaction = Callable[[str, int, int, TopicPartition], int]
_PRODUCER = struct.Struct(">qh")   # producer id and epoch, at byte 43 of a batch header
# Coordinator answers a producer cannot act on, turned into one it retries (Kafka's
# ReplicaManager.handleProduceAppend); CONCURRENT_TRANSACTIONS too under transaction version 1
# (a transaction version 2 producer retries it itself).
_RETRIABLE_AS_NOT_ENOUGH_REPLICAS = frozenset({
    Errors.NETWORK_EXCEPTION, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_COORDINATOR})


def no_transaction_coordinator(transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition) -> int:
    """The default ``verify_transaction`` of a broker without a transaction coordinator: no
    transaction is ongoing anywhere, so no partition is in one."""
    return Errors.INVALID_TXN_STATE


def transactional_producer(data: bytes) -> tuple[int, int] | None:
    """(producer id, epoch) when the first batch of ``data`` is a transactional data batch."""
    if len(data) < 61 or data[22] & (TRANSACTIONAL_BIT | CONTROL_BIT) != TRANSACTIONAL_BIT:
        return None
    producer_id, producer_epoch = _PRODUCER.unpack_from(data, 43)
    return producer_id, producer_epoch


def verification_error_for_produce(code: int, transaction_abortable_supported: bool,
                                   add_partition: bool = False) -> int:
    """A coordinator's verification (or, ``add_partition``, transaction version 2 add) answer as
    the producer gets it (Kafka's ``AddPartitionsToTxnManager`` and
    ``ReplicaManager.handleProduceAppend``)."""
    if code == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    if code == Errors.TRANSACTION_ABORTABLE and not transaction_abortable_supported:
        return Errors.INVALID_TXN_STATE
    if code in _RETRIABLE_AS_NOT_ENOUGH_REPLICAS or (code == Errors.CONCURRENT_TRANSACTIONS and not add_partition):
        return Errors.NOT_ENOUGH_REPLICAS
    return code


class TransactionVerifier:
    """``ReplicaManager.verify_transaction`` (called) and ``add_to_transaction`` (``add``)
    against the cluster's transaction coordinators.

    ``add`` is transaction version 2's implicit add (Kafka's AddPartitionsToTxn v4+ with
    ``VerifyOnly=false``, sent by ``AddPartitionsToTxnManager``): the coordinator appends the
    partition to the transaction and ``add`` waits for that write, up to ``request_timeout_ms``
    (then NETWORK_EXCEPTION, which the producer retries). CONCURRENT_TRANSACTIONS (the previous
    transaction's markers are still being written) is asked again every ``retry_backoff_ms``
    until ``retry_backoff_max_ms`` (capped by the request timeout) have passed, as Kafka's
    ``ReplicaManager`` does, then returned. The wait blocks the calling request handler thread
    (Kafka parks the request and resumes it on a handler thread)."""

    def __init__(self, metadata: MetadataStore, num_txn_partitions: int, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 20, retry_backoff_max_ms: int = 100) -> None:
        self.metadata = metadata
        self.num_txn_partitions = num_txn_partitions
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_timeout_ms = min(retry_backoff_max_ms, request_timeout_ms)

    def _coordinator(self, transactional_id: str) -> TransactionCoordinator | None:
        state = self.metadata.partition_state(TRANSACTION_STATE_TOPIC,
                                              partition_for(transactional_id, self.num_txn_partitions))
        if state is None or state.leader < 0 or not self.metadata.is_live(state.leader):
            return None
        info = self.metadata.broker(state.leader)
        coordinator = info.transaction_coordinator if info is not None else None
        return coordinator if coordinator is not None and coordinator.is_active() else None

    def __call__(self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition) -> int:
        coordinator = self._coordinator(transactional_id)
        if coordinator is None:
            return Errors.COORDINATOR_NOT_AVAILABLE
        return coordinator.handle_verify_partitions_in_transaction(
            transactional_id, producer_id, producer_epoch, {tp})[tp]

    def add(self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition) -> int:
        deadline = time.monotonic() + self.retry_timeout_ms / 1000
        while True:
            code = self._add_once(transactional_id, producer_id, producer_epoch, tp)
            if code != Errors.CONCURRENT_TRANSACTIONS or time.monotonic() >= deadline:
                return code
            time.sleep(self.retry_backoff_ms / 1000)

    def _add_once(self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition) -> int:
        coordinator = self._coordinator(transactional_id)
        if coordinator is None:
            return Errors.COORDINATOR_NOT_AVAILABLE
        answered = threading.Event()
        answer: list[int] = []

        def on_added(error: int) -> None:
            answer.append(error)
            answered.set()

        coordinator.handle_add_partitions_to_transaction(transactional_id, producer_id, producer_epoch, {tp},
                                                         on_added, client_transaction_version=TV_2)
        if not answered.wait(self.request_timeout_ms / 1000):
            return Errors.NETWORK_EXCEPTION
        return answer[0]
