"""TransactionIndex: the aborted transactions whose ABORT marker is in one segment.

After Kafka's ``TransactionIndex`` and ``AbortedTxn``. Each entry records an aborted
transaction of one producer: its first offset, its last offset (the ABORT marker's offset) and
the last stable offset when it completed (the first offset of the earliest transaction of
another producer still open then, else the marker offset + 1). Entries are appended in marker
order, so last offsets strictly increase.

A read_committed fetch asks every segment from the one holding the fetch offset for the
aborted transactions overlapping ``[fetch offset, upper bound)`` (``collect_aborted_txns``):
an entry's transaction may begin in an earlier segment than its marker, so later segments are
searched too, until an entry whose last stable offset reaches the upper bound shows that no
later marker can belong to a transaction begun below it (the search is *complete*).

With ``log.dirs`` the index is also the segment's ``.txnindex`` file (``path``), in Kafka's
format: 34 bytes per entry (int16 version 0, int64 producer id, first offset, last offset, last
stable offset), appended with each entry, rewritten by a truncation, fsynced by ``flush``
(``broker.storage.file_records.read_transaction_index`` reads it back). As in Kafka, a segment whose
index never got an entry has no file.

Locking: none of its own; the owning log's lock (the partition lock) serialises it.
"""
from __future__ import annotations

import os
import struct
from bisect import bisect_left
from pathlib import Path
from typing import NamedTuple

TXN_INDEX_ENTRY_SIZE = 34
TXN_INDEX_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnIndexSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    complete: bool      # no later segment can hold an entry overlapping the range


def encode_aborted_txns(txns: list[AbortedTxn]) -> bytes:
    """``.txnindex`` bytes of ``txns`` (Kafka's ``AbortedTxn`` buffer layout)."""
    return b"".join(_ENTRY.pack(TXN_INDEX_VERSION, *txn) for txn in txns)


def decode_aborted_txns(data: bytes) -> list[AbortedTxn]:
    """The entries of ``.txnindex`` bytes; ValueError when the length is not a multiple of 34
    or an entry has an unknown version (Kafka's ``sanityCheck`` and ``readAbortedTxn``)."""
    if len(data) % TXN_INDEX_ENTRY_SIZE:
        raise ValueError(f"size {len(data)} is not a multiple of {TXN_INDEX_ENTRY_SIZE}")
    out = []
    for version, *fields in _ENTRY.iter_unpack(data):
        if version != TXN_INDEX_VERSION:
            raise ValueError(f"unexpected aborted transaction version {version}")
        out.append(AbortedTxn(*fields))
    return out


class TransactionIndex:
    def __init__(self, base_offset: int, path: Path | None = None) -> None:
        self.base_offset = base_offset
        self.path = path
        self._entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []   # parallel to _entries, for truncation
        self._unflushed = False

    def append(self, txn: AbortedTxn) -> None:
        if self._last_offsets and txn.last_offset <= self._last_offsets[-1]:
            raise ValueError(f"the last offset of appended transaction {txn} must exceed the previous "
                             f"entry's {self._last_offsets[-1]}")
        self._entries.append(txn)
        self._last_offsets.append(txn.last_offset)
        if self.path is not None:
            with open(self.path, "ab") as f:
                f.write(encode_aborted_txns([txn]))
            self._unflushed = True

    def write_file(self) -> None:
        """Write the whole index to ``path`` (no file when it has no entry)."""
        if self.path is None:
            return
        if self._entries:
            with open(self.path, "wb") as f:
                f.write(encode_aborted_txns(self._entries))
            self._unflushed = True
        else:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def flush(self) -> None:
        """fsync the file if anything was written since the last flush."""
        if self._unflushed and self.path is not None:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._unflushed = False

    def all_aborted_txns(self) -> list[AbortedTxn]:
        return list(self._entries)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Entries with ``last_offset >= fetch_offset`` and ``first_offset < upper_bound_offset``."""
        out: list[AbortedTxn] = []
        for txn in self._entries[bisect_left(self._last_offsets, fetch_offset):]:
            if txn.first_offset < upper_bound_offset:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(out, True)
        return TxnIndexSearchResult(out, False)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or past ``offset``."""
        keep = bisect_left(self._last_offsets, offset)
        if keep < len(self._entries):
            del self._entries[keep:]
            del self._last_offsets[keep:]
            self.write_file()

    def __len__(self) -> int:
        return len(self._entries)
