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
Every placement has an ``_entries`` mapping (empty for the markers), so ``cancel`` and re-adding
unlink a task with one ``dict.pop`` whatever its state.
"""
from __future__ import annotations

import threading
from typing import Any


class _Marker:
    """A placement that is not a bucket. ``_entries`` is always empty so that ``cancel`` can
    treat markers and buckets alike (one ``dict.pop`` instead of a type test)."""

    __slots__ = ("name", "_entries")

    def __init__(self, name: str) -> None:
        self.name = name
        self._entries: dict = {}

    def __repr__(self) -> str:
        return self.name


_ABSENT = object()
SUBMITTED = _Marker("SUBMITTED")
FIRED = _Marker("FIRED")


class TimerTask:
    """Delayed work. Subclasses implement ``run()``; ``cancel()`` is O(1) and idempotent."""

    __slots__ = ("delay_ms", "_bucket", "_expiration_ms", "_timer_lock", "__weakref__", "__dict__")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self._bucket: Any = None
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
                self._bucket = None
                if bucket._entries.pop(self, _ABSENT) is not _ABSENT:
                    bucket._counter.value -= 1

    def is_cancelled(self) -> bool:
        return self._bucket is None

    @property
    def expiration_ms(self) -> int:
        return self._expiration_ms
