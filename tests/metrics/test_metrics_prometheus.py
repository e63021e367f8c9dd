"""A real Prometheus scrapes the emulator's /metrics and its query API shows the right values.

Two scenarios:

* ``test_prometheus_scrapes_request_path_under_load`` builds one broker's request path from the
  broker package's real parts (RequestChannel, KafkaRequestHandlerPool, KafkaApis with two
  handlers, ActionQueue, a real Produce purgatory on the system clock) and drives it from
  client threads: Metadata answered at once, acks=all-style produces parked in the Produce
  purgatory until a "follower" acknowledges. It runs whether or not the full cluster exists.
* ``test_prometheus_scrapes_embedded_cluster`` (test_metrics_cluster_prometheus.py) runs the
  same checks against EmbeddedCluster with a real Kafka client over TCP.

Assertions are on Prometheus's answers (PromQL over scraped samples), not on our exposition, so
naming, label and type mistakes that only a real scraper notices fail here.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import pytest

from kafka_emu.metrics import ClusterMetrics, dashboard
from kafka_emu.timer import DelayedOperation, DelayedOperationPurgatory
from kafka_emu.timer import TopicPartitionOperationKey as TP
from kafka_emu.timer.time import Time

from prometheus_server import PrometheusServer, prometheus_binary

pytestmark = pytest.mark.timeout(90)

PRODUCE, METADATA = 0, 3


class ParkedProduce(DelayedOperation):
    """Completes when the follower has acknowledged (``acked`` set) and the key is triggered."""

    def __init__(self, channel: Any, request: Any, acked: threading.Event, timeout_ms: int) -> None:
        super().__init__(timeout_ms)
        self.channel, self.request, self.acked = channel, request, acked

    def try_complete(self) -> bool:
        return self.force_complete() if self.acked.is_set() else False

    def on_complete(self) -> None:
        self.channel.send_response(self.request, "produced")


@dataclass
class RequestPathBroker:
    """A broker made of a real request channel, handler pool and Produce purgatory (no replica
    manager), as ClusterMetrics sees a broker (``metrics.sources.BrokerSource``)."""

    channel: Any
    pool: Any
    purgatory: DelayedOperationPurgatory
    broker_id: int = 0
    stopped: bool = False
    request_listeners: list[Callable[[Any], None]] = field(default_factory=list)

    def snapshot(self) -> Any:
        from kafka_emu.broker.server.kafka_server import BrokerSnapshot
        from kafka_emu.broker.server.replica_manager import ReplicaManagerSnapshot
        from kafka_emu.broker.server.stats import BrokerTopicStats

        purgatories = (self.purgatory.snapshot(),)
        rm = ReplicaManagerSnapshot(0, 0, 0, 0, BrokerTopicStats().snapshot(), (), frozenset(), purgatories)
        return BrokerSnapshot(self.broker_id, self.channel.snapshot(), self.pool.snapshot(), None, rm,
                              None, purgatories)


@pytest.fixture
def request_path() -> Iterator[SimpleNamespace]:
    """One broker's real request path (no network): channel, 4 handler threads, a purgatory."""
    from kafka_emu.broker.server.action_queue import ActionQueue
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import RequestChannel
    from kafka_emu.broker.server.request_handler import KafkaRequestHandlerPool

    listeners: list[Callable[[Any], None]] = []
    channel = RequestChannel(queue_size=500, broker_id=0, request_listeners=listeners)
    produce_purgatory = DelayedOperationPurgatory("Produce", broker_id=0)
    acked = threading.Event()
    # only the two handlers registered below run; they touch nothing but the channel
    apis = KafkaApis(KafkaConfig({"broker.id": 0}), channel, None, None, Time.SYSTEM, apis={})  # type: ignore[arg-type]

    def handle_metadata(_: Any, request: Any) -> None:
        channel.send_response(request, "metadata")

    def handle_produce(_: Any, request: Any) -> None:
        op = ParkedProduce(channel, request, acked, timeout_ms=30_000)
        produce_purgatory.try_complete_else_watch(op, [TP("orders", 0)])
        # Kafka's KafkaApis.handle stamps apiLocalCompleteTimeNanos when the handler returns
        # without answering; without it a parked request's wait counts as local time.
        if not request.api_local_complete_time_ns:
            request.api_local_complete_time_ns = time.monotonic_ns()

    apis.register(METADATA, handle_metadata)
    apis.register(PRODUCE, handle_produce)
    pool = KafkaRequestHandlerPool(0, channel, apis, ActionQueue(), num_threads=4)
    pool.start()
    broker = RequestPathBroker(channel, pool, produce_purgatory, request_listeners=listeners)
    try:
        yield SimpleNamespace(broker=broker, channel=channel, purgatory=produce_purgatory, acked=acked)
    finally:
        acked.set()
        produce_purgatory.check_and_complete(TP("orders", 0))
        pool.shutdown()
        channel.close()
        produce_purgatory.shutdown()


