"""LogCleaner: compaction of ``cleanup.policy=compact`` logs (Kafka's ``LogCleaner`` and
``LogCleanerManager``), on one thread, ``kafka-log-cleaner-thread-0``.

Each round (``clean_filthiest_log``) picks the compacted log with the highest dirty ratio:

* the *dirty* section starts at the log's first dirty offset (where the previous cleaning
  ended, ``cleaner-offset-checkpoint`` in Kafka; reset to the log start offset when out of
  range) and ends at the first *uncleanable* segment: the active segment, the segment holding
  the last stable offset (nothing of an undecided transaction is cleaned), or the first segment with a record newer than ``min.compaction.lag.ms``;
* ratio = dirty bytes / (clean bytes + dirty bytes); the log is cleaned when the ratio passes
  ``min.cleanable.dirty.ratio``, or when a dirty segment's first record is older than
  ``max.compaction.lag.ms`` (and there is something to clean).

Cleaning (``do_clean``, Kafka's ``Cleaner.doClean``) first maps the keys of the dirty section
to their latest offsets (``build_offset_map``). Records of aborted transactions (known from the
segments' transaction indexes) are not mapped, so an aborted write never hides a committed value.
The map holds at most ``log.cleaner.dedupe.buffer.size`` / 24 bytes per entry times
``log.cleaner.io.buffer.load.factor`` keys, as Kafka's ``SkimpyOffsetMap`` does; when it fills up,
the round ends where the mapping stopped (``latest_offset``) and the next round goes on from there.

Then every segment below the map's end is rewritten, grouped so that each group of consecutive
segments becomes one segment of at most ``segment.bytes``. The batches are walked in offset order
with a ``CleanedTransactionMetadata``, which tracks the transactions the walk is inside of:

* a data batch of an aborted transaction loses all its records;
* a data record is kept when it lies past the mapped range, or has a key and is the latest for it
  in the map; a tombstone (null value) also goes once its batch's delete horizon has passed;
* an ABORT marker stays while a batch of its transaction was seen in this pass, and its entry is
  then written to the cleaned segment's transaction index (read_committed consumers still skip
  whatever of the transaction is left); a COMMIT marker is likewise discardable once no batch
  of its transaction was seen. A discardable marker first gets a delete horizon and goes in a
  later pass past it, so a consumer that read the transaction's records sees its marker;
* KIP-534 delete horizons: a rewritten batch holding a tombstone, or a discardable marker,
  without a horizon gets one, now + ``delete.retention.ms``, stored in its base timestamp with
  attribute bit 0x40 (record timestamp deltas are re-based, record timestamps do not change);
* a batch holding the last data offset of a producer in the log's producer state (or, when its
  last entry is a marker, its last marker of the same epoch), and the last batch of the round,
  stay even when they lose all their records, as empty batches (header only, Kafka's
  ``writeEmptyHeader``): the producer's epoch and sequence survive compaction, so a reload
  still detects its duplicates and accepts its next sequence.

A batch that loses records is rebuilt in place: same base and last offset, codec, producer
fields and leader epoch, fewer records (offsets keep their values, gaps are fine; the count no
longer matches the offset span, as in Kafka); any other batch that loses all its records goes.
The active segment is never touched, and the latest committed value of every key always
survives. Retention of compacted logs (``compact,delete``, and segments below the log start
offset) is the ``LogManager``'s retention task.

A partition whose cleaning raises is marked uncleanable and skipped from then on (Kafka's
``markPartitionUncleanable``) until its log is deleted. ``snapshot()`` gives Kafka's gauges:
LogCleanerManager ``max-dirty-percent`` (highest dirty ratio over the compacted logs at the last
choice), ``time-since-last-run-ms``, ``uncleanable-partitions-count``, and LogCleaner
``cleaner-recopy-percent`` and ``max-clean-time-secs`` of the last cleaning.

Locking: a log is cleaned under its ``UnifiedLog.lock`` (appends to it wait for the round); the
cleaner's own state (``_first_dirty``, ``_uncleanable``) is changed only by its thread and by
``remove_log``, under ``_lock``; the metrics' fields are single values written by the cleaner
thread and read by scrapes without a lock.

Differences from Kafka on purpose: the offset map is a dict keyed by the key's bytes (Kafka's
keys by their MD5 hash, so it never confuses two keys); there is one cleaner thread; only magic
v2 batches are stored, so there is no legacy tombstone rule (segment last-modified time). Without
a fixed-size buffer there is no ``max-buffer-utilization-percent``, and without log directories
``uncleanable-partitions-count`` has no ``logDirectory`` tag.
"""
from __future__ import annotations

