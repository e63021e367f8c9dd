"""A real Prometheus scrapes a 3-broker EmbeddedCluster driven by a real Kafka client over TCP.

confluent-kafka (librdkafka) produces with acks=all and consumes in a group while Prometheus
scrapes every 500 ms. The test then checks, through Prometheus's query API only: request rates by API, the
group's rebalance and state, no under-replicated partitions, and, with the followers of one
partition stalled, the producer's acks=all request parked in the leader's Produce purgatory
(numdelayedoperations{delayedOperation="Produce"} >= 1) until they resume.
"""
from __future__ import annotations

import importlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kafka_emu.metrics import serve_cluster_metrics

from metrics_support import eventually
from prometheus_server import PrometheusServer, prometheus_binary

pytestmark = pytest.mark.timeout(120)


def steady_producer(ck: Any, bootstrap: str, stop: threading.Event) -> None:
    """Produce one record every 10 ms to its own topic until ``stop`` (its own client)."""
    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "log_level": 3})
    i = 0
    while not stop.wait(0.01):
        producer.produce("steady", value=b"tick-%d" % i)
        producer.poll(0)
        i += 1
    producer.flush(5)


def test_prometheus_scrapes_embedded_cluster_under_client_load(tmp_path: Path) -> None:
    binary = prometheus_binary()
    cluster_module = importlib.import_module("kafka_emu.broker.cluster.embedded_cluster")
    ck = pytest.importorskip("confluent_kafka")

    cluster = cluster_module.EmbeddedCluster(
        brokers=3, config={"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100})
    metrics = serve_cluster_metrics(cluster, port=0)  # what serve / EmbeddedCluster(metrics_port=) call
    assert metrics.server is not None
    prometheus = PrometheusServer(binary, tmp_path, [f"127.0.0.1:{metrics.server.port}"]).start()
    producer: Any = None
    consumer: Any = None
    load: threading.Thread | None = None
    stop = threading.Event()
    try:
        cluster.create_topic("payments", partitions=3, replication_factor=3)
        cluster.create_topic("steady", partitions=1, replication_factor=3)
        eventually(lambda: all(cluster.leader_of("payments", p) >= 0 for p in range(3))
                   and cluster.leader_of("steady") >= 0, what="leaders")
        producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                                "linger.ms": 0, "log_level": 3})
        for i in range(200):
            producer.produce("payments", key=b"k%d" % (i % 7), value=b"payment-%d" % i)
        assert producer.flush(30) == 0
        consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ledger",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                "session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "log_level": 3})
        consumer.subscribe(["payments"])
        consumed = 0
        deadline = time.monotonic() + 30
        while consumed < 200:
            assert time.monotonic() < deadline, f"consumed only {consumed} of 200"
            consumed += sum(1 for m in consumer.consume(100, timeout=0.1) if m.error() is None)
        consumer.commit(asynchronous=False)

        # Steady client traffic while Prometheus watches: one small acks=all produce every 10 ms.
        load = threading.Thread(target=steady_producer, args=(ck, cluster.bootstrap_servers, stop),
                                name="prom-test-steady-producer", daemon=True)
        load.start()

        for api in ("Produce", "FetchConsumer", "FetchFollower", "JoinGroup", "SyncGroup", "OffsetCommit"):
            prometheus.wait_for(f'sum(kafka_network_requestmetrics_requestspersec_total{{request="{api}"}})',
                                lambda v: len(v) == 1 and v[0] > 0, what=f"{api} requests counted")
        rate = 'sum(rate(kafka_network_requestmetrics_requestspersec_total{request="%s"}[3s]))'
        prometheus.wait_for(rate % "Produce", lambda v: len(v) == 1 and v[0] > 1, what="produce rate > 1/s")
        prometheus.wait_for(rate % "FetchFollower", lambda v: len(v) == 1 and v[0] > 0, what="replica fetch rate > 0")
        prometheus.wait_for("sum(rate(kafka_server_brokertopicmetrics_messagesinpersec_total[3s]))",
                            lambda v: len(v) == 1 and v[0] > 1, what="messages in rate > 1/s")
        prometheus.wait_for("sum(kafka_server_brokertopicmetrics_messagesinpersec_total)",
                            lambda v: len(v) == 1 and v[0] >= 200, what="at least 200 messages in")
        prometheus.wait_for("sum(kafka_server_group_coordinator_metrics_group_completed_rebalance_total)",
                            lambda v: len(v) == 1 and v[0] >= 1, what="a completed rebalance")
        prometheus.wait_for("sum(kafka_coordinator_group_groupmetadatamanager_numgroupsstable)",
                            lambda v: v == [1.0], what="one Stable group")
        prometheus.wait_for("sum(kafka_emu_coordinator_members)", lambda v: v == [1.0], what="one member")
        prometheus.wait_for("sum(kafka_coordinator_group_groupmetadatamanager_numoffsets)",
                            lambda v: v == [3.0], what="3 committed offsets")
        prometheus.wait_for("sum(kafka_server_replicamanager_underreplicatedpartitions)",
                            lambda v: v == [0.0], what="no under-replicated partitions")
        prometheus.wait_for("count(kafka_server_replicamanager_leadercount)", lambda v: v == [3.0],
                            what="three brokers scraped")
        prometheus.wait_for(
            'histogram_quantile(0.99, sum by (le) (rate(kafka_network_requestmetrics_totaltimems_bucket{request="Produce"}[1m])))',
            lambda v: len(v) == 1 and 0 < v[0] < 30000, what="Produce p99 latency")

        # Stall the followers of partition 0: the next acks=all produce parks on its leader.
        state = cluster.partition_state("payments", 0)
        leader, others = state.leader, [r for r in state.replicas if r != state.leader]
        for f in others:
            cluster.broker(f).fetcher_manager.set_paused(True, leader_id=leader)
        delivered: list[Any] = []
        producer.produce("payments", partition=0, value=b"parked",
                         on_delivery=lambda err, msg: delivered.append(err))
        producer.poll(0)
        parked = prometheus.wait_for(
            f'kafka_server_delayedoperationpurgatory_numdelayedoperations{{delayedOperation="Produce",broker_id="{leader}"}}',
            lambda v: len(v) == 1 and v[0] >= 1, what="produce parked in the leader's Produce purgatory")
        assert parked[0] >= 1
        prometheus.wait_for(f'kafka_emu_timer_pendingtasks{{timer="Produce",broker_id="{leader}"}}',
                            lambda v: len(v) == 1 and v[0] >= 1, what="Produce timer task pending")
        producer.poll(0)
        assert delivered == []  # still waiting for the stalled ISR
        for f in others:
            cluster.broker(f).fetcher_manager.set_paused(False, leader_id=leader)
        assert producer.flush(30) == 0 and delivered == [None]
        prometheus.wait_for('sum(kafka_server_delayedoperationpurgatory_numdelayedoperations{delayedOperation="Produce"})',
                            lambda v: v == [0.0], what="no parked produce after the followers resume")
        prometheus.wait_for("sum(kafka_server_delayedproducemetrics_expirespersec_total)", lambda v: v == [0.0],
                            what="no produce expired")
    finally:
        stop.set()
        if load is not None:
            load.join(10)
        if consumer is not None:
            consumer.close()
        if producer is not None:
            producer.flush(5)
        prometheus.stop()
        metrics.close()
        cluster.close()
