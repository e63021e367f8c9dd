"""PersistentLog: a ``UnifiedLog`` whose segments are also files in Kafka's layout, and its loader.

With ``log.dirs`` set, each partition replica has a directory ``<log dir>/<topic>-<partition>``
holding, per segment, ``<20-digit base offset>.log`` (the record batches byte for byte as
stored, ``broker.storage.file_records.FileRecords``), ``.index``, ``.timeindex`` and, once an ABORT
marker lands in it, ``.txnindex`` (its ``TransactionIndex``, appended with each abort); the
producer-state snapshots ``<offset>.snapshot`` (``broker.storage.producer_snapshot``), written at every
roll (at the new segment's base offset) and at clean shutdown (at the LEO), deleted with the
in-memory snapshot they mirror (retention, truncation); and the ``leader-epoch-checkpoint`` and
``partition.metadata`` files (``broker.storage.checkpoint_file``).

Writing (Kafka's ``LocalLog``/``UnifiedLog``): every append goes to the in-memory active
segment and, in the same call, to its ``.log`` file (``os.write``: the page cache); when
``log_end_offset - recovery_point`` reaches ``flush.messages`` the log is flushed (fsync, and
the recovery point moves to the LEO); ``LogManager``'s flusher does the same for logs not
flushed within ``flush.ms``; a roll schedules a one-off flush of the rolled segment. A rolled
segment's bytes are then read back through a read-only memory map of its file, so inactive
segments live in the page cache, not in the heap (each map holds a file descriptor, as Kafka's
open segments do). Truncation, retention, the cleaner's
rewrites (``.cleaned`` then ``.swap`` then renamed into place, as Kafka's cleaner does) and
epoch changes reach the files in the same call.

Loading (``PersistentLog.load``, Kafka's ``LogLoader.load``): delete ``.deleted`` and
``.cleaned`` files, complete ``.swap`` files (the segments they cover go), delete index files
without a ``.log``; open every segment and sanity-check its indexes (a missing or corrupt index
is rebuilt from the batches). Unless the directory was shut down cleanly, every segment from the
one holding the checkpointed recovery point on is *recovered* (Kafka's ``LogSegment.recover``):
each batch's size, magic and CRC-32C and its offsets are checked, the file is truncated at the
first bad batch (a torn or corrupt tail) and every later segment is deleted; epochs of the
recovered batches enter the leader-epoch cache. Then the log start offset is
max(checkpoint, first base offset), the HW is the checkpointed one clamped into
[log start, LEO], the epoch cache is truncated to [log start, LEO), and producer state is
loaded as Kafka's loader does (``_load_producer_state``): stray snapshots go, the latest valid
snapshot at or below the LEO (and at or below the first recovered segment and any segment with
a corrupt ``.txnindex``) is read, a corrupt one is deleted and the next older one tried, and
the batches after it are replayed, rebuilding the transaction indexes of their segments; without
a snapshot every batch is replayed (a directory written before snapshots existed too).

After each recovery-point checkpoint (``LogManager``) the snapshots no recovery needs go
(``delete_snapshots_after_recovery_point_checkpoint``): those below the segment before the
active one and below the segment under the recovery point.

I/O errors: an append that cannot be written (a full disk: ENOSPC) or flushed answers
KAFKA_STORAGE_ERROR, takes the batch back out of memory and reports the log directory to the
``LogManager``'s failure channel (``dir_failure``), which takes the whole directory offline, as
Kafka's ``maybeHandleIOException`` does; the log manager's tasks report the errors they meet the
same way.

Differences from Kafka on purpose: the cleaner's rewrites keep the snapshots of the segments it
merged; deleted segments and directories are removed at once (no ``.deleted`` rename and
``file.delete.delay.ms``).

Locking: as ``UnifiedLog``: the owner's ``lock`` (the Partition's) guards every method, including
the file operations; ``LogManager``'s tasks take it too.
"""
from __future__ import annotations

