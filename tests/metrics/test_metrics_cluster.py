"""The metrics of a real in-process cluster (broker.cluster.EmbeddedCluster) under known activity.

These are the situations the series exist for: an acks=all produce parked while a follower
stalls, an ISR shrink and expansion, a broker stopping and restarting, a consumer group
rebalancing and lagging, produces failing, the first scrape after start. Values are read from
the registry (the same code a scrape runs); the Prometheus end-to-end test covers the scrape
itself.
"""
from __future__ import annotations

import importlib
import threading
import time
from typing import Any, Iterator

import pytest

from kafka_emu.metrics import ClusterMetrics

from metrics_support import eventually

pytestmark = pytest.mark.timeout(60)

cluster_module = importlib.import_module("kafka_emu.broker.cluster.embedded_cluster")


@pytest.fixture
def cluster_time(request: pytest.FixtureRequest) -> str:
    """The cluster's clock (``EmbeddedCluster(time=...)``): real unless a test parametrizes it."""
    return getattr(request, "param", "real")


@pytest.fixture
def cluster(request: pytest.FixtureRequest, cluster_time: str) -> Iterator[Any]:
    config = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100}
    config.update(getattr(request, "param", {}))
    c = cluster_module.EmbeddedCluster(brokers=3, config=config, time=cluster_time)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def metrics(cluster: Any) -> Iterator[ClusterMetrics]:
    m = ClusterMetrics(cluster)
    try:
        yield m
    finally:
        m.close()


def value(metrics: ClusterMetrics, name: str, **labels: Any) -> float:
    return metrics.sample(name, {k: str(v) for k, v in labels.items()}) or 0.0


def total(metrics: ClusterMetrics, name: str, **labels: str) -> float:
    """Sum of a series over brokers (the samples whose labels include ``labels``)."""
    out = 0.0
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                out += sample.value
    return out


def followers(cluster: Any, topic: str, partition: int = 0) -> tuple[int, list[int]]:
    state = cluster.partition_state(topic, partition)
    leader = state.leader
    return leader, [r for r in state.replicas if r != leader]


def test_acks_all_produce_parks_in_produce_purgatory_while_followers_stall(cluster: Any, metrics: ClusterMetrics) -> None:
    cluster.create_topic("orders", partitions=1, replication_factor=3)
    eventually(lambda: cluster.leader_of("orders") >= 0, what="a leader")
    leader, others = followers(cluster, "orders")
    assert cluster.produce("orders", 0, [(b"k", b"warm-up")]) == (0, 0)  # followers caught up

    for f in others:
        cluster.broker(f).fetcher_manager.set_paused(True, leader_id=leader)
    result: list[tuple[int, int]] = []
    producer = threading.Thread(target=lambda: result.append(cluster.produce("orders", 0, [(b"k", b"v")] * 3)),
                                name="test-acks-all-producer")
    started = time.monotonic()
    producer.start()
    delayed = "kafka_server_delayedoperationpurgatory_numdelayedoperations"
    eventually(lambda: value(metrics, delayed, broker_id=leader, delayedOperation="Produce") == 1,
               what="one produce parked on the leader")
    assert value(metrics, "kafka_server_delayedoperationpurgatory_purgatorysize",
                 broker_id=leader, delayedOperation="Produce") >= 1
    assert value(metrics, "kafka_emu_timer_pendingtasks", broker_id=leader, timer="Produce") >= 1
    time.sleep(0.05)  # a known minimum parking time for the latency check below
    for f in others:
        cluster.broker(f).fetcher_manager.set_paused(False, leader_id=leader)
    producer.join(30)
    parked_ms = (time.monotonic() - started) * 1000
    assert result == [(0, 1)]
    assert value(metrics, delayed, broker_id=leader, delayedOperation="Produce") == 0
    produce = {"broker_id": str(leader), "request": "Produce"}
    assert metrics.sample("kafka_network_requestmetrics_totaltimems_count", produce) == 2
    # The parked produce's total time covers its wait (>= 50 ms), and is at most the wall time.
    total_ms = metrics.sample("kafka_network_requestmetrics_totaltimems_sum", produce)
    assert 50 <= total_ms <= parked_ms + 1000
    assert value(metrics, "kafka_server_brokertopicmetrics_messagesinpersec_total", broker_id=leader,
                 topic="orders") == 4
    assert total(metrics, "kafka_server_brokertopicmetrics_messagesinpersec_total") == 4  # leader only
    assert value(metrics, "kafka_server_delayedproducemetrics_expirespersec_total", broker_id=leader) == 0


