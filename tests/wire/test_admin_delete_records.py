"""DeleteRecords (key 21) and its purgatory with real clients and at the request level.

Ported: DeleteRecordsRequestTest (testDeleteRecordsHappyCase,
testErrorWhenDeletingRecordsWithInvalidOffset, testErrorWhenDeletingRecordsWithInvalidTopic),
ReplicaManagerTest (testDeleteRecordsInternalTopicDeleteDisallowed), LogOffsetTest
(testGetOffsetsAfterDeleteRecords); plus the DelayedDeleteRecords cases: a follower that does not
fetch holds the request in the DeleteRecords purgatory until it catches up, or until the timeout
(REQUEST_TIMED_OUT)."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kio.schema.delete_records.v2.request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from kio.schema.types import TopicName

from kafka_emu.common.errors import Errors
from kafka_emu.metrics import ClusterMetrics

from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.kafka_cluster(brokers=3, config={"log.retention.check.interval.ms": 50,
                                                           "log.initial.task.delay.ms": 0,
                                                           "replica.fetch.wait.max.ms": 50})]


@pytest.fixture
def admin(kafka_cluster: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})


def make_topic(cluster: Any, admin: AdminClient, rf: int = 3, records: int = 10, **config: str) -> str:
    name = unique("dr")
    for f in admin.create_topics([NewTopic(name, 1, rf, config=config)], operation_timeout=5).values():
        f.result(timeout=10)
    for i in range(records):
        cluster.produce(name, 0, [(b"k", b"v%d" % i)], acks=-1)
    return name


def leader_endpoint(cluster: Any, topic: str) -> str:
    info = cluster.metadata.broker(cluster.leader_of(topic))
    return f"{info.host}:{info.port}"


def raw_delete(cluster: Any, topic: str, offset: int, timeout_ms: int = 5000, partition: int = 0,
               endpoint: str | None = None) -> tuple[int, int]:
    client = RawClient(endpoint or leader_endpoint(cluster, topic))
    try:
        resp = client.send(DeleteRecordsRequest(
            topics=(DeleteRecordsTopic(name=TopicName(topic), partitions=(
                DeleteRecordsPartition(partition_index=partition, offset=offset),)),),
            timeout=timedelta(milliseconds=timeout_ms)))
    finally:
        client.close()
    p = resp.topics[0].partitions[0]
    return int(p.error_code), int(p.low_watermark)


def log_starts(cluster: Any, topic: str) -> list[int]:
    return [logs[(topic, 0)].log_start_offset for logs in cluster.logs.values() if (topic, 0) in logs]


def test_delete_records_happy_case(kafka_cluster: Any, admin: AdminClient) -> None:
    """DeleteRecordsRequestTest.testDeleteRecordsHappyCase and LogOffsetTest.testGetOffsetsAfterDeleteRecords:
    confluent-kafka's delete_records moves every replica's log start offset; consumers below it
    get OFFSET_OUT_OF_RANGE; earliest is the new log start."""
    topic = make_topic(kafka_cluster, admin)
    result = admin.delete_records([TopicPartition(topic, 0, 5)], operation_timeout=10)
    deleted = result[TopicPartition(topic, 0, 5)].result(timeout=15)
    assert deleted.low_watermark == 5
    assert log_starts(kafka_cluster, topic) == [5, 5, 5]
    assert kafka_cluster.fetch(topic, 0, 2).error_code == Errors.OFFSET_OUT_OF_RANGE
    assert [o for o, _, _ in kafka_cluster.read_all(topic, 0)][0] == 5
    offsets = admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()})
    assert next(iter(offsets.values())).result(timeout=10).offset == 5


def test_delete_records_kafka_python_high_watermark(kafka_cluster: Any, admin: AdminClient) -> None:
    """kafka-python's delete_records with offset -1 (DeleteRecordsRequest.HIGH_WATERMARK) deletes
    everything below the HW; the segments below the new log start go at the next retention check."""
    topic = make_topic(kafka_cluster, admin, **{"segment.bytes": "200"})
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    try:
        result = client.delete_records({KpTopicPartition(topic, 0): -1}, timeout_ms=10000)
    finally:
        client.close()
    assert result[KpTopicPartition(topic, 0)]["low_watermark"] == 10
    leader = kafka_cluster.logs[kafka_cluster.leader_of(topic)][(topic, 0)]
    # every segment wholly below the new log start goes; the active one stays (as in Kafka)
    wait_until(lambda: leader.num_segments() == 1, what="segments below the log start deleted")
    assert leader.log_start_offset == 10


def test_error_when_deleting_records_with_invalid_offset(kafka_cluster: Any, admin: AdminClient) -> None:
    """DeleteRecordsRequestTest.testErrorWhenDeletingRecordsWithInvalidOffset: above the HW, or a
    negative offset other than -1, answers OFFSET_OUT_OF_RANGE with low watermark -1."""
    topic = make_topic(kafka_cluster, admin)
    assert raw_delete(kafka_cluster, topic, 11) == (Errors.OFFSET_OUT_OF_RANGE, -1)
    assert raw_delete(kafka_cluster, topic, -2) == (Errors.OFFSET_OUT_OF_RANGE, -1)
    fut = admin.delete_records([TopicPartition(topic, 0, 100)], operation_timeout=5)
    with pytest.raises(KafkaException) as exc:
        next(iter(fut.values())).result(timeout=10)
    assert exc.value.args[0].code() == Errors.OFFSET_OUT_OF_RANGE
    assert log_starts(kafka_cluster, topic) == [0, 0, 0]


def test_error_when_deleting_records_with_invalid_topic(kafka_cluster: Any) -> None:
    """DeleteRecordsRequestTest.testErrorWhenDeletingRecordsWithInvalidTopic"""
    endpoint = kafka_cluster.bootstrap_servers.split(",")[0]
    assert raw_delete(kafka_cluster, "no-such-topic", 0, endpoint=endpoint) == \
        (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)


def test_delete_records_on_follower_and_internal_and_compacted(kafka_cluster: Any, admin: AdminClient) -> None:
    """ReplicaManagerTest.testDeleteRecordsInternalTopicDeleteDisallowed (INVALID_TOPIC_EXCEPTION),
    a follower (NOT_LEADER_OR_FOLLOWER), and a compacted topic (POLICY_VIOLATION)."""
    topic = make_topic(kafka_cluster, admin)
    follower = next(b for b in kafka_cluster.live_brokers() if b != kafka_cluster.leader_of(topic))
    info = kafka_cluster.metadata.broker(follower)
    assert raw_delete(kafka_cluster, topic, 1, endpoint=f"{info.host}:{info.port}") == \
        (Errors.NOT_LEADER_OR_FOLLOWER, -1)
    kafka_cluster.ensure_offsets_topic()
    assert raw_delete(kafka_cluster, "__consumer_offsets", 0)[0] == Errors.INVALID_TOPIC_EXCEPTION
    compacted = make_topic(kafka_cluster, admin, **{"cleanup.policy": "compact"})
    assert raw_delete(kafka_cluster, compacted, 1) == (Errors.POLICY_VIOLATION, -1)


def _purgatory(cluster: Any, broker: int) -> Any:
    return cluster.broker(broker).replica_manager.delete_records_purgatory


def test_delete_records_while_follower_stalled_times_out(kafka_cluster: Any, admin: AdminClient) -> None:
    """DeleteRecords while a follower is stalled: the request parks in the DeleteRecords purgatory
    (NumDelayedOperations 1, in the broker metrics) and expires with REQUEST_TIMED_OUT and the low
    watermark reached so far (the stalled follower's log start, 0)."""
    topic = make_topic(kafka_cluster, admin, rf=2)
    leader = kafka_cluster.leader_of(topic)
    follower = next(r for r in kafka_cluster.partition_state(topic).replicas if r != leader)
    kafka_cluster.broker(follower).fetcher_manager.set_paused(True, leader_id=leader)
    try:
        assert raw_delete(kafka_cluster, topic, 4, timeout_ms=300) == (Errors.REQUEST_TIMED_OUT, 0)
        assert kafka_cluster.logs[leader][(topic, 0)].log_start_offset == 4
        # the leader has not heard of the follower's new log start (a fetch in flight at the
        # pause may have brought it the leader's, but the follower has not fetched since)
        assert kafka_cluster.broker(leader).partition(topic, 0).followers[follower].log_start_offset == 0
        rm = kafka_cluster.broker(leader).replica_manager
        # counted by on_expiration, which runs right after the response went out (as in Kafka)
        wait_until(lambda: rm.snapshot().stats.delete_records_expirations == 1, what="expiration counted")
        assert "DeleteRecords" in [p.name for p in rm.snapshot().purgatories]
    finally:
        kafka_cluster.broker(follower).fetcher_manager.set_paused(False, leader_id=leader)


def test_delete_records_while_follower_stalled_completes_on_catch_up(kafka_cluster: Any, admin: AdminClient) -> None:
    """The parked request completes (NONE, low watermark = the requested offset) as soon as the
    stalled follower fetches again and reports the new log start offset."""
    import threading

    topic = make_topic(kafka_cluster, admin, rf=2)
    leader = kafka_cluster.leader_of(topic)
    follower = next(r for r in kafka_cluster.partition_state(topic).replicas if r != leader)
    fetchers = kafka_cluster.broker(follower).fetcher_manager
    fetchers.set_paused(True, leader_id=leader)
    result: list[tuple[int, int]] = []
    try:
        t = threading.Thread(target=lambda: result.append(raw_delete(kafka_cluster, topic, 6, timeout_ms=30000)),
                             name="delete-records-client")
        t.start()
        purgatory = _purgatory(kafka_cluster, leader)
        wait_until(lambda: purgatory.num_delayed() == 1, what="DeleteRecords parked")
        assert not result
        with ClusterMetrics() as metrics:   # the broker's scrape, as Prometheus reads it
            metrics.register_broker(kafka_cluster.broker(leader))
            labels = {"broker_id": str(leader), "delayedOperation": "DeleteRecords"}
            assert metrics.sample("kafka_server_delayedoperationpurgatory_numdelayedoperations", labels) == 1
            assert metrics.sample("kafka_server_delayedoperationpurgatory_purgatorysize", labels) == 1
    finally:
        fetchers.set_paused(False, leader_id=leader)
    t.join(20)
    assert result == [(Errors.NONE, 6)]
    assert log_starts(kafka_cluster, topic) == [6, 6]
    assert _purgatory(kafka_cluster, leader).num_delayed() == 0


def test_delete_records_aiokafka(kafka_cluster: Any, admin: AdminClient) -> None:
    """aiokafka's delete_records: the low watermark of each partition, every replica moved."""
    import asyncio

    from aiokafka import TopicPartition as AioTopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

    topic = make_topic(kafka_cluster, admin)

    async def run() -> dict[Any, int]:
        client = AIOKafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
        await client.start()
        try:
            return await client.delete_records({AioTopicPartition(topic, 0): RecordsToDelete(7)}, timeout_ms=10000)
        finally:
            await client.close()

    assert asyncio.run(asyncio.wait_for(run(), 45)) == {AioTopicPartition(topic, 0): 7}
    assert log_starts(kafka_cluster, topic) == [7, 7, 7]
