"""Log: the in-memory log of one partition replica.

Batches (format v2) are kept as immutable ``bytes``, one entry per batch, with a parallel list of
base offsets as the offset index (reads by offset use ``bisect``). The log tracks the log start
offset, the log end offset (LEO), the high watermark (HW), a leader-epoch cache (epoch → start
offset, Kafka's ``LeaderEpochFileCache``) for follower truncation, and producer state for
idempotence (the last five batches per producer id, Kafka's ``ProducerStateManager``).

Locking: a ``Log`` has no lock of its own; its ``Partition``'s lock guards every call that
changes it. Readers that hold no lock (metrics) only read ints.

Differences from Kafka on purpose: no segments, no files, no retention or compaction (the log
start offset stays 0 unless ``truncate_fully_and_start_at`` moves it); the HW is kept in memory
(survives an emulated restart because the cluster keeps the ``Log`` object). Batches are never
split, so truncation points and HWs always fall on batch boundaries.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_emu.broker.record_batch import (
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchInfo,
    parse_batches,
    rewrite_batch_header,
)
from kafka_emu.coordinator.errors import Errors, KafkaError

NO_PRODUCER_EPOCH = -1
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
MAX_CACHED_BATCHES = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN


class CachedBatch(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, first_seq: int, last_seq: int) -> CachedBatch | None:
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None


class LogAppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    num_records: int
    size_bytes: int
    duplicate: bool = False
    log_append_time: int = -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == 0x7FFFFFFF)


class LogSnapshot(NamedTuple):
    """Kafka's per-partition ``kafka.log:type=Log`` gauges, plus the HW (for consumer lag)."""

    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int