import os
import shutil
import struct
from bisect import bisect_left
from pathlib import Path
from typing import Callable

import structlog
from crc32c import crc32c

from kafka_emu.broker.storage.checkpoint_file import (
    LEADER_EPOCH_CHECKPOINT,
    CorruptCheckpointError,
    LeaderEpochCheckpointFile,
    fsync_dir,
)
from kafka_emu.broker.storage.file_records import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    CorruptIndexError,
    FileRecords,
    append_file,
    encode_offset_index,
    encode_time_index,
    offset_from_file_name,
    read_offset_index,
    read_time_index,
    read_transaction_index,
    segment_path,
    write_file,
)
from kafka_emu.broker.storage.leader_epoch_cache import LeaderEpochFileCache
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_segment import LogSegment, iter_headers
from kafka_emu.broker.storage.producer_snapshot import (
    CorruptSnapshotError,
    list_snapshot_files,
    read_snapshot,
    snapshot_path,
    write_snapshot,
)
from kafka_emu.broker.storage.record_batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.persistent_log")

_BASE_LEN = struct.Struct(">qi")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_I32_AT_12 = 12     # partitionLeaderEpoch
_MAGIC_AT = 16
_CRC_AT = 17
_LAST_DELTA_AT = 23

FlushScheduler = Callable[["PersistentLog", int], None]


def valid_bytes(buf: bytes | bytearray | memoryview, base_offset: int,
                on_batch: Callable[[int, int], None] | None = None) -> int:
    """How many leading bytes of a segment hold whole, valid batches (Kafka's
    ``LogSegment.recover`` checks: size, magic, CRC-32C over attributes..end, offsets not below
    the segment base nor the previous batch). ``on_batch(leader_epoch, base_offset)`` is called
    for each valid batch."""
    position, end, expected = 0, len(buf), base_offset
    with memoryview(buf) as view:
        while position + HEADER_SIZE <= end:
            base, length = _BASE_LEN.unpack_from(view, position)
            size = length + LOG_OVERHEAD
            if length < HEADER_SIZE - LOG_OVERHEAD or position + size > end or view[position + _MAGIC_AT] != MAGIC:
                break
            if crc32c(view[position + 21:position + size]) != _U32.unpack_from(view, position + _CRC_AT)[0]:
                break
            last = base + _I32.unpack_from(view, position + _LAST_DELTA_AT)[0]
            if base < expected or last < base or last - base_offset > 0x7FFFFFFF:
                break
            if on_batch is not None:
                on_batch(_I32.unpack_from(view, position + _I32_AT_12)[0], base)
            expected = last + 1
            position += size
    return position


class CheckpointedLeaderEpochCache(LeaderEpochFileCache):
    """The leader-epoch cache written to ``leader-epoch-checkpoint`` after every change (Kafka's
    ``LeaderEpochFileCache`` with its checkpoint; Kafka flushes truncations asynchronously, the
    emulator writes them at once). ``writing=False`` holds the writes back (loading)."""

    def __init__(self, checkpoint: LeaderEpochCheckpointFile, entries: list[tuple[int, int]] = ()) -> None:
        self.checkpoint = checkpoint
        self.writing = False
        super().__init__(entries)
        self.writing = True

    def write(self) -> None:
        if self.writing:
            self.checkpoint.write([tuple(e) for e in self.entries()])

    def assign(self, epoch: int, start_offset: int) -> bool:
        changed = super().assign(epoch, start_offset)
        if changed:
            self.write()
        return changed

    def truncate_from_end(self, end_offset: int) -> None:
        before = len(self.entries())
        super().truncate_from_end(end_offset)
        if len(self.entries()) != before:
            self.write()

    def truncate_from_start(self, start_offset: int) -> None:
        before = self.entries()
        super().truncate_from_start(start_offset)
        if self.entries() != before:
            self.write()

    def clear(self) -> None:
        super().clear()
        self.write()


