"""confluent-kafka (librdkafka 2.16) against a 3-broker cluster (replication factor 3)."""
from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from wire_helpers import unique, wait_until

pytestmark = pytest.mark.timeout(60)


def consumer_conf(bs: str, group: str) -> dict[str, Any]:
    return {"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 1500, "heartbeat.interval.ms": 100,
            "max.poll.interval.ms": 10000, "fetch.wait.max.ms": 50, "topic.metadata.refresh.interval.ms": 1000,
            "reconnect.backoff.ms": 20, "retry.backoff.ms": 20}


@pytest.fixture()   # kafka_cluster is function-scoped (the cluster itself is the module's)
def admin(kafka_cluster: Any) -> Any:
    return AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})


def make_topic(admin: Any, partitions: int = 4) -> str:
    name = unique("ck")
    for f in admin.create_topics([NewTopic(name, partitions, 3)], operation_timeout=5).values():
        f.result(timeout=10)
    return name


def produce(bs: str, topic: str, values: list[bytes]) -> None:
    """acks=all with librdkafka's default (no idempotence)."""
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 1})
    errors: list[Any] = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(10) == 0
    assert not errors


def consume(c: Any, count: int, timeout_s: float = 15.0) -> list[bytes]:
    got: list[bytes] = []

    def enough() -> bool:
        for m in c.consume(num_messages=100, timeout=0.1):
            assert m.error() is None, m.error()
            got.append(m.value())
        return len(got) >= count

    wait_until(enough, timeout_s, interval_s=0, what=f"{count} records")
    return got


def test_produce_consume_commit_and_resume(kafka_cluster: Any, admin: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin)
    group = unique("ck-group")
    first = [f"a{i}".encode() for i in range(40)]
    produce(bs, topic, first)
    c1 = Consumer(consumer_conf(bs, group))
    c1.subscribe([topic])
    assert sorted(consume(c1, 40)) == sorted(first)
    c1.commit(asynchronous=False)
    c1.close()

    second = [f"b{i}".encode() for i in range(20)]
    produce(bs, topic, second)
    c2 = Consumer(consumer_conf(bs, group))
    c2.subscribe([topic])
    got = consume(c2, 20)
    assert sorted(got) == sorted(second), "restart must resume from the committed offsets"
    c2.close()


def test_second_consumer_triggers_rebalance(kafka_cluster: Any, admin: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, partitions=4)
    group = unique("ck-rebalance")
    a = Consumer(consumer_conf(bs, group))
    a.subscribe([topic])
    b = Consumer(consumer_conf(bs, group))
    try:
        def assigned(*cs: Any) -> list[int]:
            for c in cs:
                c.poll(0.05)
            return [len(c.assignment()) for c in cs]

        wait_until(lambda: assigned(a) == [4], 15, interval_s=0, what="first consumer owns 4 partitions")
        b.subscribe([topic])
        wait_until(lambda: assigned(a, b) == [2, 2], 20, interval_s=0, what="partitions split 2/2")
        assert not {(tp.topic, tp.partition) for tp in a.assignment()} & \
            {(tp.topic, tp.partition) for tp in b.assignment()}
    finally:
        a.close()
        b.close()


def test_admin_topics_and_groups(kafka_cluster: Any, admin: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, partitions=2)
    assert topic in admin.list_topics(timeout=5).topics
    group = unique("ck-describe")
    produce(bs, topic, [b"x"])
    c = Consumer(consumer_conf(bs, group))
    c.subscribe([topic])
    consume(c, 1)
    desc = admin.describe_consumer_groups([group])[group].result(timeout=10)
    assert desc.group_id == group
    assert str(desc.state).upper().endswith("STABLE"), desc.state
    assert len(desc.members) == 1
    listed = admin.list_consumer_groups().result(timeout=10)
    assert group in {g.group_id for g in listed.valid}
    c.close()
    for f in admin.delete_topics([topic], operation_timeout=5).values():
        f.result(timeout=10)
    wait_until(lambda: topic not in admin.list_topics(timeout=5).topics, 5, what="topic deleted")
