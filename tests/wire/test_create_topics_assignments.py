"""CreateTopics (key 19) with manual replica assignments, over the wire: confluent-kafka's
AdminClient, kafka-python's KafkaAdminClient and raw requests, against a 3-broker cluster.

Ported: Kafka's ``ReplicationControlManagerTest.testCreateTopicsWithValidateOnlyFlag``/
``testInvalidCreateTopicsWithValidateOnlyFlag``/``testCreateTopicsWithPolicy``' manual-assignment
cases and ``ReplicationControlManager.createTopic``'s checks (each error with Kafka's message, with
and without validate_only), and librdkafka's test 0081_admin (the assignment
``[[2,1,0],[0,1,2],[1,0,2],[2,0,1]]`` created as given, not round robin).
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kio.index import load_request_schema as req_cls

from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.common.errors import Errors
from wire_helpers import RawClient, unique

pytestmark = [pytest.mark.timeout(60), pytest.mark.kafka_cluster(brokers=3)]

LIBRDKAFKA_0081 = [[2, 1, 0], [0, 1, 2], [1, 0, 2], [2, 0, 1]]


def _replicas(kafka_cluster: Any, topic: str) -> list[list[int]]:
    info = kafka_cluster.metadata.topic(topic)
    return [list(info.partitions[p].replicas) for p in sorted(info.partitions)]


def test_confluent_kafka_creates_the_assignment_it_asked_for(kafka_cluster: Any) -> None:
    """librdkafka 0081_admin: the replicas, their order and the leaders are the request's."""
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers, "log_level": 3})
    topic = unique("ct")
    admin.create_topics([NewTopic(topic, 4, replica_assignment=LIBRDKAFKA_0081)], validate_only=True)[topic].result(10)
    assert kafka_cluster.metadata.topic(topic) is None
    admin.create_topics([NewTopic(topic, 4, replica_assignment=LIBRDKAFKA_0081)])[topic].result(10)
    assert _replicas(kafka_cluster, topic) == LIBRDKAFKA_0081
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    assert [[n.id for n in p.replicas] for p in described.partitions] == LIBRDKAFKA_0081
    assert [p.leader.id for p in described.partitions] == [2, 0, 1, 2]
    bad = unique("ct")
    with pytest.raises(KafkaException) as exc:
        admin.create_topics([NewTopic(bad, 2, replica_assignment=[[0, 1], [1, 7]])])[bad].result(10)
    assert exc.value.args[0].code() == Errors.INVALID_REPLICA_ASSIGNMENT
    assert "broker 7, but no such broker is registered" in exc.value.args[0].str()


def test_kafka_python_creates_the_assignment_it_asked_for(kafka_cluster: Any) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        topic = unique("ct")
        assignment = {0: [1, 2], 1: [2, 0], 2: [0, 1]}
        admin.create_topics([KpNewTopic(topic, -1, -1, replica_assignments=assignment)])
        assert _replicas(kafka_cluster, topic) == [[1, 2], [2, 0], [0, 1]]
        bad = unique("ct")
        response = admin.create_topics([KpNewTopic(bad, -1, -1, replica_assignments={0: [1, 1]})],
                                       raise_errors=False)
        assert [(t["name"], t["error_code"]) for t in response["topics"]] == [(bad, Errors.INVALID_REPLICA_ASSIGNMENT)]
        assert kafka_cluster.metadata.topic(bad) is None
    finally:
        admin.close()


def _create(client: RawClient, topic: str, assignments: list[tuple[int, list[int]]], validate_only: bool,
            num_partitions: int = -1, replication_factor: int = -1) -> tuple[int, str | None, int, int]:
    cls = req_cls(19, 7)
    t_cls = item_cls(cls, "topics")
    a_cls = item_cls(t_cls, "assignments")
    body = build(cls, timeout=timedelta(seconds=5), validate_only=validate_only, topics=(build(
        t_cls, name=topic, num_partitions=num_partitions, replication_factor=replication_factor, configs=(),
        assignments=tuple(build(a_cls, partition_index=p, broker_ids=tuple(b)) for p, b in assignments)),))
    result = client.send(body).topics[0]
    return int(result.error_code), result.error_message, int(result.num_partitions), int(result.replication_factor)


