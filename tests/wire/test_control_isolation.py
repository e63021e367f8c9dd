"""Network partitions and leadership moves under real clients.

Ports the scenarios of Kafka's ``UncleanLeaderElectionTest``/``ReplicationTest`` family that a
partition exercises (the leader is cut off under acks=all load: the ISR shrinks, a new leader
is elected from it, nothing acknowledged is lost; after healing the old leader truncates and
rejoins) and of librdkafka's ``0143-mock_leader_change``-style tests (a moved leader, with an
epoch bump, is followed by the producer).
"""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_emu.broker.cluster.control import UnknownBrokerError
from wire_helpers import unique, wait_until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def kafka_cluster_config() -> dict[str, Any]:
    return {"brokers": 3, "record_requests": True,
            "config": {"min.insync.replicas": 2, "replica.lag.time.max.ms": 2000}}


def read_all(bs: str, topic: str, at_least: int) -> list[int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": unique("verify"), "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[int] = []
    try:
        deadline = time.monotonic() + 30
        quiet_until = 0.0
        while time.monotonic() < deadline and (len(got) < at_least or time.monotonic() < quiet_until):
            msgs = c.consume(num_messages=500, timeout=0.1)
            for m in msgs:
                assert m.error() is None, m.error()
                got.append(int(m.value()))
            if msgs or len(got) < at_least:
                quiet_until = time.monotonic() + 0.5
    finally:
        c.close()
    return got


def test_isolated_leader_under_acks_all_load_loses_nothing_and_rejoins(kafka_cluster: Any) -> None:
    topic = unique("isolate")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    bs = kafka_cluster.bootstrap_servers
    old = kafka_cluster.leader_of(topic, 0)
    old_epoch = kafka_cluster.partition_state(topic, 0).leader_epoch
    acked: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()
    p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True, "linger.ms": 2,
                  "retry.backoff.ms": 20, "retry.backoff.max.ms": 100, "reconnect.backoff.ms": 20,
                  "reconnect.backoff.max.ms": 100, "message.timeout.ms": 30000,
                  "topic.metadata.refresh.interval.ms": 500})

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            with lock:
                acked.append(int(msg.value()))

    def load() -> None:
        i = 0
        while not stop.is_set():
            p.produce(topic, str(i).encode(), partition=0, on_delivery=on_delivery)
            p.poll(0)
            i += 1
            time.sleep(0.002)

    producer = threading.Thread(target=load, name="test-load")
    producer.start()
    try:
        wait_until(lambda: len(acked) > 100, 20, what="acknowledged records before the partition")
        kafka_cluster.isolate(old)
        state = kafka_cluster.partition_state(topic, 0)
        assert state.leader not in (old, -1)
        assert state.leader_epoch == old_epoch + 1
        assert old not in state.isr and len(state.isr) == 2
        assert kafka_cluster.control.is_isolated(old)
        mark = len(acked)
        wait_until(lambda: len(acked) > mark + 100, 30, what="records acknowledged by the new leader")
        # nothing reaches the isolated broker: every request sent there got a closed connection
        assert all(r.disconnected for r in kafka_cluster.requests(broker=old) if r.fault == "isolated")
        kafka_cluster.heal(old)
        wait_until(lambda: old in kafka_cluster.partition_state(topic, 0).isr, 30,
                   what="the healed broker back in the ISR")
    finally:
        stop.set()
        producer.join(10)
        assert p.flush(30) == 0
    new = kafka_cluster.leader_of(topic, 0)
    wait_until(lambda: kafka_cluster.read_all(topic, 0, broker_id=old, upto_hw=False)
               == kafka_cluster.read_all(topic, 0, broker_id=new, upto_hw=True), 20,
               what="the old leader's log to match the new leader's")
    got = read_all(bs, topic, len(acked))
    assert len(got) == len(set(got)), "duplicates"
    assert got == sorted(got), "out of order"
    assert not set(acked) - set(got), "acknowledged records lost"


def test_move_leader_bumps_the_epoch_and_clients_follow(kafka_cluster: Any) -> None:
    topic = unique("move")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                  "retry.backoff.ms": 10, "client.id": "mover"})
    p.produce(topic, b"0", partition=0)
    assert p.flush(10) == 0
    before = kafka_cluster.partition_state(topic, 0)
    target = next(b for b in before.isr if b != before.leader)
    kafka_cluster.move_leader(topic, 0, target)
    after = kafka_cluster.partition_state(topic, 0)
    assert (after.leader, after.leader_epoch) == (target, before.leader_epoch + 1)
    p.produce(topic, b"1", partition=0)
    assert p.flush(20) == 0
    last = kafka_cluster.requests(api="Produce", client_id="mover")[-1]
    assert last.broker == target and last.error_codes() == [0]
    with pytest.raises(UnknownBrokerError):
        kafka_cluster.move_leader(topic, 0, 7)
    single = unique("move-rf1")
    kafka_cluster.create_topic(single, partitions=1, replication_factor=1)
    other = (kafka_cluster.leader_of(single, 0) + 1) % 3
    with pytest.raises(ValueError, match="not in the ISR"):
        kafka_cluster.move_leader(single, 0, other)


def test_move_group_coordinator_moves_the_group_and_keeps_its_offsets(kafka_cluster: Any) -> None:
    topic = unique("coord")
    group = unique("g-move")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    c = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": group,
                  "client.id": group, "session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                  "enable.auto.commit": False, "retry.backoff.ms": 20})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
        first = [r.broker for r in kafka_cluster.requests(api="OffsetCommit", client_id=group)][-1]
        target = (first + 1) % 3
        partition = kafka_cluster.move_group_coordinator(group, target)
        assert kafka_cluster.leader_of("__consumer_offsets", partition) == target

        def committed_at_target() -> bool:
            try:
                got = c.committed([TopicPartition(topic, 0)], timeout=5)
            except KafkaException as exc:   # the old coordinator unloaded the group
                assert exc.args[0].code() == KafkaError.NOT_COORDINATOR
                return False
            fetches = kafka_cluster.requests(api="OffsetFetch", client_id=group)
            return got[0].offset == 5 and fetches and fetches[-1].broker == target
        wait_until(committed_at_target, 30, interval_s=0.1, what="the offsets from the new coordinator")
    finally:
        c.close()