def lagging_followers(cluster: Any) -> set[tuple[str, int, int]]:
    """(topic, partition, follower) of each follower whose last fetch, as its leader saw it, was
    short of the leader's log end: the followers an ISR shrink could drop."""
    out: set[tuple[str, int, int]] = set()
    for server in list(cluster.servers.values()):
        for (topic, p), partition in list(server.replica_manager.partitions.items()):
            if partition.is_leader:
                leo = partition.log.log_end_offset
                out |= {(topic, p, r) for r, st in list(partition.followers.items()) if st.log_end_offset != leo}
    return out


LAG_MS = 30_000   # replica.lag.time.max.ms; isr-expiration runs every LAG_MS / 2


@pytest.mark.parametrize("cluster_time", ["offset"], indirect=True)
@pytest.mark.parametrize("cluster", [{"replica.lag.time.max.ms": LAG_MS}], indirect=True)
def test_isr_shrink_under_replication_and_expand(cluster: Any, metrics: ClusterMetrics) -> None:
    """Kafka's ``PartitionTest.testMaybeShrinkIsr`` and ``testIsrExpansion`` seen through the
    ReplicaManager metrics: a stalled follower leaves the ISR once ``replica.lag.time.max.ms``
    has passed on the brokers' clock (IsrShrinksPerSec 1, UnderReplicatedPartitions 1), and
    rejoins when it fetches again (IsrExpandsPerSec 1, UnderReplicatedPartitions 0).

    The lag time passes by ``advance_time`` once every other follower (those of
    __consumer_offsets included) has fetched up to its leader's log end, so the stalled one is
    the only follower that can leave the ISR. A short lag time on the real clock instead lets a
    busy machine delay a healthy follower's next fetch past it, and the shrink then drops it too.
    The clock is the "offset" one (real time plus jumps): replica fetches long-poll on broker
    time, which a manual clock would freeze.
    """
    cluster.create_topic("lagging", partitions=1, replication_factor=3)
    eventually(lambda: cluster.leader_of("lagging") >= 0, timeout_s=30, what="a leader")
    leader, (stalled, healthy) = followers(cluster, "lagging")
    eventually(lambda: not lagging_followers(cluster), timeout_s=30, what="every follower caught up")
    shrinks, expands = ("kafka_server_replicamanager_isrshrinkspersec_total",
                        "kafka_server_replicamanager_isrexpandspersec_total")
    under_replicated = "kafka_server_replicamanager_underreplicatedpartitions"
    assert value(metrics, under_replicated, broker_id=leader) == 0
    assert total(metrics, under_replicated) == 0
    cluster.broker(stalled).fetcher_manager.set_paused(True, leader_id=leader)
    assert cluster.produce("lagging", 0, [(b"k", b"v")], acks=1)[0] == 0  # the stalled one falls behind
    eventually(lambda: lagging_followers(cluster) == {("lagging", 0, stalled)}, timeout_s=30,
               what="the healthy follower fetching the record")

    cluster.advance_time(LAG_MS // 2)   # an isr-expiration run, within the lag time: still in sync
    assert value(metrics, shrinks, broker_id=leader) == 0
    assert set(cluster.partition_state("lagging").isr) == {leader, stalled, healthy}
    cluster.advance_time(LAG_MS // 2 + 1)   # past the lag time, and the next run fell due
    assert value(metrics, shrinks, broker_id=leader) == 1
    assert set(cluster.partition_state("lagging").isr) == {leader, healthy}
    assert value(metrics, under_replicated, broker_id=leader) == 1
    assert total(metrics, under_replicated) == 1

    cluster.broker(stalled).fetcher_manager.set_paused(False, leader_id=leader)
    eventually(lambda: value(metrics, expands, broker_id=leader) >= 1, timeout_s=30, what="an ISR expansion")
    assert value(metrics, expands, broker_id=leader) == 1
    assert set(cluster.partition_state("lagging").isr) == {leader, stalled, healthy}
    assert total(metrics, under_replicated) == 0
    assert total(metrics, shrinks) == 1


def test_stopped_broker_disappears_and_restarted_broker_is_measured(cluster: Any, metrics: ClusterMetrics) -> None:
    cluster.create_topic("t", partitions=3, replication_factor=3)
    eventually(lambda: all(cluster.leader_of("t", p) >= 0 for p in range(3)), what="leaders")
    eventually(lambda: total(metrics, "kafka_network_requestmetrics_requestspersec_total", broker_id="2") > 0,
               what="requests served by broker 2")
    cluster.stop_broker(2)
    # Every broker-2 series goes, the request histograms and counters included.
    assert 'broker_id="2"' not in metrics.exposition()
    # The survivors lead partitions whose ISR lost broker 2 (stopped brokers leave the ISR).
    eventually(lambda: total(metrics, "kafka_server_replicamanager_underreplicatedpartitions") >= 1,
               what="under-replicated partitions after the stop")

    restarted = cluster.start_broker(2)
    eventually(lambda: value(metrics, "kafka_server_replicamanager_partitioncount", broker_id=2) >= 3,
               what="restarted broker hosting its replicas")
    # The request listener follows the new broker's new request channel.
    assert len(restarted.request_channel.request_listeners) == 1
    before = total(metrics, "kafka_network_requestmetrics_requestspersec_total", broker_id="2")
    cluster.fetch("t", 0, 0, broker_id=2)
    assert total(metrics, "kafka_network_requestmetrics_requestspersec_total", broker_id="2") > before


def test_consumer_group_join_and_rebalance_are_counted(cluster: Any, metrics: ClusterMetrics) -> None:
    """Two real consumers (confluent-kafka / librdkafka over TCP) join one group in turn."""
    ck = pytest.importorskip("confluent_kafka")
    cluster.create_topic("events", partitions=4, replication_factor=3)
    eventually(lambda: all(cluster.leader_of("events", p) >= 0 for p in range(4)), what="leaders")
    config = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "billing",
              "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
              "heartbeat.interval.ms": 200, "log_level": 3}
    completed = "kafka_server_group_coordinator_metrics_group_completed_rebalance_total"
    consumers: list[Any] = []

    def poll_until(check: Any, what: str) -> None:
        deadline = time.monotonic() + 30
        while not check():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            for c in consumers:
                c.poll(0.05)

    try:
        consumers.append(ck.Consumer(config))
        consumers[0].subscribe(["events"])
        poll_until(lambda: total(metrics, completed) >= 1 and len(consumers[0].assignment()) == 4,
                   "first rebalance")
        assert total(metrics, "kafka_coordinator_group_groupmetadatamanager_numgroupsstable") == 1
        assert total(metrics, "kafka_coordinator_group_groupmetadatamanager_numgroups") == 1
        assert total(metrics, "kafka_emu_coordinator_members") == 1
        assert total(metrics, "kafka_network_requestmetrics_requestspersec_total", request="JoinGroup") >= 1
        assert total(metrics, "kafka_network_requestmetrics_requestspersec_total", request="SyncGroup") >= 1

        consumers.append(ck.Consumer(config))
        consumers[1].subscribe(["events"])
        poll_until(lambda: total(metrics, completed) >= 2 and all(len(c.assignment()) == 2 for c in consumers),
                   "second rebalance splitting the partitions")
        assert total(metrics, "kafka_emu_coordinator_members") == 2
        assert total(metrics, "kafka_emu_coordinator_rebalances_started_total") >= 2
        assert total(metrics, "kafka_emu_coordinator_rebalance_time_ms_count") == total(metrics, completed)
        assert total(metrics, "kafka_network_requestmetrics_totaltimems_count", request="JoinGroup") >= 3
    finally:
        for c in consumers:
            c.close()


def test_messages_in_per_topic_and_failed_produces_with_their_error(cluster: Any, metrics: ClusterMetrics) -> None:
    """BrokerTopicMetrics per topic, and RequestMetrics ErrorsPerSec by request and error: N records
    to one topic; acks=all produces to a partition below min.insync.replicas (its follower
    stopped) fail with NOT_ENOUGH_REPLICAS, which Kafka's ReplicaManager counts as failed."""
    cluster.create_topic("clicks", partitions=1, replication_factor=3)
    cluster.create_topic("strict", partitions=1, replication_factor=2, configs={"min.insync.replicas": 2})
    eventually(lambda: cluster.leader_of("clicks") >= 0 and cluster.leader_of("strict") >= 0, what="leaders")
    leader, (follower,) = followers(cluster, "strict")
    cluster.stop_broker(follower)
    eventually(lambda: list(cluster.partition_state("strict").isr) == [leader], what="ISR without the follower")
    eventually(lambda: cluster.leader_of("clicks") not in (-1, follower), what="a live leader of clicks")
    for _ in range(5):
        assert cluster.produce("clicks", 0, [(b"k", b"v")] * 3)[0] == 0
    for _ in range(2):
        assert cluster.produce("strict", 0, [(b"k", b"v")])[0] == 19   # NOT_ENOUGH_REPLICAS

    messages_in = "kafka_server_brokertopicmetrics_messagesinpersec_total"
    assert total(metrics, messages_in, topic="clicks") == 15
    assert value(metrics, messages_in, broker_id=cluster.leader_of("clicks"), topic="clicks") == 15
    assert total(metrics, messages_in, topic="strict") == 0
    failed = "kafka_server_brokertopicmetrics_failedproducerequestspersec_total"
    assert value(metrics, failed, broker_id=cluster.leader_of("strict"), topic="strict") == 2
    assert total(metrics, failed, topic="clicks") == 0
    errors_total = "kafka_network_requestmetrics_errorspersec_total"
    assert total(metrics, errors_total, request="Produce", error="NOT_ENOUGH_REPLICAS") == 2
    assert total(metrics, errors_total, request="Produce", error="NONE") == 5


def test_gauges_are_present_from_the_first_scrape() -> None:
    """A dashboard or alert sees no gap after start: the idle gauges are in the first scrape."""
    c = cluster_module.EmbeddedCluster(brokers=2, config={"listeners": "PLAINTEXT://127.0.0.1:0"})
    try:
        with ClusterMetrics(c) as metrics:
            for name in ("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent",
                         "kafka_network_socketserver_networkprocessoravgidlepercent"):
                for broker_id in ("0", "1"):
                    v = metrics.sample(name, {"broker_id": broker_id})
                    assert v is not None and 0.5 <= v <= 1.0, (name, broker_id, v)   # an idle cluster
    finally:
        c.close()


def test_consumer_group_lag_is_high_watermark_minus_committed_offset(cluster: Any, metrics: ClusterMetrics) -> None:
    """kafka-exporter's consumer-group series: a group commits offset 4 on a partition holding 10
    records (HW 10) with confluent-kafka over TCP; its coordinator reports lag 6."""
    ck = pytest.importorskip("confluent_kafka")
    cluster.create_topic("payments", partitions=2, replication_factor=3)
    eventually(lambda: all(cluster.leader_of("payments", p) >= 0 for p in range(2)), what="leaders")
    assert cluster.produce("payments", 0, [(b"k", b"v")] * 10) == (0, 0)
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "ledger",
                            "enable.auto.commit": False, "log_level": 3})
    try:
        consumer.commit(offsets=[ck.TopicPartition("payments", 0, 4), ck.TopicPartition("payments", 1, 0)],
                        asynchronous=False)
    finally:
        consumer.close()
    labels = {"consumergroup": "ledger", "topic": "payments"}
    eventually(lambda: total(metrics, "kafka_consumergroup_current_offset", **labels, partition="0") == 4,
               what="the committed offset")
    assert total(metrics, "kafka_consumergroup_lag", **labels, partition="0") == 6
    assert total(metrics, "kafka_consumergroup_lag", **labels, partition="1") == 0
    # Exactly one broker (the group's coordinator) reports the group.
    reporters = {s.labels["broker_id"] for f in metrics.registry.collect() for s in f.samples
                 if s.name == "kafka_consumergroup_lag"}
    assert len(reporters) == 1
    assert cluster.produce("payments", 0, [(b"k", b"v")] * 5)[0] == 0
    eventually(lambda: total(metrics, "kafka_consumergroup_lag", **labels, partition="0") == 11,
               what="lag growing with the high watermark")


