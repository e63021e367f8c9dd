"""SharePartition: one share group's view of one topic partition on its leader (Kafka's
``SharePartition``, KIP-932).

The share partition delivers the records between its **start offset** and its **end offset**
(one past the last record ever acquired) to the group's members, each record at most to one
member at a time. The records in flight are kept as ``InFlightBatch``es: runs of consecutive
offsets with one state, delivery count, owner and acquisition lock (Kafka keeps a batch state
and splits it into per-offset states when a batch is acknowledged in parts; here the run itself is
split, which is the same thing with coarser pieces).

States (Kafka's ``RecordState``): AVAILABLE → ACQUIRED (by one member: its delivery count goes up
and a lock is taken for ``share.record.lock.duration.ms``) → ACKNOWLEDGED (ACCEPT) or ARCHIVED
(REJECT, or released with a delivery count at ``share.delivery.count.limit``) or back to
AVAILABLE (RELEASE, the lock expiring, the member's share session closing). RENEW (ShareFetch v2)
re-arms the lock; GAP marks offsets with no record (compacted away, control batches) ARCHIVED.
An acknowledgement of an offset that is not ACQUIRED by the acknowledging member is
INVALID_RECORD_STATE; of an offset outside the records in flight INVALID_REQUEST; a request's
acknowledgements for one partition are checked first and applied only if all are valid.

Acquisition (``acquire``, Kafka's ``acquire``): the fetch reads the log from
``next_fetch_offset()`` (the first AVAILABLE offset in flight, else the end offset); AVAILABLE
runs within the read batches are acquired, then new runs beyond the end offset, one per log batch,
until ``max_records`` (batch-aligned; exact in record-limit mode) or until
``group.share.partition.max.record.locks`` records are in flight (exactly: a log batch crossing the
limit is acquired in part). Under read_committed the read
stops at the LSO and records of aborted transactions are archived instead of acquired; control
batches are archived in either mode (no client ever acknowledges them).

Locks are ``AcquisitionLockTimerTask``s on the broker's share ``SystemTimer`` (advanced by
``advance_time`` on a manual clock): when one fires the run goes back to AVAILABLE with its
delivery count kept (ARCHIVED at the limit), the group's parked ShareFetches are woken and the
record lock timeout is counted.

The start offset moves past every leading ACKNOWLEDGED or ARCHIVED run, which then leaves memory;
an acknowledgement that releases records or moves the start offset (making room under the
in-flight limit) wakes the group's parked ShareFetches.
Every change other than an acquisition (acknowledgements, releases, lock expiries) is written to
the share coordinator (``Persister.write_state``: the changed runs as state batches, the start
offset), one write at a time in order; an acknowledgement is answered once its write is done. On
first use the share partition reads its state (``Persister.read_state``): a share partition
without state starts at ``share.auto.offset.reset`` (latest: the high watermark; earliest: the
log start; ``by_duration``: the first record at or after now minus the duration) and initializes
its state; otherwise it restores the persisted runs (AVAILABLE ones with their delivery counts,
ACKNOWLEDGED and ARCHIVED ones) and its end offset after them.

Locking: ``lock`` guards every field; timer tasks and persister callbacks take it themselves;
nothing is called out (persister, wake-ups) while it is held. ``fetch_lock`` lets one
ShareFetch at a time read and acquire (Kafka's fetch lock), taken without blocking.

Differences from Kafka on purpose: acquired records are not persisted (as in Kafka; after a
leader move they are delivered again with the count they had when last released); a read
following a failed initialization is retried at the next fetch instead of failing the partition
for good; the state is written whole runs at a time, not Kafka's exact batch boundaries.
"""
from __future__ import annotations

import enum
import threading
import uuid
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple, Protocol

import structlog

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.share.share_coordinator import UNINITIALIZED, ReadStateResult
from kafka_emu.coordinator.share.share_coordinator_records import StateBatch
from kafka_emu.timer import Time, Timer, TimerTask

_log = structlog.get_logger("broker.share_partition")


