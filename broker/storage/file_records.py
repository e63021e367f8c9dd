"""FileRecords and index files: one segment's files on disk, in Kafka's formats.

``FileRecords`` (after Kafka's ``FileRecords``) is the ``.log`` file of a segment: record batches
byte for byte as the in-memory segment holds them, appended with ``os.write`` (into the page
cache) and made durable by ``flush`` (``fsync``). Once a segment is inactive its bytes are read
back through a read-only ``mmap`` (``map``), so the page cache, not the interpreter's heap,
holds them.

The index codecs write and read Kafka's layouts: ``.index`` entries are a big-endian int32
offset relative to the segment base and an int32 file position (8 bytes); ``.timeindex``
entries an int64 timestamp and an int32 relative offset (12 bytes); ``.txnindex`` entries
(``broker.storage.transaction_index``) 34 bytes. ``read_offset_index`` and
``read_time_index`` apply Kafka's sanity checks (``AbstractIndex.sanityCheck``: length a
multiple of the entry size, entries increasing, nothing past the log) and raise
``CorruptIndexError``; the loader then rebuilds the index from the batches, as Kafka's
``LogLoader`` does.

File names (``LogFileUtils``): the base offset zero-padded to 20 digits plus a suffix.

Differences from Kafka on purpose: index files are written at their valid size, not
pre-allocated to ``segment.index.bytes`` and memory-mapped (``preallocate`` is not implemented
either); the index files of the active segment are brought up to date on each flush and roll
rather than being shared memory maps, so after a crash they may lag the log (a lagging sparse
index is still correct; a torn one fails the sanity check and is rebuilt).

Locking: none; the owning log's lock serialises every call.
"""
from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

from kafka_emu.broker.storage.log_segment import OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE, OffsetIndex, TimeIndex
from kafka_emu.broker.storage.transaction_index import TransactionIndex, decode_aborted_txns

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class CorruptIndexError(Exception):
    """An index file failed its sanity check (Kafka's ``CorruptIndexException``)."""


def filename_prefix_from_offset(offset: int) -> str:
    """Kafka's ``LogFileUtils.filenamePrefixFromOffset``: 20 digits, zero-padded."""
    return f"{offset:020d}"


def offset_from_file_name(name: str) -> int:
    """The base offset a segment file name starts with (ValueError if it does not)."""
    prefix = name.split(".", 1)[0]
    if len(prefix) != 20 or not prefix.isdigit():
        raise ValueError(f"{name} is not a segment file name")
    return int(prefix)


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / (filename_prefix_from_offset(base_offset) + suffix)


class FileRecords:
    """The ``.log`` file of one segment (see the module docstring)."""

    def __init__(self, path: Path, create: bool = False) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT | os.O_TRUNC if create else 0)
        self._fd: int | None = os.open(path, flags, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.flushed_size = 0 if create else self.size

    def append(self, data: bytes | bytearray | memoryview) -> None:
        if self._fd is None:   # closed by a clean shutdown; the log is written again after a restart
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.write(self._fd, view[written:])
        self.size += written

    def flush(self) -> None:
        """fsync everything appended so far."""
        if self.flushed_size == self.size:
            return
        if self._fd is not None:
            os.fsync(self._fd)
        else:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.flushed_size = self.size

    def truncate_to(self, size: int) -> None:
        os.truncate(self.path, size)
        self.size = size
        self.flushed_size = min(self.flushed_size, size)

    def map(self) -> mmap.mmap | bytes:
        """The file's bytes through a read-only memory map (b"" for an empty file, which
        cannot be mapped)."""
        if self.size == 0:
            return b""
        with open(self.path, "rb") as f:
            return mmap.mmap(f.fileno(), self.size, access=mmap.ACCESS_READ)

    def close(self) -> None:
        """Close the append handle (an inactive segment is only read through its map)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def __repr__(self) -> str:
        return f"FileRecords({self.path}, size={self.size})"


# ---------------------------------------------------------------------- index files

def encode_offset_index(index: OffsetIndex, start: int = 0) -> bytes:
    """``.index`` bytes of the entries from the ``start``-th on."""
    base = index.base_offset
    return b"".join(_OFFSET_ENTRY.pack(offset - base, position) for offset, position in index.items(start))


def encode_time_index(index: TimeIndex, start: int = 0) -> bytes:
    """``.timeindex`` bytes of the entries from the ``start``-th on."""
    base = index.base_offset
    return b"".join(_TIME_ENTRY.pack(ts, offset - base) for ts, offset in index.items(start))


def read_offset_index(data: bytes, base_offset: int, max_index_size: int, log_size: int) -> OffsetIndex:
    """An ``OffsetIndex`` from ``.index`` bytes, sanity-checked against the log's size."""
    if len(data) % OFFSET_INDEX_ENTRY_SIZE:
        raise CorruptIndexError(f"index of segment {base_offset} has size {len(data)}, "
                                f"not a multiple of {OFFSET_INDEX_ENTRY_SIZE}")
    index = OffsetIndex(base_offset, max(max_index_size, len(data)))
    for relative, position in _OFFSET_ENTRY.iter_unpack(data):
        if relative < 0 or position < 0 or position >= max(log_size, 1):
            raise CorruptIndexError(f"index of segment {base_offset}: entry ({relative}, {position}) "
                                    f"outside the log of {log_size} bytes")
        try:
            index.append(base_offset + relative, position)
        except ValueError as exc:
            raise CorruptIndexError(f"index of segment {base_offset}: {exc}") from None
    return index


def read_time_index(data: bytes, base_offset: int, max_index_size: int) -> TimeIndex:
    """A ``TimeIndex`` from ``.timeindex`` bytes (Kafka's ``TimeIndex.sanityCheck``)."""
    if len(data) % TIME_INDEX_ENTRY_SIZE:
        raise CorruptIndexError(f"time index of segment {base_offset} has size {len(data)}, "
                                f"not a multiple of {TIME_INDEX_ENTRY_SIZE}")
    index = TimeIndex(base_offset, max(max_index_size, len(data) + TIME_INDEX_ENTRY_SIZE))
    for timestamp, relative in _TIME_ENTRY.iter_unpack(data):
        if relative < 0:
            raise CorruptIndexError(f"time index of segment {base_offset}: negative offset {relative}")
        try:
            index.maybe_append(timestamp, base_offset + relative, skip_full_check=True)
        except ValueError as exc:
            raise CorruptIndexError(f"time index of segment {base_offset}: {exc}") from None
    if index.entries != len(data) // TIME_INDEX_ENTRY_SIZE:
        raise CorruptIndexError(f"time index of segment {base_offset}: timestamps not increasing")
    return index


def read_transaction_index(path: Path, base_offset: int) -> TransactionIndex:
    """A segment's ``TransactionIndex`` from its ``.txnindex`` file (none: no entry), bound to
    that file (Kafka's ``TransactionIndex.sanityCheck``: whole 34-byte entries of version 0,
    markers in increasing offset order)."""
    index = TransactionIndex(base_offset)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    try:
        for txn in decode_aborted_txns(data):
            index.append(txn)
    except ValueError as exc:
        raise CorruptIndexError(f"transaction index of segment {base_offset}: {exc}") from None
    index.path = path
    return index


def write_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (index files: rebuilt from memory, so no atomic rename
    is needed; a torn one fails the sanity check at load)."""
    with open(path, "wb") as f:
        f.write(data)


def append_file(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)
