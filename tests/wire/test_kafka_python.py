"""kafka-python 3 against a 3-broker cluster (replication factor 3) over real sockets."""
from __future__ import annotations

import threading
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from wire_helpers import unique, wait_until

pytestmark = pytest.mark.timeout(60)

CONSUMER_OPTS: dict[str, Any] = dict(
    auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=1500,
    heartbeat_interval_ms=100, max_poll_interval_ms=10000, request_timeout_ms=5000,
    fetch_max_wait_ms=50, metadata_max_age_ms=1000, retry_backoff_ms=20,
    reconnect_backoff_ms=20)


@pytest.fixture()   # kafka_cluster is function-scoped (the cluster itself is the module's)
def admin(kafka_cluster: Any) -> Any:
    a = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000)
    yield a
    a.close()


def make_topic(admin: Any, partitions: int = 4) -> str:
    name = unique("kp")
    admin.create_topics([NewTopic(name, partitions, 3)])
    return name


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """acks=all with kafka-python's default idempotence (InitProducerId + sequences)."""
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", request_timeout_ms=5000,
                      retry_backoff_ms=20, linger_ms=0)
    assert p.config["enable_idempotence"] is True
    futures = [p.send(topic, v) for v in values]
    p.flush(10)
    for f in futures:
        f.get(timeout=5)
    p.close(timeout=5)


def subscribed(bs: str, topic: str, group: str) -> Any:
    """A group consumer subscribed only once it knows the topic's partitions.

    kafka-python 3.0 otherwise joins once with no partition metadata and at once again, and
    under heavy CPU load a poll() that times out in the middle of that second join can leave the
    consumer joined but with heartbeats disabled (a client-side race; the broker's answers are
    correct). Waiting for the metadata first avoids the double join.
    """
    c = KafkaConsumer(bootstrap_servers=bs, group_id=group, **CONSUMER_OPTS)
    wait_until(lambda: bool(c.partitions_for_topic(topic)), 10, what="topic metadata")
    c.subscribe([topic])
    return c


def consume(consumer: Any, count: int, timeout_s: float = 15.0) -> list[bytes]:
    got: list[bytes] = []

    def enough() -> bool:
        for records in consumer.poll(timeout_ms=300).values():
            got.extend(r.value for r in records)
        return len(got) >= count

    wait_until(enough, timeout_s, interval_s=0, what=f"{count} records")
    return got


def test_produce_consume_commit_and_resume(kafka_cluster: Any, admin: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin)
    group = unique("kp-group")
    first = [f"a{i}".encode() for i in range(40)]
    produce(bs, topic, first)

    c1 = subscribed(bs, topic, group)
    got = consume(c1, 40)
    assert sorted(got) == sorted(first)
    c1.commit()
    c1.close()

    second = [f"b{i}".encode() for i in range(20)]
    produce(bs, topic, second)
    c2 = subscribed(bs, topic, group)
    got2 = consume(c2, 20)
    assert sorted(got2) == sorted(second), "restart must resume from the committed offsets"
    assert not any(v in first for v in got2)
    c2.close()


def test_second_consumer_triggers_rebalance(kafka_cluster: Any, admin: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, partitions=4)
    group = unique("kp-rebalance")
    consumers = [subscribed(bs, topic, group)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def poll_loop(c: Any) -> None:
        try:
            while not stop.is_set():
                c.poll(timeout_ms=300)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=poll_loop, args=(consumers[0],), daemon=True)]
    threads[0].start()
    try:
        wait_until(lambda: len(consumers[0].assignment()) == 4, 15, what="first consumer owns 4 partitions")
        consumers.append(subscribed(bs, topic, group))
        threads.append(threading.Thread(target=poll_loop, args=(consumers[1],), daemon=True))
        threads[1].start()
        wait_until(lambda: [len(c.assignment()) for c in consumers] == [2, 2], 20,
                   what="partitions split 2/2")
        a, b = (set(c.assignment()) for c in consumers)
        assert not a & b
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for c in consumers:
            c.close()
    assert not errors


def test_admin_topics_and_groups(kafka_cluster: Any, admin: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, partitions=2)
    assert topic in admin.list_topics()
    group = unique("kp-describe")
    produce(bs, topic, [b"x"])
    c = subscribed(bs, topic, group)
    consume(c, 1)
    described = admin.describe_groups([group])
    info = described[group]
    assert info["group_state"] == "Stable" and info["protocol_type"] == "consumer", info
    assert len(info["members"]) == 1
    listed = admin.list_groups()
    assert group in str(listed), listed
    c.close()
    admin.delete_topics([topic])
    wait_until(lambda: topic not in admin.list_topics(), 5, what="topic deleted")
