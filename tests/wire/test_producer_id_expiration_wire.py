"""Producer-id expiration (KIP-854) over the wire: Kafka's ProducerIdExpirationTest
(testProducerIdExpirationWithNoTransactions, testDynamicProducerIdExpirationMs) with a
confluent-kafka idempotent producer, kafka-python's DescribeProducers and the brokers' clock
moved by ``advance_time`` (the expiration check runs on it; no real wait)."""
from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kafka import KafkaAdminClient, TopicPartition

from wire_helpers import unique, wait_until

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.kafka_cluster(brokers=1, time="offset", config={
                  "producer.id.expiration.ms": 10_000, "producer.id.expiration.check.interval.ms": 1_000})]


def send(producer: Producer, topic: str) -> None:
    errors: list[Any] = []
    producer.produce(topic, value=b"v", partition=0, on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(30)
    assert errors == [None]


def test_producer_id_expiration_with_no_transactions(kafka_cluster: Any) -> None:
    """testProducerIdExpirationWithNoTransactions (plus testDynamicProducerIdExpirationMs's
    dynamic change): an idle idempotent producer leaves DescribeProducers after
    ``producer.id.expiration.ms``; its next batch (sequence 1, for a partition that forgot it)
    is accepted and lists it again; a larger value set with IncrementalAlterConfigs (this
    broker's dynamic config) keeps it."""
    topic = unique("pidexp")
    kafka_cluster.create_topic(topic, 1, 1)
    tp = TopicPartition(topic, 0)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "enable.idempotence": True})
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    try:
        def producers() -> list[Any]:
            return admin.describe_producers([tp])[tp].active_producers

        send(producer, topic)
        (state,) = producers()
        assert state.last_sequence == 0
        kafka_cluster.advance_time(9_000)
        assert len(producers()) == 1              # not idle long enough
        kafka_cluster.advance_time(2_000)
        assert producers() == []
        send(producer, topic)                     # sequence 1: accepted, tracked again
        (again,) = producers()
        assert (again.producer_id, again.last_sequence) == (state.producer_id, 1)

        entry = ConfigEntry("producer.id.expiration.ms", "100000", incremental_operation=AlterConfigOpType.SET)
        alter = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
        futures = alter.incremental_alter_configs(
            [ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[entry])])
        for f in futures.values():
            f.result(30)
        log = kafka_cluster.logs[0][(topic, 0)]
        wait_until(lambda: log.config.producer_id_expiration_ms == 100_000, 10, what="the dynamic config")
        kafka_cluster.advance_time(11_000)
        assert len(producers()) == 1
    finally:
        admin.close()
