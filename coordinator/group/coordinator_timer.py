"""CoordinatorTimer: the group coordinator's keyed timeouts (Kafka's ``CoordinatorTimer`` of the
coordinator runtime), as tasks on a ``Timer`` (the broker's ``SystemTimer``
``group-coordinator`` with its reaper ``group-coordinator-reaper``; a ``MockTimer`` in tests).

A timeout has a key (``session-timeout-<group>-<member>``, ``rebalance-timeout-<group>-<member>``,
``join-<group>-<member>``, ``sync-<group>-<member>``, as Kafka names them); scheduling a key again
replaces its timeout, ``cancel`` drops it. The operation runs on the timer's executor thread and
takes the locks it needs itself; a task replaced or cancelled after it fell due does nothing.

Locking: ``_lock`` guards ``_tasks`` and is never held while an operation runs.
"""
from __future__ import annotations

import threading
from typing import Callable

import structlog

from kafka_emu.timer import Timer, TimerTask

_log = structlog.get_logger("coordinator.coordinator_timer")


class _KeyedTask(TimerTask):
    def __init__(self, owner: "CoordinatorTimer", key: str, delay_ms: int, operation: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self.owner = owner
        self.key = key
        self.operation = operation

    def run(self) -> None:
        if self.owner._take(self.key, self):
            try:
                self.operation()
            except Exception:
                _log.exception("coordinator_timer_operation_failed", key=self.key)


class CoordinatorTimer:
    def __init__(self, timer: Timer) -> None:
        self.timer = timer
        self._lock = threading.Lock()
        self._tasks: dict[str, _KeyedTask] = {}

    def schedule(self, key: str, delay_ms: int, operation: Callable[[], None]) -> None:
        task = _KeyedTask(self, key, delay_ms, operation)
        with self._lock:
            previous = self._tasks.get(key)
            self._tasks[key] = task
        if previous is not None:
            previous.cancel()
        self.timer.add(task)

    def schedule_if_absent(self, key: str, delay_ms: int, operation: Callable[[], None]) -> None:
        with self._lock:
            if key in self._tasks:
                return
        self.schedule(key, delay_ms, operation)

    def cancel(self, key: str) -> None:
        with self._lock:
            task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()

    def is_scheduled(self, key: str) -> bool:
        return key in self._tasks

    def _take(self, key: str, task: _KeyedTask) -> bool:
        """The task fell due: true if it is still the key's current one (then it is removed)."""
        with self._lock:
            if self._tasks.get(key) is not task:
                return False
            del self._tasks[key]
            return True

    def close(self) -> None:
        """Drop every timeout and close the timer (its reaper thread stops)."""
        with self._lock:
            tasks, self._tasks = list(self._tasks.values()), {}
        for task in tasks:
            task.cancel()
        self.timer.close()
