"""LeaderEpochFileCache: which leader epoch wrote which offsets of one replica's log.

An ordered list of ``(epoch, start_offset)`` entries, both strictly increasing: epoch ``e``
covers the offsets from its start offset up to the next entry's start offset (the last one up
to the log end offset). Kafka's ``LeaderEpochFileCache`` (storage module), without the
``leader-epoch-checkpoint`` file: ``entries()`` and the ``entries`` constructor argument are
what a checkpoint writes and reads back.

The cache answers the question of KIP-101/KIP-279/KIP-320: "where did epoch E end?"
(``end_offset_for``), asked by followers after a leader change (through Fetch's diverging epoch)
and by consumers validating their position (OffsetForLeaderEpoch). It must follow the log:
truncating the log truncates the cache from the end (``truncate_from_end``), raising the log
start offset trims it from the start (``truncate_from_start``), and a log restarted empty clears
it (``clear``).

Invariants (kept by ``assign``): epochs and start offsets both strictly increase along the list;
assigning an epoch removes every newer-or-equal epoch and every entry starting at or after the
new start offset (a stale leader's entries, overwritten by the new leader's data).

Locking: none of its own; the owning ``UnifiedLog``'s lock guards every call.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable, NamedTuple

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self._entries: list[EpochEntry] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def is_empty(self) -> bool:
        return not self._entries

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Kafka's ``assign``: record that ``epoch`` starts at ``start_offset``; true if the
        cache changed. Negative values are refused (ValueError), as Kafka refuses them."""
        entries = self._entries
        if entries:   # the same epoch again (every append of a leader): fields by index, not name (3.11)
            last = entries[-1]
            if last[0] == epoch and last[1] <= start_offset:
                return False   # both valid then: the entry's were checked when it was assigned
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"leader epoch {epoch} and start offset {start_offset} must be >= 0")
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        return True

    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def start_offset_of(self, epoch: int) -> int:
        """Start offset of ``epoch`` if the cache has that exact epoch, else -1."""
        i = bisect_left(self._entries, (epoch, -1))
        if i < len(self._entries) and self._entries[i].epoch == epoch:
            return self._entries[i].start_offset
        return UNDEFINED_EPOCH_OFFSET

    def epoch_for_offset(self, offset: int) -> int:
        """Kafka's ``epochForOffset``: the epoch whose range holds ``offset`` (-1 below the first)."""
        starts = [e.start_offset for e in self._entries]
        i = bisect_right(starts, offset) - 1
        return self._entries[i].epoch if i >= 0 else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's ``endOffsetFor``: (the largest epoch <= ``requested_epoch``, the start offset
        of the first epoch above it); the latest epoch ends at the LEO; (-1, -1) when the
        requested epoch is undefined or newer than every known one; (requested, first start)
        when it is older than every known one."""
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries and entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(entries, (requested_epoch, 1 << 63))
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Kafka's ``truncateFromEndAsyncFlush``: drop the entries starting at or after
        ``end_offset`` (the log was truncated to it)."""
        entries = self._entries
        while end_offset >= 0 and entries and entries[-1].start_offset >= end_offset:
            entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """Kafka's ``truncateFromStartAsyncFlush``: drop the entries starting at or below
        ``start_offset`` (the new log start) but keep the epoch covering it, moved to start there."""
        entries = self._entries
        i = 0
        while i < len(entries) and entries[i].start_offset <= start_offset:
            i += 1
        if i:
            covering = entries[i - 1].epoch
            del entries[:i]
            entries.insert(0, EpochEntry(covering, start_offset))

    def clear(self) -> None:
        self._entries.clear()

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({[tuple(e) for e in self._entries]})"