def send(channel: Any, api_key: int, correlation_id: int, answered: threading.Semaphore) -> None:
    from kafka_emu.broker.apis import api_name
    from kafka_emu.broker.network.request_channel import Request

    channel.send_request(Request(api_key=api_key, api_version=12, correlation_id=correlation_id,
                                 client_id="prom-test", body=None, respond=lambda _: answered.release(),
                                 api_name=api_name(api_key)))


def test_prometheus_scrapes_request_path_under_load(tmp_path: Path, request_path: SimpleNamespace) -> None:
    binary = prometheus_binary()
    metrics = ClusterMetrics()
    metrics.register_broker(request_path.broker)
    server = metrics.start_http_server(0)
    prometheus = PrometheusServer(binary, tmp_path, [f"127.0.0.1:{server.port}"]).start()
    stop = threading.Event()
    answered = threading.Semaphore(0)

    def metadata_client() -> None:
        cid = 0
        while not stop.is_set():
            cid += 1
            send(request_path.channel, METADATA, cid, answered)
            answered.acquire(timeout=5)
            stop.wait(0.002)

    client = threading.Thread(target=metadata_client, name="prom-test-metadata-client", daemon=True)
    client.start()
    try:
        # Three acks=all produces park while the follower is stalled.
        produce_answered = threading.Semaphore(0)
        for cid in range(3):
            send(request_path.channel, PRODUCE, 1000 + cid, produce_answered)

        b = '{broker_id="0"'
        prometheus.wait_for(f'kafka_server_delayedoperationpurgatory_numdelayedoperations{b},delayedOperation="Produce"}}',
                            lambda v: v == [3.0], what="3 parked produces")
        prometheus.wait_for(f'kafka_server_delayedoperationpurgatory_purgatorysize{b},delayedOperation="Produce"}}',
                            lambda v: v == [3.0], what="purgatory size 3")
        prometheus.wait_for(f'rate(kafka_network_requestmetrics_requestspersec_total{b},request="Metadata"}}[5s])',
                            lambda v: len(v) == 1 and v[0] > 0, what="Metadata request rate > 0")
        prometheus.wait_for(f'kafka_network_requestchannel_requestqueuesize{b}}}',
                            lambda v: len(v) == 1 and 0 <= v[0] <= 500, what="request queue size")
        prometheus.wait_for(f'kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent{b}}}',
                            lambda v: len(v) == 1 and 0 <= v[0] <= 1, what="handler idle fraction")
        prometheus.wait_for(f'kafka_emu_timer_pendingtasks{b},timer="Produce"}}',
                            lambda v: v == [3.0], what="Produce timer pending tasks")

        # The follower catches up: the produces complete, their remote time is recorded.
        request_path.acked.set()
        request_path.purgatory.check_and_complete(TP("orders", 0))
        for _ in range(3):
            assert produce_answered.acquire(timeout=10)
        prometheus.wait_for(f'kafka_server_delayedoperationpurgatory_numdelayedoperations{b},delayedOperation="Produce"}}',
                            lambda v: v == [0.0], what="no parked produce")
        prometheus.wait_for(f'kafka_network_requestmetrics_remotetimems_count{b},request="Produce"}}',
                            lambda v: v == [3.0], what="3 produce remote times")
        # Parked for at least as long as it took Prometheus to see them parked (>= one scrape).
        prometheus.wait_for(f'kafka_network_requestmetrics_remotetimems_sum{b},request="Produce"}} / 3',
                            lambda v: len(v) == 1 and v[0] >= 100, what="mean produce remote time >= 100 ms")
        p99 = prometheus.wait_for(
            f'histogram_quantile(0.99, sum by (le) (rate(kafka_network_requestmetrics_totaltimems_bucket{b},request="Metadata"}}[10s])))',
            lambda v: len(v) == 1 and 0 < v[0] < 1000, what="Metadata p99 latency")
        assert p99[0] < 1000

        # Every dashboard expression is PromQL this Prometheus accepts, and the request panels
        # show data for this broker.
        for expr in dashboard.expressions(dashboard.build()):
            concrete = (expr.replace("$__rate_interval", "5s").replace('"$job"', '".*"')
                        .replace('"$broker"', '".*"').replace('"$request"', '"Metadata"')
                        .replace("$request", "Metadata"))
            prometheus.query(concrete)  # raises on a PromQL error (HTTP 400)
        rates = prometheus.values(
            'sum by (request) (rate(kafka_network_requestmetrics_requestspersec_total{job=~".*",broker_id=~".*"}[5s]))')
        assert any(dict(labels).get("request") == "Metadata" and value > 0 for labels, value in rates.items())
    finally:
        stop.set()
        client.join(10)
        prometheus.stop()
        metrics.close()


@pytest.mark.timeout(10)
def test_missing_prometheus_binary_skips_locally_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    import prometheus_server

    monkeypatch.setattr(prometheus_server.shutil, "which", lambda _: None)
    monkeypatch.setattr(prometheus_server.os, "access", lambda *_: False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="prometheus binary not installed"):
        prometheus_server.prometheus_binary()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="prometheus binary not installed"):
        prometheus_server.prometheus_binary()
