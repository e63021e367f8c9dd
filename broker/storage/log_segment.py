"""LogSegment, OffsetIndex and TimeIndex: one slice of a partition's log, held in memory.

After Kafka's ``LogSegment``, ``OffsetIndex`` and ``TimeIndex`` (storage module). A segment is
the record batches of a contiguous offset range, exactly as appended (offsets assigned), in one
``bytearray`` that plays the part of the ``.log`` file, with two sparse indexes:

* the offset index maps an offset to the byte position of the batch that holds it; an entry is
  added when more than ``index.interval.bytes`` were appended since the last one, keyed by the
  *last* offset of the append and pointing at the position where that append *starts*, so a
  lookup gives a position at or before the wanted batch and a short scan of batch headers
  finds it (``translate_offset``);
* the time index maps the largest timestamp seen so far to the offset of the batch carrying it,
  appended with the offset index entries and when the segment stops being active, so
  ``find_offset_by_timestamp`` starts its scan near the answer;
* the transaction index lists the aborted transactions whose ABORT marker this segment holds
  (``TransactionIndex``), written by the log when the marker is appended.

Invariants: batches are stored in offset order, each starting at the position where the
previous one ends; index entries have strictly increasing offsets (and, for the time index,
timestamps); ``next_offset`` is one past the last offset of the last batch (the base offset
when empty).

Locking: none of its own; the owning ``UnifiedLog``'s caller (the ``Partition`` lock) serialises
appends, truncation and reads of one log.

Differences from Kafka on purpose: the segment itself knows no files: with ``log.dirs`` set,
``broker.storage.persistent_log`` writes its batches through to a ``FileRecords`` and swaps
``records`` for a read-only map of that file once the segment is inactive (a ``bytearray``
otherwise); the transaction index (``broker.storage.transaction_index``) is a list in memory, written through to
its ``.txnindex`` file by the persistent log; ``largest_timestamp``
of a segment without timestamps is the time of its last append (Kafka: the file's
modification time, which is the same thing).
"""
from __future__ import annotations

import struct
from bisect import bisect_right
from typing import Iterator, NamedTuple

from kafka_emu.broker.storage.record_batch import HEADER_SIZE, LOG_OVERHEAD, new_tuple
from kafka_emu.broker.storage.transaction_index import TransactionIndex

NO_TIMESTAMP = -1
INT_MAX = (1 << 31) - 1
OFFSET_INDEX_ENTRY_SIZE = 8   # int32 relative offset, int32 position
TIME_INDEX_ENTRY_SIZE = 12    # int64 timestamp, int32 relative offset
RECENT_APPENDS = 32           # appends a segment remembers the positions of, at least

