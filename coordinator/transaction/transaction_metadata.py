"""TransactionMetadata: one transactional id's state and Kafka's transaction state machine
(``kafka.coordinator.transaction.TransactionMetadata``).

A transition happens in two steps, so the in-memory state only ever shows what the log holds:
``prepare_*`` checks the move is legal, records the target in ``pending_state`` (which blocks
every other transition) and returns an immutable ``TxnTransitMetadata``; the caller appends it to
``__transaction_state`` (acks=-1) and, once the append succeeded, ``complete_transition_to``
checks the per-state invariants and applies it. A failed append clears ``pending_state``.
``PrepareEpochFence`` and ``Dead`` are never completed: a fence is at once followed by an abort
(which adopts the fenced epoch) and Dead ids are dropped from the cache instead.

Transaction version: the emulator serves transaction version 1 only (explicit
AddPartitionsToTxn, the epoch bumped by InitProducerId, never by EndTxn), so every transition
here is Kafka's TV_0/TV_1 path; ``client_transaction_version`` is kept and persisted as read.

Locking: ``lock`` (a reentrant ``GroupLock``, also the DelayedProduce operation lock of the
metadata's appends) guards every field; callers hold it around ``prepare_*`` and
``complete_transition_to``. Response callbacks queued with ``lock.defer`` run after release.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kafka_emu.coordinator.errors import Errors
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
    # Empty/Complete* -> PrepareAbort exist for TV2 empty aborts only (never prepared here)
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


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
    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The current state as a transit (to load markers again, and for tests)."""
        return TxnTransitMetadata(self.producer_id, self.previous_producer_id, self.next_producer_id,
                                  self.producer_epoch, self.last_producer_epoch, self.txn_timeout_ms,
                                  self.state, frozenset(self.topic_partitions), self.txn_start_timestamp,
                                  self.txn_last_update_timestamp, self.client_transaction_version)

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """PrepareEpochFence with the epoch bumped, unless an earlier fence write failed (then the
        in-memory epoch is already the fenced one)."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransactionStateError(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
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

    def prepare_add_partitions(self, added: set[TopicPartition], update_timestamp: int) -> TxnTransitMetadata:
        start = (update_timestamp if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
                 else self.txn_start_timestamp)
        return self._prepare_transition_to(S.ONGOING, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions | added), start, update_timestamp)

    def prepare_abort_or_commit(self, new_state: TransactionState, update_timestamp: int) -> TxnTransitMetadata:
        if self.state is not S.ONGOING:   # Empty/Complete* -> PrepareAbort is a TV2 empty abort
            raise IllegalTransactionStateError(
                f"Preparing {new_state.state_name} from {self.state.state_name} needs transaction version 2, "
                f"which the emulator does not serve")
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms,
                                           frozenset(self.topic_partitions), self.txn_start_timestamp,
                                           update_timestamp)

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        new_state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        return self._prepare_transition_to(new_state, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                                           self.txn_start_timestamp, update_timestamp)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare_transition_to(S.DEAD, self.producer_id, self.producer_epoch,
                                           self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                                           self.txn_start_timestamp, self.txn_last_update_timestamp)

    def _prepare_transition_to(self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int,
                               timeout_ms: int, partitions: frozenset[TopicPartition], start_ts: int,
                               update_ts: int, prev_producer_id: int | None = None) -> TxnTransitMetadata:
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
            self.next_producer_id, epoch, last_epoch, timeout_ms, state, partitions, start_ts, update_ts,
            self.client_transaction_version)
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
            if (not self._valid_producer_epoch(transit) or self.topic_partitions != transit.topic_partitions
                    or self.txn_timeout_ms != transit.txn_timeout_ms
                    or self.txn_start_timestamp != transit.txn_start_timestamp):
                self._transition_failure(transit)
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
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_producer_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return (transit.producer_epoch == self.producer_epoch + 1
                or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))

    def _transition_failure(self, transit: TxnTransitMetadata) -> None:
        raise IllegalTransactionStateError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} due to "
            f"unexpected metadata {self!r}")
