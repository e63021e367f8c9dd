"""OffsetForLeaderEpoch (key 23) and ElectLeaders (key 43) with real clients and at the request level.

Ported: OffsetsForLeaderEpochRequestTest (testOffsetsForLeaderEpochErrorCodes,
testCurrentEpochValidation), ReplicationControlManagerTest (testElectPreferredLeaders,
testElectUncleanLeaders_WithoutElr, testPreferredElectionDoesNotTriggerUncleanElection), and the
KIP-320 scenario: acks=1 records only the old leader had are consumed, an unclean election
truncates them away, and the consumer detects it through OffsetForLeaderEpoch."""
from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.types import TopicName

from kafka_emu.common.errors import Errors

from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.kafka_cluster(brokers=3, config={"replica.lag.time.max.ms": 300,
                                                           "replica.fetch.wait.max.ms": 50})]


def endpoint(cluster: Any, broker: int) -> str:
    info = cluster.metadata.broker(broker)
    return f"{info.host}:{info.port}"


def make_topic(cluster: Any, partitions: int = 1, rf: int = 3) -> str:
    name = unique("le")
    cluster.create_topic(name, partitions, rf)
    return name


def offset_for_epoch(cluster: Any, broker: int, topic: str, leader_epoch: int, current_leader_epoch: int = -1,
                     partition: int = 0) -> tuple[int, int, int]:
    client = RawClient(endpoint(cluster, broker))
    try:
        resp = client.send(OffsetForLeaderEpochRequest(replica_id=-1, topics=(OffsetForLeaderTopic(
            topic=TopicName(topic), partitions=(OffsetForLeaderPartition(
                partition=partition, current_leader_epoch=current_leader_epoch, leader_epoch=leader_epoch),)),)))
    finally:
        client.close()
    p = resp.topics[0].partitions[0]
    return int(p.error_code), int(p.leader_epoch), int(p.end_offset)


def test_offsets_for_leader_epoch_error_codes(kafka_cluster: Any) -> None:
    """OffsetsForLeaderEpochRequestTest.testOffsetsForLeaderEpochErrorCodes: unknown partition,
    a follower (NOT_LEADER_OR_FOLLOWER), the leader."""
    topic = make_topic(kafka_cluster)
    for _ in range(3):
        kafka_cluster.produce(topic, 0, [(b"k", b"v")])
    leader = kafka_cluster.leader_of(topic)
    follower = next(b for b in kafka_cluster.live_brokers() if b != leader)
    assert offset_for_epoch(kafka_cluster, leader, "unknown-topic", 0)[0] == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert offset_for_epoch(kafka_cluster, follower, topic, 0)[0] == Errors.NOT_LEADER_OR_FOLLOWER
    assert offset_for_epoch(kafka_cluster, leader, topic, 0) == (Errors.NONE, 0, 3)
    assert offset_for_epoch(kafka_cluster, leader, topic, 5) == (Errors.NONE, -1, -1)


def test_current_epoch_validation(kafka_cluster: Any) -> None:
    """OffsetsForLeaderEpochRequestTest.testCurrentEpochValidation: after a leader change the new
    leader answers FENCED_LEADER_EPOCH to the old epoch, UNKNOWN_LEADER_EPOCH to a future one, and
    the old epoch's end offset (where the new epoch starts) to an unfenced request."""
    topic = make_topic(kafka_cluster)
    kafka_cluster.produce(topic, 0, [(b"k", b"a"), (b"k", b"b")])
    old = kafka_cluster.leader_of(topic)
    new = next(r for r in kafka_cluster.partition_state(topic).isr if r != old)
    kafka_cluster.move_leader(topic, 0, new)
    kafka_cluster.produce(topic, 0, [(b"k", b"c")])
    assert offset_for_epoch(kafka_cluster, new, topic, 0, current_leader_epoch=0)[0] == Errors.FENCED_LEADER_EPOCH
    assert offset_for_epoch(kafka_cluster, new, topic, 0, current_leader_epoch=2)[0] == Errors.UNKNOWN_LEADER_EPOCH
    assert offset_for_epoch(kafka_cluster, new, topic, 0, current_leader_epoch=1) == (Errors.NONE, 0, 2)
    assert offset_for_epoch(kafka_cluster, new, topic, 1, current_leader_epoch=1) == (Errors.NONE, 1, 3)


