"""TimerTaskList: one bucket of a timing wheel.

A bucket holds the tasks whose expirations fall into one tick range of one wheel level. Kafka
uses an intrusive doubly linked list so that cancel is O(1); a Python ``dict`` used as an
insertion-ordered set gives the same O(1) add/remove/iterate-in-order with C-speed operations
and no per-entry link objects, so the emulator uses that.

Every bucket of one timer shares the timer's ``TaskCounter`` (its value *is* ``size()``) and the
timer's lock, which guards ``_entries``, ``_expiration_ms``, the counter and each task's
``_bucket`` field. Kafka locks each list and each entry separately; under the GIL a finer lock
buys no parallelism, while every extra acquisition costs time on the hot add/cancel path.
"""
from __future__ import annotations

import threading
from typing import Callable

from kafka_emu.timer.timer_task import _ABSENT, TimerTask


class TaskCounter:
    """The shared count of tasks linked in any bucket of one timer (guarded by the timer lock)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class TimerTaskList:
    __slots__ = ("_entries", "_counter", "_lock", "_expiration_ms")

    def __init__(self, counter: TaskCounter, lock: threading.Lock | None = None) -> None:
        self._entries: dict[TimerTask, None] = {}
        self._counter = counter
        self._lock = lock if lock is not None else threading.Lock()
        self._expiration_ms = -1

    # --- expiration (the start of the bucket's time range; -1 when the bucket is idle) ---
    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the expiration; true iff it changed (then the bucket must be re-enqueued)."""
        old = self._expiration_ms
        self._expiration_ms = expiration_ms
        return old != expiration_ms

    def get_expiration(self) -> int:
        return self._expiration_ms

    def get_delay_ms(self, now_ms: int) -> int:
        return max(self._expiration_ms - now_ms, 0)

    # --- membership (public methods take the lock; the timer's hot path inlines them) ---
    def add(self, task: TimerTask) -> None:
        """Link ``task`` here, unlinking it first from any other bucket sharing this lock."""
        with self._lock:
            self._link_locked(task)

    def _link_locked(self, task: TimerTask) -> None:
        old = task._bucket
        if old is self:
            return
        if old is not None and old._entries.pop(task, _ABSENT) is not _ABSENT:
            old._counter.value -= 1
        self._entries[task] = None
        task._bucket = self
        task._timer_lock = self._lock
        self._counter.value += 1

    def remove(self, task: TimerTask) -> None:
        """Unlink ``task`` if it is linked here; a no-op for a task of another bucket."""
        with self._lock:
            if task._bucket is self and task in self._entries:
                del self._entries[task]
                self._counter.value -= 1
                task._bucket = None

    def foreach(self, f: Callable[[TimerTask], None]) -> None:
        """Apply ``f`` to a snapshot of the linked tasks (``f`` may cancel them)."""
        with self._lock:
            snapshot = list(self._entries)
        for task in snapshot:
            f(task)

    def flush_locked(self, f: Callable[[TimerTask], None]) -> None:
        """Unlink every task and pass it to ``f``; the caller holds the lock.

        The bucket is reset to idle (expiration -1) so the wheel can reuse it next revolution.
        """
        entries = self._entries
        self._entries = {}
        self._counter.value -= len(entries)
        self._expiration_ms = -1
        for task in entries:
            task._bucket = None
            f(task)

    def flush(self, f: Callable[[TimerTask], None]) -> None:
        with self._lock:
            self.flush_locked(f)

    def size(self) -> int:
        return len(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __lt__(self, other: "TimerTaskList") -> bool:
        return self._expiration_ms < other._expiration_ms

    def __repr__(self) -> str:
        return f"TimerTaskList(expiration={self._expiration_ms}, tasks={len(self._entries)})"
