"""ProducerStateManager: per-partition producer state, for idempotence and transactions.

After Kafka's ``ProducerStateManager``, ``ProducerStateEntry``, ``ProducerAppendInfo``,
``TxnMetadata``, ``CompletedTxn`` and ``VerificationStateEntry``. One per ``UnifiedLog``.

* ``producers``: producer id -> ``ProducerStateEntry``: epoch, coordinator epoch, the last five
  batches (duplicate detection, sequence checks), the last timestamp and the first offset of
  the producer's open transaction on this partition (``current_txn_first_offset``, -1: none).
* ``ongoing_txns``: first offset -> producer id of every open transaction, in offset order
  (transactions open in append order, so a dict's insertion order is offset order).
* ``unreplicated_txns``: transactions whose marker is appended but not yet below the high
  watermark; until it is, their first offset still bounds the last stable offset.
* ``verification_states``: producer id -> the ``VerificationGuard`` of a transaction
  verification in flight (KIP-890 part 1): a transactional batch opening a transaction is
  appended only with the guard the partition handed out when verification started, and any
  transactional append or marker of that producer clears it, so a batch verified before its
  transaction was aborted cannot open a transaction after the ABORT marker; except that a
  transaction version 2 verification (an implicit add) survives a marker of its own epoch, the
  previous transaction's marker carrying the epoch EndTxn bumped.
* ``snapshots``: offset -> the state at that offset, taken when a segment is created (Kafka
  takes a snapshot file at every roll). Truncation restores the latest snapshot at or below the
  new log end and replays the batches after it, so state survives retention deleting the
  segments that held it, as Kafka's snapshots make it survive.

An append is checked first (``check_batch`` into a ``pending`` map, nothing changed) and
applied after the log wrote the batches (``update``), so a refused append leaves no trace.
Non-transactional batches (no transactional or control bit) pay one attribute test more than
plain idempotence.

First unstable offset = the smallest first offset of the ongoing and unreplicated transactions
(None when there are none); the log's last stable offset is derived from it.

With ``log.dirs`` the persistent log also writes Kafka's snapshot files (``broker.storage.producer_snapshot``:
each producer's last batch only) at each roll and at clean shutdown, and loads the state from
them at start-up (``load_snapshot``).

Locking: none of its own; every call is made under the owning log's lock (the partition lock).

Expiration (KIP-854, Kafka's ``removeExpiredProducers``): a producer without an open
transaction on this partition whose last batch (or marker) timestamp is
``producer.id.expiration.ms`` old is forgotten, by the broker's periodic check and when a
snapshot is restored; its next append is then accepted whatever its sequence, as from a
producer never seen.

Differences from Kafka on purpose: the in-memory snapshots keep the whole entries (Kafka's
snapshot files keep each producer's last batch); the lowest-sequence check of a verification
entry is not made, and verification entries do not expire (they carry no timestamp; any
transactional append or marker of the producer clears them).
"""
from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from kafka_emu.broker.storage.control_record import EndTransactionMarker
from kafka_emu.broker.storage.log_validator import CONTROL_BIT, TRANSACTIONAL_BIT
from kafka_emu.broker.storage.record_batch import NO_PRODUCER_ID, NO_SEQUENCE, BatchInfo
from kafka_emu.common.errors import Errors, KafkaError

NO_PRODUCER_EPOCH = -1
MAX_CACHED_BATCHES = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
_TXN_OR_CONTROL = TRANSACTIONAL_BIT | CONTROL_BIT


class AppendOrigin(enum.Enum):
    """Who appends (Kafka's ``AppendOrigin``): how much of a batch the log validates."""

    CLIENT = "client"              # full validation
    COORDINATOR = "coordinator"    # group / transaction coordinator: epochs only; control batches allowed
    REPLICATION = "replication"    # a follower copying its leader: no validation