def test_elect_preferred_leaders_confluent(kafka_cluster: Any) -> None:
    """ReplicationControlManagerTest.testElectPreferredLeaders through confluent-kafka's
    elect_leaders: ELECTION_NOT_NEEDED where the preferred replica leads; after a leader move,
    NONE and leadership back on the first replica with a new epoch."""
    topic = make_topic(kafka_cluster, partitions=2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    state = kafka_cluster.partition_state(topic, 1)
    kafka_cluster.move_leader(topic, 1, state.replicas[1])
    result = admin.elect_leaders(ElectionType.PREFERRED, tps).result(timeout=10)
    assert result[TopicPartition(topic, 1)] is None
    assert isinstance(result[TopicPartition(topic, 0)], KafkaError)
    assert result[TopicPartition(topic, 0)].code() == Errors.ELECTION_NOT_NEEDED
    assert kafka_cluster.leader_of(topic, 1) == state.replicas[0]
    assert kafka_cluster.partition_state(topic, 1).leader_epoch == 2


def test_preferred_election_not_available_and_no_unclean(kafka_cluster: Any) -> None:
    """testPreferredElectionDoesNotTriggerUncleanElection: the preferred replica is out of the ISR
    (stopped), so PREFERRED_LEADER_NOT_AVAILABLE; UNCLEAN while a leader exists: ELECTION_NOT_NEEDED.
    Through kafka-python's elect_leaders."""
    topic = make_topic(kafka_cluster)
    preferred = kafka_cluster.partition_state(topic).replicas[0]
    kafka_cluster.stop_broker(preferred)
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    try:
        resp = client.elect_leaders(0, {topic: [0]}, raise_errors=False)
        codes = {(t, p.partition_id): p.error_code for t, parts in _results(resp) for p in parts}
        assert codes == {(topic, 0): Errors.PREFERRED_LEADER_NOT_AVAILABLE}
        resp = client.elect_leaders(1, {topic: [0]}, raise_errors=False)
        codes = {(t, p.partition_id): p.error_code for t, parts in _results(resp) for p in parts}
        assert codes == {(topic, 0): Errors.ELECTION_NOT_NEEDED}
    finally:
        client.close()


def _results(resp: Any) -> list[tuple[str, list[Any]]]:
    return [(r.topic, list(r.partition_result)) for r in resp.replica_election_results]


def test_unclean_election_truncation_detected_by_consumer(kafka_cluster: Any) -> None:
    """KIP-320 with a real client. The follower stalls and leaves the ISR; acks=1 records land on
    the leader alone and are committed (ISR = leader); a confluent-kafka consumer reads them. The
    leader dies; ElectLeaders UNCLEAN (testElectUncleanLeaders_WithoutElr) makes the stale
    follower leader with a new epoch. librdkafka validates its position with OffsetForLeaderEpoch,
    learns that epoch 0 ended at 5 (or 6) on the new leader (below its position 10) and reports the log
    truncation (auto.offset.reset=error: a consumer error naming it, as the Java client's
    LogTruncationException)."""
    topic = make_topic(kafka_cluster, rf=2)
    old, stale = kafka_cluster.partition_state(topic).replicas
    for i in range(5):
        assert kafka_cluster.produce(topic, 0, [(b"k", b"r%d" % i)], acks=-1)[0] == Errors.NONE
    wait_until(lambda: kafka_cluster.logs[stale][(topic, 0)].log_end_offset == 5, what="follower caught up")
    kafka_cluster.broker(stale).fetcher_manager.set_paused(True, leader_id=old)
    # a follower fetch parked on the leader when the pause came would take the next appends
    fetches = kafka_cluster.broker(old).replica_manager.fetch_purgatory
    wait_until(lambda: fetches.num_delayed() == 0, what="no follower fetch parked")
    for i in range(5, 10):
        assert kafka_cluster.produce(topic, 0, [(b"k", b"r%d" % i)], acks=1)[0] == Errors.NONE
    # the stalled follower leaves the ISR after replica.lag.time.max.ms; the HW then reaches 10
    wait_until(lambda: kafka_cluster.partition_state(topic).isr == (old,), what="ISR shrink")
    wait_until(lambda: kafka_cluster.logs[old][(topic, 0)].high_watermark == 10, what="HW 10")

    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": unique("g"),
                         "auto.offset.reset": "error", "enable.auto.commit": False,
                         "topic.metadata.refresh.interval.ms": 200, "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[Any] = []

        def consumed_all() -> bool:
            for m in consumer.consume(10, timeout=0.1):
                assert m.error() is None, m.error()
                got.append(m)
            return len(got) >= 10

        wait_until(consumed_all, 20, what="10 records consumed")
        assert [m.offset() for m in got] == list(range(10))
        assert got[-1].leader_epoch() == 0

        kafka_cluster.stop_broker(old)
        stale_end = kafka_cluster.logs[stale][(topic, 0)].log_end_offset   # 5, or 6 if a fetch was in flight
        assert stale_end < 10
        kafka_cluster.broker(stale).fetcher_manager.set_paused(False)
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
        result = admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, 0)]).result(timeout=10)
        assert result[TopicPartition(topic, 0)] is None
        state = kafka_cluster.partition_state(topic)
        assert (state.leader, state.isr, state.leader_epoch) == (stale, (stale,), 2)
        assert kafka_cluster.produce(topic, 0, [(b"k", b"new")], acks=1)[0] == Errors.NONE
        assert offset_for_epoch(kafka_cluster, stale, topic, 0, current_leader_epoch=2) == (Errors.NONE, 0, stale_end)

        errors: list[KafkaError] = []

        def truncation_reported() -> bool:
            for m in consumer.consume(10, timeout=0.1):
                if m.error() is not None:
                    errors.append(m.error())
                else:
                    got.append(m)
            # librdkafka, auto.offset.reset=error: the reset fails with __AUTO_OFFSET_RESET naming
            # the truncation (its cause code __LOG_TRUNCATION is in the text)
            return any(e.code() in (KafkaError._LOG_TRUNCATION, KafkaError._AUTO_OFFSET_RESET)
                       and "log truncation detected at offset 10 (leader epoch 0)" in e.str()
                       for e in errors)

        wait_until(truncation_reported, 30, what="log truncation reported")
        assert [m.offset() for m in got[10:]] == []   # nothing read past the truncation point
    finally:
        consumer.close()
