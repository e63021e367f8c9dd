"""DescribeLogDirs (35), DescribeProducers (61) and ListOffsets' special timestamps with real clients.

Ported: DescribeLogDirsRequestTest.testDescribeLogDirsRequest, ReplicaManagerTest.testDescribeLogDirs
and testDescribeLogDirsWithoutAnyPartitionTopic; KafkaApisTest.testDescribeProducers;
ListOffsetsRequestTest.testResponseDefaultOffsetAndLeaderEpochForAllVersions (v9+: -4 and -5) and
LogOffsetTest.testFetchOffsetByTimestampForMaxTimestampWithUnorderedTimestamps /
testGetOffsetsAfterDeleteRecords (earliest and earliest-local after DeleteRecords)."""
from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec as CkOffsetSpec
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import OffsetSpec
from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
from kio.schema.types import TopicName

from kafka_emu.broker.storage.log_manager import IN_MEMORY_LOG_DIR
from kafka_emu.common.errors import Errors

from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(90), pytest.mark.kafka_cluster(brokers=2)]


@pytest.fixture
def admin(kafka_cluster: Any) -> Any:
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    yield client
    client.close()


def test_describe_log_dirs(kafka_cluster: Any, admin: Any) -> None:
    """testDescribeLogDirsRequest: every broker answers its (one, notional) log dir with the sizes
    of the partitions it hosts, leader or follower, offset lag 0; only requested partitions are
    listed (testDescribeLogDirsWithoutAnyPartitionTopic: a topic with none is left out)."""
    topic = unique("ld")
    kafka_cluster.create_topic(topic, 2, 2)
    for i in range(4):
        kafka_cluster.produce(topic, 0, [(b"k", b"v" * 50)], acks=-1)
    result = admin.describe_log_dirs({topic: [0, 1]})
    assert sorted(r["broker"] for r in result) == [0, 1]
    for r in result:
        (log_dir,) = r["log_dirs"]
        assert log_dir["log_dir"] == IN_MEMORY_LOG_DIR.format(broker_id=r["broker"])
        assert log_dir["error_code"] == Errors.NONE
        (t,) = log_dir["topics"]
        sizes = {p["partition_index"]: p["partition_size"] for p in t["partitions"]}
        log = kafka_cluster.logs[r["broker"]][(topic, 0)]
        wait_until(lambda: log.log_end_offset == 4, what="replicated")
        assert sizes[0] == log.size_bytes > 0 and sizes[1] == 0
        assert {p["offset_lag"] for p in t["partitions"]} == {0}
        assert {p["is_future_key"] for p in t["partitions"]} == {False}
        assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    only_other = admin.describe_log_dirs({"no-such-topic": [0]})
    assert all(r["log_dirs"][0]["topics"] == [] for r in only_other)


def test_describe_producers(kafka_cluster: Any, admin: Any) -> None:
    """KafkaApisTest.testDescribeProducers: an idempotent producer's id, epoch, last sequence and
    last timestamp on the partition it wrote; none elsewhere; coordinator epoch and transaction
    start -1 (no transactions)."""
    topic = unique("dp")
    kafka_cluster.create_topic(topic, 2, 2)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, enable_idempotence=True, acks="all")
    for i in range(5):
        producer.send(topic, b"v%d" % i, partition=0, timestamp_ms=1000 + i)
    producer.flush()
    producer.close()
    result = admin.describe_producers([TopicPartition(topic, 0), TopicPartition(topic, 1)])
    (state,) = result[TopicPartition(topic, 0)].active_producers
    assert state.producer_id >= 0 and state.producer_epoch == 0
    assert (state.last_sequence, state.last_timestamp) == (4, 1004)
    assert (state.coordinator_epoch, state.current_transaction_start_offset) == (-1, -1)
    assert result[TopicPartition(topic, 1)].active_producers == []


def test_describe_producers_errors(kafka_cluster: Any) -> None:
    """KafkaApisTest.testDescribeProducers error cases: unknown topic, invalid name, a partition
    this broker does not host (NOT_LEADER_OR_FOLLOWER); a follower replica answers from its own
    producer state."""
    topic = unique("dp")
    kafka_cluster.create_topic(topic, 2, 1)
    hosted = {p: kafka_cluster.leader_of(topic, p) for p in (0, 1)}
    broker = hosted[0]
    other = next(p for p in (0, 1) if hosted[p] != broker) if len(set(hosted.values())) > 1 else None
    info = kafka_cluster.metadata.broker(broker)
    client = RawClient(f"{info.host}:{info.port}")
    try:
        resp = client.send(DescribeProducersRequest(topics=(
            TopicRequest(name=TopicName(topic), partition_indexes=(0, 1)),
            TopicRequest(name=TopicName("no-such-topic"), partition_indexes=(0,)),
            TopicRequest(name=TopicName("bad/name"), partition_indexes=(0,)))))
    finally:
        client.close()
    codes = {(t.name, p.partition_index): int(p.error_code) for t in resp.topics for p in t.partitions}
    assert codes[(topic, 0)] == Errors.NONE
    if other is not None:
        assert codes[(topic, other)] == Errors.NOT_LEADER_OR_FOLLOWER
    assert codes[("no-such-topic", 0)] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert codes[("bad/name", 0)] == Errors.INVALID_TOPIC_EXCEPTION


def test_list_offsets_special_timestamps(kafka_cluster: Any, admin: Any) -> None:
    """ListOffsetsRequestTest.testResponseDefaultOffsetAndLeaderEpochForAllVersions (v9+) and
    LogOffsetTest.testFetchOffsetByTimestampForMaxTimestampWithUnorderedTimestamps through
    kafka-python's list_partition_offsets: -1 the HW, -2 and -4 the log start, -3 the record with
    the largest timestamp (not the last one), -5 offset -1 (nothing tiered); after DeleteRecords
    -2 and -4 move to the new log start (testGetOffsetsAfterDeleteRecords)."""
    topic = unique("lo")
    kafka_cluster.create_topic(topic, 1, 2)
    for ts in (1000, 1003, 1007, 1001, 1002):
        kafka_cluster.produce(topic, 0, [(b"k", b"v")], acks=-1, timestamp_ms=ts)
    tp = TopicPartition(topic, 0)

    def offsets() -> dict[int, tuple[int, int, int | None]]:
        out = {}
        for spec in OffsetSpec:
            r = admin.list_partition_offsets({tp: spec})[tp]
            out[int(spec)] = (r.offset, r.timestamp, r.leader_epoch)
        return out

    assert offsets() == {-1: (5, -1, 0), -2: (0, -1, 0), -3: (2, 1007, 0), -4: (0, -1, 0), -5: (-1, -1, None)}
    confluent = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    ck = confluent.list_offsets({CkTopicPartition(topic, 0): CkOffsetSpec.max_timestamp()})
    info = next(iter(ck.values())).result(timeout=10)
    assert (info.offset, info.timestamp) == (2, 1007)
    admin.delete_records({tp: 3})
    got = offsets()
    assert got[-2] == got[-4] == (3, -1, 0)
    assert got[-3] == (4, 1002, 0)   # the largest timestamp among the records left
