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

``add`` is the one placement routine: ``SystemTimer`` calls it on the finest wheel for new
tasks, and for the tasks of an expired bucket on the wheel they cascade into (Kafka's add
returns false for a task in a wheel's current tick at any level; the timer then adds it at the
finest wheel). Kafka's ``add`` recurses into the overflow wheel level by level; here it jumps to
the first level whose interval exceeds the delay (``bisect`` over the level intervals, which
every level of one hierarchy shares): every coarser clock is this clock rounded down, so each
level skipped would have rejected the task too, and at most one step of Kafka's climb remains.
A 30 s delay is four levels up from a 1 ms tick, and a Python call per level would dominate
the cost of the insertion.

Invariants: ``current_time_ms % tick_ms == 0``; every linked task's bucket range starts at or
after ``current_time_ms``; an overflow wheel's clock is this wheel's clock rounded down to its
tick; ``_levels[i]`` is the wheel of level ``i`` (this one at ``_level``) and ``_spans[i]`` its
interval.

Locking: none of its own; the owning ``SystemTimer`` holds its lock around every call.
"""
from __future__ import annotations

from bisect import bisect_right as _bisect_right
from typing import Callable

from kafka_emu.timer.timer_task import TimerTask
from kafka_emu.timer.timer_task_list import TaskCounter, TimerTaskList


class TimingWheel:
    __slots__ = (
        "tick_ms", "wheel_size", "interval", "current_time_ms", "buckets", "overflow_wheel",
        "_counter", "_offer", "_level", "_levels", "_spans",
    )

    def __init__(
        self,
        tick_ms: int,
        wheel_size: int,
        start_ms: int,
        counter: TaskCounter,
        offer: Callable[[TimerTaskList], None],
    ) -> None:
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval = tick_ms * wheel_size
        self.current_time_ms = start_ms - (start_ms % tick_ms)
        self._counter = counter
        self._offer = offer
        self.buckets = [TimerTaskList(counter) for _ in range(wheel_size)]
        self.overflow_wheel: TimingWheel | None = None
        self._level = 0
        self._levels: list[TimingWheel] = [self]
        self._spans: list[int] = [self.interval]

    def _add_overflow_wheel(self) -> "TimingWheel":
        if self.overflow_wheel is None:
            overflow = TimingWheel(
                self.interval, self.wheel_size, self.current_time_ms, self._counter, self._offer,
            )
            overflow._level = self._level + 1
            overflow._levels = self._levels
            overflow._spans = self._spans
            self._levels.append(overflow)
            self._spans.append(overflow.interval)
            self.overflow_wheel = overflow
        return self.overflow_wheel

    def add(self, task: TimerTask) -> bool:
        """Link ``task`` (expiration set, not placed anywhere) into the right bucket of the right
        level; false, leaving it unlinked, if it is due now.

        Only the finest wheel can hold an already-due task (every coarser wheel's first tick
        ends where the wheel below's interval does), so the due check is made once.
        """
        expiration = task._expiration_ms
        current = self.current_time_ms
        if expiration < current + self.tick_ms:
            return False
        wheel = self
        if expiration >= current + self.interval:
            levels = self._levels
            level = _bisect_right(self._spans, expiration - current, self._level + 1)
            wheel = levels[level] if level < len(levels) else levels[-1]
            while expiration >= wheel.current_time_ms + wheel.interval:
                wheel = wheel.overflow_wheel or wheel._add_overflow_wheel()
        tick = wheel.tick_ms
        virtual_id = expiration // tick
        bucket = wheel.buckets[virtual_id % wheel.wheel_size]
        # Linking and setting the bucket's expiration are written here rather than as calls of
        # TimerTaskList methods: two more Python calls per placement made an add-then-cancel
        # ~15-30% and a cascade ~35% slower (CPU time per task, old vs new in one process).
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
        """This wheel and its overflow wheels, finest first."""
        return self._levels[self._level:]

    def cascade_target(self, bucket: TimerTaskList) -> "TimingWheel | None":
        """The wheel the tasks of ``bucket``, a bucket of a coarser wheel, fall into when it
        expires (the level below its own); None for a bucket of this wheel or of none."""
        levels = self.levels()
        for finer, coarser in zip(levels, levels[1:]):
            if bucket in coarser.buckets:
                return finer
        return None

    def retire_bucket(self, bucket: TimerTaskList) -> None:
        """Give ``bucket``'s slot in this wheel a fresh bucket and make ``bucket`` idle, so that
        tasks added for the slot's next revolution never mix with the ones still linked in it."""
        buckets = self.buckets
        buckets[buckets.index(bucket)] = TimerTaskList(self._counter)
        bucket.set_expiration(-1)
