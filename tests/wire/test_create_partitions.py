"""CreatePartitions (key 37) over the wire: confluent-kafka's AdminClient, kafka-python's
KafkaAdminClient, aiokafka's admin client and raw requests, against a 3-broker cluster.

Ported: Kafka's ``PlaintextAdminIntegrationTest.testCreatePartitions`` (every error case with and
without validate_only, Kafka's messages), ``AddPartitionsTest`` (testWrongReplicaCount,
testMissingPartitionsInCreatePartitions, testIncrementPartitions, testManualAssignmentOfReplicas),
``ControllerApis.createPartitions``' duplicate-name rule; plus what clients do with the new
partitions: a consumer group rebalances onto them, keyed producers map keys by the new count.
"""
from __future__ import annotations

import asyncio
import zlib
from datetime import timedelta
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka import KafkaAdminClient, KafkaProducer
from kafka.errors import InvalidPartitionsError
from kafka.partitioner.default import murmur2
from kio.index import load_request_schema as req_cls
from kio.schema.errors import ErrorCode

from kafka_emu.broker.protocol.adapter import build, item_cls
from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(60), pytest.mark.kafka_cluster(brokers=3)]


@pytest.fixture()
def admin(kafka_cluster: Any) -> Iterator[AdminClient]:
    yield AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers, "log_level": 3})


def _topic(admin: AdminClient, partitions: int, rf: int) -> str:
    name = unique("cp")
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(10)
    return name


def _grow(admin: AdminClient, topic: str, count: int, assignment: list[list[int]] | None = None,
          validate_only: bool = False) -> KafkaError | None:
    """The error of one CreatePartitions (None on success)."""
    spec = NewPartitions(topic, count) if assignment is None else NewPartitions(topic, count, assignment)
    future = admin.create_partitions([spec], validate_only=validate_only)[topic]
    try:
        future.result(10)
    except KafkaException as exc:
        return exc.args[0]
    return None


def _count(kafka_cluster: Any, topic: str) -> int:
    return len(kafka_cluster.metadata.topic(topic).partitions)


