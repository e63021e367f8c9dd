"""Transactions on the log, over the wire: transactional batches and COMMIT/ABORT markers built
by hand at request level (Produce with a transactional id, WriteTxnMarkers), read by real
clients with read_committed and read_uncommitted, and Fetch/ListOffsets answers checked raw.

The transaction coordinator is not used by these tests (``test_transactions.py`` has it with real
transactional clients): each broker's ``ReplicaManager.verify_transaction`` is replaced by a
stand-in that accepts every partition (what the coordinator answers for partitions added to the
transaction), and the markers are
sent as the coordinator's marker channel would send them. Kafka's TransactionsTest
(testReadCommittedConsumerShouldNotSeeUndecidedData, testDelayedFetchIncludesAbortedTransaction)
and KafkaApisTest (testReadCommittedConsumerListOffsetLatest) scenarios, by hand.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition
from kio.index import load_request_schema as req_cls
from kio.schema.errors import ErrorCode

from kafka_emu.broker.cluster.inprocess_client import fetch_request, produce_request
from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.broker.storage.record_batch import build_batch, iter_records, parse_batches
from kafka_emu.common.errors import Errors

from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(90), pytest.mark.kafka_cluster(brokers=3)]

TXN = 0x10
TXN_ID = "txn-wire"


@pytest.fixture
def verified(kafka_cluster: Any) -> Iterator[list]:
    """Every broker's verification accepts (a coordinator that has every partition in the
    transaction); restored afterwards."""
    calls: list = []

    def accept(transactional_id: str, producer_id: int, producer_epoch: int, tp: tuple[str, int]) -> int:
        calls.append((transactional_id, producer_id, producer_epoch, tp))
        return Errors.NONE

    original = {}
    for broker_id, server in kafka_cluster.servers.items():
        original[broker_id] = server.replica_manager.verify_transaction
        server.replica_manager.verify_transaction = accept
    yield calls
    for broker_id, server in kafka_cluster.servers.items():
        if server.replica_manager is not None and broker_id in original:
            server.replica_manager.verify_transaction = original[broker_id]


def leader_client(cluster: Any, topic: str) -> RawClient:
    return RawClient(cluster.broker(cluster.leader_of(topic, 0)).bootstrap_server)


def produce(client: RawClient, topic: str, records: bytes, transactional_id: str | None) -> Any:
    request = dataclasses.replace(produce_request(topic, 0, records, acks=-1), transactional_id=transactional_id)
    return client.send(request).responses[0].partition_responses[0]


def txn_batch(pid: int, values: list[bytes], seq: int = 0) -> bytes:
    return build_batch([(b"k", v) for v in values], producer_id=pid, producer_epoch=0, base_sequence=seq,
                       attributes=TXN)


def write_markers(client: RawClient, topic: str, *markers: tuple[int, bool]) -> list[int]:
    cls = req_cls(27, 1)
    marker_cls = item_cls(cls, "markers")
    topic_cls = item_cls(marker_cls, "topics")
    body = build(cls, markers=tuple(
        build(marker_cls, producer_id=pid, producer_epoch=0, transaction_result=commit, coordinator_epoch=0,
              topics=(build(topic_cls, name=topic, partition_indexes=(0,)),))
        for pid, commit in markers))
    resp = client.send(body)
    return [int(p.error_code) for m in resp.markers for t in m.topics for p in t.partitions]


def list_latest(client: RawClient, topic: str, isolation_level: int) -> int:
    cls = req_cls(2, 7)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    body = build(cls, replica_id=-1, isolation_level=isolation_level, topics=(
        build(topic_cls, name=topic, partitions=(build(part_cls, partition_index=0, timestamp=-1,
                                                       current_leader_epoch=-1),)),))
    return int(client.send(body).topics[0].partitions[0].offset)


def write_transactions(kafka_cluster: Any, topic: str) -> RawClient:
    """Offsets: 0-1 producer 10 (committed), 2 plain, 3-4 producer 11 (aborted), 5 commit
    marker of 10, 6 abort marker of 11, 7 plain, 8 producer 12 (still open), 9 plain."""
    client = leader_client(kafka_cluster, topic)
    assert produce(client, topic, txn_batch(10, [b"a0", b"a1"]), TXN_ID).error_code == ErrorCode.none
    assert produce(client, topic, build_batch([(b"k", b"p0")]), None).error_code == ErrorCode.none
    assert produce(client, topic, txn_batch(11, [b"b0", b"b1"]), "txn-other").error_code == ErrorCode.none
    assert write_markers(client, topic, (10, True), (11, False)) == [0, 0]
    assert produce(client, topic, build_batch([(b"k", b"p1")]), None).error_code == ErrorCode.none
    assert produce(client, topic, txn_batch(12, [b"c0"]), "txn-open").error_code == ErrorCode.none
    assert produce(client, topic, build_batch([(b"k", b"p2")]), None).error_code == ErrorCode.none
    return client


def test_transactional_produce_needs_a_transactional_id_and_a_transaction(kafka_cluster: Any) -> None:
    """KafkaApis.handleProduceRequest: transactional records without a transactional id are
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; with one whose coordinator has not added the
    partition to the producer's transaction: INVALID_TXN_STATE (Produce before v11).
    Client-written markers are INVALID_RECORD."""
    topic = unique("txn")
    kafka_cluster.create_topic(topic, 1, 3)
    client = leader_client(kafka_cluster, topic)
    try:
        assert produce(client, topic, txn_batch(5, [b"x"]), None).error_code == \
            ErrorCode.transactional_id_authorization_failed
        find = req_cls(10, 1)(key=TXN_ID, key_type=1)
        wait_until(lambda: client.send(find).error_code == ErrorCode.none, 10, what="a transaction coordinator")
        coordinator = RawClient(kafka_cluster.broker(client.send(find).node_id).bootstrap_server)
        try:
            init = coordinator.send(req_cls(22, 4)(transactional_id=TXN_ID, transaction_timeout=timedelta(seconds=60),
                                                   producer_id=-1, producer_epoch=-1))
        finally:
            coordinator.close()
        assert init.error_code == ErrorCode.none
        assert produce(client, topic, txn_batch(init.producer_id, [b"x"]), TXN_ID).error_code == \
            ErrorCode.invalid_txn_state
        from kafka_emu.broker.storage.control_record import end_txn_marker_batch
        assert produce(client, topic, end_txn_marker_batch(5, 0, 0, True, 0), TXN_ID).error_code == \
            ErrorCode.invalid_record
    finally:
        client.close()


def test_fetch_and_list_offsets_with_isolation(kafka_cluster: Any, verified: list) -> None:
    """Fetch read_committed stops at the LSO and lists the aborted transaction; read_uncommitted
    goes to the HW without the list; ListOffsets latest is the LSO for read_committed
    (KafkaApisTest.testReadCommittedConsumerListOffsetLatest). The open transaction's first offset
    holds the LSO and LastStableOffsetLag."""
    topic = unique("txn")
    kafka_cluster.create_topic(topic, 1, 3)
    client = write_transactions(kafka_cluster, topic)
    try:
        assert {c[3] for c in verified} == {(topic, 0)} and len(verified) == 3
        wait_until(lambda: list_latest(client, topic, 0) == 10, what="HW at 10")
        assert list_latest(client, topic, 1) == 8
        committed = client.send(fetch_request(topic, 0, 0, isolation_level=1, version=11)).responses[0].partitions[0]
        assert committed.last_stable_offset == 8 and committed.high_watermark == 10
        assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(11, 3)]
        assert [o for o, _, _ in iter_records(committed.records)] == [0, 1, 2, 3, 4, 7]
        # the markers travel with the data, as control batches clients skip
        assert [(b.base_offset, b.is_control) for b in parse_batches(committed.records)] == [
            (0, False), (2, False), (3, False), (5, True), (6, True), (7, False)]
        uncommitted = client.send(fetch_request(topic, 0, 0, version=11)).responses[0].partitions[0]
        assert uncommitted.aborted_transactions is None
        assert [o for o, _, _ in iter_records(uncommitted.records)] == [0, 1, 2, 3, 4, 7, 8, 9]
        leader = kafka_cluster.broker(kafka_cluster.leader_of(topic, 0))
        (log,) = [lg for lg in leader.replica_manager.snapshot().logs if lg.topic == topic]
        assert log.last_stable_offset_lag == 2
    finally:
        client.close()


def consume_values(conf: dict[str, Any], topic: str, until: int) -> list[bytes]:
    """Values a confluent-kafka consumer gets from offset 0 until its position reaches ``until``."""
    c = Consumer({"group.id": unique("g"), "enable.auto.commit": False, "fetch.wait.max.ms": 50, **conf})
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    try:
        def done() -> bool:
            for m in c.consume(num_messages=100, timeout=0.1):
                if m.error() is None:
                    got.append(m.value())
            return c.position([TopicPartition(topic, 0)])[0].offset >= until
        wait_until(done, 20, what=f"position {until}")
    finally:
        c.close()
    return got


def test_real_clients_read_committed_and_uncommitted(kafka_cluster: Any, verified: list) -> None:
    """Kafka's TransactionsTest.testReadCommittedConsumerShouldNotSeeUndecidedData by hand:
    read_committed clients (confluent-kafka, kafka-python) get the committed and plain records
    and stop at the open transaction; read_uncommitted gets everything; commit of the open
    transaction releases the rest."""
    topic = unique("txn")
    kafka_cluster.create_topic(topic, 1, 3)
    client = write_transactions(kafka_cluster, topic)
    bs = kafka_cluster.bootstrap_servers
    try:
        wait_until(lambda: list_latest(client, topic, 0) == 10, what="HW at 10")
        assert consume_values({"bootstrap.servers": bs, "isolation.level": "read_committed"}, topic, 8) == \
            [b"a0", b"a1", b"p0", b"p1"]
        assert consume_values({"bootstrap.servers": bs, "isolation.level": "read_uncommitted"}, topic, 10) == \
            [b"a0", b"a1", b"p0", b"b0", b"b1", b"p1", b"c0", b"p2"]
        kc = KafkaConsumer(bootstrap_servers=bs, isolation_level="read_committed", enable_auto_commit=False,
                           fetch_max_wait_ms=50, consumer_timeout_ms=200)
        try:
            tp = KTopicPartition(topic, 0)
            kc.assign([tp])
            kc.seek(tp, 0)
            got: list[bytes] = []
            wait_until(lambda: got.extend(m.value for m in kc) is None and len(got) >= 4, 20, what="kafka-python")
            assert got == [b"a0", b"a1", b"p0", b"p1"]
        finally:
            kc.close()
        assert write_markers(client, topic, (12, True)) == [0]
        assert consume_values({"bootstrap.servers": bs, "isolation.level": "read_committed"}, topic, 11) == \
            [b"a0", b"a1", b"p0", b"p1", b"c0", b"p2"]
    finally:
        client.close()
