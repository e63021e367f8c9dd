"""MockTimer: the deterministic timer double used by coordinator and replica-manager tests.

Like Kafka's test ``MockTimer``: tasks wait in a priority queue on a ``MockTime``;
``advance_clock(ms)`` moves the clock by ``ms`` and runs, on the calling thread, every task
whose expiration is strictly before the new time (so a test advances by ``delay + 1``). A task
with a non-positive delay runs synchronously inside ``add``. Cancelled tasks stay in the queue
until they reach its head and are skipped there; ``size()`` counts live ones.

The lock guards the heap; tasks run without it so they may add tasks.
"""
from __future__ import annotations

import heapq
import itertools
import threading

from timer.system_timer import Timer
from timer.time import MockTime
from timer.timer_task import FIRED, TimerTask


class _MockBucket:
    """Marks a task as scheduled in a MockTimer (``is_cancelled()`` is then false)."""

    __slots__ = ()


_SCHEDULED = _MockBucket()


class MockTimer(Timer):
    def __init__(self, time: MockTime | None = None) -> None:
        self.time = time or MockTime()
        self._lock = threading.Lock()
        self._heap: list[tuple[int, int, TimerTask]] = []
        self._seq = itertools.count()

    def add(self, task: TimerTask) -> None:
        if task.delay_ms <= 0:
            task._bucket = FIRED
            task._timer_lock = self._lock
            task.run()
            return
        with self._lock:
            task._timer_lock = self._lock
            task._bucket = _SCHEDULED
            task._expiration_ms = self.time.hi_res_clock_ms() + task.delay_ms
            heapq.heappush(self._heap, (task._expiration_ms, next(self._seq), task))

    def advance_clock(self, timeout_ms: int) -> bool:
        self.time.sleep(timeout_ms)
        executed = False
        now = self.time.hi_res_clock_ms()
        while True:
            with self._lock:
                if not self._heap or self._heap[0][0] >= now:
                    return executed
                expiration, _, task = heapq.heappop(self._heap)
                if task._bucket is not _SCHEDULED or task._expiration_ms != expiration:
                    continue  # cancelled or re-added
                task._bucket = FIRED
            task.run()
            executed = True

    def size(self) -> int:
        with self._lock:
            return sum(1 for exp, _, t in self._heap if t._bucket is _SCHEDULED and t._expiration_ms == exp)

    def close(self) -> None:
        pass