class Log:
    def __init__(self, topic: str, partition: int, log_start_offset: int = 0) -> None:
        self.topic = topic
        self.partition = partition
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_start_offset
        self.high_watermark = log_start_offset
        self._bases: list[int] = []
        self._batches: list[bytes] = []
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset), increasing
        self.producers: dict[int, ProducerStateEntry] = {}
        self.size_bytes = 0

    # ------------------------------------------------------------------ appends
    def append_as_leader(self, data: bytes, leader_epoch: int, max_batch_size: int | None = None,
                         single_batch: bool = False) -> LogAppendInfo:
        """Validate, assign offsets and the leader epoch, check producer state, append.

        Raises ``KafkaError`` with nothing written on any bad batch. A duplicate (same producer
        id, epoch and sequence range as one of the last five batches) is not appended: the
        returned info carries the original offsets and ``duplicate=True``.
        """
        infos = parse_batches(data, max_batch_size)
        if single_batch and len(infos) != 1:
            raise KafkaError(Errors.INVALID_RECORD,
                             f"produce requests must carry exactly one batch, got {len(infos)}")
        pending: dict[int, ProducerStateEntry] = {}
        for info in infos:
            dup = self._check_producer(info, pending)
            if dup is not None:
                if len(infos) == 1:
                    return LogAppendInfo(dup.first_offset, dup.last_offset, info.record_count,
                                         0, duplicate=True)
                raise KafkaError(Errors.DUPLICATE_SEQUENCE_NUMBER, "duplicate batch in a multi-batch append")
        buf = bytearray(data)
        offset = self.log_end_offset
        first = offset
        for info in infos:
            rewrite_batch_header(buf, info.position, offset, leader_epoch)
            offset += info.last_offset_delta + 1
        # Validation passed for every batch: now commit the appends.
        self._assign_epoch(leader_epoch, first)
        offset = first
        total = 0
        for info in infos:
            self._bases.append(offset)
            self._batches.append(bytes(buf[info.position:info.position + info.size]))
            self._update_producer(info, offset)
            offset += info.last_offset_delta + 1
            total += info.record_count
        self.log_end_offset = offset
        self.size_bytes += len(data)
        return LogAppendInfo(first, offset - 1, total, len(data))

    def append_as_follower(self, data: bytes) -> int:
        """Append batches replicated from the leader (offsets already assigned); return count."""
        if not data:
            return 0
        infos = parse_batches(data, check_crc=False)
        view = memoryview(data)
        appended = 0
        for info in infos:
            if info.base_offset < self.log_end_offset:
                continue  # already have it (a response that raced a truncation)
            if info.base_offset != self.log_end_offset:
                raise KafkaError(Errors.CORRUPT_MESSAGE,
                                 f"non-contiguous follower append {info.base_offset} != {self.log_end_offset}")
            self._assign_epoch(info.leader_epoch, info.base_offset)
            self._bases.append(info.base_offset)
            self._batches.append(bytes(view[info.position:info.position + info.size]))
            self._update_producer(info, info.base_offset)
            self.log_end_offset = info.base_offset + info.last_offset_delta + 1
            self.size_bytes += info.size
            appended += 1
        return appended

    # ------------------------------------------------------------------ producer state
    def _check_producer(self, info: BatchInfo, pending: dict[int, ProducerStateEntry]) -> CachedBatch | None:
        pid = info.producer_id
        if pid == NO_PRODUCER_ID:
            return None
        entry = pending.get(pid) or self.producers.get(pid)
        epoch = info.producer_epoch
        if entry is None:
            pending[pid] = ProducerStateEntry(pid, epoch, deque([CachedBatch(
                info.base_sequence, info.last_sequence, -1, -1)], maxlen=MAX_CACHED_BATCHES))
            return None  # unknown producer: any sequence is accepted (as in Kafka)
        if epoch < entry.producer_epoch:
            raise KafkaError(Errors.INVALID_PRODUCER_EPOCH,
                             f"producer {pid} epoch {epoch} is older than {entry.producer_epoch}")
        if epoch == entry.producer_epoch:
            dup = entry.find_duplicate(info.base_sequence, info.last_sequence)
            if dup is not None:
                return dup
            if info.base_sequence != NO_SEQUENCE and entry.last_seq != NO_SEQUENCE \
                    and not _in_sequence(entry.last_seq, info.base_sequence):
                raise KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {pid}: sequence {info.base_sequence} after {entry.last_seq}")
        elif info.base_sequence not in (0, NO_SEQUENCE):
            raise KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {pid}: new epoch {epoch} must start at sequence 0")
        nxt = ProducerStateEntry(pid, epoch, deque(entry.batches if epoch == entry.producer_epoch else (),
                                                   maxlen=MAX_CACHED_BATCHES))
        nxt.batches.append(CachedBatch(info.base_sequence, info.last_sequence, -1, -1))
        pending[pid] = nxt
        return None

    def _update_producer(self, info: BatchInfo, base_offset: int) -> None:
        pid = info.producer_id
        if pid == NO_PRODUCER_ID:
            return
        entry = self.producers.get(pid)
        if entry is None or info.producer_epoch != entry.producer_epoch:
            entry = self.producers[pid] = ProducerStateEntry(pid, info.producer_epoch)
        entry.batches.append(CachedBatch(info.base_sequence, info.last_sequence, base_offset,
                                         base_offset + info.last_offset_delta))

    def _rebuild_producer_state(self) -> None:
        self.producers.clear()
        for base, batch in zip(self._bases, self._batches):
            for info in parse_batches(batch, check_crc=False):
                self._update_producer(info, base)

    # ------------------------------------------------------------------ epochs
    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        if epoch < 0:
            return
        if not self._epochs or self._epochs[-1][0] < epoch:
            self._epochs.append((epoch, start_offset))

    def assign_epoch_start_offset(self, epoch: int) -> None:
        """On becoming leader: the new epoch starts at the current LEO."""
        self._assign_epoch(epoch, self.log_end_offset)

    def latest_epoch(self) -> int:
        return self._epochs[-1][0] if self._epochs else UNDEFINED_EPOCH

    def epoch_start_offset(self, epoch: int) -> int:
        for e, start in self._epochs:
            if e == epoch:
                return start
        return UNDEFINED_OFFSET

    def end_offset_for_epoch(self, requested: int) -> tuple[int, int]:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: (epoch, end offset) or (-1, -1)."""
        if requested == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if self._epochs[-1][0] == requested:
            return requested, self.log_end_offset
        floor = None
        for e, start in self._epochs:
            if e > requested:
                if floor is None:
                    return requested, start
                return floor[0], start
            floor = (e, start)
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET

    # ------------------------------------------------------------------ reads
    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes:
        """Whole batches from the one holding ``fetch_offset`` up to ``max_offset`` (exclusive).

        The first batch is returned even when larger than ``max_bytes`` (KIP-74) unless
        ``min_one_batch`` is false. Callers check the offset range first.
        """
        limit = self.log_end_offset if max_offset is None else max_offset
        if fetch_offset >= limit:
            return b""
        bases = self._bases
        i = bisect_right(bases, fetch_offset) - 1
        if i < 0:
            i = 0
        batches = self._batches
        n = len(bases)
        if i == n - 1 or (i + 1 < n and bases[i + 1] >= limit):
            first = batches[i]
            if len(first) > max_bytes and not min_one_batch:
                return b""
            return first
        out = []
        size = 0
        while i < n and bases[i] < limit:
            b = batches[i]
            if size + len(b) > max_bytes and (out or not min_one_batch):
                break
            out.append(b)
            size += len(b)
            i += 1
        return b"".join(out)

    def bytes_between(self, start_offset: int, end_offset: int, cap: int = 1 << 62) -> int:
        """Byte distance between two offsets in whole batches, counted up to ``cap``."""
        if end_offset <= start_offset:
            return 0
        bases = self._bases
        i = max(bisect_right(bases, start_offset) - 1, 0)
        total = 0
        batches = self._batches
        n = len(bases)
        while i < n and bases[i] < end_offset and total < cap:
            total += len(batches[i])
            i += 1
        return total

    def batches_from(self, offset: int) -> list[tuple[int, bytes]]:
        i = max(bisect_right(self._bases, offset) - 1, 0)
        return list(zip(self._bases[i:], self._batches[i:]))

    # ------------------------------------------------------------------ HW, truncation
    def maybe_increment_high_watermark(self, new_hw: int) -> bool:
        """The HW only moves forward here and never past the LEO."""
        new_hw = min(new_hw, self.log_end_offset)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            return True
        return False

    def update_high_watermark(self, hw: int) -> bool:
        """Follower side: HW := min(leader HW, LEO) (may also be lowered, as Kafka's follower does)."""
        hw = max(min(hw, self.log_end_offset), self.log_start_offset)
        if hw != self.high_watermark:
            self.high_watermark = hw
            return True
        return False

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch at or past ``offset``; true if anything was removed."""
        if offset >= self.log_end_offset:
            # No data to drop, but epochs starting at or after ``offset`` (e.g. an epoch this
            # replica led without appending) go, so they cannot cause a divergence loop.
            self._epochs = [(e, s) for e, s in self._epochs if s < offset]
            return False
        offset = max(offset, self.log_start_offset)
        i = bisect_right(self._bases, offset - 1)  # batches [0, i) start before ``offset``
        if i > 0 and self._end_of(i - 1) > offset:
            i -= 1  # a batch straddling ``offset`` goes too
        removed = self._batches[i:]
        self.size_bytes -= sum(len(b) for b in removed)
        del self._bases[i:]
        del self._batches[i:]
        self.log_end_offset = self._end_of(i - 1) if i > 0 else self.log_start_offset
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self._epochs = [(e, s) for e, s in self._epochs if s < self.log_end_offset]
        self._rebuild_producer_state()
        return True

    def _end_of(self, index: int) -> int:
        info = parse_batches(self._batches[index], check_crc=False)[0]
        return self._bases[index] + info.last_offset_delta + 1

    def num_batches(self) -> int:
        return len(self._bases)

    def snapshot(self) -> LogSnapshot:
        """Read without the partition lock: each field is an int read once."""
        return LogSnapshot(self.topic, self.partition, self.log_start_offset, self.log_end_offset,
                           self.high_watermark, self.size_bytes)

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition}, start={self.log_start_offset}, "
                f"leo={self.log_end_offset}, hw={self.high_watermark})")
