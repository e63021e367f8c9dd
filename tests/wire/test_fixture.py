"""The pytest plugin: per-module cluster size and configuration through a marker."""
from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

pytestmark = [pytest.mark.timeout(30),
              pytest.mark.kafka_cluster(brokers=1, config={"num.partitions": 3})]


def test_marker_selects_size_and_config(kafka_cluster: Any, kafka_bootstrap: str) -> None:
    assert kafka_cluster.live_brokers() == [0]
    assert kafka_bootstrap == kafka_cluster.bootstrap_servers and kafka_bootstrap.count(":") == 1
    cfg = kafka_cluster.broker(0).config
    assert cfg["num.partitions"] == 3
    # replication factors are capped at the cluster size unless configured
    assert cfg["default.replication.factor"] == 1
    assert cfg["offsets.topic.replication.factor"] == 1


def test_clients_see_the_cluster(kafka_bootstrap: str) -> None:
    md = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=5)
    assert list(md.brokers) == [0]


def test_cluster_is_ready_fast() -> None:
    import time

    from kafka_emu.broker.cluster import EmbeddedCluster

    t0 = time.perf_counter()
    cluster = EmbeddedCluster(brokers=3)
    try:
        ready = time.perf_counter() - t0
        assert cluster.bootstrap_servers.count(",") == 2
    finally:
        cluster.close()
    assert ready < 1.0, f"bootstrap servers took {ready:.3f}s"
