"""SystemTimerReaper: a timer plus the thread that advances its clock.

For users of a bare timer (Kafka's group-coordinator runtime uses it) rather than a purgatory,
which has its own reaper.
"""
from __future__ import annotations

from kafka_emu.timer.shutdownable_thread import ShutdownableThread
from kafka_emu.timer.system_timer import Timer, TimerSnapshot
from kafka_emu.timer.timer_task import TimerTask


class _Reaper(ShutdownableThread):
    def __init__(self, name: str, timer: Timer) -> None:
        super().__init__(name=name)
        self.timer = timer

    def do_work(self) -> None:
        self.timer.advance_clock(200)


class SystemTimerReaper(Timer):
    def __init__(self, reaper_name: str, timer: Timer) -> None:
        self.timer = timer
        self._reaper = _Reaper(reaper_name, timer)
        self._reaper.start()

    def add(self, task: TimerTask) -> None:
        self.timer.add(task)

    def advance_clock(self, timeout_ms: int) -> bool:
        return self.timer.advance_clock(timeout_ms)

    def size(self) -> int:
        return self.timer.size()

    def snapshot(self) -> TimerSnapshot:
        return self.timer.snapshot()

    def close(self) -> None:
        self._reaper.initiate_shutdown()
        wakeup = getattr(self.timer, "wakeup", None)
        if wakeup is not None:
            wakeup()
        self._reaper.await_shutdown()
        self.timer.close()