def test_create_partitions_error_cases(kafka_cluster: Any, admin: AdminClient) -> None:
    """PlaintextAdminIntegrationTest.testCreatePartitions: grow with and without assignments,
    then each refused case with and without validate_only, leaving the count unchanged.

    The refusals go through kafka-python (librdkafka refuses some malformed assignments itself,
    before sending), a few through confluent-kafka too."""
    topic1, topic2 = _topic(admin, 1, 1), _topic(admin, 1, 2)
    assert _grow(admin, topic1, 3, validate_only=True) is None
    assert _count(kafka_cluster, topic1) == 1                      # validate_only changed nothing
    assert _grow(admin, topic1, 3) is None
    assert _grow(admin, topic2, 3, [[0, 1], [1, 2]], validate_only=True) is None
    assert _grow(admin, topic2, 3, [[0, 1], [1, 2]]) is None
    replicas = [kafka_cluster.partition_state(topic2, p).replicas for p in (1, 2)]
    assert replicas == [(0, 1), (1, 2)]
    missing = unique("missing")
    cases: list[tuple[str, int, list[list[int]] | None, int, str | None]] = [
        (topic1, 1, None, ErrorCode.invalid_partitions,
         f"The topic {topic1} currently has 3 partition(s); 1 would not be an increase."),
        (topic2, 3, None, ErrorCode.invalid_partitions, "Topic already has 3 partition(s)."),
        (topic2, 3, [[0, 1], [1, 2]], ErrorCode.invalid_partitions, "Topic already has 3 partition(s)."),
        (topic2, 3, [[1, 2], [0, 1]], ErrorCode.invalid_partitions, "Topic already has 3 partition(s)."),
        (missing, 2, None, ErrorCode.unknown_topic_or_partition, None),
        (topic1, -22, None, ErrorCode.invalid_partitions,
         f"The topic {topic1} currently has 3 partition(s); -22 would not be an increase."),
        (topic1, 4, [[1, 2]], ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes a partition with 2 replica(s), but this is not "
         "consistent with previous partitions, which have 1 replica(s)."),
        (topic1, 6, [[1]], ErrorCode.invalid_replica_assignment,
         "Attempted to add 3 additional partition(s), but only 1 assignment(s) were specified."),
        (topic1, 4, [[1], [2]], ErrorCode.invalid_replica_assignment,
         "Attempted to add 1 additional partition(s), but only 2 assignment(s) were specified."),
        (topic2, 4, [[1, 1]], ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes the broker 1 more than once."),
        (topic1, 4, [[12]], ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes broker 12, but no such broker is registered."),
        (topic1, 4, [], ErrorCode.invalid_replica_assignment,
         "Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified."),
    ]
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000)
    try:
        for validate_only in (True, False):
            for topic, count, assignment, code, message in cases:
                spec: Any = count if assignment is None else {"count": count, "assignments": assignment}
                (result,) = client.create_partitions({topic: spec}, validate_only=validate_only,
                                                     raise_errors=False).results
                assert (result.error_code, result.error_message) == (code.value, message), (topic, count, assignment)
            error = _grow(admin, topic1, 2, validate_only=validate_only)
            assert error is not None and error.code() == KafkaError.INVALID_PARTITIONS
            assert error.str() == f"The topic {topic1} currently has 3 partition(s); 2 would not be an increase."
    finally:
        client.close()
    assert (_count(kafka_cluster, topic1), _count(kafka_cluster, topic2)) == (3, 3)


def test_new_partitions_have_leaders_on_every_broker_and_continue_the_stripe(kafka_cluster: Any,
                                                                               admin: AdminClient) -> None:
    """AddPartitionsTest.testIncrementPartitions / testReplicaPlacementAllServers: every new
    partition has a leader among its replicas, hosted by the brokers; placement continues the
    topic's round robin (replication factor kept)."""
    topic = _topic(admin, 3, 2)
    first = [kafka_cluster.partition_state(topic, p).replicas for p in range(3)]
    assert _grow(admin, topic, 7) is None
    states = [kafka_cluster.partition_state(topic, p) for p in range(7)]
    start = first[0][0]
    for p, st in enumerate(states):
        assert st.replicas == ((start + p) % 3, (start + p + 1) % 3)
        assert st.leader == st.replicas[0] and st.isr == st.replicas
    assert [s.replicas for s in states[:3]] == first
    for st in states[3:]:
        wait_until(lambda st=st: all(kafka_cluster.broker(r).partition(topic, st.partition) is not None
                                     for r in st.replicas), what="replicas hosted")
        assert kafka_cluster.broker(st.leader).partition(topic, st.partition).is_leader
    md = admin.list_topics(topic, timeout=10).topics[topic]
    assert sorted(md.partitions) == list(range(7))
    kafka_cluster.produce(topic, 6, [(b"k", b"v")])
    assert [value for _offset, _key, value in kafka_cluster.read_all(topic, 6)] == [b"v"]


def test_kafka_python_create_partitions(kafka_cluster: Any) -> None:
    """AddPartitionsTest.testManualAssignmentOfReplicas and testWrongReplicaCount through
    kafka-python's KafkaAdminClient."""
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000)
    try:
        topic = unique("kp-cp")
        kafka_cluster.create_topic(topic, 1, 2)
        client.create_partitions({topic: {"count": 3, "assignments": [[0, 1], [2, 0]]}})
        assert [kafka_cluster.partition_state(topic, p).replicas for p in (1, 2)] == [(0, 1), (2, 0)]
        client.create_partitions({topic: 4})
        assert _count(kafka_cluster, topic) == 4
        with pytest.raises(InvalidPartitionsError):
            client.create_partitions({topic: 4})
        response = client.create_partitions({topic: {"count": 5, "assignments": [[0, 1, 2]]}}, raise_errors=False)
        assert response.results[0].error_code == ErrorCode.invalid_replica_assignment.value
    finally:
        client.close()


def test_aiokafka_create_partitions(kafka_cluster: Any) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewPartitions as AioNewPartitions

    topic = unique("aio-cp")
    kafka_cluster.create_topic(topic, 2, 3)

    async def run() -> None:
        client = AIOKafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=5000)
        await client.start()
        try:
            await client.create_partitions({topic: AioNewPartitions(total_count=5, new_assignments=None)})
        finally:
            await client.close()

    asyncio.run(run())
    assert _count(kafka_cluster, topic) == 5


def _create_partitions_request(version: int, topics: list[tuple[str, int]], timeout_ms: int = 5000) -> Any:
    cls = req_cls(37, version)
    topic_cls = item_cls(cls, "topics")
    return build(cls, topics=tuple(build(topic_cls, name=n, count=c, assignments=None) for n, c in topics),
                 timeout=timedelta(milliseconds=timeout_ms), validate_only=False)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_raw_duplicates_and_timeout(kafka_cluster: Any, version: int) -> None:
    """ControllerApis.createPartitions: a topic named twice is INVALID_REQUEST and not processed,
    the others are; a zero timeout has passed before the controller runs the request
    (REQUEST_TIMED_OUT for every topic, nothing created)."""
    a, b = unique("raw-a"), unique("raw-b")
    kafka_cluster.create_topic(a, 1, 1)
    kafka_cluster.create_topic(b, 1, 1)
    client = RawClient(kafka_cluster.bootstrap_servers.split(",")[0])
    try:
        resp = client.send(_create_partitions_request(version, [(a, 2), (b, 2), (a, 3)]))
        got = {r.name: (r.error_code, r.error_message) for r in resp.results}
        assert got == {a: (ErrorCode.invalid_request, "Duplicate topic name."), b: (ErrorCode.none, None)}
        assert (_count(kafka_cluster, a), _count(kafka_cluster, b)) == (1, 2)
        resp = client.send(_create_partitions_request(version, [(a, 4)], timeout_ms=0))
        assert [r.error_code for r in resp.results] == [ErrorCode.request_timed_out]
        assert _count(kafka_cluster, a) == 1
    finally:
        client.close()