_BASE_LEN = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class BatchHeader(NamedTuple):
    """Where one stored batch is and what its header says (read without copying the batch)."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int


def iter_headers(buf: bytes | bytearray | memoryview, position: int = 0,
                 end: int | None = None) -> Iterator[BatchHeader]:
    """The batch headers of ``buf[position:end]`` (whole batches only)."""
    end = len(buf) if end is None else end
    while position + HEADER_SIZE <= end:
        base, length = _BASE_LEN.unpack_from(buf, position)
        size = length + LOG_OVERHEAD
        if position + size > end:
            return
        last = base + _I32.unpack_from(buf, position + 23)[0]
        yield new_tuple(BatchHeader, (position, size, base, last, _I64.unpack_from(buf, position + 35)[0]))
        position += size


class IndexFullError(Exception):
    """An index has no room for another entry (the log rolls before this can happen)."""


class OffsetIndex:
    """Sparse offset → position entries of one segment (Kafka's ``OffsetIndex``)."""

    def __init__(self, base_offset: int, max_index_size: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max(max_index_size // OFFSET_INDEX_ENTRY_SIZE, 1)
        self._offsets: list[int] = []
        self._positions: list[int] = []

    @property
    def entries(self) -> int:
        return len(self._offsets)

    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    def last_offset(self) -> int:
        return self._offsets[-1] if self._offsets else self.base_offset

    def append(self, offset: int, position: int) -> None:
        if self.is_full():
            raise IndexFullError(f"offset index of segment {self.base_offset} is full")
        if self._offsets and offset <= self._offsets[-1]:
            raise ValueError(f"offset {offset} is not larger than the last indexed {self._offsets[-1]}")
        self._offsets.append(offset)
        self._positions.append(position)

    def lookup(self, target: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target, else (base, 0)."""
        i = bisect_right(self._offsets, target) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]

    def lookup_position(self, target_position: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with position <= target, else (base, 0)."""
        i = bisect_right(self._positions, target_position) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]

    def items(self, start: int = 0) -> list[tuple[int, int]]:
        """(offset, position) of the entries from the ``start``-th on (for the ``.index`` file)."""
        return list(zip(self._offsets[start:], self._positions[start:]))

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= ``offset``."""
        i = bisect_right(self._offsets, offset - 1)
        del self._offsets[i:]
        del self._positions[i:]

    def reset(self) -> None:
        self._offsets.clear()
        self._positions.clear()


class TimeIndex:
    """Sparse timestamp → offset entries of one segment (Kafka's ``TimeIndex``)."""

    def __init__(self, base_offset: int, max_index_size: int) -> None:
        self.base_offset = base_offset
        self.max_entries = max(max_index_size // TIME_INDEX_ENTRY_SIZE, 2)
        self._timestamps: list[int] = []
        self._offsets: list[int] = []

    @property
    def entries(self) -> int:
        return len(self._timestamps)

    def is_full(self) -> bool:
        """The last slot is kept for the entry written when the segment becomes inactive."""
        return len(self._timestamps) >= self.max_entries - 1

    def last_entry(self) -> tuple[int, int]:
        if not self._timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self._offsets[-1]

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append unless the timestamp is not larger than the last one (then nothing)."""
        if not skip_full_check and self.is_full():
            raise IndexFullError(f"time index of segment {self.base_offset} is full")
        if self._offsets and offset < self._offsets[-1]:
            raise ValueError(f"offset {offset} is smaller than the last indexed {self._offsets[-1]}")
        if self._timestamps and timestamp < self._timestamps[-1]:
            raise ValueError(f"timestamp {timestamp} is smaller than the last indexed {self._timestamps[-1]}")
        if not self._timestamps or timestamp > self._timestamps[-1]:
            self._timestamps.append(timestamp)
            self._offsets.append(offset)

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target, else (-1, base)."""
        i = bisect_right(self._timestamps, target_timestamp) - 1
        if i < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[i], self._offsets[i]

    def items(self, start: int = 0) -> list[tuple[int, int]]:
        """(timestamp, offset) of the entries from the ``start``-th on (for the ``.timeindex`` file)."""
        return list(zip(self._timestamps[start:], self._offsets[start:]))

    def truncate_to(self, offset: int) -> None:
        i = bisect_right(self._offsets, offset - 1)
        del self._timestamps[i:]
        del self._offsets[i:]

    def reset(self) -> None:
        self._timestamps.clear()
        self._offsets.clear()


class LogSegment:
    """One segment of a log (Kafka's ``LogSegment``); see the module docstring."""

    def __init__(self, base_offset: int, index_interval_bytes: int = 4096,
                 max_index_size: int = 10 * 1024 * 1024, roll_jitter_ms: int = 0,
                 created_ms: int = 0) -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = created_ms
        self.last_modified_ms = created_ms
        self.records = bytearray()
        self.offset_index = OffsetIndex(base_offset, max_index_size)
        self.time_index = TimeIndex(base_offset, max_index_size)
        self.txn_index = TransactionIndex(base_offset)
        self.rolling_based_timestamp: int | None = None
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = base_offset
        self.next_offset = base_offset
        self._bytes_since_last_index_entry = 0
        # The first offset and the position of each recent append, oldest first (at most
        # 2 * RECENT_APPENDS): a read near the end (a follower, a caught-up consumer, a few appends
        # behind) starts its scan at the append holding its offset, not at the sparse index's
        # entry up to index.interval.bytes of batches before it.
        self._recent_offsets = [base_offset]
        self._recent_positions = [0]

    @property
    def size(self) -> int:
        return len(self.records)

    def is_empty(self) -> bool:
        return not self.records

    # ------------------------------------------------------------------ append
    def append(self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int,
               records: bytes | bytearray | memoryview, now_ms: int = 0) -> None:
        """Append batches whose offsets are already assigned (Kafka's ``LogSegment.append``)."""
        if not records:
            return
        position = len(self.records)
        if position == 0:
            self.rolling_based_timestamp = largest_timestamp
        if not 0 <= largest_offset - self.base_offset <= INT_MAX:   # OffsetIndex.can_append_offset
            raise ValueError(f"offset {largest_offset} cannot be stored in segment {self.base_offset}")
        self.records += records
        self.last_modified_ms = now_ms
        recent = self._recent_offsets
        recent.append(self.next_offset)
        self._recent_positions.append(position)
        if len(recent) > 2 * RECENT_APPENDS:
            del recent[:RECENT_APPENDS]
            del self._recent_positions[:RECENT_APPENDS]
        self.next_offset = largest_offset + 1
        if largest_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = largest_timestamp
            self.offset_of_max_timestamp_so_far = shallow_offset_of_max_timestamp
        since = self._bytes_since_last_index_entry
        if since > self.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
            since = 0
        self._bytes_since_last_index_entry = since + len(records)

    # ------------------------------------------------------------------ reads
    def translate_offset(self, offset: int, starting_position: int = 0) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (index lookup, then a scan)."""
        recent = self._recent_offsets
        if offset >= recent[0]:
            position = self._recent_positions[bisect_right(recent, offset) - 1]
        else:
            _, position = self.offset_index.lookup(offset)
        if starting_position > position:
            position = starting_position
        # iter_headers' scan, inlined: this runs for every fetch
        buf = self.records
        end = len(buf)
        while position + HEADER_SIZE <= end:
            base, length = _BASE_LEN.unpack_from(buf, position)
            size = length + LOG_OVERHEAD
            if position + size > end:
                return None
            last = base + _I32.unpack_from(buf, position + 23)[0]
            if last >= offset:
                return new_tuple(BatchHeader, (position, size, base, last, _I64.unpack_from(buf, position + 35)[0]))
            position += size
        return None

    def read(self, start_offset: int, max_size: int, max_offset: int | None = None,
             min_one_message: bool = True) -> bytes | None:
        """Whole batches from the one holding ``start_offset``, below ``max_offset`` (exclusive).

        None when the segment has nothing at or after ``start_offset``; b"" when the first batch
        does not fit ``max_size`` (and ``min_one_message`` is false) or lies at ``max_offset``.
        Both ends are found through the offset index and a short scan, never by walking the
        batches in between.
        """
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size}")
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        if max_offset is not None and first.base_offset >= max_offset:
            return b""
        if first.size > max_size:
            if not min_one_message:
                return b""
            end = first.position + first.size
        else:
            bound = first.position + max_size
            size = len(self.records)
            if max_offset is not None and max_offset < self.next_offset:
                upper = self.translate_offset(max_offset, first.position)
                if upper is not None and upper.position < bound:
                    bound = upper.position
            # up to the end of the segment (a read at the tail, the usual case): no scan
            end = size if bound >= size else self._last_boundary_at_or_before(bound, first.position)
        with memoryview(self.records) as view:
            return bytes(view[first.position:end])

    def _last_boundary_at_or_before(self, bound: int, start: int) -> int:
        """The end of the last whole batch that ends at or before ``bound`` (from ``start``)."""
        _, position = self.offset_index.lookup_position(bound - 1)   # a batch start below the bound
        end = max(position, start)
        for header in iter_headers(self.records, end):
            if header.position + header.size > bound:
                break
            end = header.position + header.size
        return end

    def batches(self, from_offset: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the stored batches, from the one holding ``from_offset`` (or the first)."""
        position = 0
        if from_offset is not None:
            first = self.translate_offset(from_offset)
            if first is None:
                return iter(())
            position = first.position
        return iter_headers(self.records, position)

    def batch_bytes(self, header: BatchHeader) -> bytes:
        with memoryview(self.records) as view:
            return bytes(view[header.position:header.position + header.size])

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the time of the last append when there is none."""
        return self.max_timestamp_so_far if self.max_timestamp_so_far >= 0 else self.last_modified_ms

    def first_batch_timestamp(self) -> int | None:
        return self.rolling_based_timestamp

    # ------------------------------------------------------------------ rolling
    def should_roll(self, messages_size: int, max_timestamp_in_messages: int, max_offset_in_messages: int,
                    now_ms: int, segment_bytes: int, segment_ms: int) -> bool:
        """Kafka's ``LogSegment.shouldRoll``: size, age (by record time), full indexes, offset overflow."""
        # written out rather than through the index helpers: this runs before every append. The
        # age is by record time (from the first batch's max timestamp), else by creation time.
        size = len(self.records)
        if size > segment_bytes - messages_size or \
                not 0 <= max_offset_in_messages - self.base_offset <= INT_MAX:   # OffsetIndex.can_append_offset
            return True
        if size > 0:
            rolling = self.rolling_based_timestamp
            waited = max_timestamp_in_messages - rolling if rolling is not None and rolling >= 0 \
                else now_ms - self.created_ms
            if waited > segment_ms - self.roll_jitter_ms:
                return True
        # OffsetIndex.is_full() or TimeIndex.is_full(), without two calls per append
        offset_index, time_index = self.offset_index, self.time_index
        return len(offset_index._offsets) >= offset_index.max_entries or \
            len(time_index._timestamps) >= time_index.max_entries - 1

    def on_become_inactive_segment(self) -> None:
        """The time index gets its final entry (the segment's max timestamp)."""
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far,
                                     skip_full_check=True)

    # ------------------------------------------------------------------ truncation
    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset``; return the bytes removed."""
        header = self.translate_offset(offset)
        if header is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = len(self.records) - header.position
        del self.records[header.position:]
        self._bytes_since_last_index_entry = 0
        self._recompute_after_truncation()
        return removed

    def _recompute_after_truncation(self) -> None:
        self.next_offset = tail_offset = self.base_offset
        tail_position = 0
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = self.base_offset
        if not self.records:
            self.rolling_based_timestamp = None
        for h in iter_headers(self.records):
            self.next_offset = h.last_offset + 1
            tail_offset, tail_position = h.base_offset, h.position
            if h.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = h.max_timestamp
                self.offset_of_max_timestamp_so_far = h.last_offset
        self._recent_offsets, self._recent_positions = [tail_offset], [tail_position]

    def rebuild_indexes(self) -> None:
        """Recreate both indexes from the stored batches (Kafka's ``recover`` minus validation);
        used after compaction rewrote the segment."""
        self.offset_index.reset()
        self.time_index.reset()
        self._bytes_since_last_index_entry = 0
        tail_offset, tail_position = self.base_offset, 0
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = self.base_offset
        self.rolling_based_timestamp = None
        for h in iter_headers(self.records):
            tail_offset, tail_position = h.base_offset, h.position
            if self.rolling_based_timestamp is None:
                self.rolling_based_timestamp = h.max_timestamp
            if h.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = h.max_timestamp
                self.offset_of_max_timestamp_so_far = h.last_offset
            if self._bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(h.last_offset, h.position)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self._bytes_since_last_index_entry = 0
            self._bytes_since_last_index_entry += h.size
        self._recent_offsets, self._recent_positions = [tail_offset], [tail_position]

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, next={self.next_offset}, size={self.size})"
