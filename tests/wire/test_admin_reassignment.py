"""AlterPartitionReassignments (45) / ListPartitionReassignments (46): a real replica move.

Ported: ReplicationControlManagerTest.testReassignPartitions (adding/removing replicas while the
new ones catch up, completion once they are in the ISR, INVALID_REPLICA_ASSIGNMENT,
NO_REASSIGNMENT_IN_PROGRESS, UNKNOWN_TOPIC_OR_PARTITION) and testCancelReassignPartitions;
ReassignPartitionsIntegrationTest's shape: the new replica fetches the whole log, the old one
stops and deletes its log, a consumer reads everything from the new leader."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import kafka.errors as kerr
import pytest
from kafka import KafkaAdminClient, TopicPartition
from kio.schema.alter_partition_reassignments.v1.request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kio.schema.types import BrokerId, TopicName

from kafka_emu.common.errors import Errors

from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.kafka_cluster(brokers=3, config={"replica.fetch.wait.max.ms": 50})]


@pytest.fixture
def admin(kafka_cluster: Any) -> Any:
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    yield client
    client.close()


def setup_topic(cluster: Any, records: int = 20) -> tuple[str, tuple[int, ...], int]:
    topic = unique("ra")
    cluster.create_topic(topic, 1, 2)
    for i in range(records):
        assert cluster.produce(topic, 0, [(b"k", b"v%d" % i)], acks=-1)[0] == Errors.NONE
    replicas = cluster.partition_state(topic).replicas
    spare = next(b for b in range(3) if b not in replicas)
    return topic, replicas, spare


def test_reassignment_moves_the_replica(kafka_cluster: Any, admin: Any) -> None:
    topic, (first, second), spare = setup_topic(kafka_cluster)
    tp = TopicPartition(topic, 0)
    kafka_cluster.broker(spare).fetcher_manager.set_paused(True)   # hold the move open to look at it
    try:
        assert admin.alter_partition_reassignments({tp: [second, spare]}) == {tp: None}
        state = kafka_cluster.partition_state(topic)
        assert (state.replicas, state.adding_replicas, state.removing_replicas) == \
            ((second, spare, first), (spare,), (first,))
        assert admin.list_partition_reassignments() == {tp: {"replicas": [second, spare, first],
                                                             "adding_replicas": [spare],
                                                             "removing_replicas": [first]}}
        assert spare not in state.isr
    finally:
        kafka_cluster.broker(spare).fetcher_manager.set_paused(False)
    wait_until(lambda: kafka_cluster.partition_state(topic).replicas == (second, spare), 20, what="completed")
    state = kafka_cluster.partition_state(topic)
    assert state.isr == (second, spare) and state.adding_replicas == state.removing_replicas == ()
    assert state.leader == second and state.leader_epoch == 1   # the old leader left: hand-over
    assert admin.list_partition_reassignments() == {}
    wait_until(lambda: (topic, 0) not in kafka_cluster.logs[first], what="old replica deleted")
    assert kafka_cluster.broker(first).partition(topic, 0) is None
    values = [v for _, _, v in kafka_cluster.read_all(topic, 0, broker_id=spare)]
    assert values == [b"v%d" % i for i in range(20)]
    # the controller's state changes before the brokers apply it (as a KRaft broker lags the
    # metadata log): produce once the new leader has taken the partition over
    wait_until(lambda: getattr(kafka_cluster.broker(second).partition(topic, 0), "is_leader", False),
               what="new leader applied")
    assert kafka_cluster.produce(topic, 0, [(b"k", b"after")], acks=-1)[0] == Errors.NONE
    wait_until(lambda: kafka_cluster.logs[spare][(topic, 0)].log_end_offset == 21, what="replicating")


def test_cancel_reassignment(kafka_cluster: Any, admin: Any) -> None:
    """testCancelReassignPartitions: cancelling returns to the original replicas and the adding
    replica is stopped and deleted; cancelling again answers NO_REASSIGNMENT_IN_PROGRESS."""
    topic, (first, second), spare = setup_topic(kafka_cluster, records=3)
    tp = TopicPartition(topic, 0)
    kafka_cluster.broker(spare).fetcher_manager.set_paused(True)
    try:
        assert admin.alter_partition_reassignments({tp: [first, spare]}) == {tp: None}
        wait_until(lambda: (topic, 0) in kafka_cluster.logs[spare], what="new replica created")
        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
    finally:
        kafka_cluster.broker(spare).fetcher_manager.set_paused(False)
    state = kafka_cluster.partition_state(topic)
    assert (state.replicas, state.adding_replicas, state.removing_replicas) == ((first, second), (), ())
    wait_until(lambda: (topic, 0) not in kafka_cluster.logs[spare], what="adding replica deleted")
    assert admin.alter_partition_reassignments({tp: None}) == {tp: kerr.for_code(Errors.NO_REASSIGNMENT_IN_PROGRESS)}


def test_reassignment_errors(kafka_cluster: Any, admin: Any) -> None:
    """INVALID_REPLICA_ASSIGNMENT (unregistered broker, duplicates, empty), UNKNOWN_TOPIC_OR_PARTITION,
    and INVALID_REPLICATION_FACTOR when the request forbids a replication factor change (v1)."""
    topic, (first, second), spare = setup_topic(kafka_cluster, records=1)
    tp = TopicPartition(topic, 0)
    assert admin.alter_partition_reassignments({tp: [first, 99]}) == {tp: kerr.for_code(Errors.INVALID_REPLICA_ASSIGNMENT)}
    assert admin.alter_partition_reassignments({tp: [first, first]}) == {tp: kerr.for_code(Errors.INVALID_REPLICA_ASSIGNMENT)}
    missing = TopicPartition(topic, 5)
    assert admin.alter_partition_reassignments({missing: [first]}) == {missing: kerr.for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION)}
    info = kafka_cluster.metadata.broker(kafka_cluster.metadata.controller_id)
    client = RawClient(f"{info.host}:{info.port}")

    def raw(replicas: tuple[int, ...], allow_rf_change: bool) -> int:
        resp = client.send(AlterPartitionReassignmentsRequest(
            timeout=timedelta(seconds=5), allow_replication_factor_change=allow_rf_change,
            topics=(ReassignableTopic(name=TopicName(topic), partitions=(
                ReassignablePartition(partition_index=0, replicas=tuple(BrokerId(r) for r in replicas)),)),)))
        return int(resp.responses[0].partitions[0].error_code)

    try:
        assert raw((first,), False) == Errors.INVALID_REPLICATION_FACTOR
        assert raw((), True) == Errors.INVALID_REPLICA_ASSIGNMENT   # kafka-python refuses to send it
    finally:
        client.close()
    assert kafka_cluster.partition_state(topic).replicas == (first, second)