class RecordState(enum.IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class SharePartitionState(enum.Enum):
    EMPTY = "Empty"
    INITIALIZING = "Initializing"
    ACTIVE = "Active"
    FENCED = "Fenced"


class AcquiredRecords(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_count: int


class FetchedBatch(NamedTuple):
    """One log batch as the fetch read it (header fields only)."""
    base_offset: int
    last_offset: int
    producer_id: int
    is_control: bool


@dataclass(frozen=True, slots=True)
class ShareSettings:
    """A share group's settings for its share partitions: the broker's ``group.share.*`` values
    overridden by the group's ``share.*`` configs."""
    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_in_flight_records: int = 2_000
    auto_offset_reset: str = "latest"
    read_committed: bool = False


class Persister(Protocol):
    """How a share partition reaches its state at the share coordinator (Kafka's ``Persister``);
    every callback runs once, on any thread."""

    def read_state(self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                   callback: Callable[[ReadStateResult], None]) -> None: ...

    def initialize_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                         start_offset: int, callback: Callable[[int], None]) -> None: ...

    def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int, leader_epoch: int,
                    start_offset: int, batches: list[StateBatch], callback: Callable[[int], None]) -> None: ...


class InFlightBatch:
    """A run of in-flight offsets with one state (guarded by the share partition's lock)."""

    __slots__ = ("first", "last", "state", "delivery_count", "member_id", "lock_task")

    def __init__(self, first: int, last: int, state: RecordState, delivery_count: int,
                 member_id: str | None = None) -> None:
        self.first = first
        self.last = last
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.lock_task: AcquisitionLockTimerTask | None = None

    def __repr__(self) -> str:
        return f"InFlightBatch({self.first}-{self.last} {self.state.name} x{self.delivery_count} {self.member_id})"


class AcquisitionLockTimerTask(TimerTask):
    """Releases an acquired run when its lock duration passes (Kafka's ``AcquisitionLockTimerTask``)."""

    def __init__(self, delay_ms: int, owner: "SharePartition", batch: InFlightBatch, deadline_ms: int) -> None:
        super().__init__(delay_ms)
        self.owner = owner
        self.batch = batch
        self.deadline_ms = deadline_ms

    def run(self) -> None:
        self.owner.lock_expired(self)


WriteDone = Callable[[int], None]


