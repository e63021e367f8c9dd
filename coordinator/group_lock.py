"""GroupLock: the per-group reentrant lock that also defers response callbacks to its release.

Kafka holds ``group.lock`` while it invokes JoinGroup/SyncGroup response callbacks (they only
enqueue a response on the request channel). The emulator differs on purpose: a callback queued
with ``defer`` while the lock is held runs on the same thread right after that thread's
outermost ``release``. So callbacks never run under the group lock, an in-process member may
call straight back into the coordinator from its callback, and the log's callback thread (which
takes the group lock as the DelayedProduce operation lock) never waits on a response callback.
Called without the lock held, ``defer`` runs the callback at once.

``_depth``/``_owner``/``_deferred`` are only touched by the thread that holds ``_lock``.
Usable as ``with lock:`` and through ``acquire``/``release`` (what DelayedOperation and a
broker DelayedProduce use as their operation lock).
"""
from __future__ import annotations

import threading
from typing import Callable

import structlog

_log = structlog.get_logger("coordinator.group_lock")
_get_ident = threading.get_ident


class GroupLock:
    __slots__ = ("_lock", "_depth", "_owner", "_deferred")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None
        self._deferred: list[Callable[[], None]] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        if self._depth == 0:
            self._owner = _get_ident()
        self._depth += 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            deferred = self._deferred
            if deferred:
                self._deferred = []
                self._lock.release()
                _run_all(deferred)
                return
        self._lock.release()

    def __enter__(self) -> "GroupLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def defer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` after this thread releases the lock (at once if it does not hold it)."""
        if self._owner == _get_ident():
            self._deferred.append(fn)
        else:
            _run_all([fn])


def _run_all(fns: list[Callable[[], None]]) -> None:
    for fn in fns:
        try:
            fn()
        except Exception:  # a failing response callback must not break the coordinator
            _log.exception("deferred_callback_failed")