class CachedBatch(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int = -1   # the batch's max timestamp as stored (Kafka's BatchMetadata.timestamp)


@dataclass
class ProducerStateEntry:
    """Kafka's ``ProducerStateEntry``: one producer id's epoch, coordinator epoch (-1 until a
    marker), last five batches, last timestamp and the first offset of its open transaction on
    this partition (``current_txn_first_offset``, -1: none), as DescribeProducers reports them."""

    producer_id: int
    producer_epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1     # -1: no transaction open on this partition
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, first_seq: int, last_seq: int) -> CachedBatch | None:
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def copy(self) -> "ProducerStateEntry":
        return ProducerStateEntry(self.producer_id, self.producer_epoch,
                                  deque(self.batches, maxlen=MAX_CACHED_BATCHES), self.coordinator_epoch,
                                  self.current_txn_first_offset, self.last_timestamp)

    def with_epoch(self, epoch: int) -> "ProducerStateEntry":
        """A copy at ``epoch``: a new epoch forgets the batches (sequences restart), keeps the
        open transaction and the coordinator epoch (Kafka's ``maybeUpdateProducerEpoch``)."""
        entry = self.copy()
        if epoch != entry.producer_epoch:
            entry.producer_epoch = epoch
            entry.batches.clear()
        return entry


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int          # the marker's offset
    is_aborted: bool


class VerificationGuard:
    """An identity token: the append must present the one the partition handed out. ``epoch``
    and ``supports_epoch_bump`` are Kafka's ``VerificationStateEntry`` fields: the epoch of the
    verification and whether it adds the partition under transaction version 2."""

    __slots__ = ("epoch", "supports_epoch_bump")

    def __init__(self, epoch: int = NO_PRODUCER_EPOCH, supports_epoch_bump: bool = False) -> None:
        self.epoch = epoch
        self.supports_epoch_bump = supports_epoch_bump


class _Snapshot(NamedTuple):
    producers: dict[int, ProducerStateEntry]
    unreplicated_txns: dict[int, CompletedTxn]


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == 0x7FFFFFFF)


