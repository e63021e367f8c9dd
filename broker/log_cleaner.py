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

Cleaning (``clean``) maps every key in the dirty section to its latest offset, then rewrites all
segments below the end of the dirty section, grouped so that each group of consecutive
segments becomes one segment of at most ``segment.bytes``. A record is kept when it has a key
and is the latest for it in the map (a record after the mapped range is always kept); a
tombstone (null value) is also dropped once the segment holding it was last written more than
``delete.retention.ms`` ago. A batch that loses records is rebuilt in place: same base offset,
last offset, codec, producer fields and base timestamp, fewer records (offsets keep their values,
gaps are fine; the count no longer matches the offset span, as in Kafka); a batch that loses all
its records goes. The active segment is never touched, and the latest value of every key always
survives. Retention of compacted logs (``compact,delete``, and segments below the log start
offset) is the ``LogManager``'s retention task.

A partition whose cleaning raises is marked uncleanable and skipped from then on (Kafka's
``markPartitionUncleanable``) until its log is deleted. ``snapshot()`` gives Kafka's gauges:
LogCleanerManager ``max-dirty-percent`` (highest dirty ratio over the compacted logs at the last
choice), ``time-since-last-run-ms``, ``uncleanable-partitions-count``, and LogCleaner
``cleaner-recopy-percent`` and ``max-clean-time-secs`` of the last cleaning.

Locking: a log is cleaned under its ``Log.lock`` (appends to it wait for the round); the
cleaner's own state (``_first_dirty``, ``_uncleanable``) is changed only by its thread and by
``remove_log``, under ``_lock``; the metrics' fields are single values written by the cleaner
thread and read by scrapes without a lock.

Differences from Kafka on purpose: the offset map is a dict without the dedupe-buffer limit
(``log.cleaner.dedupe.buffer.size``), so one round cleans the whole dirty section; the delete
horizon of tombstones is Kafka's pre-v2 rule (segment last-modified time) rather than a
horizon stamped into each batch; emptied batches are dropped even when they hold the last
offset of an active idempotent producer (the producer state is in memory and survives); records
of aborted transactions and transaction markers are kept like other records (Kafka removes
them; the segments' transaction indexes are carried into the cleaned segments, so read_committed
consumers still skip them); there is one cleaner thread. Without a dedupe buffer there is no
``max-buffer-utilization-percent``, and without log directories ``uncleanable-partitions-count``
has no ``logDirectory`` tag.
"""
from __future__ import annotations

import struct
import threading
import time as _time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, NamedTuple

import structlog
from crc32c import crc32c

from kafka_emu.broker import compression
from kafka_emu.broker.log_segment import BatchHeader, LogSegment, iter_headers
from kafka_emu.broker.log_validator import RecordInfo, records_payload, walk_records
from kafka_emu.broker.record_batch import HEADER_SIZE, LOG_OVERHEAD
from kafka_emu.timer import ShutdownableThread
from kafka_emu.timer.time import Time

if TYPE_CHECKING:
    from kafka_emu.broker.log import Log
    from kafka_emu.broker.log_manager import LogManager

_log = structlog.get_logger("broker.log_cleaner")

TP = tuple[str, int]
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


class CleanableLog(NamedTuple):
    log: "Log"
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
                 broker_id: int = 0) -> None:
        super().__init__(name="kafka-log-cleaner-thread-0", log_context={"broker_id": broker_id})
        self.log_manager = log_manager
        self.backoff_ms = backoff_ms
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
    def cleanable(self, log: "Log", now_ms: int) -> CleanableLog:
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
        """Compact ``[0, first uncleanable)`` of ``c.log`` (lock held); see the module docstring."""
        log = c.log
        end_offset = c.first_uncleanable_offset
        offset_map: dict[bytes, int] = {}
        for seg in log.segments:
            if seg.base_offset >= end_offset:
                break
            if seg.next_offset <= c.first_dirty_offset:
                continue
            for offset, key in self._records(seg, c.first_dirty_offset):
                if key is not None and offset < end_offset:
                    offset_map[key] = offset
        horizon = now_ms - log.config.delete_retention_ms
        to_clean = [s for s in log.segments if s.base_offset < end_offset and s is not log.active_segment]
        cleaned: list[LogSegment] = []
        read = written = removed = 0
        for group in self._group_by_size(to_clean, log.config.segment_bytes):
            out = LogSegment(group[0].base_offset, log.config.index_interval_bytes, log.config.segment_index_bytes,
                             created_ms=group[0].created_ms)
            for seg in group:
                read += seg.size
                for txn in seg.txn_index.all_aborted_txns():
                    out.txn_index.append(txn)
                drop_tombstones = seg.last_modified_ms < horizon
                for h in iter_headers(seg.records):
                    kept, dropped = self._filter_batch(seg.records, h, offset_map, drop_tombstones)
                    removed += dropped
                    if kept:
                        out.records += kept
            out.rebuild_indexes()
            out.next_offset = group[-1].next_offset
            out.last_modified_ms = group[-1].last_modified_ms
            written += out.size
            cleaned.append(out)
        rest = [s for s in log.segments if s.base_offset >= end_offset or s is log.active_segment]
        log.replace_segments(cleaned + rest)
        with self._lock:
            self._first_dirty[(log.topic, log.partition)] = end_offset
        return CleanerStats(read, written, removed)

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

    @staticmethod
    def _records(seg: LogSegment, from_offset: int) -> Iterator[tuple[int, bytes | None]]:
        """(offset, key) of every data record from ``from_offset``."""
        for h in seg.batches():
            if h.last_offset < from_offset:
                continue
            batch = bytes(seg.records[h.position:h.position + h.size])
            attrs = _I16.unpack_from(batch, 21)[0]
            if attrs & 0x20:
                continue   # control batches carry no keys of the log
            payload = records_payload(batch, attrs)
            for r in walk_records(payload, _I32.unpack_from(batch, 57)[0]):
                yield h.base_offset + r.offset_delta, _key_of(payload, r)

    @staticmethod
    def _filter_batch(buf: bytearray, h: BatchHeader, offset_map: dict[bytes, int],
                      drop_tombstones: bool) -> tuple[bytes, int]:
        """(the batch to keep, or b"" to drop it; records removed): Kafka's
        ``MemoryRecords.filterTo`` with the cleaner's record filter."""
        batch = bytes(buf[h.position:h.position + h.size])
        attrs = _I16.unpack_from(batch, 21)[0]
        if attrs & 0x20:
            return batch, 0
        payload = records_payload(batch, attrs)
        records = walk_records(payload, _I32.unpack_from(batch, 57)[0])
        kept = []
        for r in records:
            key = _key_of(payload, r)
            offset = h.base_offset + r.offset_delta
            latest = offset_map.get(key) if key is not None else None
            retain = key is not None and (latest is None or offset >= latest) and \
                not (r.value_length < 0 and drop_tombstones)
            if retain:
                kept.append(r)
        if len(kept) == len(records):
            return batch, 0
        if not kept:
            return b"", len(records)
        section = b"".join(bytes(payload[r.start:r.end]) for r in kept)
        codec = attrs & compression.CODEC_MASK
        if codec != compression.NONE:
            section = compression.compress(codec, section)
        out = bytearray(batch[:HEADER_SIZE])
        out += section
        _I32.pack_into(out, 8, len(out) - LOG_OVERHEAD)
        _I32.pack_into(out, 57, len(kept))
        _U32.pack_into(out, 17, crc32c(memoryview(out)[21:]))
        return bytes(out), len(records) - len(kept)
