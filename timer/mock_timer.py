"""MockTimer: the deterministic timer double used by coordinator and replica-manager tests.

Like Kafka's test ``MockTimer``: tasks wait in a priority queue on a ``MockTime``;
``advance_clock(ms)`` moves the clock by ``ms`` and runs, on the calling thread, every task
whose expiration is strictly before the new time (so a test advances by ``delay + 1``). A task
with a non-positive delay runs synchronously inside ``add``. Each add creates an entry (as
Kafka's ``TimerTaskEntry``); cancelled or superseded entries stay in the queue until they reach
its head and are skipped there, so re-adding a task never runs it twice. ``size()`` counts live
entries only (Kafka's MockTimer counts the queue, stale entries included).

The lock guards the heap; tasks run without it so they may add tasks.
"""
from __future__ import annotations

import heapq
import itertools
import threading

from kafka_emu.timer.system_timer import Timer, TimerSnapshot
from kafka_emu.timer.time import MockTime
from kafka_emu.timer.timer_task import FIRED, Marker, TimerTask


class MockTimer(Timer):
    def __init__(self, time: MockTime | None = None, name: str = "MockTimer") -> None:
        self.time = time or MockTime()
        self.name = name
        self.expired_task_count = 0   # tasks run by advance_clock (written under _lock)
        self._lock = threading.Lock()
        # One ``Marker`` per add stands for Kafka's ``TimerTaskEntry``: valid while the task points
        # to it, so a superseded heap element is recognised even at the same expiration.
        self._heap: list[tuple[int, int, Marker, TimerTask]] = []
        self._seq = itertools.count()

    def add(self, task: TimerTask) -> None:
        if task.delay_ms <= 0:
            with self._lock:
                task._timer_lock = self._lock
                task._bucket = FIRED
            task.run()
            return
        entry = Marker("MockTimer entry")
        with self._lock:
            task._timer_lock = self._lock
            task._bucket = entry
            task._expiration_ms = self.time.hi_res_clock_ms() + task.delay_ms
            heapq.heappush(self._heap, (task._expiration_ms, next(self._seq), entry, task))

    def advance_clock(self, timeout_ms: int) -> bool:
        self.time.sleep(timeout_ms)
        executed = False
        now = self.time.hi_res_clock_ms()
        while True:
            with self._lock:
                if not self._heap or self._heap[0][0] >= now:
                    return executed
                _, _, entry, task = heapq.heappop(self._heap)
                if task._bucket is not entry:
                    continue  # cancelled or re-added
                task._bucket = FIRED
                self.expired_task_count += 1
            task.run()
            executed = True

    def size(self) -> int:
        with self._lock:
            return sum(1 for _, _, entry, task in self._heap if task._bucket is entry)

    def snapshot(self) -> TimerSnapshot:
        return TimerSnapshot(self.name, self.size(), self.expired_task_count)

    def close(self) -> None:
        pass
