"""OffsetDelete (key 47) over the wire: kafka-python's delete_group_offsets and raw requests.

Ported: KafkaApisTest.testOffsetDelete, testOffsetDeleteWithInvalidPartition,
testOffsetDeleteWithInvalidGroup; OffsetDeleteRequestTest
(testOffsetDeleteWithOldConsumerGroupProtocolAndOldGroupCoordinator: GROUP_SUBSCRIBED_TO_TOPIC
while a member consumes the topic, deleted once the group is empty). The coordinator rules
themselves are ported from GroupCoordinatorTest in tests/coordinator/test_offsets_admin.py."""
from __future__ import annotations

from typing import Any

import kafka.errors as kerr
import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition

from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.coordinator.group.records import offset_commit_key

from wire_helpers import unique, wait_until

pytestmark = [pytest.mark.timeout(90), pytest.mark.kafka_cluster(brokers=1)]


def committed(bs: str, group: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        return {(tp.topic, tp.partition): tp.offset
                for tp in c.committed([TopicPartition(t, p) for t, p in tps], timeout=10)}
    finally:
        c.close()


def test_offset_delete_subscribed_then_empty(kafka_cluster: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    consumed, other = unique("od-a"), unique("od-b")
    kafka_cluster.create_topic(consumed, 1, 1)
    kafka_cluster.create_topic(other, 1, 1)
    group = unique("g")
    member = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                       "session.timeout.ms": 6000, "heartbeat.interval.ms": 100})
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        member.subscribe([consumed])
        wait_until(lambda: (member.poll(0.1), bool(member.assignment()))[1], 20, what="assignment")
        member.commit(offsets=[TopicPartition(consumed, 0, 3), TopicPartition(other, 0, 5)], asynchronous=False)
        result = admin.delete_group_offsets(group, [KpTopicPartition(consumed, 0), KpTopicPartition(other, 0),
                                                    KpTopicPartition("no-such-topic", 0)])
        assert result == {KpTopicPartition(consumed, 0): kerr.GroupSubscribedToTopicError,
                          KpTopicPartition(other, 0): kerr.NoError,
                          KpTopicPartition("no-such-topic", 0): kerr.UnknownTopicOrPartitionError}
        assert committed(bs, group, [(consumed, 0), (other, 0)]) == {(consumed, 0): 3, (other, 0): -1001}
        member.close()
        wait_until(lambda: admin.delete_group_offsets(group, [KpTopicPartition(consumed, 0)])
                   == {KpTopicPartition(consumed, 0): kerr.NoError}, what="group empty, offsets deleted")
        assert committed(bs, group, [(consumed, 0)]) == {(consumed, 0): -1001}
        # the deletions are tombstones in __consumer_offsets (compaction then drops the offsets)
        tombstoned = {key for _, key, value in _offsets_records(kafka_cluster) if value is None}
        assert offset_commit_key(group, consumed, 0) in tombstoned
        assert offset_commit_key(group, other, 0) in tombstoned
    finally:
        admin.close()


def _offsets_records(cluster: Any) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for p in cluster.metadata.topic(OFFSETS_TOPIC).partitions:
        out.extend(cluster.read_all(OFFSETS_TOPIC, p))
    return out


def test_offset_delete_unknown_group(kafka_cluster: Any) -> None:
    """testOffsetDeleteWithInvalidGroup: a group the coordinator does not know answers
    GROUP_ID_NOT_FOUND at the top level (kafka-python raises it)."""
    topic = unique("od")
    kafka_cluster.create_topic(topic, 1, 1)
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    try:
        with pytest.raises(kerr.GroupIdNotFoundError):
            admin.delete_group_offsets(unique("nogroup"), [KpTopicPartition(topic, 0)])
    finally:
        admin.close()