import heapq
import struct
import threading
import time as _time
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import structlog
from crc32c import crc32c

from kafka_emu.common.varint import read_varint, write_varint
from kafka_emu.broker.storage import compression
from kafka_emu.common.config_def import ConfigException
from kafka_emu.broker.storage.control_record import ControlRecordType
from kafka_emu.broker.storage.log_segment import LogSegment
from kafka_emu.broker.storage.log_validator import (
    CONTROL_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    RecordInfo,
    records_payload,
    walk_records,
)
from kafka_emu.broker.storage.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_PRODUCER_ID,
    BatchInfo,
    parse_batches,
)
from kafka_emu.broker.storage.transaction_index import AbortedTxn, TransactionIndex
from kafka_emu.timer import ShutdownableThread
from kafka_emu.timer.time import Time

if TYPE_CHECKING:
    from kafka_emu.broker.storage.unified_log import UnifiedLog
    from kafka_emu.broker.storage.log_manager import LogManager

_log = structlog.get_logger("broker.log_cleaner")

TP = tuple[str, int]
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_LENGTH_AT, _CRC_AT, _ATTRIBUTES_AT, _BASE_TIMESTAMP_AT, _MAX_TIMESTAMP_AT, _COUNT_AT = 8, 17, 21, 27, 35, 57
DELETE_HORIZON_BIT = 0x40   # attributes bit 6 (KIP-534): the base timestamp is the delete horizon
LONG_MAX = (1 << 63) - 1
OFFSET_MAP_BYTES_PER_ENTRY = 24   # Kafka's SkimpyOffsetMap: a 16-byte MD5 of the key and an 8-byte offset


class CleanableLog(NamedTuple):
    log: "UnifiedLog"
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


class CleanerStats(NamedTuple):
    bytes_read: int
    bytes_written: int
    records_removed: int


@dataclass(frozen=True, slots=True)
class LogCleanerSnapshot:
    """Kafka's ``kafka.log:type=LogCleaner`` and ``type=LogCleanerManager`` gauges."""

    max_dirty_percent: int              # LogCleanerManager: dirtiest compacted log's ratio at the last choice
    time_since_last_run_ms: int         # LogCleanerManager: since the last choice of a log to clean
    uncleanable_partitions_count: int   # LogCleanerManager: partitions whose cleaning failed
    cleaner_recopy_percent: int         # LogCleaner: bytes written / bytes read by the last cleaning
    max_clean_time_secs: int            # LogCleaner: duration of the last cleaning


def _key_of(payload: bytes | memoryview, r: RecordInfo) -> bytes | None:
    return None if r.key_length < 0 else bytes(payload[r.key_start:r.key_start + r.key_length])


