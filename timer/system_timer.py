"""SystemTimer: the hierarchical-timing-wheel timer that backs every purgatory.

``add`` computes a task's absolute expiration on the timer's monotonic clock and links it into
the wheel; a task already due is submitted straight to the executor. ``advance_clock(timeout)``
waits up to ``timeout`` ms for the earliest bucket of the delay queue to expire, then, for that
bucket and every other bucket already due, moves the wheel's clock to the bucket's expiration
and flushes it: each task is re-added, which either links it into a finer bucket or submits it
for execution. Expired tasks run on a one-thread ``ThreadPoolExecutor`` whose thread is named
``executor-<executor_name>``, so a slow expiration never delays the clock.

Guarantees (Kafka's): a task never runs before ``expiration - tick_ms``; it runs at most once
per add; a task cancelled before it was handed to the executor never runs, and one cancelled
after hand-off but before ``run()`` started does not run either (Kafka would still run it; the
emulator checks once more, under the lock, on the executor thread). ``size()`` counts exactly
the tasks linked in buckets.

Locking: one ``threading.Lock`` (``_lock``) guards the wheels, every bucket, the bucket delay
queue and every task's placement; ``_cond`` is a condition on that lock used by pollers. Kafka
uses a read/write lock so that adds run in parallel and only clock advances are exclusive;
under the GIL adds cannot run in parallel anyway, and a Python read/write lock costs several
times a plain lock on the hot path, so one mutex is both simpler and faster here.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import structlog

from timer.delay_queue import BucketDelayQueue
from timer.time import MockTime, Time
from timer.timer_task import FIRED, SUBMITTED, TimerTask
from timer.timer_task_list import TaskCounter, TimerTaskList
from timer.timing_wheel import TimingWheel

SYSTEM_TIMER_THREAD_PREFIX = "executor-"

_log = structlog.get_logger("timer.system_timer")


class Timer:
    """The interface of Kafka's ``Timer``: what purgatories and coordinators depend on."""

    def add(self, task: TimerTask) -> None:
        raise NotImplementedError

    def advance_clock(self, timeout_ms: int) -> bool:
        raise NotImplementedError

    def size(self) -> int:
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
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._counter = TaskCounter()
        self._queue = BucketDelayQueue()
        self._closed = False
        thread_name = SYSTEM_TIMER_THREAD_PREFIX + executor_name
        self._executor = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix=thread_name,
            initializer=_name_executor_thread,
            initargs=(thread_name,),
        )
        self._wheel = TimingWheel(
            tick_ms, wheel_size,
            self.time.hi_res_clock_ms() if start_ms is None else start_ms,
            self._counter, self._offer, self._lock,
        )
        # Expiration counters read by metrics (written only under ``_lock``).
        self.expired_task_count = 0
        if isinstance(self.time, MockTime):
            self.time.add_listener(self._on_mock_time_advance)

    # ------------------------------------------------------------------ adding
    def add(self, task: TimerTask) -> None:
        clock = self.time.hi_res_clock_ms
        with self._lock:
            task._timer_lock = self._lock
            task._expiration_ms = task.delay_ms + clock()
            if not self._wheel.add(task):
                self._expire_locked(task)

    def _offer(self, bucket: TimerTaskList) -> None:
        if self._queue.offer(bucket):
            self._cond.notify()

    def _expire_locked(self, task: TimerTask) -> None:
        """Hand a due task to the executor (the lock is held); drop it if it was cancelled."""
        old = task._bucket
        if old is not None and old.__class__ is TimerTaskList and task in old._entries:
            del old._entries[task]
            old._counter.value -= 1
        task._bucket = SUBMITTED
        self.expired_task_count += 1
        if self._closed:
            return
        try:
            self._executor.submit(self._run_task, task)
        except RuntimeError:  # executor shut down concurrently with close()
            task._bucket = None

    def _reinsert_locked(self, task: TimerTask) -> None:
        if not self._wheel.add(task):
            self._expire_locked(task)

    def _run_task(self, task: TimerTask) -> None:
        with self._lock:
            if task._bucket is not SUBMITTED:
                return  # cancelled (or re-added) after it was handed to the executor
            task._bucket = FIRED
        try:
            task.run()
        except Exception:
            _log.exception("timer_task_failed", executor=self.executor_name, task=repr(task))

    # ------------------------------------------------------------------ clock
    def advance_clock(self, timeout_ms: int) -> bool:
        """Process every expired bucket, waiting up to ``timeout_ms`` for the first one."""
        time = self.time
        with self._cond:
            now = time.hi_res_clock_ms()
            bucket = self._queue.poll_expired(now)
            if bucket is None and timeout_ms > 0:
                deadline = now + timeout_ms
                while bucket is None and not self._closed:
                    head = self._queue.head_expiration()
                    wait_until = deadline if head is None else min(deadline, head)
                    remaining = wait_until - now
                    if remaining > 0:
                        time.wait_on(self._cond, remaining)
                    now = time.hi_res_clock_ms()
                    bucket = self._queue.poll_expired(now)
                    if now >= deadline:
                        break
            if bucket is None:
                return False
            wheel = self._wheel
            while bucket is not None:
                wheel.advance_clock(bucket._expiration_ms)
                bucket.flush_locked(self._reinsert_locked)
                bucket = self._queue.poll_expired(now)
            return True

    def wakeup(self) -> None:
        """Wake a thread blocked in ``advance_clock`` (used on shutdown)."""
        with self._cond:
            self._cond.notify_all()

    def _on_mock_time_advance(self) -> None:
        self.wakeup()

    # ------------------------------------------------------------------ state
    def size(self) -> int:
        return self._counter.value

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
        self._executor.shutdown(wait=False, cancel_futures=True)
        for thread in list(getattr(self._executor, "_threads", ())):
            thread.join(5.0)
            _log.debug("thread_stopped", thread=thread.name, alive=thread.is_alive())

    def __repr__(self) -> str:
        return f"SystemTimer({self.executor_name!r}, size={self.size()})"


def _name_executor_thread(name: str) -> None:
    threading.current_thread().name = name
    _log.debug("thread_started", thread=name)
