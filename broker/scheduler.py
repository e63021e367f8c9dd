"""KafkaScheduler: one named thread running the broker's periodic tasks (``kafka-scheduler-<id>``).

Used for ``isr-expiration`` (every ``replica.lag.time.max.ms / 2``). Tasks run on the scheduler
thread; an exception is logged and the task keeps its schedule. ``_cond`` guards the task list.
"""
from __future__ import annotations

import threading
from typing import Callable

import structlog

from kafka_emu.timer import ShutdownableThread
from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.scheduler")


class KafkaScheduler(ShutdownableThread):
    def __init__(self, broker_id: int, time: Time | None = None) -> None:
        super().__init__(name=f"kafka-scheduler-{broker_id}", log_context={"broker_id": broker_id})
        self.broker_id = broker_id
        self.time = time or Time.SYSTEM
        self._cond = threading.Condition()
        self._tasks: list[list] = []  # [next_run_ms, period_ms, name, fn]

    def schedule(self, name: str, fn: Callable[[], None], period_ms: int, delay_ms: int | None = None) -> None:
        with self._cond:
            first = self.time.hi_res_clock_ms() + (period_ms if delay_ms is None else delay_ms)
            self._tasks.append([first, max(1, period_ms), name, fn])
            self._cond.notify_all()

    def on_initiate_shutdown(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def do_work(self) -> None:
        with self._cond:
            now = self.time.hi_res_clock_ms()
            due = [t for t in self._tasks if t[0] <= now]
            if not due:
                wait_ms = min((t[0] - now for t in self._tasks), default=200)
                self.time.wait_on(self._cond, min(wait_ms, 200))
                return
            for t in due:
                t[0] = now + t[1]
        for _, _, name, fn in due:
            if self.is_shutdown_initiated():
                return
            try:
                fn()
            except Exception:
                _log.exception("scheduled_task_failed", broker_id=self.broker_id, task=name)
