"""Test control with real clients: injected errors, disconnects, latency and interception.

Ports the intent of librdkafka's mock-cluster tests (``0117-mock_errors``: errors pushed onto
Produce are retried by an idempotent producer without duplicates; ``0105-transactions_mock``'s
FindCoordinator retries) and franz-go kfake's ``ControlKey`` (answering a request yourself).
"""
from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer
from kafka.errors import RequestTimedOutError

from kafka_emu.common.errors import Errors
from wire_helpers import unique, wait_until

pytestmark = [pytest.mark.timeout(90), pytest.mark.kafka_cluster(brokers=3)]


@pytest.fixture(scope="module")
def kafka_cluster_config() -> dict[str, Any]:
    return {"brokers": 3, "record_requests": True}


@pytest.fixture(autouse=True)
def _clean(kafka_cluster: Any) -> Any:
    kafka_cluster.clear_faults()
    kafka_cluster.clear_requests()
    yield
    kafka_cluster.clear_faults()


def read_values(bs: str, topic: str, n: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bs, "group.id": unique("verify"), "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while len(got) < n and time.monotonic() < deadline:
            for m in c.consume(num_messages=500, timeout=0.2):
                assert m.error() is None, m.error()
                got.append(m.value())
        # nothing beyond n arrives (no duplicates appended)
        extra = c.consume(num_messages=10, timeout=0.3)
        got.extend(m.value() for m in extra if m.error() is None)
    finally:
        c.close()
    return got


def produce_errors(cluster: Any, topic: str) -> list[list[int]]:
    return [r.error_codes() for r in cluster.requests(api="Produce")
            if any(t.name == topic for t in r.request.topic_data)]


def test_confluent_idempotent_producer_retries_injected_not_leader(kafka_cluster: Any) -> None:
    """Three NOT_LEADER_OR_FOLLOWER on Produce: retried, every message lands once, in order."""
    topic = unique("inject-confluent")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    bs = kafka_cluster.bootstrap_servers
    kafka_cluster.inject_errors("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 3, topic=topic)
    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
                  "retry.backoff.ms": 10, "retry.backoff.max.ms": 50, "message.timeout.ms": 20000})
    delivered: list[Any] = []
    values = [b"m%03d" % i for i in range(50)]
    for v in values:
        p.produce(topic, v, partition=0, on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(20) == 0
    assert delivered == [None] * len(values)
    assert read_values(bs, topic, len(values)) == values
    codes = produce_errors(kafka_cluster, topic)
    assert codes[:3] == [[Errors.NOT_LEADER_OR_FOLLOWER]] * 3
    assert all(c == [Errors.NONE] for c in codes[3:]) and len(codes) > 3
    assert any(r.api == "InitProducerId" for r in kafka_cluster.requests())   # it was idempotent
    assert kafka_cluster.control.faults.pending() == []


def test_kafka_python_producer_retries_injected_not_leader(kafka_cluster: Any) -> None:
    topic = unique("inject-kpy")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    bs = kafka_cluster.bootstrap_servers
    kafka_cluster.inject_errors("Produce", ["NOT_LEADER_OR_FOLLOWER"] * 3, topic=topic, partition=0)
    p = KafkaProducer(bootstrap_servers=bs, acks="all", enable_idempotence=True, retries=10,
                      retry_backoff_ms=10, linger_ms=5, max_in_flight_requests_per_connection=1)
    values = [b"k%03d" % i for i in range(30)]
    try:
        futures = [p.send(topic, v, partition=0) for v in values]
        p.flush(20)
        offsets = [f.get(timeout=10).offset for f in futures]
    finally:
        p.close(5)
    assert offsets == sorted(offsets) and len(set(offsets)) == len(values)
    assert read_values(bs, topic, len(values)) == values
    codes = produce_errors(kafka_cluster, topic)
    assert codes[:3] == [[Errors.NOT_LEADER_OR_FOLLOWER]] * 3


def finds_before_join(cluster: Any, topic: str, group: str) -> list[Any]:
    """Join ``group`` with a consumer; its FindCoordinator records sent before its first JoinGroup."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group, "client.id": group,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "retry.backoff.ms": 20})
    try:
        c.subscribe([topic])
        wait_until(lambda: c.poll(0.1) is None and bool(c.assignment()), 20, interval_s=0,
                   what="the consumer's assignment")
    finally:
        c.close()
    first_join = min(r.time for r in cluster.requests(api="JoinGroup", client_id=group))
    return [r for r in cluster.requests(api="FindCoordinator", client_id=group) if r.time < first_join]


def test_injected_coordinator_not_available_delays_join_by_that_many_retries(kafka_cluster: Any) -> None:
    """COORDINATOR_NOT_AVAILABLE x2 on FindCoordinator for one group: the consumer's first two
    lookups fail, it retries, and joins only after a lookup succeeded; an undisturbed consumer's
    lookups all succeed. (How many successful lookups librdkafka sends before joining varies
    with its internal timing, two or three; the failed ones are exactly the injected ones.)"""
    topic = unique("inject-fc")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    baseline = finds_before_join(kafka_cluster, topic, unique("g-plain"))
    group = unique("g-fc")
    kafka_cluster.inject_errors("FindCoordinator", ["COORDINATOR_NOT_AVAILABLE"] * 2, group=group)
    finds = finds_before_join(kafka_cluster, topic, group)
    assert [r.error_codes() for r in finds[:2]] == [[Errors.COORDINATOR_NOT_AVAILABLE]] * 2
    assert len(finds) > 2 and all(r.error_codes() == [Errors.NONE] for r in finds[2:])
    assert baseline and all(r.error_codes() == [Errors.NONE] for r in baseline)
    assert [r.fault for r in finds].count("error") == 2


def test_disconnect_then_normal_service(kafka_cluster: Any) -> None:
    """DISCONNECT closes the connection instead of answering; NONE lets a request through."""
    topic = unique("inject-disc")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
    kafka_cluster.inject_errors("Produce", ["DISCONNECT", "NONE"], topic=topic)
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 0, "reconnect.backoff.ms": 10,
                  "retry.backoff.ms": 10, "message.timeout.ms": 20000})
    for i in range(3):
        p.produce(topic, b"d%d" % i, partition=0)
        p.flush(20)
    assert read_values(kafka_cluster.bootstrap_servers, topic, 3) == [b"d0", b"d1", b"d2"]
    recs = [r for r in kafka_cluster.requests(api="Produce") if r.request.topic_data[0].name == topic]
    assert recs[0].disconnected and recs[0].fault == "disconnect"
    assert recs[1].fault is None and recs[1].error_codes() == [Errors.NONE]


def test_acks0_injected_error_closes_connection_and_appends_nothing(kafka_cluster: Any) -> None:
    topic = unique("inject-acks0")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
    kafka_cluster.inject_errors("Produce", ["NOT_LEADER_OR_FOLLOWER"], topic=topic)
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": 0, "linger.ms": 0})
    p.produce(topic, b"lost", partition=0)
    p.flush(10)
    wait_until(lambda: any(r.disconnected for r in kafka_cluster.requests(api="Produce")), 10,
               what="the acks=0 produce to be answered with a close")

    def produce_kept() -> bool:
        # acks=0 promises nothing: a record sent while the client is still noticing the close is
        # lost, so send again until one lands
        p.produce(topic, b"kept", partition=0)
        p.flush(1)
        return kafka_cluster.read_all(topic, 0) != []

    wait_until(produce_kept, 10, what="a record after the reconnect")
    values = [v for _, _, v in kafka_cluster.read_all(topic, 0)]
    assert values and set(values) == {b"kept"}   # nothing of the answered-with-a-close request


def test_latency_slows_one_broker_only_and_a_short_request_timeout_recovers(kafka_cluster: Any) -> None:
    """set_latency(300 ms) on one broker: the others answer at their usual speed; a client with
    request.timeout.ms below the latency times out there, and recovers once it is removed."""
    slow = 1
    topics = {}
    for b in range(3):
        t = unique(f"lat{b}")
        kafka_cluster.create_topic(t, partitions=1, replication_factor=1)
        topics[b] = t
    by_leader = {kafka_cluster.leader_of(t, 0): t for t in topics.values()}
    assert set(by_leader) == {0, 1, 2}   # consecutive topics are placed round robin
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": 1, "linger.ms": 0})

    def produce_ms(topic: str, n: int = 5) -> float:
        times = []
        for _ in range(n):
            t0 = time.monotonic()
            p.produce(topic, b"x", partition=0)
            assert p.flush(10) == 0
            times.append((time.monotonic() - t0) * 1000)
        return sorted(times)[n // 2]

    for t in by_leader.values():
        produce_ms(t, 1)   # connections and metadata ready
    # a client whose request timeout is below the latency (metadata fetched beforehand)
    kp = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, acks=1, request_timeout_ms=150,
                       retries=0, max_block_ms=5000, linger_ms=0)
    kp.partitions_for(by_leader[slow])
    kafka_cluster.set_latency(slow, 300)
    slow_ms = produce_ms(by_leader[slow])
    fast_ms = [produce_ms(by_leader[b]) for b in (0, 2)]
    assert slow_ms >= 300
    assert max(fast_ms) < 300, fast_ms   # not slowed: the delay waits on a timer, not a thread
    try:
        with pytest.raises(RequestTimedOutError):
            kp.send(by_leader[slow], b"late", partition=0).get(timeout=5)
        kafka_cluster.set_latency(slow, 0)
        md = kp.send(by_leader[slow], b"on-time", partition=0).get(timeout=10)
        assert md.offset >= 0
    finally:
        kp.close(2)


def test_intercept_metadata_with_a_made_up_leader(kafka_cluster: Any) -> None:
    """An interceptor answers Metadata naming broker 2 as leader of a partition broker 0 leads:
    the producer sends there, gets NOT_LEADER_OR_FOLLOWER, asks for metadata again (answered by
    the broker once broker 2 has refused the produce) and delivers to the real leader.

    The lie lasts until the refusal rather than for one answer: librdkafka may ask for the
    topic's metadata on two connections at start-up, and a true answer arriving after the
    made-up one would send the first produce to the real leader."""
    topic = unique("intercept")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    kafka_cluster.move_leader(topic, 0, 0)
    wrong = 2

    def fake_metadata(req: Any) -> Any:
        names = [t.name for t in (req.topics or ())]
        if topic not in names or kafka_cluster.requests(api="Produce", broker=wrong, client_id="intercepted"):
            return None
        brokers = [{"node_id": b, "host": h.rsplit(":", 1)[0], "port": int(h.rsplit(":", 1)[1])}
                   for b, h in ((b, kafka_cluster.broker(b).bootstrap_server) for b in range(3))]
        state = kafka_cluster.partition_state(topic, 0)
        return {"brokers": brokers, "cluster_id": kafka_cluster.metadata.cluster_id, "controller_id": 0,
                "topics": [{"name": topic, "topic_id": str(state.topic_id), "partitions": [
                    {"partition_index": 0, "leader_id": wrong, "leader_epoch": state.leader_epoch,
                     "replica_nodes": list(state.replicas), "isr_nodes": list(state.isr)}]}]}

    kafka_cluster.intercept("Metadata", fake_metadata)
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                  "retry.backoff.ms": 10, "client.id": "intercepted"})
    p.produce(topic, b"v", partition=0)
    assert p.flush(20) == 0
    produces = [r for r in kafka_cluster.requests(api="Produce", client_id="intercepted")]
    assert produces[0].broker == wrong and produces[0].error_codes() == [Errors.NOT_LEADER_OR_FOLLOWER]
    assert produces[-1].broker == 0 and produces[-1].error_codes() == [Errors.NONE]
    metas = kafka_cluster.requests(api="Metadata", client_id="intercepted")
    assert any(r.fault == "intercept" for r in metas)
    assert any(r.fault is None and r.time > produces[0].time for r in metas)   # it asked again
