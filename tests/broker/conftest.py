"""Fixtures for broker tests: clusters that are always closed, and a thread-leak check."""
from __future__ import annotations

import threading
import time
from typing import Iterator

import pytest

from broker.cluster import EmbeddedCluster

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


@pytest.fixture
def make_cluster() -> Iterator:
    clusters: list[EmbeddedCluster] = []

    def make(brokers: int = 3, config: dict | None = None, **kw) -> EmbeddedCluster:
        kw.setdefault("offsets_topic", False)
        config = dict(config or {})
        config.setdefault("listeners", "")  # in-process requests only: no sockets needed here
        c = EmbeddedCluster(brokers=brokers, config=config, **kw)
        clusters.append(c)
        return c

    yield make
    for c in clusters:
        c.close()
