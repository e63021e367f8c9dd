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

Locking: none of its own; the owning log's lock (the partition lock) serialises it.

Differences from Kafka on purpose: held in memory with its segment (no ``.txnindex`` file).
"""
from __future__ import annotations

from bisect import bisect_left
from typing import NamedTuple


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnIndexSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    complete: bool      # no later segment can hold an entry overlapping the range


class TransactionIndex:
    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []   # parallel to _entries, for truncation

    def append(self, txn: AbortedTxn) -> None:
        if self._last_offsets and txn.last_offset <= self._last_offsets[-1]:
            raise ValueError(f"the last offset of appended transaction {txn} must exceed the previous "
                             f"entry's {self._last_offsets[-1]}")
        self._entries.append(txn)
        self._last_offsets.append(txn.last_offset)

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
        del self._entries[keep:]
        del self._last_offsets[keep:]

    def __len__(self) -> int:
        return len(self._entries)
