"""TimerTask: a unit of delayed work that the timing wheel links into exactly one bucket.

Kafka separates ``TimerTask`` from the ``TimerTaskEntry`` that links it into a bucket, so that a
re-added task leaves a stale entry behind that is recognised by ``cancelled()``. In Python an
extra object per add costs as much as the whole insertion, so the task is its own entry: it
carries the bucket it sits in (``_bucket``) and its absolute expiration. Re-adding a task moves
it (the old placement is superseded), which is the observable behaviour of Kafka's entries.

State of ``_bucket`` (written only under the owning timer's lock):
* ``None``: never scheduled, or cancelled (``is_cancelled()`` is true, as in Kafka where a task
  without an entry reports cancelled);
* a ``TimerTaskList``: linked in that bucket and counted in the timer's size;
* ``SUBMITTED``: expired and handed to the executor, not yet started;
* ``FIRED``: ``run()`` has been started by the executor.
"""
from __future__ import annotations

import threading
from typing import Any


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


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
            self._bucket = None
            return
        with lock:
            bucket = self._bucket
            if bucket is None:
                return
            entries = getattr(bucket, "_entries", None)
            if entries is not None and self in entries:
                del entries[self]
                bucket._counter.value -= 1
            self._bucket = None

    def is_cancelled(self) -> bool:
        return self._bucket is None

    @property
    def expiration_ms(self) -> int:
        return self._expiration_ms
