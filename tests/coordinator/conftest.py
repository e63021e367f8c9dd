"""Fixtures for the coordinator tests (deterministic: MockTime + MockTimer)."""
from __future__ import annotations

from typing import Iterator

import pytest

from coordinator_harness import Harness


@pytest.fixture
def h() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.shutdown()
