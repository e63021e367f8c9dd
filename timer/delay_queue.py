"""The delay queue of buckets that drives a ``SystemTimer``'s clock.

Kafka uses ``java.util.concurrent.DelayQueue<TimerTaskList>``. Here it is a binary heap of
``(expiration, sequence, bucket)`` with no lock of its own: the owning timer's lock guards it,
and the timer's condition variable (built on the same lock) is what a polling thread waits on.
A bucket is offered once per wheel revolution (when its expiration changes), so the heap holds at
most one live entry per bucket plus stale ones: an entry is stale when the bucket's expiration
no longer equals the one it was offered with (flushed, or re-armed for a later revolution), and
stale entries are dropped when they reach the top.
"""
from __future__ import annotations

import heapq
import itertools

from kafka_emu.timer.timer_task_list import TimerTaskList


class BucketDelayQueue:
    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerTaskList]] = []
        self._seq = itertools.count()

    def offer(self, bucket: TimerTaskList) -> bool:
        """Enqueue ``bucket``; true iff it is now the earliest (a waiting poller must re-check)."""
        expiration = bucket.get_expiration()
        heapq.heappush(self._heap, (expiration, next(self._seq), bucket))
        return self._heap[0][2] is bucket

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and heap[0][2].get_expiration() != heap[0][0]:
            heapq.heappop(heap)

    def head_expiration(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def poll_expired(self, now_ms: int) -> TimerTaskList | None:
        """Remove and return the earliest bucket if its expiration is at or before ``now_ms``."""
        self._drop_stale()
        heap = self._heap
        if heap and heap[0][0] <= now_ms:
            return heapq.heappop(heap)[2]
        return None

    def __len__(self) -> int:
        return len(self._heap)
