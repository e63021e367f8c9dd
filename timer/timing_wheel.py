"""TimingWheel: Kafka's hierarchical timing wheel.

A wheel of ``wheel_size`` buckets, each ``tick_ms`` wide, covers ``interval = tick_ms *
wheel_size`` ms starting at ``current_time_ms`` (always a multiple of ``tick_ms``). A task whose
expiration falls in the current tick is already expired (``add`` returns false and the caller
runs it); one within the interval goes to bucket ``(expiration // tick_ms) % wheel_size``; one
beyond goes to the overflow wheel, whose tick is this wheel's interval and which is created on
demand. Each bucket's expiration is the *start* of its range, so a task is never released
before its deadline minus one tick, and when an overflow bucket expires its tasks are re-added
and cascade into finer buckets.

A bucket is put on the delay queue only when ``set_expiration`` changes its expiration, i.e.
once per wheel revolution, so the queue holds at most one entry per bucket instead of one per
task. The clock of every level only moves when ``advance_clock`` is called with the expiration
of a bucket taken from the queue.

Invariants: ``current_time_ms % tick_ms == 0``; every linked task's bucket range starts at or
after ``current_time_ms``; an overflow wheel's clock is this wheel's clock rounded down to its
tick. Not thread-safe: the owning ``SystemTimer`` holds its lock around every call.

``add`` here is the reference implementation of the placement. ``SystemTimer`` inlines the same
steps on its hot paths (``add`` and the bucket flush) and the tests check both agree.
"""
from __future__ import annotations

import threading
from typing import Callable

from kafka_emu.timer.timer_task import _ABSENT, TimerTask
from kafka_emu.timer.timer_task_list import TaskCounter, TimerTaskList


class TimingWheel:
    __slots__ = (
        "tick_ms", "wheel_size", "interval", "current_time_ms", "buckets", "_counter",
        "_offer", "_lock", "overflow_wheel",
    )

    def __init__(
        self,
        tick_ms: int,
        wheel_size: int,
        start_ms: int,
        counter: TaskCounter,
        offer: Callable[[TimerTaskList], None],
        lock: threading.Lock,
    ) -> None:
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval = tick_ms * wheel_size
        self.current_time_ms = start_ms - (start_ms % tick_ms)
        self._counter = counter
        self._offer = offer
        self._lock = lock
        self.buckets = [TimerTaskList(counter, lock) for _ in range(wheel_size)]
        self.overflow_wheel: TimingWheel | None = None

    def _add_overflow_wheel(self) -> "TimingWheel":
        if self.overflow_wheel is None:
            self.overflow_wheel = TimingWheel(
                self.interval, self.wheel_size, self.current_time_ms, self._counter, self._offer,
                self._lock,
            )
        return self.overflow_wheel

    def add(self, task: TimerTask) -> bool:
        """Link ``task`` (expiration already set) into the right level; false if it is due now.

        Iterative rather than recursive over the levels: a 30 s delay goes four levels up, and a
        Python call per level would dominate the cost of the insertion. Only the finest wheel
        can hold an already-due task (every coarser wheel's first tick ends where this wheel's
        interval does), so the due check is made once, before climbing.
        """
        expiration = task._expiration_ms
        current = self.current_time_ms
        if expiration < current + self.tick_ms:
            return False
        wheel = self
        while expiration >= current + wheel.interval:
            wheel = wheel.overflow_wheel or wheel._add_overflow_wheel()
            current = wheel.current_time_ms
        tick = wheel.tick_ms
        virtual_id = expiration // tick
        bucket = wheel.buckets[virtual_id % wheel.wheel_size]
        old = task._bucket
        if old is not None and old._entries.pop(task, _ABSENT) is not _ABSENT:
            old._counter.value -= 1  # re-added while linked: the new placement supersedes
        bucket._entries[task] = None
        task._bucket = bucket
        self._counter.value += 1
        bucket_expiration = virtual_id * tick
        if bucket._expiration_ms != bucket_expiration:
            bucket._expiration_ms = bucket_expiration
            self._offer(bucket)
        return True

    def advance_clock(self, time_ms: int) -> None:
        wheel: TimingWheel | None = self
        while wheel is not None and time_ms >= wheel.current_time_ms + wheel.tick_ms:
            wheel.current_time_ms = time_ms - (time_ms % wheel.tick_ms)
            wheel = wheel.overflow_wheel

    def levels(self) -> list["TimingWheel"]:
        out = []
        wheel: TimingWheel | None = self
        while wheel is not None:
            out.append(wheel)
            wheel = wheel.overflow_wheel
        return out
