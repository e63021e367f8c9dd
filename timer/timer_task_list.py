"""TimerTaskList: one bucket of a timing wheel.

A bucket holds the tasks whose expirations fall into one tick range of one wheel level. Kafka
uses an intrusive doubly linked list so that cancel is O(1); a Python ``dict`` used as an
insertion-ordered set gives the same O(1) add/remove/iterate-in-order with C-speed operations
and no per-entry link objects, so the emulator uses that.

Invariants (kept by the methods below, which unlink tasks, and by ``TimingWheel.add``, which
links them): a task is in ``_entries`` iff its ``_bucket`` is this list; the shared ``TaskCounter`` counts every task
linked in any bucket of one timer (its value *is* the timer's ``size()``); a bucket not in a
wheel's current revolution has expiration -1.

Locking: the lock of the timer owning the bucket guards
``_entries``, ``_expiration_ms``, the counter and each linked task's ``_bucket``. The caller
holds it around every method (the wheel and the timer do; so does ``TimerTask.cancel``).
Kafka locks each list and each entry separately; under the GIL a finer lock buys no
parallelism, while every extra acquisition costs time on the hot add/cancel path.
"""
from __future__ import annotations

from kafka_emu.timer.timer_task import TimerTask

_ABSENT = object()


class TaskCounter:
    """The shared count of tasks linked in any bucket of one timer (guarded by the timer lock)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class TimerTaskList:
    __slots__ = ("_entries", "_counter", "_expiration_ms")

    def __init__(self, counter: TaskCounter) -> None:
        self._entries: dict[TimerTask, None] = {}
        self._counter = counter
        self._expiration_ms = -1

    # --- expiration (the start of the bucket's time range; -1 when the bucket is idle) ---
    def set_expiration(self, expiration_ms: int) -> bool:
        """Set the expiration; true iff it changed (then the bucket must be re-enqueued)."""
        old = self._expiration_ms
        self._expiration_ms = expiration_ms
        return old != expiration_ms

    def get_expiration(self) -> int:
        return self._expiration_ms

    # --- membership ---
    def remove(self, task: TimerTask) -> None:
        """Unlink ``task`` if it is linked here; a no-op for a task of another bucket."""
        if self._entries.pop(task, _ABSENT) is not _ABSENT:
            self._counter.value -= 1
            task._bucket = None

    def flush(self) -> dict[TimerTask, None]:
        """Unlink every task and return them, in insertion order; the bucket is idle again.

        Kafka's ``flush(f)`` passes each task to ``f``; handing the tasks back instead lets the
        timer re-place them in its own loop, without a Python call per task for ``f``.
        """
        entries = self._entries
        self._entries = {}
        self._expiration_ms = -1
        self._unlinked(entries)
        return entries

    def take(self, limit: int) -> list[TimerTask]:
        """Unlink and return up to ``limit`` tasks (the latest linked first)."""
        entries = self._entries
        tasks = [entries.popitem()[0] for _ in range(min(limit, len(entries)))]
        self._unlinked(tasks)
        return tasks

    def take_expiring_before(self, horizon_ms: int) -> list[TimerTask]:
        """Unlink and return the tasks expiring before ``horizon_ms`` (a scan of the bucket)."""
        entries = self._entries
        tasks = [task for task in entries if task._expiration_ms < horizon_ms]
        for task in tasks:
            del entries[task]
        self._unlinked(tasks)
        return tasks

    def _unlinked(self, tasks: dict[TimerTask, None] | list[TimerTask]) -> None:
        self._counter.value -= len(tasks)
        for task in tasks:
            task._bucket = None

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"TimerTaskList(expiration={self._expiration_ms}, tasks={len(self._entries)})"