INVALID = [
    # (assignments, num_partitions, replication_factor, error, message)
    ([(0, [0, 1])], -1, 2, Errors.INVALID_REQUEST,
     "A manual partition assignment was specified, but replication factor was not set to -1."),
    ([(0, [0, 1])], 1, -1, Errors.INVALID_REQUEST,
     "A manual partition assignment was specified, but numPartitions was not set to -1."),
    ([(0, [])], -1, -1, Errors.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes an empty replica list."),
    ([(0, [0, 3])], -1, -1, Errors.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes broker 3, but no such broker is registered."),
    ([(0, [1, 0, 1])], -1, -1, Errors.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes the broker 1 more than once."),
    ([(0, [0, 1]), (1, [0, 1, 2])], -1, -1, Errors.INVALID_REPLICA_ASSIGNMENT,
     "The manual partition assignment includes a partition with 3 replica(s), but this is not consistent "
     "with previous partitions, which have 2 replica(s)."),
    ([(0, [0, 1]), (0, [1, 2])], -1, -1, Errors.INVALID_REPLICA_ASSIGNMENT,
     "Found multiple manual partition assignments for partition 0"),
    ([(0, [0, 1]), (2, [1, 2])], -1, -1, Errors.INVALID_REPLICA_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
    ([(1, [0, 1])], -1, -1, Errors.INVALID_REPLICA_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
]


@pytest.mark.parametrize("validate_only", [True, False])
def test_raw_requests_every_invalid_case_and_valid_orders(kafka_cluster: Any, validate_only: bool) -> None:
    """Each refusal Kafka's controller makes, with its message, with and without validate_only;
    nothing is created. Indexes given out of order are fine when they are 0..n-1."""
    client = RawClient(kafka_cluster.bootstrap_servers.split(",")[0])
    try:
        for assignments, partitions, rf, error, message in INVALID:
            topic = unique("ct")
            assert _create(client, topic, assignments, validate_only, partitions, rf) == (error, message, -1, -1)
            assert kafka_cluster.metadata.topic(topic) is None
        topic = unique("ct")
        assert _create(client, topic, [(1, [2, 0]), (0, [1, 2])], validate_only) == (0, None, 2, 2)
        if validate_only:
            assert kafka_cluster.metadata.topic(topic) is None
        else:
            assert _replicas(kafka_cluster, topic) == [[1, 2], [2, 0]]
            assert kafka_cluster.metadata.partition_state(topic, 0).leader == 1
    finally:
        client.close()


def test_a_partition_whose_replicas_are_all_stopped_is_refused(kafka_cluster: Any) -> None:
    """``createTopic``: a partition needs a live (unfenced) replica; one stopped broker among the
    replicas is fine, and the first live one leads."""
    kafka_cluster.stop_broker(2)
    client = RawClient(kafka_cluster.bootstrap_servers.split(",")[0])
    try:
        topic = unique("ct")
        assert _create(client, topic, [(0, [0, 1]), (1, [2])], False) == (
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes a partition with 1 replica(s), but this is not "
            "consistent with previous partitions, which have 2 replica(s).", -1, -1)
        assert _create(client, topic, [(0, [2])], False) == (
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "All brokers specified in the manual partition assignment for partition 0 are fenced or in "
            "controlled shutdown.", -1, -1)
        assert _create(client, topic, [(0, [2, 1])], False) == (0, None, 1, 2)
        state = kafka_cluster.metadata.partition_state(topic, 0)
        assert (state.replicas, state.isr, state.leader) == ((2, 1), (1,), 1)
    finally:
        client.close()
        kafka_cluster.start_broker(2)
