"""TimerTask: a unit of delayed work that the timing wheel links into exactly one bucket.

Kafka separates ``TimerTask`` from the ``TimerTaskEntry`` that links it into a bucket, so that a
re-added task leaves a stale entry behind that is recognised by ``cancelled()``. In Python an
extra object per add costs as much as the whole insertion, so the task is its own entry: it
carries the bucket it sits in (``_bucket``) and its absolute expiration. Re-adding a task moves
it (the old placement is superseded), which is the observable behaviour of Kafka's entries.

State of ``_bucket`` (written only under the owning timer's lock):
* ``None``: never scheduled, or cancelled (``is_cancelled()`` is true, as in Kafka where a task
  without an entry reports cancelled);
* a ``TimerTaskList``: linked in that bucket and counted in the timer's size (the bucket may be
  one that has left the wheel while a large cascade is placed in chunks);
* ``SUBMITTED``: expired and handed to the executor, not yet started;
* ``FIRED``: ``run()`` has been started by the executor;
* a ``MockTimer`` entry: scheduled in a ``MockTimer``.
Every placement has ``remove(task)`` (Kafka's ``TimerTaskList.remove``), so ``cancel`` and
re-adding unlink a task with one call whatever its state.
"""
from __future__ import annotations

import threading
from typing import Protocol


class Placement(Protocol):
    """Where a scheduled task is: a bucket, a marker, or a ``MockTimer`` entry."""

    def remove(self, task: "TimerTask") -> None:
        """Unlink ``task`` if it is placed here (then its ``_bucket`` is None); else a no-op."""


class Marker:
    """A placement that is not a bucket (a state, or one ``MockTimer`` scheduling): nothing to
    unlink but the task's own reference."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def remove(self, task: "TimerTask") -> None:
        if task._bucket is self:
            task._bucket = None

    def __repr__(self) -> str:
        return self.name


SUBMITTED = Marker("SUBMITTED")
FIRED = Marker("FIRED")


class TimerTask:
    """Delayed work. Subclasses implement ``run()``; ``cancel()`` is O(1) and idempotent."""

    __slots__ = ("delay_ms", "_bucket", "_expiration_ms", "_timer_lock", "__weakref__", "__dict__")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._bucket: Placement | None = None
        self._expiration_ms = 0
        # The lock of the timer that last scheduled this task; it guards ``_bucket``.
        self._timer_lock: threading.Lock | None = None

    def run(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def cancel(self) -> None:
        """Unlink the task from its bucket (or stop a submitted run); never runs the task."""
        lock = self._timer_lock
        if lock is None:
            # Never scheduled, so ``_bucket`` is already None. Writing it here, without the lock,
            # could undo the link of an add racing on another thread and strand its entry.
            return
        with lock:
            bucket = self._bucket
            if bucket is not None:
                bucket.remove(self)

    def is_cancelled(self) -> bool:
        return self._bucket is None

    @property
    def expiration_ms(self) -> int:
        return self._expiration_ms
