"""Fixtures for broker tests: clusters that are always closed, and a thread-leak check."""
from __future__ import annotations

from typing import Iterator

import pytest

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from cluster_support import broker_threads, wait_until  # noqa: F401  (re-exported for fixtures)

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
