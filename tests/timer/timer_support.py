"""Shared helpers for the timer and purgatory tests: recording tasks and operations."""
from __future__ import annotations

import threading
from typing import Any, Callable

from kafka_emu.timer import DelayedOperation, Timer, TimerTask
from kafka_emu.timer.system_timer import SystemTimer

WAIT_S = 5.0  # upper bound for anything a test waits on; healthy runs take milliseconds


class RecordingTask(TimerTask):
    """Appends ``(ident, thread name)`` to a shared list when it runs."""

    def __init__(self, delay_ms: int, ident: Any, out: list, lock: threading.Lock,
                 on_run: Callable[[], None] | None = None) -> None:
        super().__init__(delay_ms)
        self.ident = ident
        self.out = out
        self.out_lock = lock
        self.on_run = on_run
        self.ran = threading.Event()

    def run(self) -> None:
        with self.out_lock:
            self.out.append((self.ident, threading.current_thread().name))
        self.ran.set()
        if self.on_run is not None:
            self.on_run()


class FunctionTask(TimerTask):
    def __init__(self, delay_ms: int, fn: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self.fn = fn

    def run(self) -> None:
        self.fn()


class FiringLog:
    """When (on ``time``) each task, by id, ran: tests compare it with the expected instants.

    ``lock`` guards ``fired``, written by the timer's executor thread."""

    def __init__(self, time: Any) -> None:
        self.time = time
        self.fired: dict[int, list[int]] = {}
        self.lock = threading.Lock()

    def task(self, ident: int, delay_ms: int) -> FunctionTask:
        def run() -> None:
            with self.lock:
                self.fired.setdefault(ident, []).append(self.time.hi_res_clock_ms())
        task = FunctionTask(delay_ms, run)
        task.ident = ident
        return task


def drain_executor(timer: Timer, timeout_s: float = WAIT_S) -> None:
    """Wait until every task handed to the timer's executor so far has run.

    The executor is one thread working in submission order, so a marker task submitted last
    marks the end of everything submitted before. A negative delay is due at once relative to
    the wheel clock, which may lag the time source (as in Kafka); ``advance_clock(0)`` then
    hands it over, together with anything else already due.
    """
    done = threading.Event()
    timer.add(FunctionTask(-1, done.set))
    timer.advance_clock(0)
    assert done.wait(timeout_s), "executor did not drain"


class MockDelayedOperation(DelayedOperation):
    """Kafka's test operation: completes iff ``completable``; records what happened to it."""

    def __init__(self, delay_ms: int, lock: Any = None,
                 response_lock: threading.Lock | None = None) -> None:
        super().__init__(delay_ms, lock)
        self.completable = False
        self.response_lock = response_lock
        self.events: list[str] = []
        self.complete_threads: list[str] = []
        self.done = threading.Event()

    def try_complete(self) -> bool:
        if self.completable:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.response_lock is not None:
            if not self.response_lock.acquire(blocking=False):
                raise RuntimeError("response lock is held by another thread")
            self.response_lock.release()
        self.events.append("complete")
        self.complete_threads.append(threading.current_thread().name)
        self.done.set()

    def on_expiration(self) -> None:
        self.events.append("expire")


def new_system_timer(name: str = "test", **kwargs: Any) -> SystemTimer:
    return SystemTimer(name, **kwargs)


def live_thread_names() -> set[str]:
    return {t.name for t in threading.enumerate() if t.is_alive()}
