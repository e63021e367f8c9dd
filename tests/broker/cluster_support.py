"""Polling and thread-inspection helpers shared by the broker tests (imported by module name,
not from conftest, so that test directories with their own conftest never collide)."""
from __future__ import annotations

import threading
import time

BROKER_THREAD_PREFIXES = ("data-plane-kafka-request-handler", "ReplicaFetcherThread", "ExpirationReaper",
                          "kafka-scheduler", "executor-", "group-metadata")


def broker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(BROKER_THREAD_PREFIXES)]


def wait_until(cond, timeout_s: float = 10.0, interval_s: float = 0.005, msg: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {msg}")
        time.sleep(interval_s)