class ProducerStateManager:
    def __init__(self, topic_partition: str) -> None:
        self.topic_partition = topic_partition
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, int] = {}
        self.unreplicated_txns: dict[int, CompletedTxn] = {}
        self.verification_states: dict[int, VerificationGuard] = {}
        self.snapshots: dict[int, _Snapshot] = {}

    # ------------------------------------------------------------------ checks (nothing changes)
    def check_batch(self, info: BatchInfo, pending: dict[int, ProducerStateEntry], origin: AppendOrigin,
                    marker: EndTransactionMarker | None = None,
                    verification_guard: VerificationGuard | None = None) -> CachedBatch | None:
        """Validate one batch of a leader append against the state plus ``pending`` (this
        append's earlier batches); record its effect in ``pending``. Returns the cached batch
        a duplicate repeats (then nothing is appended), else None. Raises ``KafkaError``."""
        pid = info.producer_id
        if pid == NO_PRODUCER_ID:
            return None
        stored = self.producers.get(pid)
        entry = pending.get(pid) or stored
        epoch = info.producer_epoch
        if info.attributes & _TXN_OR_CONTROL:
            if info.is_control:
                pending[pid] = self._check_marker(pid, entry, epoch, marker)
                return None
            if origin is not AppendOrigin.REPLICATION and not self.has_ongoing_transaction(pid, epoch) \
                    and (verification_guard is None or self.verification_states.get(pid) is not verification_guard):
                raise KafkaError(Errors.INVALID_TXN_STATE,
                                 f"Record was not part of an ongoing transaction (producer {pid} on "
                                 f"{self.topic_partition})")
        if entry is None:
            nxt = ProducerStateEntry(pid, epoch)
        else:
            if epoch < entry.producer_epoch:
                raise KafkaError(Errors.INVALID_PRODUCER_EPOCH,
                                 f"Epoch of producer {pid} in {self.topic_partition} is {epoch}, which is "
                                 f"smaller than the last seen epoch {entry.producer_epoch}")
            if origin is AppendOrigin.CLIENT:
                if epoch == entry.producer_epoch:
                    dup = entry.find_duplicate(info.base_sequence, info.last_sequence)
                    if dup is not None:
                        return dup
                    if info.base_sequence != NO_SEQUENCE and entry.producer_epoch != NO_PRODUCER_EPOCH \
                            and not _in_sequence(entry.last_seq, info.base_sequence):
                        raise KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                         f"producer {pid}: sequence {info.base_sequence} after {entry.last_seq}")
                elif info.base_sequence not in (0, NO_SEQUENCE) and entry.producer_epoch != NO_PRODUCER_EPOCH:
                    raise KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     f"producer {pid}: new epoch {epoch} must start at sequence 0")
            nxt = entry.with_epoch(epoch)
        if nxt.current_txn_first_offset >= 0 and not info.is_transactional:
            raise KafkaError(Errors.INVALID_TXN_STATE,
                             f"Expected transactional write from producer {pid} in {self.topic_partition}")
        if nxt.current_txn_first_offset < 0 and info.is_transactional:
            nxt.current_txn_first_offset = info.base_offset
        nxt.batches.append(CachedBatch(info.base_sequence, info.last_sequence, -1, -1))
        pending[pid] = nxt
        return None

    def _check_marker(self, pid: int, entry: ProducerStateEntry | None, epoch: int,
                      marker: EndTransactionMarker | None) -> ProducerStateEntry:
        """Kafka's ``appendEndTxnMarker`` checks (transaction version 1 rules: a marker's epoch
        may not be older than the producer's)."""
        if entry is None:
            entry = ProducerStateEntry(pid, epoch)
        if epoch < entry.producer_epoch:
            raise KafkaError(Errors.INVALID_PRODUCER_EPOCH,
                             f"Epoch of producer {pid} in {self.topic_partition} is {epoch}, which is "
                             f"smaller than the last seen epoch {entry.producer_epoch}")
        nxt = entry.with_epoch(epoch)
        if marker is not None:
            if entry.coordinator_epoch > marker.coordinator_epoch:
                raise KafkaError(Errors.TRANSACTION_COORDINATOR_FENCED,
                                 f"Invalid coordinator epoch for producer {pid} in {self.topic_partition}: "
                                 f"{marker.coordinator_epoch} (zombie), {entry.coordinator_epoch} (current)")
            nxt.coordinator_epoch = marker.coordinator_epoch
            nxt.current_txn_first_offset = -1
        return nxt

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 and entry.producer_epoch == producer_epoch

    def maybe_start_transaction_verification(self, producer_id: int, producer_epoch: int,
                                             supports_epoch_bump: bool = False) -> VerificationGuard | None:
        """None when the producer's transaction is already open here (no verification needed,
        Kafka's ``VerificationGuard.SENTINEL``); else the guard of this producer's verification
        (the one in flight, or a new one; a newer epoch takes it over, as Kafka's
        ``maybeUpdateLowestSequenceAndEpoch``)."""
        if self.has_ongoing_transaction(producer_id, producer_epoch):
            return None
        guard = self.verification_states.get(producer_id)
        if guard is None:
            guard = self.verification_states[producer_id] = VerificationGuard(producer_epoch, supports_epoch_bump)
        elif producer_epoch >= guard.epoch:
            guard.epoch, guard.supports_epoch_bump = producer_epoch, supports_epoch_bump
        return guard

    # ------------------------------------------------------------------ updates
    def update(self, info: BatchInfo, marker: EndTransactionMarker | None) -> CompletedTxn | None:
        """Apply one appended batch (leader, follower or replay); a marker that ends an open
        transaction returns it (the log then indexes an abort and calls ``complete_txn``)."""
        pid = info.producer_id
        if pid == NO_PRODUCER_ID:
            return None
        entry = self.producers.get(pid)
        epoch = info.producer_epoch
        if entry is None:
            entry = self.producers[pid] = ProducerStateEntry(pid, epoch)
        elif epoch != entry.producer_epoch:
            entry.producer_epoch = epoch
            entry.batches.clear()
        if not info.attributes & _TXN_OR_CONTROL:
            entry.batches.append(CachedBatch(info.base_sequence, info.last_sequence, info.base_offset,
                                             info.base_offset + info.last_offset_delta, info.max_timestamp))
            entry.last_timestamp = info.max_timestamp
            return None
        guard = self.verification_states.get(pid)
        # a transaction version 2 marker carries the epoch the next transaction already verifies
        # with (the previous EndTxn bumped it): that verification stays valid
        if guard is not None and not (info.is_control and guard.supports_epoch_bump and guard.epoch == epoch):
            del self.verification_states[pid]
        entry.last_timestamp = info.max_timestamp
        if not info.is_control:
            entry.batches.append(CachedBatch(info.base_sequence, info.last_sequence, info.base_offset,
                                             info.base_offset + info.last_offset_delta, info.max_timestamp))
            if entry.current_txn_first_offset < 0:
                entry.current_txn_first_offset = info.base_offset
                self.ongoing_txns[info.base_offset] = pid
            return None
        if marker is None:
            return None   # an empty control batch: its transaction was cleaned away
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(pid, entry.current_txn_first_offset, info.base_offset, marker.is_abort)
        entry.coordinator_epoch = marker.coordinator_epoch
        entry.current_txn_first_offset = -1
        return completed

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO recorded with a completed transaction in the index: the first offset of the
        earliest other producer's open transaction, else the marker offset + 1."""
        for first_offset, pid in self.ongoing_txns.items():
            if pid != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """Move the transaction from ongoing to unreplicated (until the HW passes its marker)."""
        self.ongoing_txns.pop(completed.first_offset, None)
        self.unreplicated_txns[completed.first_offset] = completed

    def first_unstable_offset(self) -> int | None:
        first = next(iter(self.ongoing_txns), None)
        if self.unreplicated_txns:
            earliest = min(self.unreplicated_txns)
            if first is None or earliest < first:
                first = earliest
        return first

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        self._remove_unreplicated_below(high_watermark)

    def _remove_unreplicated_below(self, offset: int) -> None:
        if self.unreplicated_txns:
            for first in [f for f, t in self.unreplicated_txns.items() if t.last_offset < offset]:
                del self.unreplicated_txns[first]

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Producers whose last batch lies below the log start offset are forgotten unless a
        transaction of theirs is still open (Kafka never expires those) or their last entry is a
        marker (no batch: its epoch fences zombies, as Kafka keeps it); unreplicated
        transactions whose marker went are dropped."""
        for pid in [pid for pid, e in self.producers.items()
                    if e.current_txn_first_offset < 0
                    and e.batches and e.batches[-1].last_offset < log_start_offset]:
            del self.producers[pid]
        self._remove_unreplicated_below(log_start_offset)

    def remove_expired_producers(self, current_time_ms: int, producer_id_expiration_ms: int) -> list[int]:
        """Forget the producers with no transaction open here whose last timestamp is
        ``producer_id_expiration_ms`` before ``current_time_ms`` (Kafka's ``isProducerExpired``);
        returns their ids."""
        expired = [pid for pid, e in self.producers.items()
                   if e.current_txn_first_offset < 0 and current_time_ms - e.last_timestamp >= producer_id_expiration_ms]
        for pid in expired:
            del self.producers[pid]
        return expired

    def delete_snapshots_before(self, offset: int) -> None:
        """The segments below ``offset`` are gone: so are their snapshots."""
        for o in [o for o in self.snapshots if o < offset]:
            del self.snapshots[o]

    # ------------------------------------------------------------------ snapshots
    def take_snapshot(self, offset: int) -> None:
        """Remember the state at ``offset`` (a new segment's base offset)."""
        self.snapshots[offset] = _Snapshot({pid: e.copy() for pid, e in self.producers.items()},
                                           dict(self.unreplicated_txns))

    def latest_snapshot_offset(self, at_or_below: int) -> int | None:
        candidates = [o for o in self.snapshots if o <= at_or_below]
        return max(candidates) if candidates else None

    def truncate_and_reload(self, log_end_offset: int) -> int | None:
        """Drop snapshots past ``log_end_offset`` and restore the latest remaining one; returns
        its offset (the caller replays the batches from there with ``update``), None when there
        is none (the state starts empty)."""
        for offset in [o for o in self.snapshots if o > log_end_offset]:
            del self.snapshots[offset]
        start = self.latest_snapshot_offset(log_end_offset)
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        self.verification_states.clear()
        if start is None:
            return None
        snap = self.snapshots[start]
        self._load_producers(entry.copy() for entry in snap.producers.values())
        self.unreplicated_txns.update(snap.unreplicated_txns)
        return start

    def _load_producers(self, entries: Iterable[ProducerStateEntry]) -> None:
        """Kafka's ``loadProducerEntry``: each entry, its open transaction ongoing."""
        for entry in entries:
            self.producers[entry.producer_id] = entry
        for first, pid in sorted((e.current_txn_first_offset, pid) for pid, e in self.producers.items()
                                 if e.current_txn_first_offset >= 0):
            self.ongoing_txns[first] = pid

    def load_snapshot(self, offset: int, entries: list[ProducerStateEntry]) -> None:
        """Kafka's ``loadFromSnapshot``: the state is ``entries`` (read from the snapshot file at
        ``offset``, ``broker.storage.producer_snapshot``), also kept as the in-memory snapshot there."""
        self.truncate_fully()
        self._load_producers(entries)
        self.take_snapshot(offset)

    def truncate_fully(self) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        self.verification_states.clear()
        self.snapshots.clear()
