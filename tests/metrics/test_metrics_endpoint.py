"""The /metrics HTTP endpoint: what it serves, and that it stops cleanly.

A real HTTP round trip on 127.0.0.1 (no mocks): a cluster fixture that leaves a server thread
behind, or a port bound, breaks every test that runs after it.
"""
from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest

from kafka_emu.metrics import ClusterMetrics, serve_cluster_metrics, start_http_server
from kafka_emu.timer import MockTime
from kafka_emu.timer import TopicPartitionOperationKey as TP

from metrics_support import FakeBroker, FakeCluster, Op, mock_purgatory, parse

pytestmark = pytest.mark.timeout(30)


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, "", ""


def test_serves_metrics_and_stops_without_leaving_a_thread() -> None:
    time = MockTime()
    produce = mock_purgatory("Produce", time)
    try:
        metrics = ClusterMetrics()
        metrics.register_broker(FakeBroker(0, purgatories=[produce]))
        produce.try_complete_else_watch(Op(5000), [TP("t", 0)])
        server = metrics.start_http_server(0)
        assert server.port > 0 and server.thread.name == f"metrics-http-{server.port}"
        assert server.thread.daemon and server.thread.is_alive()

        status, content_type, body = get(server.url)
        assert status == 200 and content_type.startswith("text/plain")
        family = parse(body)["kafka_server_delayedoperationpurgatory_numdelayedoperations"]
        assert [(s.labels, s.value) for s in family.samples] == [
            ({"broker_id": "0", "delayedOperation": "Produce"}, 1.0)]
        assert get(server.url.replace("/metrics", "/nope"))[0] == 404
        assert get(server.url.replace("/metrics", "/-/healthy"))[0] == 200

        metrics.close()
        assert not server.thread.is_alive()
        assert not any(t.name.startswith(f"metrics-http-{server.port}") and t.is_alive()
                       for t in threading.enumerate() if t is not server.thread)
        with pytest.raises(OSError):
            urllib.request.urlopen(server.url, timeout=2)
        metrics.close()  # idempotent
    finally:
        produce.shutdown()


def test_module_level_start_http_server_serves_any_registry() -> None:
    metrics = ClusterMetrics()
    server = start_http_server(0, metrics.registry)
    try:
        status, _, body = get(server.url)
        assert status == 200 and "kafka_network_requestmetrics_totaltimems" in body
    finally:
        server.shutdown()
        server.shutdown()
    assert not server.thread.is_alive()


def test_openmetrics_negotiation() -> None:
    metrics = ClusterMetrics()
    with metrics.start_http_server(0) as server:
        request = urllib.request.Request(server.url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert response.headers["Content-Type"].startswith("application/openmetrics-text")
            assert response.read().decode().rstrip().endswith("# EOF")


def test_clusters_have_separate_registries() -> None:
    time = MockTime()
    p = mock_purgatory("Produce", time)
    try:
        one, two = ClusterMetrics(), ClusterMetrics()
        one.register_broker(FakeBroker(0, purgatories=[p]))
        assert "delayedOperation=\"Produce\"" in one.exposition()
        assert "delayedOperation" not in two.exposition()
    finally:
        p.shutdown()


def test_cluster_brokers_are_discovered_and_replaced_on_restart() -> None:
    cluster = FakeCluster({0: FakeBroker(0), 1: FakeBroker(1)})
    with ClusterMetrics(cluster) as metrics:
        assert [b.broker_id for b in metrics.brokers_for_scrape()] == [0, 1]
        cluster.servers[2] = FakeBroker(2)
        restarted = FakeBroker(0)
        cluster.servers[0] = restarted
        brokers = metrics.brokers_for_scrape()
        assert [b.broker_id for b in brokers] == [0, 1, 2]
        assert brokers[0].broker is restarted


def test_serve_cluster_metrics_is_one_call_with_one_shutdown() -> None:
    cluster = FakeCluster({0: FakeBroker(0), 1: FakeBroker(1, stopped=True)})
    metrics = serve_cluster_metrics(cluster, port=0)
    server = metrics.server
    assert server is not None and server.thread.is_alive()
    status, _, body = get(server.url)
    assert status == 200
    metrics.close()
    assert not server.thread.is_alive()
    # A stopped broker (KafkaServer.stopped) is not exported.
    assert [b.broker_id for b in ClusterMetrics(cluster).brokers_for_scrape()] == [0]