def test_consumer_group_rebalances_onto_new_partitions(kafka_cluster: Any, admin: AdminClient) -> None:
    """A running group notices the partition count change through Metadata, rebalances, and
    consumes what is produced to the new partitions."""
    topic = _topic(admin, 2, 3)
    assigned: list[set[int]] = []
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": unique("g"),
                         "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 300,
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 100, "log_level": 3})
    consumer.subscribe([topic], on_assign=lambda _c, parts: assigned.append({p.partition for p in parts}))
    seen: dict[int, list[bytes]] = {}
    try:
        wait_until(lambda: consumer.poll(0.05) is None and bool(assigned), what="first assignment")
        assert assigned[-1] == {0, 1}
        assert _grow(admin, topic, 4) is None
        for p in range(4):
            kafka_cluster.produce(topic, p, [(None, f"p{p}".encode())])

        def consumed_all() -> bool:
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                seen.setdefault(msg.partition(), []).append(msg.value())
            return set(seen) == {0, 1, 2, 3}

        wait_until(consumed_all, timeout_s=20, what="records of all four partitions")
        assert assigned[-1] == {0, 1, 2, 3}
        assert seen[2] == [b"p2"] and seen[3] == [b"p3"]
    finally:
        consumer.close()


def test_keyed_producers_map_keys_by_the_new_count(kafka_cluster: Any, admin: AdminClient) -> None:
    """kafka-python's default partitioner (murmur2, as Java's) and librdkafka's default
    (consistent_random: CRC-32) place each key by the partition count they last saw in
    Metadata: after growth, by the new count."""
    topic = _topic(admin, 2, 3)
    keys = [f"key-{i}".encode() for i in range(40)]
    java_like = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, metadata_max_age_ms=200,
                              request_timeout_ms=5000, retry_backoff_ms=20)
    librdkafka = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers,
                           "topic.metadata.refresh.interval.ms": 200, "log_level": 3})
    try:
        wait_until(lambda: java_like.partitions_for(topic) == {0, 1}, what="producer metadata")
        assert _grow(admin, topic, 5) is None
        wait_until(lambda: java_like.partitions_for(topic) == {0, 1, 2, 3, 4}, what="producer sees 5 partitions")
        placed = [java_like.send(topic, key=k, value=b"v").get(timeout=10).partition for k in keys]
        assert placed == [(murmur2(k) & 0x7FFFFFFF) % 5 for k in keys]

        def sees_five() -> bool:
            return len(librdkafka.list_topics(topic, timeout=5).topics[topic].partitions) == 5

        wait_until(sees_five, what="librdkafka sees 5 partitions")
        delivered: dict[bytes, int] = {}
        for k in keys:
            librdkafka.produce(topic, key=k, value=b"v",
                               on_delivery=lambda err, msg: delivered.__setitem__(msg.key(), msg.partition()))
        librdkafka.flush(10)
        assert delivered == {k: zlib.crc32(k) % 5 for k in keys}
    finally:
        java_like.close(timeout=5)


@pytest.mark.kafka_cluster(brokers=1)
def test_internal_offsets_topic_can_grow_and_groups_keep_working(kafka_cluster: Any, admin: AdminClient) -> None:
    """Kafka's controller (ReplicationControlManager.createPartitions) has no internal-topic
    check: ``__consumer_offsets`` grows too. Groups keep their coordinator partition (the
    coordinator maps groups by ``offsets.topic.num.partitions``), so commits still work."""
    kafka_cluster.ensure_offsets_topic()
    before = _count(kafka_cluster, "__consumer_offsets")
    assert _grow(admin, "__consumer_offsets", before + 2) is None
    assert _count(kafka_cluster, "__consumer_offsets") == before + 2
    topic = _topic(admin, 1, 1)
    kafka_cluster.produce(topic, 0, [(None, b"v")])
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": unique("g"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 3})
    got: list[Any] = []
    try:
        consumer.subscribe([topic])

        def polled() -> bool:
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                got.append(msg)
            return bool(got)

        wait_until(polled, what="the record")
        consumer.commit(got[0], asynchronous=False)
        (committed,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.offset == 1
    finally:
        consumer.close()
