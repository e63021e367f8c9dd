"""The pre-2015 purgatory design, kept only as the benchmark's comparator.

Before KAFKA-1989 a purgatory kept every delayed request in a ``DelayQueue`` (a heap ordered by
deadline) plus per-key watcher lists. Completing a request removed it from neither: a completed
request stayed in the heap until its deadline came up and on every list it was watched on until
someone iterated that list. A reaper thread expired requests at the head of the heap and, when
the number of requests put in since the last purge exceeded ``purge_interval``, scanned the whole
heap and every watcher list to drop completed ones. Memory therefore follows the request rate
times the timeout (not the number pending), and the full scans cost CPU in proportion to it.

This module reproduces that structure with standard-library parts: a ``heapq`` guarded by a
``Condition`` (the ``DelayQueue``), one lock per watcher list, and a reaper thread that runs the
expirations itself. It implements the subset of ``DelayedOperationPurgatory``'s interface the
benchmark uses.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Hashable, Iterable

from kafka_emu.timer.delayed_operation import DelayedOperation


class _Watchers:
    __slots__ = ("lock", "ops")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ops: list[DelayedOperation] = []


class NaivePurgatory:
    def __init__(self, name: str, purge_interval: int = 1000) -> None:
        self.name = name
        self.purge_interval = purge_interval
        self._watchers: dict[Hashable, _Watchers] = {}
        self._watchers_lock = threading.Lock()
        self._queue: list[tuple[float, int, DelayedOperation]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._since_purge = 0
        self._closed = False
        self.purge_count = 0
        self.expiration_count = 0
        self._reaper = threading.Thread(target=self._reap, name=f"NaiveReaper-{name}", daemon=True)
        self._reaper.start()

    def _watchers_for(self, key: Hashable) -> _Watchers:
        watchers = self._watchers.get(key)
        if watchers is None:
            with self._watchers_lock:
                watchers = self._watchers.setdefault(key, _Watchers())
        return watchers

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        keys = list(keys)
        with op.lock:
            if op.try_complete():
                return True
            for key in keys:
                watchers = self._watchers_for(key)
                with watchers.lock:
                    watchers.ops.append(op)
            if op.try_complete():
                return True
        deadline = time.monotonic() + op.delay_ms / 1000.0
        with self._cond:
            heapq.heappush(self._queue, (deadline, next(self._seq), op))
            self._since_purge += 1
            if self._queue[0][2] is op:
                self._cond.notify()
        return False

    def check_and_complete(self, key: Hashable) -> int:
        watchers = self._watchers.get(key)
        if watchers is None:
            return 0
        completed = 0
        with watchers.lock:
            remaining = []
            for op in watchers.ops:
                if op.is_completed():
                    continue
                if op.safe_try_complete():
                    completed += 1
                else:
                    remaining.append(op)
            watchers.ops = remaining
        return completed

    def watched(self) -> int:
        return sum(len(w.ops) for w in list(self._watchers.values()))

    def num_delayed(self) -> int:
        """Entries in the delay queue, completed ones included (they stay until purged)."""
        return len(self._queue)

    def _reap(self) -> None:
        cond = self._cond
        with cond:
            while not self._closed:
                if self._since_purge >= self.purge_interval:
                    self._purge_locked()
                if not self._queue:
                    cond.wait(0.2)
                    continue
                deadline, _, op = self._queue[0]
                delay = deadline - time.monotonic()
                if delay > 0:
                    cond.wait(min(delay, 0.2))
                    continue
                heapq.heappop(self._queue)
                if op.is_completed():
                    continue
                cond.release()
                try:
                    if op.force_complete():
                        self.expiration_count += 1
                        op.on_expiration()
                finally:
                    cond.acquire()

    def _purge_locked(self) -> None:
        """Full scan of the delay queue (lock held) and of every watcher list."""
        self._queue = [entry for entry in self._queue if not entry[2].is_completed()]
        heapq.heapify(self._queue)
        self._since_purge = 0
        for watchers in list(self._watchers.values()):
            with watchers.lock:
                watchers.ops = [op for op in watchers.ops if not op.is_completed()]
        self.purge_count += 1

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._reaper.join(5.0)