def _delete_segment_files(directory: Path, base_offset: int) -> None:
    for suffix in SEGMENT_SUFFIXES:
        try:
            os.unlink(segment_path(directory, base_offset, suffix))
        except FileNotFoundError:
            pass


class PersistentLog(UnifiedLog):
    """A ``UnifiedLog`` written through to its partition directory; see the module docstring."""

    def __init__(self, directory: Path, topic: str, partition: int, log_start_offset: int = 0,
                 config: LogConfig | None = None, time: Time | None = None,
                 flush_scheduler: FlushScheduler | None = None, _load: bool = False) -> None:
        self.dir = directory
        self._files: dict[int, FileRecords] = {}
        # per segment base offset: (offset index entries, time index entries) in the files
        self._index_written: dict[int, tuple[int, int]] = {}
        self.flush_scheduler = flush_scheduler
        # (log dir, message, error): the LogManager's LogDirFailureChannel, told of I/O errors
        self.dir_failure: Callable[[Path, str, OSError], None] | None = None
        self._loading = _load
        if not _load:
            directory.mkdir(parents=True, exist_ok=True)
        super().__init__(topic, partition, log_start_offset, config, time)
        self.leader_epoch_cache = CheckpointedLeaderEpochCache(
            LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT))
        self.recovery_point = self.log_end_offset
        self.last_flush_ms = self.time.milliseconds()
        self._loading = False
        if not _load:
            self.leader_epoch_cache.write()
            fsync_dir(directory.parent)

    # ------------------------------------------------------------------ segments and files
    def _add_segment(self, base_offset: int) -> LogSegment:
        if not self._loading:   # the files first: an I/O error leaves the log as it was
            file = FileRecords(segment_path(self.dir, base_offset, LOG_SUFFIX), create=True)
            write_file(segment_path(self.dir, base_offset, INDEX_SUFFIX), b"")
            write_file(segment_path(self.dir, base_offset, TIME_INDEX_SUFFIX), b"")
            self._files[base_offset] = file
            self._index_written[base_offset] = (0, 0)
        seg = super()._add_segment(base_offset)
        seg.txn_index.path = segment_path(self.dir, base_offset, TXN_INDEX_SUFFIX)
        return seg

    def rename_dir(self, directory: Path) -> None:
        """Move the partition directory whole to ``directory`` (Kafka's ``LocalLog.renameDir``),
        with the lock held by the caller: one rename, so the open segment files stay valid and
        only the paths this log keeps change. Raises ``OSError`` (EXDEV across file systems:
        the caller answers KAFKA_STORAGE_ERROR)."""
        old = self.dir
        os.rename(old, directory)
        fsync_dir(directory.parent)
        fsync_dir(old.parent)
        self.dir = directory
        for base, file in self._files.items():
            file.path = segment_path(directory, base, LOG_SUFFIX)
        for seg in self.segments:
            seg.txn_index.path = segment_path(directory, seg.base_offset, TXN_INDEX_SUFFIX)
        self.leader_epoch_cache.checkpoint = LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT)

    def _drop_segment(self, seg: LogSegment) -> None:
        """Forget a segment that left the log and delete its files."""
        file = self._files.pop(seg.base_offset, None)
        if file is not None:
            file.close()
        self._index_written.pop(seg.base_offset, None)
        _delete_segment_files(self.dir, seg.base_offset)

    def _sync_indexes(self, seg: LogSegment, rewrite: bool = False) -> None:
        """Bring the segment's index files up to its in-memory indexes: the new entries are
        appended (entries are only ever appended between truncations); fewer entries than
        written, or ``rewrite``, write the files anew."""
        base = seg.base_offset
        written = self._index_written.get(base, (0, 0))
        for index, suffix, encode, count in ((seg.offset_index, INDEX_SUFFIX, encode_offset_index, written[0]),
                                             (seg.time_index, TIME_INDEX_SUFFIX, encode_time_index, written[1])):
            path = segment_path(self.dir, base, suffix)
            if rewrite or index.entries < count:
                write_file(path, encode(index))
            elif index.entries > count:
                append_file(path, encode(index, count))
        self._index_written[base] = (seg.offset_index.entries, seg.time_index.entries)

    def _deactivate(self, seg: LogSegment) -> None:
        """A rolled segment: final index entries on disk, append handle closed, bytes read back
        through a memory map of the file (the heap copy is freed)."""
        self._sync_indexes(seg)
        file = self._files[seg.base_offset]
        file.close()
        seg.records = file.map()

    def _activate(self, seg: LogSegment) -> None:
        """A mapped segment becomes the active one again (truncation): bytes back in the heap,
        append handle open."""
        file = self._files[seg.base_offset]
        if not isinstance(seg.records, bytearray):
            seg.records = bytearray(seg.records)
        reopened = self._files[seg.base_offset] = FileRecords(file.path)
        reopened.flushed_size = file.flushed_size

    def memory_bytes(self) -> int:
        """Bytes of this log held in the heap (the active segment; the rest are mapped)."""
        return sum(seg.size for seg in self.segments if isinstance(seg.records, bytearray))

    # ------------------------------------------------------------------ UnifiedLog hooks
    def roll(self) -> LogSegment:
        previous = self.active_segment
        seg = super().roll()
        if seg is not previous:
            self._deactivate(previous)
            # Kafka's roll: a producer snapshot at the new segment's base offset
            write_snapshot(snapshot_path(self.dir, seg.base_offset), self.producer_state.producers.values(),
                           sync=False)
            if self.flush_scheduler is not None:
                self.flush_scheduler(self, seg.base_offset)
        return seg

    def _append(self, records: bytes | memoryview, last_offset: int, max_timestamp: int,
                shallow_offset_of_max_timestamp: int, now_ms: int) -> LogSegment:
        start = self.log_end_offset
        try:   # a roll creates files; then the batches go to the active segment's file
            segment = super()._append(records, last_offset, max_timestamp, shallow_offset_of_max_timestamp, now_ms)
            self._files[segment.base_offset].append(records)
            if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
                self.flush()
        except OSError as exc:
            _log.error("log_append_failed", topic=self.topic, partition=self.partition, dir=str(self.dir),
                       error=str(exc))
            if self.log_end_offset > start:
                try:
                    self.truncate_to(start)
                except OSError:   # the directory is failing: it goes offline with this log
                    pass
            self.report_io_error(f"Error while appending records to {self.topic}-{self.partition} in dir "
                                 f"{self.dir.parent}", exc)
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"cannot write {self.dir}: {exc.strerror or exc}") from None
        return segment

    def report_io_error(self, message: str, error: OSError) -> None:
        """Tell the log directory's failure channel (Kafka's ``maybeHandleIOException``)."""
        if self.dir_failure is not None:
            self.dir_failure(self.dir.parent, message, error)

    def _delete_segments(self, deletable: list[LogSegment]) -> int:
        freed = super()._delete_segments(deletable)
        for seg in deletable:
            self._drop_segment(seg)
        self._prune_snapshot_files()
        return freed

    def delete_snapshots_after_recovery_point_checkpoint(self) -> int:
        """Kafka's ``deleteSnapshotsAfterRecoveryPointCheckpoint``: once the recovery point is
        checkpointed, the snapshots below ``min_snapshots_offset_to_retain`` are not needed for
        a recovery and go (in memory and on disk); returns that offset."""
        offset = self.min_snapshots_offset_to_retain()
        self.producer_state.delete_snapshots_before(offset)
        self._prune_snapshot_files()
        return offset

    def min_snapshots_offset_to_retain(self) -> int:
        """Kafka's ``minSnapshotsOffsetToRetain``: the lower of the base offset of the segment
        before the active one (the last two segments keep theirs) and that of the segment below
        the recovery point (the recovery point itself when there is none)."""
        bases = self._bases
        below_active = bisect_left(bases, self.active_segment.base_offset) - 1
        two_segments = bases[below_active] if below_active >= 0 else self.active_segment.base_offset
        below_recovery = bisect_left(bases, self.recovery_point) - 1
        recovery = bases[below_recovery] if below_recovery >= 0 else self.recovery_point
        return min(two_segments, recovery)

    def _prune_snapshot_files(self) -> None:
        """Snapshot files whose in-memory snapshot is gone (below the log start, past a
        truncation) go with it."""
        kept = self.producer_state.snapshots
        for offset, path in list_snapshot_files(self.dir).items():
            if offset not in kept:
                path.unlink(missing_ok=True)

    def truncate_to(self, offset: int) -> bool:
        before = list(self.segments)
        partial = self.segments[0].base_offset <= offset < self.log_end_offset
        if partial:
            kept = self.segments[self._segment_index(offset)]
            if kept is not self.active_segment:
                self._activate(kept)
        changed = super().truncate_to(offset)
        if partial:
            current = set(map(id, self.segments))
            for seg in before:
                if id(seg) not in current:
                    self._drop_segment(seg)
            active = self.active_segment
            self._files[active.base_offset].truncate_to(active.size)
            self._sync_indexes(active, rewrite=True)
        self._prune_snapshot_files()
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        return changed

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        for seg in list(self.segments):
            self._drop_segment(seg)
        super().truncate_fully_and_start_at(new_offset)
        self._prune_snapshot_files()
        self.recovery_point = new_offset

    def replace_segments(self, segments: list[LogSegment]) -> None:
        """The cleaner's output: each rewritten segment is written to ``<base>.log.cleaned``,
        fsynced and renamed to ``.swap``; then the replaced segments' files go and the swap
        files are renamed into place (Kafka's ``replaceSegments``; the loader completes a swap
        interrupted by a crash)."""
        old = list(self.segments)
        kept = set(map(id, old))
        new = [seg for seg in segments if id(seg) not in kept]
        swaps: list[tuple[LogSegment, Path]] = []
        for seg in new:
            cleaned = segment_path(self.dir, seg.base_offset, LOG_SUFFIX + CLEANED_SUFFIX)
            with open(cleaned, "wb") as f:
                f.write(seg.records)
                f.flush()
                os.fsync(f.fileno())
            swap = segment_path(self.dir, seg.base_offset, LOG_SUFFIX + SWAP_SUFFIX)
            # the cleaned transaction index first, so a completed swap always has its index
            seg.txn_index.path = segment_path(self.dir, seg.base_offset, TXN_INDEX_SUFFIX + SWAP_SUFFIX)
            seg.txn_index.write_file()
            seg.txn_index.flush()
            os.replace(cleaned, swap)
            swaps.append((seg, swap))
        fsync_dir(self.dir)
        super().replace_segments(segments)
        current = set(map(id, self.segments))
        for seg in old:
            if id(seg) not in current:
                self._drop_segment(seg)
        for seg, swap in swaps:
            _complete_txn_index_swap(self.dir, seg.base_offset)
            seg.txn_index.path = segment_path(self.dir, seg.base_offset, TXN_INDEX_SUFFIX)
            os.replace(swap, segment_path(self.dir, seg.base_offset, LOG_SUFFIX))
            file = self._files[seg.base_offset] = FileRecords(segment_path(self.dir, seg.base_offset, LOG_SUFFIX))
            file.flushed_size = file.size
            self._sync_indexes(seg, rewrite=True)
            file.close()
            seg.records = file.map()
        fsync_dir(self.dir)

    # ------------------------------------------------------------------ flush and close
    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, ``offset``) (default: the
        LEO) and move the recovery point there (Kafka's ``UnifiedLog.flush``)."""
        offset = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        if offset <= self.recovery_point:
            return
        for seg in self.segments:
            if seg.base_offset >= offset:
                break
            if seg.next_offset <= self.recovery_point and seg is not self.active_segment:
                continue
            self._sync_indexes(seg)
            self._files[seg.base_offset].flush()
            seg.txn_index.flush()
        self.recovery_point = offset
        self.last_flush_ms = self.time.milliseconds()

    def close(self) -> None:
        """Clean shutdown: flush everything, index files complete, a producer snapshot at the
        LEO (Kafka's ``UnifiedLog.close``), handles closed."""
        self.flush()
        for seg in self.segments:
            self._sync_indexes(seg)
        leo = self.log_end_offset
        self.producer_state.take_snapshot(leo)
        write_snapshot(snapshot_path(self.dir, leo), self.producer_state.producers.values(), sync=True)
        for file in self._files.values():
            file.close()

    def delete(self) -> None:
        """The partition is deleted: close and remove its directory (a write still racing in
        finds no file: KAFKA_STORAGE_ERROR, never a write into a deleted directory)."""
        self.close_files()
        shutil.rmtree(self.dir, ignore_errors=True)

    def close_files(self) -> None:
        """Close the append handles without flushing (deletion, or its directory went offline)."""
        for file in self._files.values():
            try:
                file.close()
            except OSError:
                pass

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, directory: Path, topic: str, partition: int, config: LogConfig, time: Time,
             recovery_point: int, log_start_offset: int | None, high_watermark: int | None,
             clean_shutdown: bool, flush_scheduler: FlushScheduler | None = None) -> "PersistentLog":
        """Open a partition directory and recover it (see the module docstring)."""
        _complete_swaps(directory)
        bases = sorted(offset_from_file_name(p.name) for p in directory.iterdir()
                       if p.name.endswith(LOG_SUFFIX) and _is_segment_name(p.name))
        first = bases[0] if bases else (log_start_offset or 0)
        log = cls(directory, topic, partition, first, config, time, flush_scheduler, _load=True)
        checkpoint = LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT)
        try:
            epochs = checkpoint.read()
        except CorruptCheckpointError as exc:
            _log.warning("leader_epoch_checkpoint_corrupt", dir=str(directory), error=str(exc))
            epochs = []
        cache = log.leader_epoch_cache = CheckpointedLeaderEpochCache(checkpoint, epochs)
        cache.writing = False
        log._loading = True
        segments: list[LogSegment] = []
        recovered: set[int] = set()
        corrupt_txn_indexes: set[int] = set()
        truncated = False
        for i, base in enumerate(bases):
            if truncated:   # everything after a truncated segment is unflushed garbage
                _delete_segment_files(directory, base)
                continue
            last = i == len(bases) - 1
            upper = bases[i + 1] if not last else None
            recover = not clean_shutdown and (upper is None or upper > recovery_point)
            if recover:
                recovered.add(base)
            seg, lost = log._open_segment(base, last, recover)
            try:
                seg.txn_index = read_transaction_index(segment_path(directory, base, TXN_INDEX_SUFFIX), base)
            except CorruptIndexError as exc:
                _log.warning("transaction_index_rebuilt", topic=topic, partition=partition, segment=base,
                             reason=str(exc))
                corrupt_txn_indexes.add(base)
                seg.txn_index.path = segment_path(directory, base, TXN_INDEX_SUFFIX)
            if lost:
                truncated = True
                _log.warning("log_segment_truncated", topic=topic, partition=partition, segment=base,
                             bytes=lost, message=f"{topic}-{partition}: truncated {lost} invalid bytes "
                                                 f"at the end of segment {base} (torn or corrupt tail)")
            segments.append(seg)
        log._loading = False
        log.segments.clear()
        log._bases.clear()
        if segments:
            log.segments[:] = segments
            log._bases[:] = [s.base_offset for s in segments]
        else:
            log._add_segment(first)
        log.log_end_offset = log.active_segment.next_offset
        if log_start_offset is not None and log.log_end_offset < log_start_offset:
            # the segments were removed behind the log's back (Kafka's ``LogLoader``: start over)
            log.truncate_fully_and_start_at(log_start_offset)
        log.log_start_offset = max(log_start_offset or 0, log.segments[0].base_offset)
        leo = log.log_end_offset
        cache.truncate_from_end(leo)
        cache.truncate_from_start(log.log_start_offset)
        cache.writing = True
        cache.write()
        hw = high_watermark if high_watermark is not None else log.log_start_offset
        log.high_watermark = max(min(hw, leo), log.log_start_offset)
        log.recovery_point = leo if clean_shutdown else min(max(recovery_point, log.log_start_offset), leo)
        first_recovered = next((s.base_offset for s in segments if s.base_offset in recovered), None)
        log._load_producer_state(first_recovered, corrupt_txn_indexes)
        return log

    def _load_producer_state(self, first_recovered: int | None, corrupt_txn_indexes: set[int]) -> None:
        """Kafka's ``LogLoader`` producer-state steps: stray snapshots go (every snapshot not at a
        segment base offset, except the largest one above the last base: the clean shutdown's at
        the LEO), and those past the LEO; then the state is loaded from the latest snapshot at or
        below the LEO, and at or below the first segment whose transaction index cannot be trusted
        (recovered after an unclean shutdown, or corrupt), deleting corrupt snapshots on the way;
        the batches from there on are replayed, rebuilding those segments' transaction indexes.
        Without a usable snapshot every batch is replayed (``reload_producer_state``)."""
        bases = {s.base_offset for s in self.segments}
        leo = self.log_end_offset
        files = list_snapshot_files(self.dir)
        above = [o for o in files if o not in bases and o > max(bases)]
        shutdown_snapshot = max(above) if above else None
        for offset, path in list(files.items()):
            if (offset not in bases and offset != shutdown_snapshot) or offset > leo:
                _log.info("producer_snapshot_deleted", topic=self.topic, partition=self.partition, offset=offset,
                          reason="stray" if offset <= leo else "past the log end offset")
                path.unlink()
                del files[offset]
        limit = min([leo] + [o for o in (first_recovered,) if o is not None] + list(corrupt_txn_indexes))
        producer_state = self.producer_state
        for offset in sorted((o for o in files if o <= limit), reverse=True):
            try:
                entries = read_snapshot(files[offset])
            except CorruptSnapshotError as exc:
                _log.warning("producer_snapshot_corrupt", topic=self.topic, partition=self.partition, offset=offset,
                             error=str(exc))
                files.pop(offset).unlink()
                continue
            producer_state.load_snapshot(offset, entries)
            # Kafka's loadFromSnapshot skips the producers expired meanwhile
            producer_state.remove_expired_producers(self.time.milliseconds(), self.config.producer_id_expiration_ms)
            self.replay_producer_state_from(offset)
            return
        self.reload_producer_state()

    def _recover_epoch(self, epoch: int, base_offset: int) -> None:
        """``LogSegment.recover``: a recovered batch of a newer epoch than the cache's latest
        starts that epoch."""
        if epoch >= 0 and epoch > self.leader_epoch_cache.latest_epoch():
            self.leader_epoch_cache.assign(epoch, base_offset)

    def _open_segment(self, base: int, active: bool, recover: bool) -> tuple[LogSegment, int]:
        """One segment from its files; (segment, bytes truncated by recovery)."""
        cfg = self.config
        path = segment_path(self.dir, base, LOG_SUFFIX)
        file = FileRecords(path)
        seg = LogSegment(base, cfg.index_interval_bytes, cfg.segment_index_bytes, 0, self.time.milliseconds())
        seg.last_modified_ms = int(os.stat(path).st_mtime * 1000)
        self._files[base] = file
        buf = file.map()
        lost = 0
        if recover:
            valid = valid_bytes(buf, base, self._recover_epoch)
            if valid < file.size:
                lost = file.size - valid
                del buf
                file.truncate_to(valid)
                buf = file.map()
            file.flushed_size = 0   # nothing here is known to be on disk
        seg.records = buf
        indexes_ok = False
        if not recover:
            try:
                seg.offset_index = read_offset_index(
                    _read(segment_path(self.dir, base, INDEX_SUFFIX)), base, cfg.segment_index_bytes, file.size)
                seg.time_index = read_time_index(
                    _read(segment_path(self.dir, base, TIME_INDEX_SUFFIX)), base, cfg.segment_index_bytes)
                indexes_ok = True
            except (FileNotFoundError, CorruptIndexError) as exc:
                _log.warning("log_index_rebuilt", topic=self.topic, partition=self.partition, segment=base,
                             reason=str(exc))
        if indexes_ok:
            self._index_written[base] = (seg.offset_index.entries, seg.time_index.entries)
            seg._recompute_after_truncation()
            first = next(iter_headers(seg.records), None)
            seg.rolling_based_timestamp = first.max_timestamp if first is not None else None
        else:
            seg.rebuild_indexes()
            seg._recompute_after_truncation()
        if not active:
            seg.on_become_inactive_segment()
        if not indexes_ok:
            self._sync_indexes(seg, rewrite=True)
        if active:
            seg.records = bytearray(seg.records)
        else:
            file.close()
        return seg, lost


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _is_segment_name(name: str) -> bool:
    try:
        offset_from_file_name(name)
    except ValueError:
        return False
    return True