class LogCleaner(ShutdownableThread):
    def __init__(self, log_manager: "LogManager", backoff_ms: int, time: Time | None = None,
                 broker_id: int = 0, dedupe_buffer_size: int = 128 * 1024 * 1024,
                 load_factor: float = 0.9) -> None:
        super().__init__(name="kafka-log-cleaner-thread-0", log_context={"broker_id": broker_id})
        self.log_manager = log_manager
        self.backoff_ms = backoff_ms
        # Kafka's SkimpyOffsetMap slots (memory / 24 bytes) times log.cleaner.io.buffer.load.factor
        self.max_map_size = int(min(dedupe_buffer_size, 0x7FFFFFFF) // OFFSET_MAP_BYTES_PER_ENTRY * load_factor)
        if self.max_map_size < 1:
            raise ConfigException("offset map is too small to fit in even a single message, so log cleaning will "
                             "never make progress. You can increase log.cleaner.dedupe.buffer.size or decrease "
                             "log.cleaner.threads")
        self.time = time or Time.SYSTEM
        self._lock = threading.Lock()
        self._first_dirty: dict[TP, int] = {}
        self._uncleanable: set[TP] = set()
        self.logs_cleaned = 0
        self.records_removed = 0
        # for the metrics (written by the cleaner thread, read by scrapes: plain values)
        self._dirtiest_ratio = 0.0
        self._time_of_last_run_ms = self.time.milliseconds()
        self._last_stats = CleanerStats(0, 0, 0)
        self._last_clean_s = 0.0

    # ------------------------------------------------------------------ thread
    def do_work(self) -> None:
        try:
            cleaned = self.clean_filthiest_log()
        except Exception:
            _log.exception("log_cleaning_failed")
            cleaned = False
        if not cleaned:
            self._shutdown_initiated.wait(self.backoff_ms / 1000.0)

    def remove_log(self, tp: TP) -> None:
        """A deleted log: forget where its cleaning ended, and that it could not be cleaned."""
        with self._lock:
            self._first_dirty.pop(tp, None)
            self._uncleanable.discard(tp)

    def snapshot(self) -> LogCleanerSnapshot:
        """Read without the cleaner's lock: each field is read once."""
        stats = self._last_stats
        return LogCleanerSnapshot(
            int(100 * self._dirtiest_ratio), self.time.milliseconds() - self._time_of_last_run_ms,
            len(self._uncleanable), int(100 * stats.bytes_written / max(stats.bytes_read, 1)),
            int(self._last_clean_s))

    # ------------------------------------------------------------------ choosing
    def cleanable(self, log: "UnifiedLog", now_ms: int) -> CleanableLog:
        """Kafka's ``LogCleanerManager.cleanableOffsets`` and ``calculateCleanableBytes``."""
        tp = (log.topic, log.partition)
        first_dirty = self._first_dirty.get(tp, log.log_start_offset)
        if first_dirty < log.log_start_offset or first_dirty > log.log_end_offset:
            first_dirty = log.log_start_offset
        cfg = log.config
        segments = log.segments
        first_uncleanable = log.active_segment.base_offset
        for i, seg in enumerate(segments[:-1]):
            upper = segments[i + 1].base_offset
            if upper <= first_dirty:
                continue
            too_new = cfg.min_compaction_lag_ms > 0 and seg.largest_timestamp > now_ms - cfg.min_compaction_lag_ms
            if upper > log.last_stable_offset or too_new:
                first_uncleanable = seg.base_offset
                break
        clean = sum(s.size for i, s in enumerate(segments[:-1]) if segments[i + 1].base_offset <= first_dirty)
        dirty = sum(s.size for s in segments[:-1]
                    if s.base_offset < first_uncleanable and s.next_offset > first_dirty)
        return CleanableLog(log, first_dirty, first_uncleanable, clean, dirty)

    def _needs_compaction_now(self, c: CleanableLog, now_ms: int) -> bool:
        lag = c.log.config.max_compaction_lag_ms
        for seg in c.log.segments[:-1]:
            if c.first_dirty_offset <= seg.base_offset < c.first_uncleanable_offset:
                first_ts = seg.first_batch_timestamp()
                if first_ts is not None and 0 <= first_ts < now_ms - lag:
                    return True
        return False

    def grab_filthiest_compacted_log(self, now_ms: int) -> CleanableLog | None:
        """Kafka's ``grabFilthiestCompactedLog``: the eligible compacted log with the highest
        dirty ratio, skipping uncleanable partitions; notes the run and the highest ratio of all
        compacted logs (``max-dirty-percent``)."""
        self._time_of_last_run_ms = now_ms
        best: CleanableLog | None = None
        dirtiest = 0.0
        for log in self.log_manager.all_logs():
            if not log.config.compact or (log.topic, log.partition) in self._uncleanable:
                continue
            with log.lock:
                c = self.cleanable(log, now_ms)
                eligible = c.cleanable_bytes > 0 and (
                    c.cleanable_ratio > log.config.min_cleanable_dirty_ratio or self._needs_compaction_now(c, now_ms))
            dirtiest = max(dirtiest, c.cleanable_ratio)
            if eligible and (best is None or c.cleanable_ratio > best.cleanable_ratio):
                best = c
        self._dirtiest_ratio = dirtiest
        return best

    def clean_filthiest_log(self) -> bool:
        """One round: clean the filthiest eligible log; false when none was."""
        now = self.time.milliseconds()
        chosen = self.grab_filthiest_compacted_log(now)
        if chosen is None:
            return False
        log = chosen.log
        tp = (log.topic, log.partition)
        started = _time.monotonic()
        with log.lock:
            c = self.cleanable(log, now)   # again, under the lock: the log may have moved on
            if c.cleanable_bytes == 0 or tp not in self._live_tps():
                return False
            try:
                stats = self.clean(c, now)
            except Exception:
                # Kafka's LogCleaningException: the partition is left alone from now on
                # (``uncleanable-partitions-count``); ``clean`` swaps segments only at its end, so
                # the log is as it was
                with self._lock:
                    self._uncleanable.add(tp)
                _log.exception("log_cleaning_failed_partition_uncleanable", topic=log.topic, partition=log.partition)
                return False
        self._last_stats = stats
        self._last_clean_s = _time.monotonic() - started
        self.logs_cleaned += 1
        self.records_removed += stats.records_removed
        _log.info("log_cleaned", topic=log.topic, partition=log.partition, bytes_read=stats.bytes_read,
                  bytes_written=stats.bytes_written, records_removed=stats.records_removed,
                  dirty_ratio=round(chosen.cleanable_ratio, 3))
        return True

    def _live_tps(self) -> set[TP]:
        return {(lg.topic, lg.partition) for lg in self.log_manager.all_logs()}

    # ------------------------------------------------------------------ cleaning
    def clean(self, c: CleanableLog, now_ms: int) -> CleanerStats:
        """Clean ``c.log`` (lock held) and remember where the cleaning ended (Kafka's
        ``cleaner-offset-checkpoint``)."""
        end_offset, stats = self.do_clean(c.log, c.first_dirty_offset, c.first_uncleanable_offset, now_ms)
        with self._lock:
            self._first_dirty[(c.log.topic, c.log.partition)] = end_offset
        return stats

    def do_clean(self, log: "UnifiedLog", first_dirty: int, first_uncleanable: int,
                 now_ms: int) -> tuple[int, CleanerStats]:
        """Kafka's ``Cleaner.doClean`` (lock held): map the dirty section ``[first_dirty,
        first_uncleanable)``, then rewrite every segment below the map's end; returns (the end
        offset: the next cleaning's first dirty offset, the statistics)."""
        offset_map = self.build_offset_map(log, first_dirty, first_uncleanable)
        end_offset = offset_map.latest_offset + 1
        active = log.active_segment
        to_clean = [s for s in log.segments if s.base_offset < end_offset and s is not active]
        txn_metadata = CleanedTransactionMetadata()
        producers = _last_records_of_active_producers(log)
        stats = _Stats()
        cleaned = [self._clean_segments(log, group, offset_map, now_ms, stats, txn_metadata, producers,
                                        first_uncleanable)
                   for group in self._group_by_size(to_clean, log.config.segment_bytes)]
        if cleaned:
            done = {id(s) for s in to_clean}
            log.replace_segments(cleaned + [s for s in log.segments if id(s) not in done])
        return end_offset, CleanerStats(stats.bytes_read, stats.bytes_written, stats.records_removed)

    def build_offset_map(self, log: "UnifiedLog", start: int, end: int) -> OffsetMap:
        """Kafka's ``buildOffsetMap``: key -> latest offset over the dirty segments from the one
        holding ``start`` up to ``end``; records of aborted transactions are not mapped (they
        must not hide a committed value), nor records below ``start``. When the map is full the
        mapping stops and ``latest_offset`` says how far it got; a fully mapped segment counts up
        to the next segment's base offset (offset gaps included)."""
        offset_map = OffsetMap()
        segments = log.segments
        first = log._segment_index(start)
        dirty = [s for s in segments[first:] if s.base_offset < end]
        txn_metadata = CleanedTransactionMetadata()
        txn_metadata.add_aborted_transactions(log.collect_aborted_transactions(start, end))
        for i, seg in enumerate(dirty):
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            if not self._map_segment(seg, offset_map, start, txn_metadata):
                return offset_map   # full
            offset_map.latest_offset = next_start - 1
        return offset_map

    def _map_segment(self, seg: LogSegment, offset_map: OffsetMap, start: int,
                     txn_metadata: "CleanedTransactionMetadata") -> bool:
        """Map one segment's records from ``start`` on; false when the map filled up."""
        if seg.is_empty():
            return True
        buf = seg.records
        capacity = self.max_map_size
        for info in parse_batches(buf, check_crc=False):
            if info.is_control:
                txn_metadata.on_control_batch_read(info, buf)
            elif not txn_metadata.on_batch_read(info) and info.record_count:
                batch = memoryview(buf)[info.position:info.position + info.size]
                payload = records_payload(batch, info.attributes)
                for r in walk_records(payload, info.record_count):
                    offset = info.base_offset + r.offset_delta
                    if r.key_length >= 0 and offset >= start:
                        if len(offset_map.offsets) >= capacity:
                            return False
                        offset_map.put(_key_of(payload, r), offset)
            last_offset = info.base_offset + info.last_offset_delta
            if last_offset >= start:
                offset_map.latest_offset = last_offset
        return True

    def _clean_segments(self, log: "UnifiedLog", group: list[LogSegment], offset_map: OffsetMap, now_ms: int,
                        stats: "_Stats", txn_metadata: "CleanedTransactionMetadata",
                        producers: dict[int, LastRecord], upper_bound: int) -> LogSegment:
        """Kafka's ``cleanSegments``: one group of segments into one new segment, its
        transaction index holding the aborted transactions whose markers stay."""
        cfg = log.config
        out = LogSegment(group[0].base_offset, cfg.index_interval_bytes, cfg.segment_index_bytes,
                         created_ms=group[0].created_ms)
        txn_metadata.cleaned_index = out.txn_index
        for i, seg in enumerate(group):
            # the aborted transactions of the whole segment: its rebuilt index needs all of them
            upper = group[i + 1].base_offset if i + 1 < len(group) else seg.next_offset
            txn_metadata.add_aborted_transactions(log.collect_aborted_transactions(seg.base_offset, upper))
            stats.bytes_read += seg.size
            if not seg.is_empty():
                for info in parse_batches(seg.records, check_crc=False):
                    kept = self._clean_batch(seg.records, info, offset_map, now_ms, cfg.delete_retention_ms,
                                             stats, txn_metadata, producers, upper_bound)
                    if kept:
                        out.records += kept
        out.rebuild_indexes()
        out.next_offset = group[-1].next_offset
        out.last_modified_ms = group[-1].last_modified_ms
        out.on_become_inactive_segment()
        stats.bytes_written += out.size
        return out

    @staticmethod
    def _clean_batch(buf: bytes | bytearray | memoryview, info: BatchInfo, offset_map: OffsetMap, now_ms: int,
                     delete_retention_ms: int, stats: "_Stats", txn_metadata: "CleanedTransactionMetadata",
                     producers: dict[int, LastRecord], upper_bound: int) -> bytes:
        """The batch as it stays (b"": it goes): Kafka's ``cleanInto`` record filter
        (``checkBatchRetention`` and ``shouldRetainRecord``) applied by ``MemoryRecords.filterTo``."""
        batch = bytes(buf[info.position:info.position + info.size])
        horizon = _delete_horizon_ms(batch, info.attributes)
        last_offset = info.base_offset + info.last_offset_delta
        if info.is_control:
            # a marker goes only once nothing of its transaction is left and its horizon passed
            can_discard = txn_metadata.on_control_batch_read(info, buf)
            discard_records = can_discard and horizon is not None and horizon <= now_ms
        else:
            can_discard = discard_records = txn_metadata.on_batch_read(info)
        last = producers.get(info.producer_id)
        if last is None:
            is_last_of_producer = False
        elif last.last_data_offset is not None:
            is_last_of_producer = last_offset == last.last_data_offset
        else:
            is_last_of_producer = info.is_control and info.producer_epoch == last.producer_epoch
        if (info.producer_id != NO_PRODUCER_ID and is_last_of_producer) or last_offset + 1 == upper_bound:
            retain_empty = True     # the producer's sequence and epoch, or the round's last offset, stay
        elif discard_records:
            stats.records_removed += info.record_count
            return b""
        else:
            retain_empty = False
        marker_for_empty_txn = can_discard and info.is_control
        payload = records_payload(batch, info.attributes) if info.record_count else b""
        records = walk_records(payload, info.record_count)
        kept: list[RecordInfo] = []
        has_tombstone = False
        for r in records:
            if discard_records:
                continue
            if not info.is_control:
                offset = info.base_offset + r.offset_delta
                if offset <= offset_map.latest_offset:
                    if r.key_length < 0:
                        continue
                    if offset < offset_map.get(_key_of(payload, r)):
                        continue
                    if r.value_length < 0 and horizon is not None and now_ms >= horizon:
                        continue
            kept.append(r)
            has_tombstone = has_tombstone or r.value_length < 0
        stats.records_removed += len(records) - len(kept)
        if kept:
            set_horizon = (has_tombstone or marker_for_empty_txn) and horizon is None
            if len(kept) == len(records) and not set_horizon:
                return batch
            new_horizon = min(now_ms + delete_retention_ms, LONG_MAX) if set_horizon else None
            return _rebuild_batch(batch, info, payload, kept, new_horizon)
        return _empty_batch(batch, info) if retain_empty else b""

    @staticmethod
    def _group_by_size(segments: list[LogSegment], max_size: int) -> list[list[LogSegment]]:
        """Kafka's ``groupSegmentsBySize``: consecutive segments whose sizes add up to at most
        ``segment.bytes`` (a group has at least one segment)."""
        groups: list[list[LogSegment]] = []
        for seg in segments:
            if groups and sum(s.size for s in groups[-1]) + seg.size <= max_size:
                groups[-1].append(seg)
            else:
                groups.append([seg])
        return groups


class _Stats:
    """What one cleaning read, wrote and removed (Kafka's ``CleanerStats``)."""

    __slots__ = ("bytes_read", "bytes_written", "records_removed")

    def __init__(self) -> None:
        self.bytes_read = self.bytes_written = self.records_removed = 0


class OffsetMap:
    """Kafka's ``OffsetMap``: key -> the offset of its latest mapped record, and the last offset
    the mapping covered (``latest_offset``, -1 before any)."""

    __slots__ = ("offsets", "latest_offset")

    def __init__(self) -> None:
        self.offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self.offsets[key] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The key's latest mapped offset, -1 when it is not mapped."""
        return self.offsets.get(key, -1)


class LastRecord(NamedTuple):
    """Kafka's ``LastRecord``: an active producer's last data offset (None when its last entry
    is a marker) and epoch."""

    last_data_offset: int | None
    producer_epoch: int


def _last_records_of_active_producers(log: "UnifiedLog") -> dict[int, LastRecord]:
    """Kafka's ``UnifiedLog.lastRecordsOfActiveProducers``."""
    return {pid: LastRecord(e.batches[-1].last_offset if e.batches else None, e.producer_epoch)
            for pid, e in log.producers.items()}


class _AbortedTxnMetadata:
    __slots__ = ("aborted_txn", "last_observed_batch_offset")

    def __init__(self, aborted_txn: AbortedTxn) -> None:
        self.aborted_txn = aborted_txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """Kafka's ``CleanedTransactionMetadata``: the transactions the cleaner is inside of as it
    walks the log in offset order, to decide which batches and markers may go.

    The aborted transactions (from the segments' transaction indexes) are kept in a heap by
    first offset and become *ongoing aborted* once the walk reaches their first offset: a data
    batch of such a producer belongs to the aborted transaction (discardable); any other
    transactional batch makes its producer's transaction *ongoing committed*. An ABORT marker
    is kept, and its transaction written to the cleaned segment's index (``cleaned_index``),
    while a batch of its transaction was seen in this pass; a COMMIT marker is discardable when
    no batch of its transaction was seen; an empty control batch always is.
    """

    def __init__(self) -> None:
        self.ongoing_committed_txns: set[int] = set()
        self.ongoing_aborted_txns: dict[int, _AbortedTxnMetadata] = {}
        self._aborted: list[tuple[int, int, AbortedTxn]] = []   # heap: (first offset, tie, txn)
        self._tie = 0
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for txn in txns:
            self._tie += 1
            heapq.heappush(self._aborted, (txn.first_offset, self._tie, txn))

    def _consume_aborted_txns_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self.ongoing_aborted_txns.setdefault(txn.producer_id, _AbortedTxnMetadata(txn))

    def on_control_batch_read(self, info: BatchInfo, buf: bytes | bytearray | memoryview) -> bool:
        """True when the control batch may be discarded (once its delete horizon passed)."""
        self._consume_aborted_txns_up_to(info.base_offset + info.last_offset_delta)
        if info.record_count == 0:
            return True     # an empty control batch: already cleaned
        control_type = _control_type(buf, info)
        pid = info.producer_id
        if control_type is ControlRecordType.ABORT:
            aborted = self.ongoing_aborted_txns.pop(pid, None)
            if aborted is not None and aborted.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(aborted.aborted_txn)
                return False
            return True
        if control_type is ControlRecordType.COMMIT:
            if pid in self.ongoing_committed_txns:
                self.ongoing_committed_txns.discard(pid)
                return False
            return True
        return False

    def on_batch_read(self, info: BatchInfo) -> bool:
        """True when the data batch belongs to an aborted transaction (it may be discarded)."""
        last_offset = info.base_offset + info.last_offset_delta
        self._consume_aborted_txns_up_to(last_offset)
        if not info.is_transactional:
            return False
        aborted = self.ongoing_aborted_txns.get(info.producer_id)
        if aborted is not None:
            aborted.last_observed_batch_offset = last_offset
            return True
        self.ongoing_committed_txns.add(info.producer_id)
        return False


def _control_type(buf: bytes | bytearray | memoryview, info: BatchInfo) -> ControlRecordType:
    """The type of the first record of a non-empty control batch (its key)."""
    batch = memoryview(buf)[info.position:info.position + info.size]
    payload = records_payload(batch, info.attributes)
    first = walk_records(payload, info.record_count)[0]
    key = _key_of(payload, first)
    return ControlRecordType.UNKNOWN if key is None else ControlRecordType.parse(key)


def _delete_horizon_ms(batch: bytes, attributes: int) -> int | None:
    """KIP-534: a batch whose attributes have the delete-horizon bit carries the horizon in its
    base timestamp (``RecordBatch.deleteHorizonMs``)."""
    return _I64.unpack_from(batch, _BASE_TIMESTAMP_AT)[0] if attributes & DELETE_HORIZON_BIT else None


def _rebuild_batch(batch: bytes, info: BatchInfo, payload: bytes | memoryview, kept: list[RecordInfo],
                   delete_horizon_ms: int | None) -> bytes:
    """The batch with only ``kept`` records (Kafka's ``buildRetainedRecordsInto``): same base
    and last offset, codec, producer fields and leader epoch. With ``delete_horizon_ms`` the
    horizon becomes the base timestamp (and the attribute bit is set), every record's timestamp
    delta re-based so record timestamps do not change."""
    attrs = info.attributes
    base_ts = _I64.unpack_from(batch, _BASE_TIMESTAMP_AT)[0]
    new_base = base_ts if delete_horizon_ms is None else delete_horizon_ms
    section = bytearray()
    max_ts = -1
    for r in kept:
        max_ts = max(max_ts, base_ts + r.timestamp_delta)
        if new_base == base_ts:
            section += payload[r.start:r.end]
        else:
            _rebase_record(section, payload, r, base_ts + r.timestamp_delta - new_base)
    codec = attrs & compression.CODEC_MASK
    if codec != compression.NONE:
        section = bytearray(compression.compress(codec, bytes(section)))
    out = bytearray(batch[:HEADER_SIZE])
    out += section
    if delete_horizon_ms is not None:
        attrs |= DELETE_HORIZON_BIT
    _I16.pack_into(out, _ATTRIBUTES_AT, attrs)
    _I64.pack_into(out, _BASE_TIMESTAMP_AT, new_base)
    if not attrs & TIMESTAMP_TYPE_BIT:   # LogAppendTime batches keep their append time
        _I64.pack_into(out, _MAX_TIMESTAMP_AT, max_ts)
    return _finish(out, len(kept))


def _rebase_record(out: bytearray, payload: bytes | memoryview, r: RecordInfo, timestamp_delta: int) -> None:
    """Append record ``r`` with a new timestamp delta (its length prefix recomputed)."""
    _, body = read_varint(payload, r.start)
    _, after_delta = read_varint(payload, body + 1)
    rec = bytearray(payload[body:body + 1])   # attributes
    write_varint(rec, timestamp_delta)
    rec += payload[after_delta:r.end]
    write_varint(out, len(rec))
    out += rec


def _empty_batch(batch: bytes, info: BatchInfo) -> bytes:
    """The batch's header with no records (Kafka's ``DefaultRecordBatch.writeEmptyHeader``):
    offsets, producer id, epoch and base sequence kept, so the producer's state survives the
    removal of its last records; no codec, no base timestamp, no delete horizon."""
    out = bytearray(batch[:HEADER_SIZE])
    _I16.pack_into(out, _ATTRIBUTES_AT, info.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT))
    _I64.pack_into(out, _BASE_TIMESTAMP_AT, -1)
    return _finish(out, 0)


def _finish(out: bytearray, count: int) -> bytes:
    _I32.pack_into(out, _LENGTH_AT, len(out) - LOG_OVERHEAD)
    _I32.pack_into(out, _COUNT_AT, count)
    _U32.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_ATTRIBUTES_AT:]))
    return bytes(out)
