"""Fixtures for the timer tests: timers and purgatories that are always closed."""
from __future__ import annotations

from typing import Iterator

import pytest

from kafka_emu.timer import DelayedOperationPurgatory, MockTime, SystemTimer


@pytest.fixture
def mock_time() -> MockTime:
    return MockTime(start_ms=1000)


@pytest.fixture
def make_timer() -> Iterator:
    timers: list[SystemTimer] = []

    def make(name: str = "test", **kwargs) -> SystemTimer:
        timer = SystemTimer(name, **kwargs)
        timers.append(timer)
        return timer

    yield make
    for timer in timers:
        timer.close()


@pytest.fixture
def make_purgatory() -> Iterator:
    purgatories: list[DelayedOperationPurgatory] = []

    def make(name: str = "mock", **kwargs) -> DelayedOperationPurgatory:
        purgatory = DelayedOperationPurgatory(name, **kwargs)
        purgatories.append(purgatory)
        return purgatory

    yield make
    for purgatory in purgatories:
        purgatory.shutdown()