def test_records_produced_over_tcp_count_per_topic_and_as_errors_none(cluster: Any, metrics: ClusterMetrics) -> None:
    """N records from a real producer (librdkafka, acks=all, over TCP: the broker's fast Produce
    codec answers with pre-encoded responses) -> MessagesInPerSec{topic} = N, and every
    partition answer counted in ErrorsPerSec{request="Produce", error="NONE"}."""
    ck = pytest.importorskip("confluent_kafka")
    cluster.create_topic("views", partitions=2, replication_factor=3)
    eventually(lambda: all(cluster.leader_of("views", p) >= 0 for p in range(2)), what="leaders")
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                            "linger.ms": 5, "log_level": 3})
    delivered: list[Any] = []
    for i in range(40):
        producer.produce("views", value=b"v%d" % i, partition=i % 2,
                         on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(30) == 0
    assert delivered == [None] * 40
    assert total(metrics, "kafka_server_brokertopicmetrics_messagesinpersec_total", topic="views") == 40
    produce_requests = total(metrics, "kafka_network_requestmetrics_requestspersec_total", request="Produce")
    errors_none = total(metrics, "kafka_network_requestmetrics_errorspersec_total", request="Produce", error="NONE")
    assert produce_requests >= 1 and produce_requests <= errors_none <= 2 * produce_requests
    assert total(metrics, "kafka_server_brokertopicmetrics_failedproducerequestspersec_total") == 0
