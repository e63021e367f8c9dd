"""SystemTimer: the hierarchical-timing-wheel timer that backs every purgatory.

``add`` computes a task's absolute expiration on the timer's monotonic clock and links it into
the wheel; a task already due is handed straight to the executor. ``advance_clock(timeout)``
waits up to ``timeout`` ms for the earliest bucket of the delay queue to expire, then, for that
bucket and every other bucket already due, moves the wheel's clock to the bucket's expiration
and flushes it: each task either falls into the current tick and is handed to the executor, or
is linked into a finer bucket. Expired tasks run on a one-thread ``ThreadPoolExecutor`` whose
thread is named ``executor-<executor_name>``, so a slow expiration never delays the clock.

Guarantees (Kafka's): a task never runs before ``expiration - tick_ms``; it runs at most once
per add; a task cancelled before it was handed to the executor never runs, and one cancelled
after hand-off but before ``run()`` started does not run either (Kafka would still run it; the
emulator checks once more, under the lock, on the executor thread). ``size()`` counts exactly
the tasks linked in buckets.

Where the emulator departs from Kafka's code, on purpose, for speed under CPython:
* One ``threading.Lock`` (``_lock``) guards the wheels, every bucket, the bucket delay queue and
  every task's placement; ``_cond`` is a condition on it used by pollers. Kafka uses a
  read/write lock so that adds run in parallel; under the GIL they cannot anyway, and a Python
  read/write lock costs several times a plain lock on the hot path.
* ``add`` inlines ``TimingWheel.add`` and, instead of climbing level by level, jumps to the
  first level whose interval exceeds the delay (``bisect`` over the level intervals): every
  coarser clock is the finest clock rounded down, so each level skipped would have rejected
  the task too. The placement is Kafka's; ``TimingWheel.add`` remains the reference and the
  tests check that both agree.
* The tasks found due in one ``advance_clock`` pass are handed to the executor as one batch
  (one future instead of one per task); they still run one by one, in order, each re-checked
  for cancellation.
* A large cascade (an expired coarse bucket holding more than ``CASCADE_CHUNK`` tasks) places
  only the tasks due soon at once and the rest in chunks over the following ``advance_clock``
  calls, releasing the lock in between (see ``_flush_locked``); Kafka's JVM moves tens of
  thousands of entries in a millisecond, Python needs tens of milliseconds, during which tasks
  falling due would wait.
* Shutdown wakes a blocked poller with ``wakeup()`` rather than by adding a zero-delay task
  (which here never reaches the bucket queue).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from concurrent.futures import ThreadPoolExecutor
from bisect import bisect_right as _bisect_right
from time import monotonic_ns as _monotonic_ns
from time import sleep as _sleep
from typing import Callable, Iterable

import structlog

from kafka_emu.timer.delay_queue import BucketDelayQueue
from kafka_emu.timer.time import MockTime, Time
from kafka_emu.timer.timer_task import _ABSENT, FIRED, SUBMITTED, TimerTask
from kafka_emu.timer.timer_task_list import TaskCounter, TimerTaskList
from kafka_emu.timer.timing_wheel import TimingWheel

SYSTEM_TIMER_THREAD_PREFIX = "executor-"
# Largest number of tasks a cascade places in one go while holding the lock (see _flush_locked).
CASCADE_CHUNK = 2048

_log = structlog.get_logger("timer.system_timer")


@dataclass(frozen=True, slots=True)
class TimerSnapshot:
    """A timer's counters for metrics: tasks linked in it and tasks it expired so far."""

    name: str            # the executor name (a purgatory's timer is named after the purgatory)
    pending_tasks: int
    expired_tasks: int