class SharePartition:
    """See the module docstring."""

    def __init__(self, group_id: str, topic: str, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                 timer: Timer, persister: Persister, time: Time, settings: Callable[[], ShareSettings],
                 on_available: Callable[["SharePartition"], None] = lambda sp: None,
                 on_lock_timeout: Callable[[int], None] = lambda n: None) -> None:
        self.group_id = group_id
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.timer = timer
        self.persister = persister
        self.time = time
        self.settings = settings
        self.on_available = on_available         # records became available (wake parked fetches)
        self.on_lock_timeout = on_lock_timeout   # called with the records whose lock expired
        self.lock = threading.RLock()
        self.fetch_lock = threading.Lock()
        self.state = SharePartitionState.EMPTY
        self.state_epoch = 0
        self.start_offset = 0
        self.end_offset = 0
        self.batches: list[InFlightBatch] = []   # sorted, non-overlapping, within [start, end)
        self._writes: list[tuple[list[StateBatch], list[WriteDone]]] = []
        self._write_in_flight = False

    # ================================================================== initialization
    def maybe_initialize(self, offset_for_reset: Callable[[ShareSettings], int],
                         done: Callable[["SharePartition"], None]) -> bool:
        """Start reading the state unless already active or initializing; True if active.
        ``offset_for_reset(settings)`` gives the start offset of a share partition without state;
        ``done`` runs once the partition is active (or failed to become so)."""
        with self.lock:
            if self.state is SharePartitionState.ACTIVE:
                return True
            if self.state is not SharePartitionState.EMPTY:
                return False
            self.state = SharePartitionState.INITIALIZING

        def on_read(result: ReadStateResult) -> None:
            if result.error != Errors.NONE:
                _log.warning("share_partition_read_failed", group_id=self.group_id, topic=self.topic,
                             partition=self.partition, error=result.error)
                with self.lock:
                    self.state = SharePartitionState.FENCED if result.error == Errors.FENCED_LEADER_EPOCH \
                        else SharePartitionState.EMPTY
                done(self)
                return
            if result.start_offset == UNINITIALIZED:
                start = offset_for_reset(self.settings())
                self.persister.initialize_state(self.group_id, self.topic_id, self.partition, 0, start,
                                                lambda error: on_initialized(error, start))
                return
            with self.lock:
                self._restore(result)
            done(self)

        def on_initialized(error: int, start: int) -> None:
            with self.lock:
                if error == Errors.NONE:
                    self.state_epoch, self.start_offset, self.end_offset = 0, start, start
                    self.state = SharePartitionState.ACTIVE
                else:
                    self.state = SharePartitionState.EMPTY
            done(self)

        self.persister.read_state(self.group_id, self.topic_id, self.partition, self.leader_epoch, on_read)
        return False

    def _restore(self, result: ReadStateResult) -> None:
        self.state_epoch = result.state_epoch
        self.start_offset = self.end_offset = result.start_offset
        self.batches = []
        for b in result.state_batches:
            if b.last_offset < self.start_offset:
                continue
            state = RecordState(b.delivery_state) if b.delivery_state in (0, 2, 4) else RecordState.AVAILABLE
            self.batches.append(InFlightBatch(max(b.first_offset, self.start_offset), b.last_offset, state,
                                              b.delivery_count))
            self.end_offset = max(self.end_offset, b.last_offset + 1)
        self._maybe_update_start_offset()
        self.state = SharePartitionState.ACTIVE
        _log.info("share_partition_loaded", group_id=self.group_id, topic=self.topic, partition=self.partition,
                  start_offset=self.start_offset, end_offset=self.end_offset, in_flight=len(self.batches))

    @property
    def is_active(self) -> bool:
        return self.state is SharePartitionState.ACTIVE

    # ================================================================== acquiring
    def next_fetch_offset(self) -> int:
        """Where the next fetch reads: the first AVAILABLE in-flight offset, else the end offset."""
        with self.lock:
            for b in self.batches:
                if b.state is RecordState.AVAILABLE:
                    return b.first
            return self.end_offset

    def can_acquire_records(self) -> bool:
        """Some in-flight record is AVAILABLE, or fewer than the in-flight limit are in flight."""
        with self.lock:
            if not self.is_active:
                return False
            if any(b.state is RecordState.AVAILABLE for b in self.batches):
                return True
            return self.end_offset - self.start_offset < self.settings().max_in_flight_records

    def acquire(self, member_id: str, max_records: int, fetched: Iterable[FetchedBatch],
                aborted_producers: Callable[[FetchedBatch], bool] | None = None,
                strict_limit: bool = False) -> list[AcquiredRecords]:
        """Acquire for ``member_id`` the deliverable records of the ``fetched`` log batches, at most
        ``max_records`` (batch-aligned unless ``strict_limit``). ``aborted_producers(batch)``: the
        batch belongs to an aborted transaction (read_committed); such batches, and control
        batches, are archived instead."""
        settings = self.settings()
        acquired: list[AcquiredRecords] = []
        count = 0
        now = self.time.hi_res_clock_ms()
        changed: list[InFlightBatch] = []
        with self.lock:
            if not self.is_active:
                return []
            for fb in fetched:
                if count >= max_records:
                    break
                first = max(fb.base_offset, self.start_offset)
                if fb.last_offset < first:
                    continue
                skip = fb.is_control or (aborted_producers is not None and aborted_producers(fb))
                # 1. AVAILABLE runs in flight within this batch
                if first < self.end_offset:
                    for b in list(self._overlapping(first, min(fb.last_offset, self.end_offset - 1))):
                        if count >= max_records:
                            break
                        if b.state is not RecordState.AVAILABLE:
                            continue
                        if skip:
                            b.state = RecordState.ARCHIVED
                            changed.append(b)
                            continue
                        if strict_limit and b.last - b.first + 1 > max_records - count:
                            b = self._split(b, b.first + (max_records - count) - 1)[0]
                        b.delivery_count += 1
                        self._lock_for(b, member_id, settings, now)
                        acquired.append(AcquiredRecords(b.first, b.last, b.delivery_count))
                        count += b.last - b.first + 1
                # 2. records beyond the end offset
                if fb.last_offset >= self.end_offset and count < max_records:
                    start = max(first, self.end_offset)
                    if start > self.end_offset:   # a gap (compaction, a deleted range): nothing to deliver there
                        self.batches.append(InFlightBatch(self.end_offset, start - 1, RecordState.ARCHIVED, 0))
                        self.end_offset = start
                    room = settings.max_in_flight_records - (self.end_offset - self.start_offset)
                    if room <= 0 and not skip:
                        break
                    last = fb.last_offset if skip else min(fb.last_offset, start + room - 1)
                    if strict_limit:
                        last = min(last, start + (max_records - count) - 1)
                    if skip:
                        self.batches.append(InFlightBatch(start, last, RecordState.ARCHIVED, 0))
                        self.end_offset = last + 1
                        continue
                    b = InFlightBatch(start, last, RecordState.ACQUIRED, 1)
                    self.batches.append(b)
                    self.end_offset = last + 1
                    self._lock_for(b, member_id, settings, now)
                    acquired.append(AcquiredRecords(start, last, 1))
                    count += last - start + 1
            if changed or (self.batches and self.batches[0].state is RecordState.ARCHIVED):
                self._maybe_update_start_offset()
        return _merge_adjacent(acquired)

    def _lock_for(self, b: InFlightBatch, member_id: str, settings: ShareSettings, now: int) -> None:
        b.state = RecordState.ACQUIRED
        b.member_id = member_id
        duration = settings.record_lock_duration_ms
        task = AcquisitionLockTimerTask(duration, self, b, now + duration)
        b.lock_task = task
        self.timer.add(task)

    def _overlapping(self, first: int, last: int) -> Iterable[InFlightBatch]:
        """The in-flight runs overlapping [first, last], split so each lies inside it."""
        out = []
        for b in list(self.batches):
            if b.last < first or b.first > last:
                continue
            if b.first < first:
                b = self._split(b, first - 1)[1]
            if b.last > last:
                b = self._split(b, last)[0]
            out.append(b)
        return out

    def _split(self, b: InFlightBatch, at: int) -> tuple[InFlightBatch, InFlightBatch]:
        """Split ``b`` after offset ``at`` into two runs with its state; an acquired run's lock
        is split too, each half keeping the deadline."""
        i = self.batches.index(b)
        right = InFlightBatch(at + 1, b.last, b.state, b.delivery_count, b.member_id)
        b.last = at
        self.batches.insert(i + 1, right)
        task = b.lock_task
        if task is not None:
            task.cancel()
            delay = max(task.deadline_ms - self.time.hi_res_clock_ms(), 0)
            for half in (b, right):
                half.lock_task = AcquisitionLockTimerTask(delay, self, half, task.deadline_ms)
                self.timer.add(half.lock_task)
        return b, right

    # ================================================================== acknowledging
    def acknowledge(self, member_id: str, acknowledgements: list[tuple[int, int, tuple[int, ...]]],
                    done: WriteDone) -> tuple[int, dict[AcknowledgeType, int]]:
        """Apply one request's acknowledgements for this partition (``(first, last, types)``:
        one type for the range, or one per offset); ``done(error)`` runs once the change is
        written. Returns (error, records per type) at once; on an error nothing changed and
        ``done`` is not called."""
        settings = self.settings()
        counts: dict[AcknowledgeType, int] = {}
        with self.lock:
            if not self.is_active:
                return Errors.COORDINATOR_NOT_AVAILABLE, counts
            plan: list[tuple[int, int, AcknowledgeType]] = []
            for first, last, types in acknowledgements:
                if last < first or (len(types) != 1 and len(types) != last - first + 1) or not types:
                    return Errors.INVALID_REQUEST, counts
                try:
                    kinds = [AcknowledgeType(t) for t in types]
                except ValueError:
                    return Errors.INVALID_REQUEST, counts
                if len(kinds) == 1:
                    plan.append((first, last, kinds[0]))
                else:
                    for offset, kind in enumerate(kinds, first):
                        if plan and plan[-1][2] is kind and plan[-1][1] == offset - 1:
                            plan[-1] = (plan[-1][0], offset, kind)
                        else:
                            plan.append((offset, offset, kind))
            for first, last, kind in plan:
                error = self._check(member_id, first, last, kind)
                if error != Errors.NONE:
                    return error, counts
            changed: list[InFlightBatch] = []
            now = self.time.hi_res_clock_ms()
            released = False
            for first, last, kind in plan:
                for b in self._overlapping(max(first, self.start_offset), last):
                    if b.state is not RecordState.ACQUIRED:
                        continue   # a GAP over an archived run
                    counts[kind] = counts.get(kind, 0) + b.last - b.first + 1
                    if kind is AcknowledgeType.RENEW:
                        self._unlock(b)
                        self._lock_for(b, member_id, settings, now)
                        continue
                    self._unlock(b)
                    b.member_id = None
                    if kind is AcknowledgeType.ACCEPT:
                        b.state = RecordState.ACKNOWLEDGED
                    elif kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                        b.state = RecordState.ARCHIVED
                    else:
                        released |= self._release(b, settings)
                    changed.append(b)
            batches = self._state_batches(changed)
            start = self.start_offset
            self._maybe_update_start_offset()
            room = self.start_offset > start
        if released or room:   # records to deliver again, or room under the in-flight limit
            self.on_available(self)
        if batches:
            self._write(batches, done)
        else:
            done(Errors.NONE)
        return Errors.NONE, counts

    def _check(self, member_id: str, first: int, last: int, kind: AcknowledgeType) -> int:
        """INVALID_REQUEST for offsets never delivered, INVALID_RECORD_STATE for offsets not
        acquired by ``member_id`` (a GAP may cover archived offsets)."""
        if last >= self.end_offset:
            return Errors.INVALID_REQUEST
        if last < self.start_offset:
            return Errors.INVALID_RECORD_STATE
        covered = max(first, self.start_offset)
        for b in self.batches:
            if b.last < first or b.first > last:
                continue
            if b.state is RecordState.ACQUIRED and b.member_id == member_id:
                continue
            if kind is AcknowledgeType.GAP and b.state is RecordState.ARCHIVED:
                continue
            return Errors.INVALID_RECORD_STATE
        return Errors.NONE if covered <= last else Errors.INVALID_RECORD_STATE

    def _unlock(self, b: InFlightBatch) -> None:
        if b.lock_task is not None:
            b.lock_task.cancel()
            b.lock_task = None

    def _release(self, b: InFlightBatch, settings: ShareSettings) -> bool:
        """An acquired run goes back: AVAILABLE, or ARCHIVED at the delivery limit. True if it
        became available."""
        b.member_id = None
        if b.delivery_count >= settings.delivery_count_limit:
            b.state = RecordState.ARCHIVED
            return False
        b.state = RecordState.AVAILABLE
        return True

    def release_acquired_records(self, member_id: str) -> None:
        """The member's share session closed: its acquired records go back (Kafka's
        ``releaseAcquiredRecords``)."""
        settings = self.settings()
        with self.lock:
            mine = [b for b in self.batches if b.state is RecordState.ACQUIRED and b.member_id == member_id]
            released = False
            for b in mine:
                self._unlock(b)
                released |= self._release(b, settings)
            batches = self._state_batches(mine)
            self._maybe_update_start_offset()
        if batches:
            self._write(batches, lambda error: None)
        if released:
            self.on_available(self)

    def lock_expired(self, task: AcquisitionLockTimerTask) -> None:
        """An acquisition lock ran out (on the timer's thread)."""
        settings = self.settings()
        with self.lock:
            b = task.batch
            if b.lock_task is not task or b.state is not RecordState.ACQUIRED:
                return
            b.lock_task = None
            released = self._release(b, settings)
            records = b.last - b.first + 1
            batches = self._state_batches([b])
            self._maybe_update_start_offset()
        _log.info("acquisition_lock_expired", group_id=self.group_id, topic=self.topic, partition=self.partition,
                  first_offset=b.first, last_offset=b.last, delivery_count=b.delivery_count)
        self.on_lock_timeout(records)
        self._write(batches, lambda error: None)
        if released:
            self.on_available(self)

    # ================================================================== state
    def _maybe_update_start_offset(self) -> None:
        """Move the start offset past the leading finished runs and drop them (lock held)."""
        i = 0
        while i < len(self.batches) and self.batches[i].state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
            i += 1
        if i:
            self.start_offset = self.batches[i - 1].last + 1
            del self.batches[:i]
        if not self.batches:
            self.start_offset = self.end_offset
        # merge neighbouring runs that no longer differ (keeps the list short)
        merged: list[InFlightBatch] = []
        for b in self.batches:
            last = merged[-1] if merged else None
            if last is not None and last.last + 1 == b.first and b.state is last.state \
                    and b.state is not RecordState.ACQUIRED and b.delivery_count == last.delivery_count:
                last.last = b.last
            else:
                merged.append(b)
        self.batches = merged

    def _state_batches(self, changed: Iterable[InFlightBatch]) -> list[StateBatch]:
        return [StateBatch(b.first, b.last, int(b.state if b.state is not RecordState.ACQUIRED
                                                 else RecordState.AVAILABLE), b.delivery_count)
                for b in changed]

    def _write(self, batches: list[StateBatch], done: WriteDone) -> None:
        """Queue a state write; writes go to the coordinator one at a time, in order."""
        with self.lock:
            self._writes.append((batches, [done]))
            if self._write_in_flight:
                return
            self._write_in_flight = True
        self._send_next_write()

    def _send_next_write(self) -> None:
        with self.lock:
            if not self._writes:
                self._write_in_flight = False
                return
            pending, self._writes = self._writes, []
            batches = [b for bs, _ in pending for b in bs]
            callbacks = [cb for _, cbs in pending for cb in cbs]
            start = self.start_offset

        def written(error: int) -> None:
            if error != Errors.NONE:
                _log.warning("share_state_write_failed", group_id=self.group_id, topic=self.topic,
                             partition=self.partition, error=error)
                if error in (Errors.FENCED_STATE_EPOCH, Errors.FENCED_LEADER_EPOCH):
                    with self.lock:
                        self.state = SharePartitionState.FENCED
            for cb in callbacks:
                try:
                    cb(error)
                except Exception:
                    _log.exception("share_write_callback_failed")
            self._send_next_write()

        self.persister.write_state(self.group_id, self.topic_id, self.partition, self.state_epoch,
                                   self.leader_epoch, start, batches, written)

    def skip_to(self, log_start_offset: int) -> None:
        """The log start moved past the start offset (retention, DeleteRecords): what is below it
        can never be delivered (Kafka's ``updateCacheAndOffsets``)."""
        with self.lock:
            if log_start_offset <= self.start_offset:
                return
            keep = []
            for b in self.batches:
                if b.last < log_start_offset:
                    self._unlock(b)
                    continue
                if b.first < log_start_offset:
                    b.first = log_start_offset
                keep.append(b)
            self.batches = keep
            self.start_offset = log_start_offset
            self.end_offset = max(self.end_offset, log_start_offset)

    def in_flight(self) -> list[tuple[int, int, RecordState, int, str | None]]:
        """(first, last, state, delivery count, member) of each run (tests, describe)."""
        with self.lock:
            return [(b.first, b.last, b.state, b.delivery_count, b.member_id) for b in self.batches]

    def close(self) -> None:
        """Leadership lost or the broker stops: cancel every lock (the next leader takes over)."""
        with self.lock:
            for b in self.batches:
                self._unlock(b)
            self.state = SharePartitionState.FENCED


def _merge_adjacent(acquired: list[AcquiredRecords]) -> list[AcquiredRecords]:
    out: list[AcquiredRecords] = []
    for a in acquired:
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == a.first_offset and last.delivery_count == a.delivery_count:
            out[-1] = AcquiredRecords(last.first_offset, a.last_offset, a.delivery_count)
        else:
            out.append(a)
    return out
