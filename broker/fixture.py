"""pytest plugin: an in-process Kafka cluster for any project's tests.

Registered through the ``pytest11`` entry point (``kafka_emu = "kafka_emu.broker.fixture"``), so after
``pip install kafka-emu`` a test can simply ask for ``kafka_cluster``::

    def test_roundtrip(kafka_cluster):
        producer = confluent_kafka.Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})

One cluster is started per test module (module scope: starting is cheap, but a module's tests
usually share topics and groups). Choose its size and configuration per module, either by
overriding the ``kafka_cluster_config`` fixture::

    @pytest.fixture(scope="module")
    def kafka_cluster_config():
        return {"brokers": 1, "config": {"num.partitions": 4}}

or with a marker on the module (``pytestmark = pytest.mark.kafka_cluster(brokers=1,
config={...})``); the marker wins over the fixture. Test-control options go next to
``brokers``: ``record_requests`` (True or a ring capacity: ``cluster.requests()``) and ``time``
(``"real"``, ``"offset"`` or ``"manual"``: ``cluster.advance_time(ms)``); see
docs/testing-failure.md. ``kafka_bootstrap`` is the bootstrap string
alone. Defaults are three brokers with replication factor 3 for new topics and the group
timeouts shortened for tests (``group.initial.rebalance.delay.ms=0``,
``group.min.session.timeout.ms=100``).
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

DEFAULT_TEST_CONFIG: dict[str, Any] = {
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 10,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 100,
    "emulator.strict.config": True,   # a typo in a test's config fails loudly
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "kafka_cluster(brokers=3, config=None, record_requests=False, time='real'): "
        "size and configuration of the module's in-process Kafka cluster (kafka-emu)")


@pytest.fixture(scope="module")
def kafka_cluster_config() -> dict[str, Any]:
    """Override in a module (or conftest) to change the cluster: {"brokers": n, "config": {...}}."""
    return {"brokers": 3, "config": {}}


CLUSTER_OPTIONS = ("record_requests", "time")   # EmbeddedCluster keywords the fixture passes on


def _options(request: pytest.FixtureRequest, base: dict[str, Any]) -> dict[str, Any]:
    options = {k: base[k] for k in CLUSTER_OPTIONS if k in base}
    marker = request.node.get_closest_marker("kafka_cluster")
    if marker is not None:
        options.update({k: marker.kwargs[k] for k in CLUSTER_OPTIONS if k in marker.kwargs})
    return options


def _resolve(request: pytest.FixtureRequest, base: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    brokers = int(base.get("brokers", 3))
    cfg: dict[str, Any] = dict(DEFAULT_TEST_CONFIG)
    cfg.update(base.get("config") or {})
    marker = request.node.get_closest_marker("kafka_cluster")
    if marker is not None:
        brokers = int(marker.kwargs.get("brokers", marker.args[0] if marker.args else brokers))
        cfg.update(marker.kwargs.get("config") or {})
    rf_cap = max(1, brokers)
    for key in ("default.replication.factor", "offsets.topic.replication.factor"):
        if key not in (base.get("config") or {}) and (marker is None or key not in (marker.kwargs.get("config") or {})):
            cfg[key] = min(int(cfg[key]), rf_cap)
    return brokers, cfg


@pytest.fixture(scope="module")
def kafka_cluster(request: pytest.FixtureRequest, kafka_cluster_config: dict[str, Any]) -> Iterator[Any]:
    """A started ``EmbeddedCluster``; stopped (every thread joined) after the module."""
    from kafka_emu.broker.cluster import EmbeddedCluster

    brokers, cfg = _resolve(request, kafka_cluster_config)
    cluster = EmbeddedCluster(brokers=brokers, config=cfg, **_options(request, kafka_cluster_config))
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture()
def kafka_bootstrap(kafka_cluster: Any) -> str:
    return kafka_cluster.bootstrap_servers
