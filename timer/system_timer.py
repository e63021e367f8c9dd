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
* ``TimingWheel.add``, the one placement routine (for new tasks and cascading ones alike), jumps
  straight to the first level whose interval exceeds the delay instead of climbing level by
  level; the placement is Kafka's (see ``TimingWheel``). A cascading task is offered first to
  the wheel it falls into rather than to the finest one, and the tasks of an expired bucket of
  the finest wheel are taken as due without asking (see ``_flush_locked``): same placements,
  no level search per task.
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
from time import monotonic_ns as _monotonic_ns
from time import sleep as _sleep
from typing import Callable, Iterable

import structlog

from kafka_emu.timer.delay_queue import BucketDelayQueue
from kafka_emu.timer.time import MockTime, Time
from kafka_emu.timer.timer_task import FIRED, SUBMITTED, TimerTask
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
        # The executor's one thread, recorded by itself when it starts (for ``close`` to join).
        self._executor_thread: threading.Thread | None = None
        self._executor = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix=SYSTEM_TIMER_THREAD_PREFIX + executor_name,
            initializer=self._on_executor_thread_start,
        )
        self._wheel = TimingWheel(
            tick_ms, wheel_size,
            self._clock() if start_ms is None else start_ms,
            self._counter, self._offer,
        )
        # Tasks found due while flushing buckets, handed to the executor in one batch.
        self._due: list[TimerTask] = []
        # Buckets of large cascades that left the wheel with tasks still to place, each with the
        # wheel its tasks cascade into (see ``_flush_locked``).
        self._staged: list[tuple[TimerTaskList, TimingWheel]] = []
        self._cascade_chunk = CASCADE_CHUNK
        # Every staged task expiring before this has been placed.
        self._staged_low = 0
        # Expiration counter read by metrics (written only under ``_lock``).
        self.expired_task_count = 0
        if isinstance(self.time, MockTime):
            self.time.add_listener(self._on_mock_time_advance)
            self.time.add_due_runner(self)

    # ------------------------------------------------------------------ adding
    def add(self, task: TimerTask) -> None:
        lock = self._lock
        with lock:
            task._timer_lock = lock
            old = task._bucket
            if old is not None:
                old.remove(task)  # re-added while placed: the new placement supersedes the old
            task._expiration_ms = task.delay_ms + self._clock_ns() // 1_000_000
            if not self._wheel.add(task):
                self._submit_locked([task])

    def _add_all_locked(self, tasks: Iterable[TimerTask], wheel: TimingWheel) -> None:
        """Kafka's ``addTimerTaskEntry`` for tasks unlinked from an expired bucket of the level
        above ``wheel``: each is placed again, or, due, batched for the executor with this
        pass's other due tasks.

        Their expirations lie in ``wheel``'s span (its clock only moves forward, to bucket
        expirations), so ``wheel.add`` takes each one past its first tick with no level search;
        the root takes the others. (Kafka adds every one at the root and climbs.)
        """
        root = self._wheel
        if wheel is not root:
            add = wheel.add
            tasks = [task for task in tasks if not add(task)]
        add = root.add
        due = self._due
        for task in tasks:
            if not add(task):
                due.append(task)

    def _flush_locked(self, bucket: TimerTaskList, now: int) -> None:
        """Kafka's ``bucket.flush(addTimerTaskEntry)`` for an expired bucket.

        A bucket of up to ``CASCADE_CHUNK`` tasks, or one of the finest wheel (all of whose
        tasks are due), is flushed at once. A larger coarse bucket (one cascading tens of
        thousands of tasks) would hold the lock, and the GIL, long enough to make tasks falling
        due meanwhile late, so it leaves the wheel (``retire_bucket``: a fresh bucket takes its
        slot) with its tasks still linked in it, joins ``_staged`` with the wheel its tasks
        cascade into, and only its tasks expiring within three spans of the finest wheel
        (counted from ``now``: the poller may be late) are placed now; ``advance_clock`` places
        the others, ``2 * CASCADE_CHUNK`` at a time (``_drain_staged_locked``), long before the
        earliest of them is due. While staged, a task is still linked in a bucket: ``cancel``,
        re-adding and ``size()`` work unchanged.
        """
        root = self._wheel
        finer = root.cascade_target(bucket)
        if finer is None:
            # A bucket of the finest wheel spans one tick, which is now the current tick: each
            # task is due, as ``root.add`` would say (asking it cost ~7% of a cascade's instructions).
            self._due.extend(bucket.flush())
            return
        if len(bucket) <= self._cascade_chunk:
            self._add_all_locked(bucket.flush(), finer)
            return
        finer.overflow_wheel.retire_bucket(bucket)
        self._staged.append((bucket, finer))
        horizon = max(now, root.current_time_ms) + 3 * root.interval
        if len(self._staged) > 1 and horizon < self._staged_low:
            horizon = self._staged_low  # another cascade is being placed: catch up with it
        self._staged_low = horizon
        self._add_all_locked(bucket.take_expiring_before(horizon), finer)

    def _place_staged_before_locked(self, horizon: int) -> None:
        """Place the staged tasks expiring before ``horizon``; forget the emptied buckets."""
        for bucket, wheel in self._staged:
            self._add_all_locked(bucket.take_expiring_before(horizon), wheel)
        self._staged = [(bucket, wheel) for bucket, wheel in self._staged if len(bucket)]

    def _drain_staged_locked(self) -> None:
        """Place up to one chunk of the tasks left in staged buckets."""
        budget = 2 * self._cascade_chunk
        staged = self._staged
        while staged and budget > 0:
            bucket, wheel = staged[-1]
            tasks = bucket.take(budget)
            budget -= len(tasks)
            if not len(bucket):
                staged.pop()
            self._add_all_locked(tasks, wheel)

    def _offer(self, bucket: TimerTaskList) -> None:
        if self._queue.offer(bucket):
            self._cond.notify()

    def _submit_locked(self, tasks: list[TimerTask]) -> None:
        """Hand due tasks (unlinked) to the executor thread as one batch."""
        self.expired_task_count += len(tasks)
        if self._closed:
            return  # abandoned, as cancelled tasks
        for task in tasks:
            task._bucket = SUBMITTED
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
                advance(bucket.get_expiration())
                flush(bucket, now)
                bucket = queue.poll_expired(now)
            if self._staged:
                self._drain_staged_locked()
            if self._due:
                due, self._due = self._due, []
                self._submit_locked(due)
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
        thread = self._executor_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)
            _log.debug("thread_stopped", thread=thread.name, alive=thread.is_alive())

    def _on_executor_thread_start(self) -> None:
        """The executor's initializer: names its thread (the pool would append ``_0``) and
        records it, so that ``close`` can join it without the pool's private ``_threads``."""
        thread = threading.current_thread()
        thread.name = SYSTEM_TIMER_THREAD_PREFIX + self.executor_name
        self._executor_thread = thread
        _log.debug("thread_started", thread=thread.name)

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
