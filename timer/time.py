"""Clocks injected wherever the emulator reads time.

Kafka threads every component through an ``org.apache.kafka.common.utils.Time`` so tests can
replace the clock; the emulator does the same. ``hi_res_clock_ms`` is monotonic (the timer and
all timeouts use it, as Kafka has since KAFKA-4051); ``milliseconds`` is wall-clock time for
record timestamps and state timestamps that clients see.
"""
from __future__ import annotations

import threading
import time as _time
import weakref
from typing import Callable, Protocol


class Time:
    """The real clock. ``Time.SYSTEM`` is the shared instance."""

    SYSTEM: "Time"

    def milliseconds(self) -> int:
        return _time.time_ns() // 1_000_000

    def nanoseconds(self) -> int:
        return _time.monotonic_ns()

    def hi_res_clock_ms(self) -> int:
        return _time.monotonic_ns() // 1_000_000

    def sleep(self, ms: float) -> None:
        if ms > 0:
            _time.sleep(ms / 1000.0)

    def wait_on(self, condition: threading.Condition, timeout_ms: float) -> None:
        """Wait on ``condition`` (held by the caller) for at most ``timeout_ms`` of this clock."""
        condition.wait(max(timeout_ms, 0) / 1000.0)


Time.SYSTEM = Time()


class DueRunner(Protocol):
    """Something that runs work falling due on a clock (a ``SystemTimer``, a scheduler)."""

    def run_due(self, timeout_s: float) -> bool:
        """Run what is due now, on the caller's thread or by waiting for the thread that runs
        it; true if anything was due."""
        ...


class MockTime(Time):
    """A manual clock: time moves only when a test calls ``sleep``/``advance``.

    ``sleep`` advances the clock instead of blocking, like Kafka's MockTime with autoTickMs 0.
    Listeners (for example a ``SystemTimer`` built on this clock) are told after every move so
    that a thread waiting for a deadline of this clock wakes up at once instead of waiting real
    time. Due runners (timers and schedulers on this clock, held weakly) are what ``run_due``
    drives: after a move, a caller that must know the expirations have happened (broker time
    travel) calls it instead of waiting for the pollers. The lock guards ``_nanos``,
    ``_listeners`` and ``_due_runners``; listeners and runners run outside it.
    """

    def __init__(self, start_ms: int = 1_000_000, wall_start_ms: int = 1_700_000_000_000) -> None:
        self._lock = threading.Lock()
        self._nanos = start_ms * 1_000_000
        self._wall_offset_ns = (wall_start_ms - start_ms) * 1_000_000
        self._listeners: list[Callable[[], None]] = []
        self._due_runners: weakref.WeakSet[DueRunner] = weakref.WeakSet()

    def milliseconds(self) -> int:
        return (self._nanos + self._wall_offset_ns) // 1_000_000

    def nanoseconds(self) -> int:
        return self._nanos

    def hi_res_clock_ms(self) -> int:
        return self._nanos // 1_000_000

    def sleep(self, ms: float) -> None:
        self.advance(ms)

    def advance(self, ms: float) -> None:
        with self._lock:
            self._nanos += int(ms * 1_000_000)
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def add_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def add_due_runner(self, runner: DueRunner) -> None:
        with self._lock:
            self._due_runners.add(runner)

    def remove_due_runner(self, runner: DueRunner) -> None:
        with self._lock:
            self._due_runners.discard(runner)

    def run_due(self, timeout_s: float = 10.0, max_rounds: int = 10) -> int:
        """Run everything due at the current time on every due runner, in rounds until a round
        finds nothing due (work that ran may have made more work due, e.g. a zero-delay task);
        the number of rounds that found work."""
        busy = 0
        for _ in range(max_rounds):
            with self._lock:
                runners = list(self._due_runners)
            if not any([runner.run_due(timeout_s) for runner in runners]):
                break
            busy += 1
        return busy

    def wait_on(self, condition: threading.Condition, timeout_ms: float) -> None:
        # Mock time does not pass while a thread waits; a short real wait lets the waiter re-check
        # after the test advances the clock (the listener also notifies the condition).
        condition.wait(min(max(timeout_ms, 0), 10) / 1000.0)
