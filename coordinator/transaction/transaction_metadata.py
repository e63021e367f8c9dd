"""TransactionMetadata: one transactional id's state and Kafka's transaction state machine
(``kafka.coordinator.transaction.TransactionMetadata``).

A transition happens in two steps, so the in-memory state only ever shows what the log holds:
``prepare_*`` checks the move is legal, records the target in ``pending_state`` (which blocks
every other transition) and returns an immutable ``TxnTransitMetadata``; the caller appends it to
``__transaction_state`` (acks=-1) and, once the append succeeded, ``complete_transition_to``
checks the per-state invariants and applies it. A failed append clears ``pending_state``.
``PrepareEpochFence`` and ``Dead`` are never completed: a fence is at once followed by an abort
(which adopts the fenced epoch) and Dead ids are dropped from the cache instead.

Transaction version (KIP-890 part 2): ``client_transaction_version`` is the version of the
client's last AddPartitionsToTxn/EndTxn (2 for a TV2 client: EndTxn v5, or a partition added by
Produce v12 / TxnOffsetCommit v5), persisted with every record. With transaction version 2
(``supports_epoch_bump``) PrepareCommit/PrepareAbort bump the epoch (``last_producer_epoch``
keeps the one before, so a retry is recognised), an abort may start from Empty/Complete* (no
partition was added), and an epoch exhausted by the bump rotates the producer id:
PrepareX records ``next_producer_id`` and the Complete* transition moves to it at epoch 0.

Locking: ``lock`` (a reentrant ``GroupLock``, also the DelayedProduce operation lock of the
metadata's appends) guards every field; callers hold it around ``prepare_*`` and
``complete_transition_to``. Response callbacks queued with ``lock.defer`` run after release.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group_lock import GroupLock

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767

TopicPartition = tuple[str, int]


class IllegalTransactionStateError(Exception):
    """A transition the state machine forbids (Kafka's IllegalStateException): a coordinator bug."""


class TransactionState(Enum):
    """Kafka's ``TransactionState``: (id persisted in the log, name shown by the admin APIs)."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    def __init__(self, state_id: int, state_name: str) -> None:
        self.id = state_id
        self.state_name = state_name

    @property
    def valid_previous_states(self) -> frozenset["TransactionState"]:
        return _VALID_PREVIOUS[self]

    @property
    def is_expiration_allowed(self) -> bool:
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT,
                        TransactionState.COMPLETE_ABORT)

    @staticmethod
    def from_id(state_id: int) -> "TransactionState":
        for s in TransactionState:
            if s.id == state_id:
                return s
        raise ValueError(f"unknown transaction state id {state_id}")

    @staticmethod
    def from_name(name: str) -> "TransactionState | None":
        for s in TransactionState:
            if s.state_name == name:
                return s
        return None


S = TransactionState
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Empty/Complete* -> PrepareAbort: transaction version 2 aborts with no partition added
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


def supports_epoch_bump(transaction_version: int) -> bool:
    """Kafka's ``TransactionVersion.supportsEpochBump``: transaction version 2 and later."""
    return transaction_version >= 2


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka's ``TransactionMetadata.isEpochExhausted``: one bump is kept for fencing."""
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """What a transition writes to the log and, once written, applies (Kafka's TxnTransitMetadata)."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int = 0


class TransactionMetadata:
    def __init__(self, transactional_id: str, producer_id: int, previous_producer_id: int,
                 next_producer_id: int, producer_epoch: int, last_producer_epoch: int,
                 txn_timeout_ms: int, state: TransactionState, topic_partitions: set[TopicPartition],
                 txn_start_timestamp: int, txn_last_update_timestamp: int,
                 client_transaction_version: int = 0) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.previous_producer_id = previous_producer_id
        self.next_producer_id = next_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: set[TopicPartition] = set(topic_partitions)
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        self.client_transaction_version = client_transaction_version
        self.pending_state: TransactionState | None = None
        self.has_failed_epoch_fence = False
        self.lock = GroupLock()

    def __repr__(self) -> str:
        return (f"TransactionMetadata({self.transactional_id!r}, pid={self.producer_id}, "
                f"epoch={self.producer_epoch}, state={self.state.state_name}, "
                f"pending={self.pending_state.state_name if self.pending_state else None}, "
                f"partitions={sorted(self.topic_partitions)})")

    # ------------------------------------------------------------------ queries
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def _has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    def add_partitions(self, partitions: set[TopicPartition] | frozenset[TopicPartition]) -> None:
        self.topic_partitions |= partitions

    def remove_partition(self, tp: TopicPartition) -> None:
        if self.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            raise IllegalTransactionStateError(
                f"Transaction metadata's current state is {self.state.state_name}, and its pending "
                f"state is {self.pending_state}; removing partition {tp} is only legal while the "
                f"transaction's markers are written (PrepareCommit/PrepareAbort)")
        self.topic_partitions.discard(tp)

    # ------------------------------------------------------------------ prepare
    def prepare_fence_producer_epoch(self, bump: bool = True) -> TxnTransitMetadata:
        """PrepareEpochFence with the epoch bumped, unless an earlier fence write failed (then the
        in-memory epoch is already the fenced one). ``bump=False`` under transaction version 2,
        whose abort bumps the epoch itself: one bump in all, as Kafka does since its fix of the
        double bump that overflowed an epoch of 32766 (TransactionCoordinatorTest
        shouldHandleTimeoutAtEpochOverflowBoundaryCorrectly)."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransactionStateError(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence or not bump else self.producer_epoch + 1
        return self._prepare_transition_to(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
                                           self.txn_timeout_ms, frozenset(self.topic_partitions),
                                           self.txn_start_timestamp, self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: int | None,
                                         update_timestamp: int) -> tuple[int, TxnTransitMetadata | None]:
        """(Errors.NONE or PRODUCER_FENCED, transit to Empty with the epoch bumped). An expected
        epoch equal to ``last_producer_epoch`` is a retry of a bump whose answer was lost: the
        epoch stays."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransactionStateError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return Errors.PRODUCER_FENCED, None
        return Errors.NONE, self._prepare_transition_to(S.EMPTY, self.producer_id, next_epoch, last_epoch,
                                              new_txn_timeout_ms, frozenset(), -1, update_timestamp)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int,
                                     update_timestamp: int, record_last_epoch: bool) -> TxnTransitMetadata:
        if self._has_pending_transaction():
            raise IllegalTransactionStateError(
                f"Cannot rotate producer ids while a transaction is still pending ({self.state.state_name})")
        return self._prepare_transition_to(S.EMPTY, new_producer_id, 0,
                                           self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                                           new_txn_timeout_ms, frozenset(), -1, update_timestamp,
                                           prev_producer_id=self.producer_id)

    def prepare_add_partitions(self, added: set[TopicPartition], update_timestamp: int,
                               client_transaction_version: int = 0) -> TxnTransitMetadata:
        start = (update_timestamp if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
                 else self.txn_start_timestamp)
        return self._prepare_transition_to(S.ONGOING, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions | added), start, update_timestamp,
                                           client_transaction_version=client_transaction_version)

    def prepare_abort_or_commit(self, new_state: TransactionState, client_transaction_version: int,
                                next_producer_id: int, update_timestamp: int,
                                no_partition_added: bool = False) -> TxnTransitMetadata:
        """PrepareCommit/PrepareAbort. Transaction version 2 bumps the epoch (the caller made sure
        it does not overflow: ``next_producer_id`` is set when the bumped epoch is the last one);
        an abort with no partition added starts its transaction now."""
        if self.state is not S.ONGOING and not (no_partition_added and new_state is S.PREPARE_ABORT
                                                and supports_epoch_bump(client_transaction_version)):
            raise IllegalTransactionStateError(
                f"Preparing {new_state.state_name} from {self.state.state_name} is only a transaction "
                f"version 2 abort with no partition added")
        epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        if supports_epoch_bump(client_transaction_version):
            epoch, last_epoch = self.producer_epoch + 1, self.producer_epoch
        start = update_timestamp if no_partition_added else self.txn_start_timestamp
        return self._prepare_transition_to(new_state, self.producer_id, epoch, last_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions), start, update_timestamp,
                                           next_producer_id=next_producer_id,
                                           client_transaction_version=client_transaction_version)

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        """CompleteCommit/CompleteAbort. After a transaction version 2 epoch overflow the producer
        id becomes ``next_producer_id`` at epoch 0, ``last_producer_epoch`` staying the last epoch
        the client saw (Kafka's ``prepareComplete``)."""
        new_state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        producer_id, epoch, prev_producer_id = self.producer_id, self.producer_epoch, None
        if supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch, prev_producer_id = self.next_producer_id, 0, self.producer_id
        return self._prepare_transition_to(new_state, producer_id, epoch, self.last_producer_epoch,
                                           self.txn_timeout_ms, frozenset(), self.txn_start_timestamp,
                                           update_timestamp, prev_producer_id=prev_producer_id,
                                           next_producer_id=NO_PRODUCER_ID)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare_transition_to(S.DEAD, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                                           self.txn_start_timestamp, self.txn_last_update_timestamp)

    def _prepare_transition_to(self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int,
                               timeout_ms: int, partitions: frozenset[TopicPartition], start_ts: int,
                               update_ts: int, prev_producer_id: int | None = None,
                               next_producer_id: int | None = None,
                               client_transaction_version: int | None = None) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {state.state_name} while it already has a "
                f"pending state {self.pending_state.state_name}")
        if producer_id < 0:
            raise IllegalTransactionStateError(f"Illegal new producer id {producer_id}")
        # the epoch is -1 from creation until the first InitProducerId; only Dead may keep it
        if state is not S.DEAD and epoch < 0:
            raise IllegalTransactionStateError(f"Illegal new producer epoch {epoch}")
        if self.state not in state.valid_previous_states:
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {state.state_name} failed since the target "
                f"state {state.state_name} is not a valid previous state of the current state "
                f"{self.state.state_name}")
        transit = TxnTransitMetadata(
            producer_id, self.previous_producer_id if prev_producer_id is None else prev_producer_id,
            self.next_producer_id if next_producer_id is None else next_producer_id, epoch, last_epoch,
            timeout_ms, state, partitions, start_ts, update_ts,
            self.client_transaction_version if client_transaction_version is None else client_transaction_version)
        self.pending_state = state
        return transit

    # ------------------------------------------------------------------ complete
    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Apply a transition whose record is in the log (Kafka's ``completeTransitionTo``)."""
        to_state = self.pending_state
        if to_state is None:
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id} completing transaction state transition while "
                f"it does not have a pending state")
        if to_state is not transit.txn_state:
            self._transition_failure(transit)
        if to_state is S.EMPTY:   # InitProducerId
            if ((self.producer_epoch != transit.producer_epoch and not self._valid_producer_epoch_bump(transit))
                    or transit.topic_partitions or transit.txn_start_timestamp != -1):
                self._transition_failure(transit)
        elif to_state is S.ONGOING:   # AddPartitions
            if (not self._valid_producer_epoch(transit)
                    or not self.topic_partitions <= transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms):
                self._transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.add_partitions(transit.topic_partitions)
        elif to_state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):   # EndTxn
            # a TV2 abort from Empty/Complete* (no partition added) starts its transaction now
            empty_abort = (to_state is S.PREPARE_ABORT and supports_epoch_bump(transit.client_transaction_version)
                           and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            if (not self._valid_producer_epoch(transit) or self.topic_partitions != transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms
                    or (self.txn_start_timestamp != transit.txn_start_timestamp and not empty_abort)):
                self._transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
        elif to_state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT):   # markers written
            if (not self._valid_producer_epoch(transit) or self.txn_timeout_ms != transit.txn_timeout_ms
                    or transit.txn_start_timestamp == -1):
                self._transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions.clear()
        else:   # PrepareEpochFence and Dead are never completed
            self._transition_failure(transit)
        self.previous_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_id = transit.producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.client_transaction_version = transit.client_transaction_version
        self.has_failed_epoch_fence = False
        self.pending_state = None
        self.state = to_state

    def _valid_producer_epoch(self, transit: TxnTransitMetadata) -> bool:
        """Kafka's ``validProducerEpoch``: with transaction version 2 PrepareX carries the bumped
        epoch (its last epoch is the current one) and a Complete* at epoch 0 follows an overflow
        (its previous producer id is the current one)."""
        if supports_epoch_bump(transit.client_transaction_version):
            if transit.txn_state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and transit.producer_epoch == 0:
                return (transit.last_producer_epoch == self.last_producer_epoch
                        and transit.prev_producer_id == self.producer_id)
            if transit.txn_state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                return transit.last_producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_producer_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return (transit.producer_epoch == self.producer_epoch + 1
                or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))

    def _transition_failure(self, transit: TxnTransitMetadata) -> None:
        raise IllegalTransactionStateError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} due to "
            f"unexpected metadata {self!r}")
