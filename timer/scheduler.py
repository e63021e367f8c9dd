"""KafkaScheduler: one named thread running the broker's periodic tasks (``kafka-scheduler-<id>``).

Kafka keeps its ``KafkaScheduler`` in server-common beside the timer, so that the log layer and
the coordinators can be handed one without depending on the broker; it lives here for the same
reason (``broker.storage.log_manager`` schedules its flusher and checkpoints on it).

Used for ``isr-expiration`` (every ``replica.lag.time.max.ms / 2``), ``kafka-log-retention``,
the log memory budget and, with ``log.dirs``, the flusher, the checkpoints and the one-off
``flush-log`` of a rolled segment. Tasks run on the scheduler
thread; an exception is logged and the task keeps its schedule. On a ``MockTime`` the scheduler
is one of the clock's due runners: ``run_due`` runs the tasks due now on the caller's thread
(broker time travel), so a clock jump does not wait for the thread's next poll.

Locking: ``_cond`` guards the task list; ``_run_lock`` is held while due tasks run (by this
thread or a ``run_due`` caller), so a task never runs twice at once and ``run_due`` returns only
after tasks already taken by the thread have finished.
"""
from __future__ import annotations

import threading
from typing import Callable

import structlog

from kafka_emu.timer import ShutdownableThread
from kafka_emu.timer.time import MockTime, Time

_log = structlog.get_logger("broker.scheduler")


class KafkaScheduler(ShutdownableThread):
    def __init__(self, broker_id: int, time: Time | None = None) -> None:
        super().__init__(name=f"kafka-scheduler-{broker_id}", log_context={"broker_id": broker_id})
        self.broker_id = broker_id
        self.time = time or Time.SYSTEM
        self._cond = threading.Condition()
        self._tasks: list[list] = []  # [next_run_ms, period_ms (None: once), name, fn]
        self._run_lock = threading.Lock()
        if isinstance(self.time, MockTime):
            self.time.add_due_runner(self)

    def schedule(self, name: str, fn: Callable[[], None], period_ms: int, delay_ms: int | None = None) -> None:
        with self._cond:
            first = self.time.hi_res_clock_ms() + (period_ms if delay_ms is None else delay_ms)
            self._tasks.append([first, max(1, period_ms), name, fn])
            self._cond.notify_all()

    def schedule_once(self, name: str, fn: Callable[[], None], delay_ms: int = 0) -> None:
        """Run ``fn`` once, ``delay_ms`` from now (Kafka's ``Scheduler.scheduleOnce``)."""
        with self._cond:
            self._tasks.append([self.time.hi_res_clock_ms() + delay_ms, None, name, fn])
            self._cond.notify_all()

    def on_initiate_shutdown(self) -> None:
        if isinstance(self.time, MockTime):
            self.time.remove_due_runner(self)
        with self._cond:
            self._cond.notify_all()

    def do_work(self) -> None:
        with self._cond:
            now = self.time.hi_res_clock_ms()
            wait_ms = min((t[0] - now for t in self._tasks), default=200)
            if wait_ms > 0:
                self.time.wait_on(self._cond, min(wait_ms, 200))
                return
        self.run_due()

    def run_due(self, timeout_s: float = 10.0) -> bool:
        """Run every task due now (each reschedules one period later); true if any was due."""
        if self.is_shutdown_initiated() or not self._run_lock.acquire(timeout=timeout_s):
            return False
        try:
            with self._cond:
                now = self.time.hi_res_clock_ms()
                due = [t for t in self._tasks if t[0] <= now]
                for t in due:
                    if t[1] is None:
                        self._tasks.remove(t)
                    else:
                        t[0] = now + t[1]
            for _, _, name, fn in due:
                if self.is_shutdown_initiated():
                    break
                try:
                    fn()
                except Exception:
                    _log.exception("scheduled_task_failed", broker_id=self.broker_id, task=name)
            return bool(due)
        finally:
            self._run_lock.release()
