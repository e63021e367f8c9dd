"""Kafka's SystemTimerReaperTest, ported."""
from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest
from timer_support import WAIT_S, FunctionTask

from kafka_emu.timer import MockTimer, SystemTimer, SystemTimerReaper


@pytest.mark.timeout(10)
def test_reaper() -> None:
    """Without anyone calling advance_clock, the reaper thread makes timeouts fire."""
    timer = SystemTimerReaper("reaper", SystemTimer("test"))
    try:
        futures: list[Future] = []
        for delay in (100, 200, 300):
            future: Future = Future()
            futures.append(future)
            timer.add(FunctionTask(delay, lambda f=future: f.set_exception(TimeoutError())))
        for future in futures:
            with pytest.raises(TimeoutError):
                future.result(WAIT_S)
        assert timer.size() == 0
    finally:
        timer.close()


class _ClosingCountingTimer(MockTimer):
    """A real MockTimer that counts ``close`` calls (Kafka's test verifies exactly one)."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    def advance_clock(self, timeout_ms: int) -> bool:
        # The mock clock does not block; pause a little so the reaper loop does not spin.
        threading.Event().wait(0.001)
        return super().advance_clock(timeout_ms)

    def close(self) -> None:
        self.closed += 1


@pytest.mark.timeout(10)
def test_reaper_close() -> None:
    inner = _ClosingCountingTimer()
    timer = SystemTimerReaper("reaper-close", inner)
    assert "reaper-close" in {t.name for t in threading.enumerate()}
    timer.close()
    assert inner.closed == 1
    assert "reaper-close" not in {t.name for t in threading.enumerate() if t.is_alive()}


@pytest.mark.timeout(10)
def test_reaper_close_returns_promptly_from_blocked_poll() -> None:
    """close() must not wait out the reaper's 200 ms poll, even on a mock clock."""
    from kafka_emu.timer import MockTime

    time = MockTime()
    timer = SystemTimerReaper("reaper-mock", SystemTimer("mock-exec", time=time))
    started = threading.Event()
    timer.add(FunctionTask(10_000, started.set))
    done = threading.Event()
    closer = threading.Thread(target=lambda: (timer.close(), done.set()))
    closer.start()
    assert done.wait(2.0), "close() hung on a reaper blocked in advance_clock"
    assert not started.is_set()
