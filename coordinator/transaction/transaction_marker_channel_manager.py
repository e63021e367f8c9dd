"""TransactionMarkerChannelManager: writes a finished transaction's COMMIT/ABORT markers to every
partition of the transaction, then its CompleteCommit/CompleteAbort record (Kafka's
``TransactionMarkerChannelManager`` and ``TransactionMarkerRequestCompletionHandler``).

Algorithm. ``add_txn_markers_to_send`` records the transaction as pending completion and groups
its partitions by current leader (``TxnMarkerSender.partition_leader``): one ``TxnMarkerEntry``
per (transaction, leader) goes into that broker's queue; a partition whose topic no longer exists
is dropped from the transaction (Kafka treats it as deleted); one without a live leader waits in
the unknown-broker queue. The sender thread drains each broker's queue into one
``send_markers`` call (Kafka's WriteTxnMarkers request per destination). Per partition answer:
NONE removes the partition from the transaction; NOT_LEADER_OR_FOLLOWER,
UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT and
KAFKA_STORAGE_ERROR re-queue it through the unknown-broker queue (its leader is looked up again
after ``retry_backoff_ms``); INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED give up on
the transaction (a newer coordinator or producer owns it); UNSUPPORTED_FOR_MESSAGE_FORMAT and
UNSUPPORTED_VERSION drop the partition; anything else is a bug and is logged, the partition
retried. An unreachable broker re-queues the whole entry. Markers of a transaction whose
coordinator epoch changed, or whose partition this broker no longer leads, are dropped.
When a pending transaction has no partition left, the Complete* transition is appended (retried
on COORDINATOR_NOT_AVAILABLE, dropped on NOT_COORDINATOR).

The coordinator never imports ``broker``: leaders are looked up and markers delivered through the
``TxnMarkerSender`` the broker injects (in-process WriteTxnMarkers to the leader's replica manager).

Locking: ``_cond`` guards the queues, ``_pending`` and ``_append_retries``; it is never held
while calling the sender, the state manager or a metadata lock (each metadata's lock is taken on
its own, as in Kafka's ``txnMetadata.inLock``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import structlog

from kafka_emu.common import errors
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from kafka_emu.coordinator.transaction.transaction_state_manager import TransactionStateManager
from kafka_emu.coordinator.txn_marker import TxnMarkerEntry
from kafka_emu.timer.time import Time

_log = structlog.get_logger("coordinator.transaction_marker_channel_manager")

TopicPartition = tuple[str, int]
PartitionErrors = dict[TopicPartition, int]

RETRIABLE_MARKER_ERRORS = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR,
})
NO_LEADER = -1


class TxnMarkerSender(Protocol):
    """The broker's side of the channel."""

    def partition_leader(self, tp: TopicPartition) -> int | None:
        """The live leader's broker id, ``NO_LEADER`` (-1) while it has none, None if the
        partition does not exist."""
        ...

    def send_markers(self, broker_id: int, entries: Sequence[TxnMarkerEntry],
                     callback: Callable[[list[PartitionErrors] | None], None]) -> None:
        """Deliver the entries to ``broker_id``; ``callback`` gets one {partition: error} per
        entry (same order) once every marker is written or failed, or None if the broker could
        not be reached. It may run on any thread, at once or later."""
        ...


@dataclass(frozen=True, slots=True)
class PendingCompleteTxn:
    transactional_id: str
    coordinator_epoch: int
    txn_metadata: TransactionMetadata
    new_metadata: TxnTransitMetadata   # the Complete* transition written after the markers


@dataclass(frozen=True, slots=True)
class _QueuedMarker:
    txn_partition: int   # __transaction_state partition of the transaction
    transactional_id: str
    entry: TxnMarkerEntry