class Timer:
    """The interface of Kafka's ``Timer``: what purgatories and coordinators depend on."""

    def add(self, task: TimerTask) -> None:
        raise NotImplementedError

    def advance_clock(self, timeout_ms: int) -> bool:
        raise NotImplementedError

    def size(self) -> int:
        raise NotImplementedError

    def snapshot(self) -> TimerSnapshot:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> "Timer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SystemTimer(Timer):
    def __init__(
        self,
        executor_name: str,
        tick_ms: int = 1,
        wheel_size: int = 20,
        start_ms: int | None = None,
        time: Time | None = None,
    ) -> None:
        self.executor_name = executor_name
        self.time = time or Time.SYSTEM
        self._clock = self.time.hi_res_clock_ms
        self._clock_ns = _nanosecond_clock(self.time)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._counter = TaskCounter()
        self._queue = BucketDelayQueue()
        self._closed = False
        # Set by ``wakeup``, consumed by the next wait in ``advance_clock`` (which then returns):
        # sticky, so a wakeup that arrives just before the poller starts waiting is not lost.
        self._wakeup_pending = False
        thread_name = SYSTEM_TIMER_THREAD_PREFIX + executor_name
        self._executor = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix=thread_name,
            initializer=_name_executor_thread,
            initargs=(thread_name,),
        )
        self._wheel = TimingWheel(
            tick_ms, wheel_size,
            self._clock() if start_ms is None else start_ms,
            self._counter, self._offer, self._lock,
        )
        # The wheel levels created so far and their intervals, for ``add``'s direct jump.
        self._levels = [self._wheel]
        self._spans = [self._wheel.interval]
        # Tasks found due while flushing buckets, handed to the executor in one batch.
        self._due: list[TimerTask] = []
        # Buckets of a large cascade still holding tasks to place (see ``_flush_locked``).
        self._staged: list[TimerTaskList] = []
        self._cascade_chunk = CASCADE_CHUNK
        # The wheel each staged bucket cascades into (parallel to ``_staged``).
        self._staged_finer: list[TimingWheel] = []
        # Every staged task expiring before this has been placed.
        self._staged_low = 0
        # Expiration counter read by metrics (written only under ``_lock``).
        self.expired_task_count = 0
        if isinstance(self.time, MockTime):
            self.time.add_listener(self._on_mock_time_advance)
            self.time.add_due_runner(self)

    # ------------------------------------------------------------------ adding
    def add(self, task: TimerTask) -> None:
        # The hot path of every purgatory: ``TimingWheel.add`` is inlined here (same steps, same
        # invariants) because a Python frame per call is a large share of an insertion.
        lock = self._lock
        with lock:
            task._timer_lock = lock
            expiration = task._expiration_ms = task.delay_ms + self._clock_ns() // 1_000_000
            wheel = self._wheel
            current = wheel.current_time_ms
            if expiration < current + wheel.tick_ms:
                self._mark_submitted_locked(task)
                self._submit([task])
                return
            # Every coarser clock is this clock rounded down, so each level j with
            # expiration >= current + interval_j rejects the task too: start the climb at the
            # first level whose interval exceeds the delay (one step at most remains).
            level = _bisect_right(self._spans, expiration - current)
            levels = self._levels
            if level < len(levels):
                wheel = levels[level]
                current = wheel.current_time_ms
            else:  # beyond every level known here: refresh the list, climb from the top
                wheel = self._refresh_levels()[-1]
                current = wheel.current_time_ms
            while expiration >= current + wheel.interval:
                wheel = wheel.overflow_wheel or self._add_level(wheel)
                current = wheel.current_time_ms
            tick = wheel.tick_ms
            virtual_id = expiration // tick
            bucket = wheel.buckets[virtual_id % wheel.wheel_size]
            old = task._bucket
            if old is not None and old._entries.pop(task, _ABSENT) is not _ABSENT:
                old._counter.value -= 1
            bucket._entries[task] = None
            task._bucket = bucket
            self._counter.value += 1
            bucket_expiration = virtual_id * tick
            if bucket._expiration_ms != bucket_expiration:
                bucket._expiration_ms = bucket_expiration
                if self._queue.offer(bucket):
                    self._cond.notify()

    def _flush_locked(self, bucket: TimerTaskList, now: int) -> None:
        """Kafka's ``bucket.flush(addTimerTaskEntry)`` for an expired bucket.

        The tasks of a bucket of level k all fall within the span of level k-1 (its interval is
        level k's tick), so they are placed with ``_place_cascade_locked`` (level k-1 directly,
        a finer level or the executor only for the few in level k-1's first tick). A small
        bucket is flushed at once. A large one (a coarse bucket cascading tens of thousands of
        tasks) would hold the lock, and the GIL, long enough to make tasks falling due meanwhile
        late, so only the tasks expiring within two spans of the finest wheel (counted from
        ``now``: the poller may be late) are placed now; the bucket object itself leaves the
        wheel (a fresh one takes its slot) with the other tasks still linked in it, and
        ``advance_clock`` places those ``2 * CASCADE_CHUNK`` at a time (``_drain_staged_locked``),
        long before the earliest of them is due. While staged, a task is still linked in a
        bucket: ``cancel``, re-adding and ``size()`` work unchanged.
        """
        entries = bucket._entries
        bucket._expiration_ms = -1
        finer = None
        levels = self._levels
        for index in range(1, len(levels)):
            if bucket in levels[index].buckets:
                finer = levels[index - 1]
                break
        if len(entries) <= self._cascade_chunk or finer is None:
            bucket._entries = {}
            self._place_cascade_locked(entries, finer)
            return
        self._detach_locked(bucket)
        self._staged.append(bucket)
        self._staged_finer.append(finer)
        root = self._wheel
        horizon = max(now, root.current_time_ms) + 3 * root.interval
        if len(self._staged) > 1 and horizon < self._staged_low:
            horizon = self._staged_low  # another cascade is being placed: catch up with it
        self._staged_low = horizon
        self._place_staged_before_locked(horizon, len(self._staged) - 1)

    def _place_staged_before_locked(self, horizon: int, first: int = 0) -> None:
        """Place the tasks of ``_staged[first:]`` expiring before ``horizon`` (a filter scan)."""
        staged = self._staged
        for index in range(first, len(staged)):
            entries = staged[index]._entries
            urgent = [task for task in entries if task._expiration_ms < horizon]
            for task in urgent:
                del entries[task]
            self._place_cascade_locked(urgent, self._staged_finer[index])
        for index in range(len(staged) - 1, -1, -1):
            if not staged[index]._entries:
                del staged[index], self._staged_finer[index]

    def _detach_locked(self, bucket: TimerTaskList) -> bool:
        """Give ``bucket``'s wheel slot a fresh bucket, so that next revolution's tasks never
        mix with the ones still staged in it; false if it is in no wheel."""
        for wheel in self._wheel.levels():
            buckets = wheel.buckets
            for index, candidate in enumerate(buckets):
                if candidate is bucket:
                    buckets[index] = TimerTaskList(self._counter, self._lock)
                    return True
        return False

    def _drain_staged_locked(self) -> None:
        """Place up to one chunk of the tasks left in staged buckets."""
        budget = 2 * self._cascade_chunk
        staged = self._staged
        while staged and budget > 0:
            entries = staged[-1]._entries
            take = min(budget, len(entries))
            chunk = [entries.popitem()[0] for _ in range(take)]
            budget -= take
            finer = self._staged_finer[-1]
            if not entries:
                staged.pop()
                self._staged_finer.pop()
            self._place_cascade_locked(chunk, finer)

    def _place_cascade_locked(self, tasks: Iterable[TimerTask], wheel: TimingWheel | None) -> None:
        """Place tasks of an expired bucket of the level above ``wheel`` (None: of the finest).

        Their expirations lie in ``[wheel.current_time_ms, wheel.current_time_ms +
        wheel.interval)`` (the wheel clock only moves forward, to bucket expirations), so each
        one past ``wheel``'s first tick goes straight to its bucket there, with no level search:
        ``_place_all_locked`` takes the others. Every bucket of ``wheel`` that holds tasks then
        gets the expiration of the one tick range its index stands for in the wheel's current
        revolution (offering it to the queue if that changed), as Kafka's placement would set.
        """
        if wheel is None:
            self._place_all_locked(tasks)
            return
        tick = wheel.tick_ms
        size = wheel.wheel_size
        current = wheel.current_time_ms
        split = current + tick
        buckets = wheel.buckets
        rest = []
        for task in tasks:
            expiration = task._expiration_ms
            if expiration < split:
                rest.append(task)
                continue
            bucket = buckets[expiration // tick % size]
            bucket._entries[task] = None
            task._bucket = bucket
        base = current // tick
        offer = self._offer
        for index, bucket in enumerate(buckets):
            if bucket._entries:
                expiration = (base + (index - base) % size) * tick
                if bucket._expiration_ms != expiration:
                    bucket._expiration_ms = expiration
                    offer(bucket)
        if rest:
            self._place_all_locked(rest)

    def _place_all_locked(self, tasks: Iterable[TimerTask]) -> None:
        """Place tasks already unlinked from (or about to leave) a bucket; all are counted.

        Each either falls into the current tick (due: batched for the executor) or is linked
        into the right bucket, with the placement steps of ``add`` inlined: the per-task cost
        here bounds firing lateness when a coarse bucket cascades.
        """
        root = self._wheel
        root_current = root.current_time_ms
        due_before = root_current + root.tick_ms
        spans = self._spans
        levels = self._levels
        n_levels = len(levels)
        queue_offer = self._offer
        due = self._due
        due_count = 0
        for task in tasks:
            expiration = task._expiration_ms
            if expiration < due_before:
                task._bucket = SUBMITTED
                due.append(task)
                due_count += 1
                continue
            level = _bisect_right(spans, expiration - root_current)
            wheel = levels[level] if level < n_levels else levels[-1]
            current = wheel.current_time_ms
            while expiration >= current + wheel.interval:
                wheel = wheel.overflow_wheel or self._add_level(wheel)
                current = wheel.current_time_ms
            tick = wheel.tick_ms
            virtual_id = expiration // tick
            target = wheel.buckets[virtual_id % wheel.wheel_size]
            target._entries[task] = None
            task._bucket = target
            bucket_expiration = virtual_id * tick
            if target._expiration_ms != bucket_expiration:
                target._expiration_ms = bucket_expiration
                queue_offer(target)
        self._counter.value -= due_count
        self.expired_task_count += due_count

    def _add_level(self, wheel: TimingWheel) -> TimingWheel:
        overflow = wheel._add_overflow_wheel()
        self._refresh_levels()
        return overflow

    def _refresh_levels(self) -> list[TimingWheel]:
        self._levels = levels = self._wheel.levels()
        self._spans = [level.interval for level in levels]
        return levels

    def _offer(self, bucket: TimerTaskList) -> None:
        if self._queue.offer(bucket):
            self._cond.notify()

    def _mark_submitted_locked(self, task: TimerTask) -> None:
        old = task._bucket
        if old is not None and old._entries.pop(task, _ABSENT) is not _ABSENT:
            old._counter.value -= 1
        task._bucket = SUBMITTED
        self.expired_task_count += 1

    def _submit(self, tasks: list[TimerTask]) -> None:
        """Hand due tasks to the executor thread (the lock is held)."""
        if self._closed:
            for task in tasks:
                task._bucket = None
            return
        try:
            self._executor.submit(self._run_tasks, tasks)
        except RuntimeError:  # executor shut down concurrently with close()
            for task in tasks:
                task._bucket = None

    def _run_tasks(self, tasks: list[TimerTask]) -> None:
        lock = self._lock
        for task in tasks:
            with lock:
                if task._bucket is not SUBMITTED:
                    continue  # cancelled (or re-added) after it was handed to the executor
                task._bucket = FIRED
            try:
                task.run()
            except Exception:
                _log.exception("timer_task_failed", executor=self.executor_name, task=repr(task))

    # ------------------------------------------------------------------ clock
    def advance_clock(self, timeout_ms: int) -> bool:
        """Process every expired bucket, waiting up to ``timeout_ms`` for the first one.

        Returns early (false) if ``wakeup`` was called since the last wait, or on ``close``.
        """
        time = self.time
        queue = self._queue
        with self._cond:
            now = time.hi_res_clock_ms()
            if self._staged:
                # Staged tasks must be placed before they are due, however late this call is:
                # everything expiring within two finest spans of now always is.
                root = self._wheel
                floor = max(now, root.current_time_ms) + 2 * root.interval
                if floor > self._staged_low:
                    self._staged_low = floor + root.interval
                    self._place_staged_before_locked(self._staged_low)
            bucket = queue.poll_expired(now)
            if bucket is None and timeout_ms > 0 and not self._staged:
                deadline = now + timeout_ms
                while bucket is None and not self._closed:
                    if self._wakeup_pending:
                        self._wakeup_pending = False
                        break
                    head = queue.head_expiration()
                    wait_until = deadline if head is None else min(deadline, head)
                    remaining = wait_until - now
                    if remaining > 0:
                        time.wait_on(self._cond, remaining)
                    now = time.hi_res_clock_ms()
                    bucket = queue.poll_expired(now)
                    if now >= deadline:
                        break
            if bucket is None and not self._staged:
                return False
            advance = self._wheel.advance_clock
            flush = self._flush_locked
            while bucket is not None:
                advance(bucket._expiration_ms)
                flush(bucket, now)
                bucket = queue.poll_expired(now)
            if self._staged:
                self._drain_staged_locked()
            if self._due:
                due, self._due = self._due, []
                self._submit(due)
            more = bool(self._staged)
        if more:
            # A poller loops straight back for the next chunk; yield the GIL first so that the
            # executor and adders waiting for the lock get it (Python locks are not fair).
            _sleep(0)
        return True

    def wakeup(self) -> None:
        """Make a thread blocked in ``advance_clock`` return now, or the next one to block.

        Kafka adds a zero-delay task to wake the reaper's ``DelayQueue.poll``; here a due task
        goes straight to the executor and never reaches the bucket queue, so shutdown uses this.
        """
        with self._cond:
            self._wakeup_pending = True
            self._cond.notify_all()

    def run_due(self, timeout_s: float = 10.0) -> bool:
        """Hand every task due at the clock's current time to the executor, then wait (at most
        ``timeout_s``) until the executor has run everything handed to it so far; true if a
        bucket was due. For ``MockTime.run_due`` (broker time travel: the caller returns once
        the expirations a clock jump caused have run). Never call it from a timer task."""
        due = False
        while self.advance_clock(0):
            due = True
        with self._cond:
            if self._closed:
                return due
            marker = self._executor.submit(_no_op)   # the executor runs its queue in order
        try:
            marker.result(timeout_s)
        except Exception:  # noqa: BLE001 - cancelled by close(), or a task that blocks too long
            _log.warning("run_due_incomplete", executor=self.executor_name, timeout_s=timeout_s)
        return due

    def _on_mock_time_advance(self) -> None:
        # The mock clock moved: let a waiting poller re-check the queue (without giving up).
        with self._cond:
            self._cond.notify_all()

    # ------------------------------------------------------------------ state
    def size(self) -> int:
        return self._counter.value

    def snapshot(self) -> TimerSnapshot:
        return TimerSnapshot(self.executor_name, self.size(), self.expired_task_count)

    def current_time_ms(self) -> int:
        return self._wheel.current_time_ms

    def close(self) -> None:
        """Stop the executor (waiting up to 5 s for a running task); pending tasks are abandoned."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        if isinstance(self.time, MockTime):
            self.time.remove_listener(self._on_mock_time_advance)
            self.time.remove_due_runner(self)
        self._executor.shutdown(wait=False, cancel_futures=True)
        for thread in list(getattr(self._executor, "_threads", ())):
            thread.join(5.0)
            _log.debug("thread_stopped", thread=thread.name, alive=thread.is_alive())

    def __repr__(self) -> str:
        return f"SystemTimer({self.executor_name!r}, size={self.size()})"


def _nanosecond_clock(time: Time) -> Callable[[], int]:
    """A callable whose value // 1e6 is ``time.hi_res_clock_ms()``, as cheap as possible.

    For the real clock that is ``time.monotonic_ns`` itself (a C function: no Python frame on the
    hot path); other clocks go through their own ``hi_res_clock_ms``.
    """
    if type(time) is Time:
        return _monotonic_ns
    if isinstance(time, MockTime):
        return time.nanoseconds
    return lambda: time.hi_res_clock_ms() * 1_000_000


def _no_op() -> None:
    pass


def _name_executor_thread(name: str) -> None:
    threading.current_thread().name = name
    _log.debug("thread_started", thread=name)
