"""UnifiedLog: one partition replica's log, a list of segments (Kafka's ``UnifiedLog`` and ``LocalLog`` in one class).

The log is a list of ``LogSegment`` s sorted by base offset; the last is the active segment,
the only one appended to. A new active segment is rolled before an append when the active one
would pass ``segment.bytes``, is older than ``segment.ms`` (minus its jitter) by record time,
has a full index, or cannot hold the offsets (``LogSegment.should_roll``). Reads find the
segment by offset with a binary search over the base offsets, then the batch through the
segment's sparse offset index, never by scanning the log.

The log tracks the log start offset (first offset clients may read; raised by retention, by
the leader's log start offset on followers, or by ``truncate_fully_and_start_at``), the log end
offset (LEO) and the high watermark (HW), with log start <= HW <= LEO; a leader-epoch cache
(epoch -> start offset, Kafka's ``LeaderEpochFileCache``) for follower truncation; and producer
state (``broker.storage.producer_state``: the last five batches per producer id for idempotence, the
open transactions, verification guards).

Transactions: a transactional batch opens its producer's transaction on this partition; a
COMMIT or ABORT control batch (``broker.storage.control_record``, appended for the transaction
coordinator with origin COORDINATOR) closes it, and an aborted one is written to the
transaction index of the segment holding the marker (``AbortedTxn``: producer id, first offset,
marker offset, the LSO then). The last stable offset is min(HW, first unstable offset), the
first offset of the earliest transaction still open or whose marker is not yet below the HW,
clamped up to the log start offset; read_committed fetches stop there and get the aborted
transactions overlapping what they read (``collect_aborted_transactions``).

Retention (``delete_old_segments``, called by ``LogManager``) deletes whole segments from the
oldest, each only when it lies entirely below the HW: past ``retention.ms`` by its largest
record timestamp, beyond ``retention.bytes``, or entirely below the log start offset. When every
segment goes, a new empty active segment is rolled at the LEO first (as Kafka does), so the LEO
and HW keep their values and the log start offset becomes the LEO. A log with ``roll_retention``
set (``LogManager`` sets it on in-memory logs) also runs that retention each time an append
rolls its active segment, once the append is complete, and reports the bytes freed through it.

Locking: ``lock`` (an RLock) guards every call that reads or changes the log; it is the
``Partition``'s lock (Kafka's ``leaderIsrUpdateLock`` and the log's lock folded into one), also
taken by ``LogManager`` and ``LogCleaner`` for retention and compaction. Readers that hold no
lock (metrics) only read ints.

Differences from Kafka on purpose: segments live in memory (``broker.storage.log_segment``); with
``log.dirs`` set, ``broker.storage.persistent_log.PersistentLog`` writes them through to Kafka's files
and recovers them at start-up. An in-memory log runs retention at each roll as well as on the
retention task: memory is its disk, and Kafka's schedule (a first check after
``log.initial.task.delay.ms``, 30 s, then every ``log.retention.check.interval.ms``, 5 min) lets a
log hold everything appended in between, gigabytes at a client's full rate, whatever
``retention.bytes`` says. Kafka deletes no earlier than a check that happened to run at that
moment would. The HW survives an emulated restart because the cluster keeps
the ``UnifiedLog`` object (and a process restart through ``replication-offset-checkpoint``);
batches are never split, so truncation points and HWs always fall on batch boundaries.
"""
from __future__ import annotations

import random
import threading
from bisect import bisect_right
from typing import Callable, NamedTuple

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.broker.storage.leader_epoch_cache import LeaderEpochFileCache
from kafka_emu.broker.storage.control_record import EndTransactionMarker, read_end_txn_marker
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_segment import LogSegment
from kafka_emu.broker.storage.log_validator import CONTROL_BIT, record_timestamps, validate_messages_and_assign_offsets
from kafka_emu.broker.storage.producer_state import (
    AppendOrigin,
    ProducerStateEntry,
    ProducerStateManager,
    VerificationGuard,
)
from kafka_emu.broker.storage.record_batch import NO_PRODUCER_ID, BatchInfo, new_tuple, parse_batches
from kafka_emu.broker.storage.transaction_index import AbortedTxn
from kafka_emu.timer.time import Time

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
_CLIENT = AppendOrigin.CLIENT   # read once: an Enum member read costs about a function call (3.11)


class LogAppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    num_records: int
    size_bytes: int
    duplicate: bool = False
    log_append_time: int = -1


class LogSnapshot(NamedTuple):
    """Kafka's per-partition ``kafka.log:type=Log`` gauges (LogStartOffset, LogEndOffset, Size,
    NumLogSegments), plus the HW (for consumer lag)."""

    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    num_segments: int
    last_stable_offset_lag: int = 0   # HW - LSO (Kafka's Partition gauge LastStableOffsetLag)


def _marker_of(buf: bytes | bytearray | memoryview, info: BatchInfo) -> EndTransactionMarker | None:
    """The END_TXN marker of a control batch (None for any other batch)."""
    return read_end_txn_marker(buf, info.position, info.record_count) if info.attributes & CONTROL_BIT else None


class UnifiedLog:
    def __init__(self, topic: str, partition: int, log_start_offset: int = 0,
                 config: LogConfig | None = None, time: Time | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.lock = threading.RLock()
        self.config = config if config is not None else LogConfig.for_topic()
        self.time = time or Time.SYSTEM
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_start_offset
        self.high_watermark = log_start_offset
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.leader_epoch_cache = LeaderEpochFileCache()
        self.producer_state = ProducerStateManager(f"{topic}-{partition}")
        self._first_unstable_offset = -1   # raw, -1: none (an int, for lock-free readers)
        self._name = f"{topic}-{partition}"   # for error messages, built once
        # Retention at each roll (``LogManager`` sets it on in-memory logs): told the bytes freed
        self.roll_retention: Callable[[UnifiedLog, int], None] | None = None
        self._retention_due = False   # a roll happened during the append in progress
        self._add_segment(log_start_offset)

    @property
    def producers(self) -> dict[int, ProducerStateEntry]:
        """Producer id -> state (DescribeProducers reads ``current_txn_first_offset`` there)."""
        return self.producer_state.producers

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def size_bytes(self) -> int:
        return sum(seg.size for seg in self.segments)

    def num_segments(self) -> int:
        return len(self.segments)

    def update_config(self, config: LogConfig) -> None:
        """New topic configs act lazily, as in Kafka: rolls at the next append, retention at the
        next check."""
        self.config = config

    # ------------------------------------------------------------------ segments
    def _add_segment(self, base_offset: int) -> LogSegment:
        cfg = self.config
        jitter = random.randrange(min(cfg.segment_jitter_ms, cfg.segment_ms)) if cfg.segment_jitter_ms > 0 else 0
        seg = LogSegment(base_offset, cfg.index_interval_bytes, cfg.segment_index_bytes, jitter,
                         self.time.milliseconds())
        self.producer_state.take_snapshot(base_offset)
        self.segments.append(seg)
        self._bases.append(base_offset)
        return seg

    def roll(self) -> LogSegment:
        """Start a new active segment at the LEO (Kafka's ``LocalLog.roll``); an empty active
        segment already at the LEO is kept."""
        active = self.active_segment
        if active.base_offset == self.log_end_offset and active.is_empty():
            return active
        active.on_become_inactive_segment()
        return self._add_segment(self.log_end_offset)

    def replace_segments(self, segments: list[LogSegment]) -> None:
        """Swap in a new segment list: the cleaner's rewritten segments followed by the ones it
        left alone (Kafka's ``replaceSegments``)."""
        self.segments[:] = segments
        self._bases[:] = [s.base_offset for s in segments]

    def _segment_index(self, offset: int) -> int:
        """Index of the segment holding ``offset`` (the floor segment; 0 below the first)."""
        return max(bisect_right(self._bases, offset) - 1, 0)

    # ------------------------------------------------------------------ appends
    def append_as_leader(self, data: bytes, leader_epoch: int, single_batch: bool = False,
                         topic_partition: str | None = None, origin: AppendOrigin = AppendOrigin.CLIENT,
                         verification_guard: VerificationGuard | None = None) -> LogAppendInfo:
        """Validate (``LogValidator``), assign offsets and the leader epoch, check producer
        state, append.

        Raises ``KafkaError`` with nothing written on any bad batch. A duplicate (same producer
        id, epoch and sequence range as one of the last five batches) is not appended: the
        returned info carries the original offsets and ``duplicate=True``. A transactional
        batch that opens a transaction needs ``verification_guard`` (KIP-890 part 1, see
        ``ProducerStateManager``); control batches are accepted from the COORDINATOR origin only.
        """
        cfg = self.config
        infos = parse_batches(data, cfg.max_message_bytes)
        if single_batch and len(infos) != 1:
            raise KafkaError(Errors.INVALID_RECORD,
                             f"produce requests must carry exactly one batch, got {len(infos)}")
        now = self.time.milliseconds()
        # unpacked at once: reading a NamedTuple's fields by name costs ten times more (3.11)
        records, batches, last_offset, max_timestamp, shallow_offset_of_max_timestamp, log_append_time, _ = \
            validate_messages_and_assign_offsets(data, infos, self.log_end_offset, leader_epoch, cfg, now,
                                                 topic_partition or self._name, origin is _CLIENT)
        if len(records) > cfg.segment_bytes:
            raise KafkaError(Errors.RECORD_LIST_TOO_LARGE,
                             f"record set of {len(records)} bytes exceeds segment.bytes {cfg.segment_bytes}")
        pending: dict[int, ProducerStateEntry] = {}
        producer_state = self.producer_state
        producers = False
        for info in batches:
            if info.producer_id == NO_PRODUCER_ID:
                continue   # neither idempotent nor transactional: nothing to check or remember
            producers = True
            dup = producer_state.check_batch(info, pending, origin, _marker_of(records, info),
                                             verification_guard)
            if dup is not None:
                if len(batches) == 1:
                    # Kafka answers a duplicate with the original batch's timestamp as its append time
                    return LogAppendInfo(dup.first_offset, dup.last_offset, info.record_count,
                                         0, duplicate=True, log_append_time=dup.timestamp)
                raise KafkaError(Errors.DUPLICATE_SEQUENCE_NUMBER, "duplicate batch in a multi-batch append")
        # Validation passed for every batch: now commit the appends.
        first = self.log_end_offset
        if leader_epoch >= 0:   # _assign_epoch, inlined on the hot path
            self.leader_epoch_cache.assign(leader_epoch, first)
        segment = self._append(records, last_offset, max_timestamp, shallow_offset_of_max_timestamp, now)
        if producers:   # only producer state moves the first unstable offset
            for info in batches:
                if info.producer_id != NO_PRODUCER_ID:
                    self._update_producer_state(records, info, segment)
            self._maybe_update_first_unstable_offset()
        if self._retention_due:
            self._retain_after_roll(now)
        return new_tuple(LogAppendInfo, (first, last_offset, last_offset + 1 - first, len(records), False,
                                         log_append_time))

    def _append(self, records: bytes | memoryview, last_offset: int, max_timestamp: int,
                shallow_offset_of_max_timestamp: int, now_ms: int) -> LogSegment:
        segment = self.segments[-1]
        cfg = self.config
        if segment.should_roll(len(records), max_timestamp, last_offset, now_ms, cfg.segment_bytes, cfg.segment_ms):
            segment = self.roll()
            self._retention_due = self.roll_retention is not None
        segment.append(last_offset, max_timestamp, shallow_offset_of_max_timestamp, records, now_ms)
        self.log_end_offset = last_offset + 1
        return segment

    def append_as_follower(self, data: bytes) -> int:
        """Append batches replicated from the leader (offsets already assigned); return count."""
        if not data:
            return 0
        infos = parse_batches(data, check_crc=False)
        expected = self.log_end_offset
        # all of them new (the usual case), else those past the LEO (a response that raced a truncation)
        new = infos if infos and infos[0].base_offset >= expected else [i for i in infos if i.base_offset >= expected]
        if not new:
            return 0
        max_ts, shallow = -1, expected
        for info in new:
            if info.base_offset != expected:
                raise KafkaError(Errors.CORRUPT_MESSAGE,
                                 f"non-contiguous follower append {info.base_offset} != {expected}")
            expected = info.base_offset + info.last_offset_delta + 1
            if info.max_timestamp > max_ts:
                max_ts, shallow = info.max_timestamp, expected - 1
        epoch = None
        for info in new:   # of consecutive batches of one epoch only the first can start it
            if info.leader_epoch != epoch:
                epoch = info.leader_epoch
                self._assign_epoch(epoch, info.base_offset)
        start = new[0].position
        end = new[-1].position + new[-1].size
        now = self.time.milliseconds()
        with memoryview(data) as view:
            segment = self._append(view[start:end], expected - 1, max_ts, shallow, now)
        producers = False
        for info in new:
            if info.producer_id != NO_PRODUCER_ID:
                self._update_producer_state(data, info, segment)
                producers = True
        if producers:   # only producer state moves the first unstable offset
            self._maybe_update_first_unstable_offset()
        if self._retention_due:
            self._retain_after_roll(now)
        return len(new)

    # ------------------------------------------------------------------ producer state
    def _update_producer_state(self, buf: bytes | bytearray, info: BatchInfo, segment: LogSegment | None) -> None:
        """Apply an appended batch (``buf[info.position:]``); a marker that completes a
        transaction is indexed in ``segment`` (the one holding the marker) when it aborts, then
        completed (Kafka's ``UnifiedLog.append`` after the segment append). ``segment`` is None
        when replaying stored batches, whose aborts are indexed already."""
        producer_state = self.producer_state
        completed = producer_state.update(info, _marker_of(buf, info))
        if completed is None:
            return
        if completed.is_aborted and segment is not None:
            segment.txn_index.append(AbortedTxn(completed.producer_id, completed.first_offset,
                                                completed.last_offset,
                                                producer_state.last_stable_offset(completed)))
        producer_state.complete_txn(completed)

    def _rebuild_producer_state(self) -> None:
        """Restore the latest snapshot at or below the LEO and replay the batches after it
        (Kafka's ``rebuildProducerState`` after a truncation)."""
        producer_state = self.producer_state
        start = producer_state.truncate_and_reload(self.log_end_offset)
        if start is None:
            start = self.segments[0].base_offset
        else:   # Kafka's loadFromSnapshot skips the producers expired meanwhile
            producer_state.remove_expired_producers(self.time.milliseconds(), self.config.producer_id_expiration_ms)
        for i in range(self._segment_index(start), len(self.segments)):
            seg = self.segments[i]
            if seg.is_empty() or seg.next_offset <= start:
                continue
            for info in parse_batches(seg.records, check_crc=False):
                if info.base_offset >= start:
                    self._update_producer_state(seg.records, info, None)
        producer_state.on_high_watermark_updated(self.high_watermark)
        self._update_first_unstable_offset()

    def reload_producer_state(self) -> None:
        """Rebuild producer state, its snapshots and every segment's transaction index from the
        stored batches (Kafka's ``LogSegment.recover`` and ``rebuildProducerState`` for a log
        whose segments were loaded from somewhere else, e.g. files)."""
        self.producer_state.truncate_fully()
        self.replay_producer_state_from(self.segments[0].base_offset)

    def replay_producer_state_from(self, start: int) -> None:
        """Apply the batches from ``start`` (where the producer state stands: a snapshot's offset,
        or the first segment with the state empty) to the LEO, rebuilding the transaction indexes
        of the segments they are in and taking the snapshots at their base offsets."""
        producer_state = self.producer_state
        for seg in self.segments[self._segment_index(start):]:
            if seg.base_offset >= start:
                producer_state.take_snapshot(seg.base_offset)
            seg.txn_index.truncate_to(max(start, seg.base_offset))
            if seg.is_empty() or seg.next_offset <= start:
                continue
            for info in parse_batches(seg.records, check_crc=False):
                if info.base_offset >= start:
                    self._update_producer_state(seg.records, info, seg)
        producer_state.on_log_start_offset_incremented(self.log_start_offset)
        producer_state.on_high_watermark_updated(self.high_watermark)
        self._update_first_unstable_offset()

    def maybe_start_transaction_verification(self, producer_id: int, producer_epoch: int,
                                             supports_epoch_bump: bool = False) -> VerificationGuard | None:
        """Kafka's ``UnifiedLog.maybeStartTransactionVerification`` (see ``ProducerStateManager``)."""
        return self.producer_state.maybe_start_transaction_verification(producer_id, producer_epoch,
                                                                        supports_epoch_bump)

    # ------------------------------------------------------------------ transactions
    def _update_first_unstable_offset(self) -> None:
        first = self.producer_state.first_unstable_offset()
        self._first_unstable_offset = -1 if first is None else first

    def _maybe_update_first_unstable_offset(self) -> None:
        """After an append: only logs with transactions pay for the recomputation."""
        producer_state = self.producer_state
        if producer_state.ongoing_txns or producer_state.unreplicated_txns or self._first_unstable_offset >= 0:
            self._update_first_unstable_offset()

    def _on_high_watermark_updated(self) -> None:
        self.producer_state.on_high_watermark_updated(self.high_watermark)
        self._update_first_unstable_offset()

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open or unreplicated transaction, clamped up to the
        log start offset; None when there is none."""
        first = self._first_unstable_offset
        return None if first < 0 else max(first, self.log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """LSO = min(first unstable offset, HW): what read_committed consumers may read up to.
        Reads ints only (safe without the lock, for metrics)."""
        first = self._first_unstable_offset
        hw = self.high_watermark
        if first < 0:
            return hw
        return min(max(first, self.log_start_offset), hw)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start_offset, upper_bound_offset)``, from the
        segment holding ``start_offset`` on (Kafka's ``LocalLog.collectAbortedTransactions``)."""
        out: list[AbortedTxn] = []
        segments = self.segments
        for i in range(self._segment_index(start_offset), len(segments)):
            result = segments[i].txn_index.collect_aborted_txns(start_offset, upper_bound_offset)
            out.extend(result.aborted)
            if result.complete:
                break
        return out

    # ------------------------------------------------------------------ epochs
    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        """Batches written with leader epoch -1 (before KIP-101) name no epoch."""
        if epoch >= 0:
            self.leader_epoch_cache.assign(epoch, start_offset)

    def assign_epoch_start_offset(self, epoch: int) -> None:
        """On becoming leader (Kafka's ``Partition.makeLeader``): the new epoch starts at the LEO."""
        self._assign_epoch(epoch, self.log_end_offset)

    def latest_epoch(self) -> int:
        return self.leader_epoch_cache.latest_epoch()

    def epoch_start_offset(self, epoch: int) -> int:
        return self.leader_epoch_cache.start_offset_of(epoch)

    def end_offset_for_epoch(self, requested: int) -> tuple[int, int]:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: (epoch, end offset) or (-1, -1)."""
        return self.leader_epoch_cache.end_offset_for(requested, self.log_end_offset)

    # ------------------------------------------------------------------ reads
    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes:
        """Whole batches from the one holding ``fetch_offset`` up to ``max_offset`` (exclusive),
        from one segment.

        The first batch is returned even when larger than ``max_bytes`` (KIP-74) unless
        ``min_one_batch`` is false. Callers check the offset range first.
        """
        limit = self.log_end_offset if max_offset is None else max_offset
        if fetch_offset >= limit:
            return b""
        segments = self.segments
        for i in range(self._segment_index(fetch_offset), len(segments)):
            seg = segments[i]
            if seg.base_offset >= limit:
                break
            records = seg.read(fetch_offset, max_bytes, limit, min_one_batch)
            if records is not None:
                return records
        return b""

    def bytes_between(self, start_offset: int, end_offset: int, cap: int = 1 << 62) -> int:
        """Byte distance between two offsets in whole batches, counted up to ``cap``."""
        if end_offset <= start_offset:
            return 0
        total = 0
        segments = self.segments
        for i in range(self._segment_index(start_offset), len(segments)):
            for h in segments[i].batches(start_offset if total == 0 else None):
                if h.base_offset >= end_offset or total >= cap:
                    return total
                total += h.size
        return total

    def batches_from(self, offset: int) -> list[tuple[int, bytes]]:
        """(base offset, batch bytes) of every batch from the one holding ``offset``."""
        out: list[tuple[int, bytes]] = []
        segments = self.segments
        for i in range(self._segment_index(offset), len(segments)):
            seg = segments[i]
            for h in seg.batches(offset if not out else None):
                out.append((h.base_offset, seg.batch_bytes(h)))
        return out

    def fetch_offset_by_timestamp(self, target: int, limit: int) -> tuple[int, int]:
        """(offset, timestamp) of the first record below ``limit`` with timestamp >= ``target``
        (Kafka's ``fetchOffsetByTimestamp``), or (-1, -1)."""
        for seg in self.segments:
            if seg.base_offset >= limit:
                break
            if seg.largest_timestamp < target or seg.is_empty():
                continue
            _, indexed = seg.time_index.lookup(target)
            for h in seg.batches(max(indexed, self.log_start_offset)):
                if h.base_offset >= limit:
                    return -1, -1
                if h.max_timestamp < target:
                    continue
                for off, ts in record_timestamps(seg.records, h):
                    if off >= limit:
                        return -1, -1
                    if ts >= target and off >= self.log_start_offset:
                        return off, ts
        return -1, -1

    def fetch_offset_of_max_timestamp(self, limit: int) -> tuple[int, int]:
        """(offset, timestamp) of the record with the largest timestamp below ``limit``."""
        best = (-1, -1)
        for seg in self.segments:
            if seg.base_offset >= limit:
                break
            for h in seg.batches():
                if h.base_offset >= limit or h.max_timestamp <= best[1]:
                    continue
                for off, ts in record_timestamps(seg.records, h):
                    if off < limit and ts > best[1] and off >= self.log_start_offset:
                        best = (off, ts)
        return best

    # ------------------------------------------------------------------ HW, log start
    def maybe_increment_high_watermark(self, new_hw: int) -> bool:
        """The HW only moves forward here and never past the LEO."""
        new_hw = min(new_hw, self.log_end_offset)
        if new_hw > self.high_watermark:
            self.high_watermark = new_hw
            if self._first_unstable_offset >= 0:
                self._on_high_watermark_updated()
            return True
        return False

    def update_high_watermark(self, hw: int) -> bool:
        """Follower side: HW := min(leader HW, LEO) (may also be lowered, as Kafka's follower does)."""
        hw = max(min(hw, self.log_end_offset), self.log_start_offset)
        if hw != self.high_watermark:
            self.high_watermark = hw
            if self._first_unstable_offset >= 0:
                self._on_high_watermark_updated()
            return True
        return False

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Raise the log start offset (a follower taking its leader's); never above the HW.
        Segments wholly below it go at the next retention check."""
        new = min(new_log_start_offset, self.high_watermark)
        if new <= self.log_start_offset:
            return False
        self.log_start_offset = new
        self.leader_epoch_cache.truncate_from_start(new)
        self.producer_state.on_log_start_offset_incremented(new)
        self._update_first_unstable_offset()
        return True

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Kafka's ``UnifiedLog.removeExpiredProducers`` (the ``PeriodicProducerExpirationCheck``
        task): forget the producers idle for ``producer.id.expiration.ms`` with no transaction
        open here; returns their ids. Caller holds ``lock``."""
        return self.producer_state.remove_expired_producers(now_ms, self.config.producer_id_expiration_ms)

    # ------------------------------------------------------------------ retention
    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Kafka's ``deleteOldSegments``: log-start-offset breach, then (``delete`` policy)
        size and time breaches. Returns the bytes deleted."""
        now = self.time.milliseconds() if now_ms is None else now_ms
        deleted = self._delete_segments(self._deletable(self._below_log_start))
        if self.config.delete:
            deleted += self._delete_retention_size_breached()
            deleted += self._delete_segments(self._deletable(
                lambda seg, nxt: 0 <= self.config.retention_ms < now - seg.largest_timestamp))
        return deleted

    def _retain_after_roll(self, now_ms: int) -> None:
        """Retention once the append that rolled is complete (producer state included), as if
        the retention task had run right after it."""
        self._retention_due = False
        freed = self.delete_old_segments(now_ms)
        if freed and self.roll_retention is not None:
            self.roll_retention(self, freed)

    def _below_log_start(self, seg: LogSegment, nxt: LogSegment | None) -> bool:
        return nxt is not None and nxt.base_offset <= self.log_start_offset

    def _delete_retention_size_breached(self) -> int:
        limit = self.config.retention_bytes
        size = self.size_bytes
        if limit < 0 or size < limit:
            return 0
        diff = size - limit

        def breached(seg: LogSegment, nxt: LogSegment | None) -> bool:
            nonlocal diff
            if diff - seg.size >= 0:
                diff -= seg.size
                return True
            return False

        return self._delete_segments(self._deletable(breached))

    def _deletable(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> list[LogSegment]:
        """Oldest segments, each wholly below the HW, while ``predicate`` holds (Kafka's
        ``deletableSegments``); an empty last segment is never deletable."""
        out: list[LogSegment] = []
        segments = self.segments
        n = len(segments)
        for i, seg in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < n else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if self.high_watermark < upper or (nxt is None and seg.is_empty()) or not predicate(seg, nxt):
                break
            out.append(seg)
        return out

    def _delete_segments(self, deletable: list[LogSegment]) -> int:
        if not deletable:
            return 0
        if len(deletable) == len(self.segments):
            self.roll()
        count = len(deletable)
        freed = sum(seg.size for seg in deletable)
        del self.segments[:count]
        del self._bases[:count]
        new_start = self.segments[0].base_offset
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start
            self.leader_epoch_cache.truncate_from_start(new_start)
            self.producer_state.on_log_start_offset_incremented(new_start)
            self._update_first_unstable_offset()
        self.producer_state.delete_snapshots_before(new_start)
        return freed

    def delete_oldest_segment(self) -> int:
        """Delete the oldest segment if it is not the active one and lies below the HW (the
        memory budget); returns the bytes freed."""
        if len(self.segments) < 2 or self.high_watermark < self.segments[1].base_offset:
            return 0
        return self._delete_segments(self.segments[:1])

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, offset: int) -> bool:
        """Drop every batch at or past ``offset``; true if anything was removed."""
        if offset >= self.log_end_offset:
            # No data to drop, but epochs starting at or after the LEO (e.g. an epoch this
            # replica led without appending) go, so they cannot cause a divergence loop.
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if offset < self.segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        i = self._segment_index(offset)
        del self.segments[i + 1:]
        del self._bases[i + 1:]
        self.segments[i].truncate_to(offset)
        self.log_end_offset = self.active_segment.next_offset
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self._rebuild_producer_state()
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete everything and restart empty at ``new_offset`` (a follower far behind its
        leader's log start offset)."""
        self.segments.clear()
        self._bases.clear()
        self.producer_state.truncate_fully()
        self._first_unstable_offset = -1
        self._add_segment(new_offset)
        self.log_start_offset = self.log_end_offset = self.high_watermark = new_offset
        self.leader_epoch_cache.clear()

    def snapshot(self) -> LogSnapshot:
        """Read without the partition lock: each field is an int read once."""
        hw = self.high_watermark
        return LogSnapshot(self.topic, self.partition, self.log_start_offset, self.log_end_offset,
                           hw, self.size_bytes, len(self.segments), hw - self.last_stable_offset)

    def __repr__(self) -> str:
        return (f"UnifiedLog({self.topic}-{self.partition}, start={self.log_start_offset}, "
                f"leo={self.log_end_offset}, hw={self.high_watermark}, segments={len(self.segments)})")