def _complete_swaps(directory: Path) -> None:
    """Kafka's ``LogLoader.removeTempFilesAndCollectSwapFiles`` and swap completion:
    ``.deleted`` and ``.cleaned`` files go, index files without a ``.log`` go, and each
    ``.log.swap`` replaces the segments whose base offsets it covers."""
    for p in list(directory.iterdir()):
        if p.name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX)):
            p.unlink()
    swaps = sorted(p for p in directory.iterdir() if p.name.endswith(LOG_SUFFIX + SWAP_SUFFIX))
    for swap in swaps:
        base = offset_from_file_name(swap.name)
        data = swap.read_bytes()
        next_offset = base
        for h in iter_headers(data):
            next_offset = h.last_offset + 1
        for p in list(directory.iterdir()):
            if p.name.endswith(LOG_SUFFIX) and _is_segment_name(p.name) \
                    and base <= offset_from_file_name(p.name) < max(next_offset, base + 1):
                _delete_segment_files(directory, offset_from_file_name(p.name))
        _complete_txn_index_swap(directory, base)
        os.replace(swap, segment_path(directory, base, LOG_SUFFIX))
    for p in list(directory.iterdir()):   # a transaction index swapped without its log
        if p.name.endswith(TXN_INDEX_SUFFIX + SWAP_SUFFIX):
            p.unlink()
    logs = {p.name[:20] for p in directory.iterdir() if p.name.endswith(LOG_SUFFIX)}
    for p in list(directory.iterdir()):
        if p.name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)) and _is_segment_name(p.name) \
                and p.name[:20] not in logs:
            p.unlink()


def _complete_txn_index_swap(directory: Path, base_offset: int) -> None:
    """The cleaned segment's ``.txnindex.swap`` (if it has entries) becomes its ``.txnindex``;
    without one the segment has no aborted transaction and no index file."""
    swap = segment_path(directory, base_offset, TXN_INDEX_SUFFIX + SWAP_SUFFIX)
    target = segment_path(directory, base_offset, TXN_INDEX_SUFFIX)
    if swap.exists():
        os.replace(swap, target)
    else:
        target.unlink(missing_ok=True)
