"""A leader stops while idempotent producers send with acks=all: they move to the new leader, and
every acknowledged message is then read back exactly once, in order."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaProducer

from wire_helpers import unique, wait_until

pytestmark = pytest.mark.timeout(90)

TOTAL = 600
STOP_AT = 200


def read_all(bs: str, topic: str, expected_at_least: int) -> list[int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": unique("verify"), "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50, "isolation.level": "read_committed"})
    c.subscribe([topic])
    got: list[int] = []
    idle_deadline = [time.monotonic() + 15]

    def done() -> bool:
        msgs = c.consume(num_messages=500, timeout=0.1)
        for m in msgs:
            assert m.error() is None, m.error()
            got.append(int(m.value()))
        if msgs:
            idle_deadline[0] = time.monotonic() + 1.0
        # everything acknowledged has arrived and nothing more came for a while
        return len(got) >= expected_at_least and time.monotonic() > idle_deadline[0]

    try:
        wait_until(done, 30, interval_s=0, what="all acknowledged records")
    finally:
        c.close()
    return got


def check(acked: list[int], got: list[int]) -> None:
    assert len(got) == len(set(got)), "duplicates after failover"
    assert got == sorted(got), "records out of order after failover"
    missing = set(acked) - set(got)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"


def stop_leader(cluster: Any, topic: str) -> int:
    leader = cluster.leader_of(topic, 0)
    cluster.stop_broker(leader)
    return leader


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_leader_failover_keeps_acknowledged_records(kafka_cluster: Any, client: str) -> None:
    topic = unique(f"failover-{client}")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    bs = kafka_cluster.bootstrap_servers
    acked: list[int] = []
    lock = threading.Lock()
    old_leader = -1

    if client == "confluent-kafka":
        p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 2, "message.timeout.ms": 30000, "retry.backoff.ms": 20,
                      "retry.backoff.max.ms": 200, "reconnect.backoff.ms": 20,
                      "reconnect.backoff.max.ms": 200, "topic.metadata.refresh.interval.ms": 500})

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                with lock:
                    acked.append(int(msg.value()))

        for i in range(TOTAL):
            if i == STOP_AT:
                old_leader = stop_leader(kafka_cluster, topic)   # records before this are in flight
            p.produce(topic, str(i).encode(), on_delivery=on_delivery)
            p.poll(0)
            if i % 20 == 0:
                p.poll(0.005)
        assert p.flush(40) == 0
    else:
        p = KafkaProducer(bootstrap_servers=bs, acks="all", linger_ms=2, retry_backoff_ms=20,
                          reconnect_backoff_ms=20, request_timeout_ms=5000, metadata_max_age_ms=500)
        assert p.config["enable_idempotence"] is True
        for i in range(TOTAL):
            if i == STOP_AT:
                old_leader = stop_leader(kafka_cluster, topic)
            f = p.send(topic, str(i).encode())
            f.add_callback(lambda md, v=i: (lock.acquire(), acked.append(v), lock.release()))
            if i % 20 == 0:
                time.sleep(0.005)
        p.flush(40)
        p.close(timeout=10)

    try:
        assert kafka_cluster.leader_of(topic, 0) not in (-1, old_leader)
        assert len(acked) == TOTAL, "every record is eventually acknowledged by the new leader"
        with lock:
            acked_sorted = sorted(acked)
        check(acked_sorted, read_all(kafka_cluster.bootstrap_servers, topic, len(acked_sorted)))
    finally:
        kafka_cluster.start_broker(old_leader)
        wait_until(lambda: old_leader in kafka_cluster.live_brokers(), 10, what="broker restarted")


def test_restarted_broker_keeps_its_port(kafka_cluster: Any) -> None:
    before = kafka_cluster.bootstrap_servers
    kafka_cluster.stop_broker(2)
    assert kafka_cluster.bootstrap_servers.count(",") == 1
    kafka_cluster.start_broker(2)
    assert kafka_cluster.bootstrap_servers == before
