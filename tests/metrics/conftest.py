"""Fixtures shared by the metrics tests: no metrics thread may outlive its test."""
from __future__ import annotations

import threading
import time
from typing import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_leaked_metrics_threads() -> Iterator[None]:
    """Fail a test that leaves a ``metrics-http-*`` thread running (scrape threads get 2 s)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2.0
    while True:
        leaked = [t.name for t in threading.enumerate()
                  if t not in before and t.is_alive() and t.name.startswith("metrics-http")]
        if not leaked:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"metrics threads still running after the test: {leaked}")
        time.sleep(0.01)
