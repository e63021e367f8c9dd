"""DelayedOperation: a request that waits in a purgatory until it can complete or times out.

An operation completes exactly once, through ``force_complete``, either because some thread's
``try_complete`` found its condition met, or because its timeout fired (``run`` on the timer's
executor thread), after which ``on_expiration`` runs too.

Completion is serialised through the operation lock (KAFKA-19312's intent): ``force_complete``
takes the lock, re-checks ``_completed`` and runs ``on_complete`` while holding it, so an
expiration's ``on_complete`` can never overlap a ``try_complete`` that another thread runs under
the same lock. The lock is reentrant because ``try_complete`` (called with the lock held)
normally ends in ``force_complete``. Callers may pass their own lock, for example the group
lock that guards every delayed operation of one consumer group.

Lock order: operation lock before the timer lock (``cancel`` takes the timer lock); the timer
never takes an operation lock while holding its own.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from kafka_emu.timer.timer_task import TimerTask

if TYPE_CHECKING:
    from kafka_emu.timer.purgatory import DelayedOperationPurgatory


class DelayedOperation(TimerTask):
    def __init__(self, delay_ms: int, lock: Any = None) -> None:
        super().__init__(delay_ms)
        self.lock = lock if lock is not None else threading.RLock()
        # Guarded by ``lock`` for writes; read without it as a fast-path hint (a stale False
        # only costs a locked re-check).
        self._completed = False
        self._purgatory: DelayedOperationPurgatory | None = None

    # ----------------------------------------------------------------- subclass hooks
    def try_complete(self) -> bool:
        """Check the completion condition (lock held); if met, return ``self.force_complete()``."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """The completion action (send the response); runs exactly once, under the lock."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Extra action when the timeout caused completion; runs after ``on_complete``."""

    # ----------------------------------------------------------------- completion
    def force_complete(self) -> bool:
        """Complete now; true only for the single caller that actually completed it."""
        with self.lock:
            if self._completed:
                return False
            self._completed = True
            self.cancel()
            self.on_complete()
            return True

    def is_completed(self) -> bool:
        return self._completed

    def run(self) -> None:
        """The timeout path, run by the timer's executor thread."""
        if self.force_complete():
            purgatory = self._purgatory
            if purgatory is not None:
                purgatory._record_expiration(self)
            self.on_expiration()

    def safe_try_complete(self) -> bool:
        with self.lock:
            if self._completed:
                return False
            return self.try_complete()

    def safe_try_complete_or_else(self, f: Callable[[], None]) -> bool:
        """Under the lock: try; else run ``f`` (watch the keys) and try once more."""
        with self.lock:
            if self.try_complete():
                return True
            f()
            return self.try_complete()