class TransactionMarkerChannelManager:
    def __init__(self, broker_id: int, state_manager: TransactionStateManager, sender: TxnMarkerSender,
                 time: Time, retry_backoff_ms: int = 100) -> None:
        self.broker_id = broker_id
        self.state_manager = state_manager
        self.sender = sender
        self.time = time
        self.retry_backoff_ms = retry_backoff_ms
        self._cond = threading.Condition()
        self._queues: dict[int, list[_QueuedMarker]] = {}
        self._unknown_broker: list[_QueuedMarker] = []
        self._pending: dict[str, PendingCompleteTxn] = {}
        self._append_retries: list[PendingCompleteTxn] = []
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.markers_sent = 0   # entries handed to the sender (metrics)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"TxnMarkerSenderThread-{self.broker_id}",
                                        daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        _log.info("marker_sender_started", broker_id=self.broker_id)
        try:
            while True:
                with self._cond:
                    if self._stopping:
                        break
                    if not self._has_ready_work():
                        timeout = self.retry_backoff_ms / 1000 if self._has_retry_work() else 1.0
                        self._cond.wait(timeout)
                        if self._stopping:
                            break
                try:
                    self.send_pending()
                except Exception:
                    _log.exception("marker_send_round_failed", broker_id=self.broker_id)
        finally:
            _log.info("marker_sender_stopped", broker_id=self.broker_id)

    def _has_ready_work(self) -> bool:
        return any(self._queues.values())

    def _has_retry_work(self) -> bool:
        return bool(self._unknown_broker) or bool(self._append_retries)

    # ------------------------------------------------------------------ metrics
    def queue_size(self) -> int:
        """Markers waiting to be sent (Kafka's ``UnknownDestinationQueueSize`` + ``LogAppendRetryQueueSize``
        + per-broker queues)."""
        with self._cond:
            return sum(len(q) for q in self._queues.values()) + len(self._unknown_broker)

    def pending_completion_count(self) -> int:
        with self._cond:
            return len(self._pending)

    def is_pending(self, transactional_id: str) -> bool:
        with self._cond:
            return transactional_id in self._pending

    # ------------------------------------------------------------------ enqueue
    def add_txn_markers_to_send(self, coordinator_epoch: int, commit: bool, txn_metadata: TransactionMetadata,
                                new_metadata: TxnTransitMetadata) -> None:
        """Send the markers of ``txn_metadata`` (in PrepareCommit/PrepareAbort, with
        ``new_metadata`` its prepared Complete* transition)."""
        tid = txn_metadata.transactional_id
        pending = PendingCompleteTxn(tid, coordinator_epoch, txn_metadata, new_metadata)
        with self._cond:
            self._pending[tid] = pending
        with txn_metadata.lock:
            pid, epoch, partitions = txn_metadata.producer_id, txn_metadata.producer_epoch, set(txn_metadata.topic_partitions)
        self.add_txn_markers_to_broker_queue(pid, epoch, commit, pending, partitions)
        self.maybe_write_txn_completion(tid)

    def add_txn_markers_to_broker_queue(self, producer_id: int, producer_epoch: int, commit: bool,
                                        pending: PendingCompleteTxn, partitions: set[TopicPartition]) -> None:
        by_leader: dict[int, list[TopicPartition]] = {}
        deleted: list[TopicPartition] = []
        for tp in sorted(partitions):
            leader = self.sender.partition_leader(tp)
            if leader is None:
                deleted.append(tp)
            else:
                by_leader.setdefault(leader, []).append(tp)
        txn_partition = self.state_manager.partition_for(pending.transactional_id)
        with self._cond:
            for leader, tps in by_leader.items():
                queued = _QueuedMarker(txn_partition, pending.transactional_id,
                                       TxnMarkerEntry(producer_id, producer_epoch, pending.coordinator_epoch,
                                                      commit, tuple(tps)))
                if leader == NO_LEADER:
                    self._unknown_broker.append(queued)
                else:
                    self._queues.setdefault(leader, []).append(queued)
            self._cond.notify_all()
        if deleted:
            self._remove_deleted_partitions(pending, deleted)

    def _remove_deleted_partitions(self, pending: PendingCompleteTxn, tps: list[TopicPartition]) -> None:
        error, em = self.state_manager.get_transaction_state(pending.transactional_id)
        if error != Errors.NONE or em is None or em.coordinator_epoch != pending.coordinator_epoch:
            self.remove_markers_for_txn(pending.transactional_id)
            return
        _log.info("marker_partitions_deleted", transactional_id=pending.transactional_id, partitions=tps)
        md = em.transaction_metadata
        with md.lock:
            for tp in tps:
                md.remove_partition(tp)
        self.maybe_write_txn_completion(pending.transactional_id)

    # ------------------------------------------------------------------ completion
    def maybe_write_txn_completion(self, transactional_id: str) -> None:
        with self._cond:
            pending = self._pending.get(transactional_id)
        if pending is None:
            return
        with pending.txn_metadata.lock:
            has_pending_markers = bool(pending.txn_metadata.topic_partitions)
        if has_pending_markers:
            return
        with self._cond:
            if self._pending.get(transactional_id) is not pending:
                return
            del self._pending[transactional_id]
        self._write_txn_completion(pending)

    def _write_txn_completion(self, pending: PendingCompleteTxn) -> None:
        def on_append(error: int) -> None:
            if error == Errors.NONE:
                _log.debug("txn_completed", transactional_id=pending.transactional_id,
                           state=pending.new_metadata.txn_state.state_name)
            elif error in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS):
                _log.info("txn_completion_dropped", transactional_id=pending.transactional_id,
                          error=errors.name(error))
            elif error == Errors.COORDINATOR_NOT_AVAILABLE:
                _log.warning("txn_completion_retry", transactional_id=pending.transactional_id)
                with self._cond:
                    self._append_retries.append(pending)
                    self._cond.notify_all()
            else:
                _log.error("txn_completion_failed", transactional_id=pending.transactional_id,
                           error=errors.name(error))

        self.state_manager.append_transaction_to_log(
            pending.transactional_id, pending.coordinator_epoch, pending.new_metadata, on_append,
            retry_on_error=lambda e: e == Errors.COORDINATOR_NOT_AVAILABLE)

    # ------------------------------------------------------------------ removal
    def remove_markers_for_txn(self, transactional_id: str) -> None:
        with self._cond:
            self._pending.pop(transactional_id, None)

    def remove_markers_for_txn_topic_partition(self, txn_partition: int) -> None:
        """This broker resigned as coordinator of ``__transaction_state-<txn_partition>``."""
        with self._cond:
            for broker, queue in self._queues.items():
                self._queues[broker] = [q for q in queue if q.txn_partition != txn_partition]
            self._unknown_broker = [q for q in self._unknown_broker if q.txn_partition != txn_partition]
            for tid in [t for t in self._pending if self.state_manager.partition_for(t) == txn_partition]:
                del self._pending[tid]
            self._append_retries = [p for p in self._append_retries
                                    if self.state_manager.partition_for(p.transactional_id) != txn_partition]

    # ------------------------------------------------------------------ sending
    def send_pending(self) -> int:
        """One round (Kafka's ``generateRequests`` + send): re-resolve the unknown-broker queue,
        retry completion appends, hand every broker's queue to the sender. Returns the number of
        entries sent. Called by the sender thread; tests call it directly."""
        with self._cond:
            unknown, self._unknown_broker = self._unknown_broker, []
            retries, self._append_retries = self._append_retries, []
        for queued in unknown:
            pending = self._pending_for(queued)
            if pending is not None:
                e = queued.entry
                self.add_txn_markers_to_broker_queue(e.producer_id, e.producer_epoch, e.committed, pending,
                                                     set(e.partitions))
        for pending in retries:
            self._write_txn_completion(pending)
        with self._cond:
            drained = {b: q for b, q in self._queues.items() if q}
            for b in drained:
                self._queues[b] = []
        sent = 0
        for broker, items in drained.items():
            sent += len(items)
            self.markers_sent += len(items)
            self.sender.send_markers(broker, [q.entry for q in items],
                                     lambda results, items=items: self._on_response(items, results))
        return sent

    def _pending_for(self, queued: _QueuedMarker) -> PendingCompleteTxn | None:
        with self._cond:
            pending = self._pending.get(queued.transactional_id)
        if pending is None or pending.coordinator_epoch != queued.entry.coordinator_epoch:
            return None
        return pending

    def _on_response(self, items: list[_QueuedMarker], results: list[PartitionErrors] | None) -> None:
        """Kafka's ``TransactionMarkerRequestCompletionHandler.onComplete``."""
        for i, queued in enumerate(items):
            try:
                self._handle_entry_response(queued, None if results is None else results[i])
            except Exception:
                _log.exception("marker_response_failed", transactional_id=queued.transactional_id)

    def _handle_entry_response(self, queued: _QueuedMarker, partition_errors: PartitionErrors | None) -> None:
        tid, entry = queued.transactional_id, queued.entry
        error, em = self.state_manager.get_transaction_state(tid)
        if error != Errors.NONE or em is None or em.coordinator_epoch != entry.coordinator_epoch:
            _log.info("marker_response_dropped", transactional_id=tid, error=errors.name(error))
            self.remove_markers_for_txn(tid)
            return
        pending = self._pending_for(queued)
        if pending is None:
            return
        if partition_errors is None:   # broker unreachable: send everything again
            self._requeue(pending, entry, set(entry.partitions))
            return
        md = em.transaction_metadata
        retry: set[TopicPartition] = set()
        abort_sending = False
        with md.lock:
            for tp in entry.partitions:
                code = partition_errors.get(tp, Errors.UNKNOWN_SERVER_ERROR)
                if code == Errors.NONE:
                    md.remove_partition(tp)
                elif code in RETRIABLE_MARKER_ERRORS:
                    retry.add(tp)
                elif code in (Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED):
                    abort_sending = True
                elif code in (Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Errors.UNSUPPORTED_VERSION):
                    md.remove_partition(tp)
                else:
                    _log.error("unexpected_marker_error", transactional_id=tid, topic=tp[0], partition=tp[1],
                               error=errors.name(code))
                    retry.add(tp)
        if abort_sending:
            _log.info("marker_sending_aborted", transactional_id=tid)
            self.remove_markers_for_txn(tid)
            return
        if retry:
            self._requeue(pending, entry, retry)
        self.maybe_write_txn_completion(tid)

    def _requeue(self, pending: PendingCompleteTxn, entry: TxnMarkerEntry, partitions: set[TopicPartition]) -> None:
        """Retry later through the unknown-broker queue, so the leader is looked up again after
        the back-off."""
        with self._cond:
            self._unknown_broker.append(_QueuedMarker(
                self.state_manager.partition_for(pending.transactional_id), pending.transactional_id,
                TxnMarkerEntry(entry.producer_id, entry.producer_epoch, entry.coordinator_epoch,
                               entry.committed, tuple(sorted(partitions)))))
            self._cond.notify_all()
