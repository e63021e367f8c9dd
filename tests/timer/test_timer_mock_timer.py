"""MockTimer keeps Kafka's test-double semantics (Kafka's ``MockTimer`` in server-common's test sources)."""
from __future__ import annotations

import threading

import pytest
from timer_support import FunctionTask

from kafka_emu.timer import MockTime, MockTimer


@pytest.mark.timeout(10)
def test_runs_tasks_strictly_before_now_on_calling_thread() -> None:
    timer = MockTimer(MockTime())
    ran: list[tuple[int, str]] = []
    for d in (10, 20):
        timer.add(FunctionTask(d, lambda d=d: ran.append((d, threading.current_thread().name))))
    assert timer.advance_clock(10) is False  # expiration == now: not yet (strictly before)
    assert timer.advance_clock(1) is True
    assert ran == [(10, threading.current_thread().name)]
    assert timer.size() == 1
    timer.advance_clock(10)
    assert [d for d, _ in ran] == [10, 20] and timer.size() == 0


@pytest.mark.timeout(10)
def test_non_positive_delay_runs_inside_add() -> None:
    timer = MockTimer()
    ran: list[int] = []
    timer.add(FunctionTask(0, lambda: ran.append(0)))
    timer.add(FunctionTask(-3, lambda: ran.append(-3)))
    assert ran == [0, -3]


@pytest.mark.timeout(10)
def test_cancel_and_readd_with_same_expiration_run_once() -> None:
    timer = MockTimer()
    ran: list[str] = []
    cancelled = FunctionTask(5, lambda: ran.append("cancelled"))
    readded = FunctionTask(5, lambda: ran.append("readded"))
    timer.add(cancelled)
    timer.add(readded)
    timer.add(readded)  # same expiration again: the old entry is superseded, not duplicated
    cancelled.cancel()
    assert cancelled.is_cancelled() and timer.size() == 1
    timer.advance_clock(6)
    assert ran == ["readded"]


@pytest.mark.timeout(10)
def test_task_may_schedule_follow_up() -> None:
    timer = MockTimer()
    ran: list[str] = []
    timer.add(FunctionTask(5, lambda: timer.add(FunctionTask(5, lambda: ran.append("second")))))
    timer.advance_clock(6)
    assert ran == [] and timer.size() == 1  # scheduled at now + 5 = start + 11
    timer.advance_clock(5)
    assert ran == []
    timer.advance_clock(1)
    assert ran == ["second"]
