"""Transaction version 2 (KIP-890 part 2) over the wire, on a 3-broker cluster with RF 3 topics:
a request-level TV2 producer (``tv2_producer``; no client library here speaks TV2) commits and
aborts without AddPartitionsToTxn/AddOffsetsToTxn, and real clients read the outcome.

Kafka scenarios: TransactionsTest.testBasicTransactions and testSendOffsetsToTransaction run the
TV2 way (Kafka runs them with ``transaction.version`` 2 as well), TransactionsTest
testBumpTransactionalEpochWithTV2Enabled (an epoch bump per transaction), and
ApiVersionsResponseTest / KAFKA-17011 for the reported features.
"""
from __future__ import annotations

from typing import Any

import pytest
from kafka import KafkaAdminClient
from kio.index import load_request_schema as req_cls

from kafka_emu.common.errors import Errors
from kafka_emu.common.kafka_releases import LATEST, RELEASES

from test_transactions import producer, read_all, wait_committed
from tv2_producer import Tv2Producer
from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(120), pytest.mark.kafka_cluster(brokers=3)]


def api_versions(kafka_cluster: Any, version: int) -> Any:
    c = RawClient(kafka_cluster.bootstrap_servers.split(",")[0])
    try:
        return c.send(req_cls(18, version)(client_software_name="tv2-test", client_software_version="1"))
    finally:
        c.close()


def features(resp: Any) -> tuple[dict[str, tuple[int, int]], int, dict[str, tuple[int, int]]]:
    return ({f.name: (int(f.min_version), int(f.max_version)) for f in resp.supported_features},
            int(resp.finalized_features_epoch),
            {f.name: (int(f.min_version_level), int(f.max_version_level)) for f in resp.finalized_features})


def test_api_versions_reports_transaction_version_2(kafka_cluster: Any) -> None:
    """ApiVersionsResponse (a new cluster of the newest release): transaction.version finalized
    at 2, supported 0-2, and group.version (KIP-848) finalized at 1, supported 0-1; v3 leaves
    supported features with minimum 0 out (KAFKA-17011), v4 lists them; EndTxn v5, Produce v12 and
    TxnOffsetCommit v5 are advertised; of the other features metadata.version and share.version
    (KIP-932, 1 as a new 4.2 cluster formats it) are finalized (the rest is off: the emulator does
    not have them)."""
    v4, v3 = api_versions(kafka_cluster, 4), api_versions(kafka_cluster, 3)
    mv = RELEASES[LATEST].features["metadata.version"]
    finalized = {"metadata.version": (mv.default, mv.default), "transaction.version": (2, 2), "group.version": (1, 1),
                 "share.version": (1, 1)}
    supported, epoch, final = features(v4)
    assert (supported["transaction.version"], supported["group.version"], epoch, final) == ((0, 2), (0, 1), 0, finalized)
    assert features(v3) == ({"metadata.version": (mv.min, mv.max)}, 0, finalized)
    ranges = {int(k.api_key): int(k.max_version) for k in v4.api_keys}
    assert (ranges[0], ranges[26], ranges[28], ranges[24]) == (13, 5, 5, 3)


def test_api_versions_features_seen_by_kafka_python(kafka_cluster: Any) -> None:
    """kafka-python's ``KafkaAdminClient.describe_features`` (KIP-584) reads the feature fields."""
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, client_id="tv2")
    try:
        features = admin.describe_features()
        assert features["transaction.version"] == {"supported": (0, 2), "finalized": (2, 2), "finalized_epoch": 0}
        assert features["group.version"] == {"supported": (0, 1), "finalized": (1, 1), "finalized_epoch": 0}
    finally:
        admin.close()


def test_tv2_commit_and_abort_read_committed(kafka_cluster: Any) -> None:
    """TransactionsTest.testBasicTransactions the TV2 way: InitProducerId, Produce v12 to two
    partitions without AddPartitionsToTxn, EndTxn v5 commit / abort / commit. Every EndTxn
    answers the same producer id with the epoch bumped by one; a retry of the last one with the
    previous epoch answers the same; a read_committed consumer sees exactly the committed values,
    a read_uncommitted one all of them."""
    topic = unique("tv2")
    kafka_cluster.create_topic(topic, 2, 3)
    p = Tv2Producer(kafka_cluster, unique("tv2-tx"))
    pid, epoch = p.init()
    assert p.send(topic, 0, [b"c1-0", b"c1-1"]) == Errors.NONE
    assert p.send(topic, 1, [b"c1-2"]) == Errors.NONE
    assert p.end(commit=True) == (Errors.NONE, pid, epoch + 1)
    assert p.send(topic, 0, [b"a-0"]) == Errors.NONE
    assert p.send(topic, 1, [b"a-1"]) == Errors.NONE
    assert p.end(commit=False) == (Errors.NONE, pid, epoch + 2)
    assert p.send(topic, 1, [b"c2-0"]) == Errors.NONE   # straight after the abort: retried while completing
    assert p.end(commit=True) == (Errors.NONE, pid, epoch + 3)
    assert p.end(commit=True, epoch=epoch + 2) == (Errors.NONE, pid, epoch + 3)   # the retry
    committed = {b"c1-0", b"c1-1", b"c1-2", b"c2-0"}
    assert sorted(read_all(kafka_cluster, topic, "read_committed", 4)) == sorted(committed)
    assert sorted(read_all(kafka_cluster, topic, "read_uncommitted", 6)) == sorted(committed | {b"a-0", b"a-1"})


def test_tv2_markers_carry_the_bumped_epoch(kafka_cluster: Any) -> None:
    """The COMMIT marker is written with the epoch EndTxn v5 answered (the batch's epoch + 1),
    on every replica; the leader's producer state then holds that epoch, so the old epoch is
    fenced (INVALID_PRODUCER_EPOCH) and the new one starts at sequence 0."""
    topic = unique("tv2m")
    kafka_cluster.create_topic(topic, 1, 3)
    p = Tv2Producer(kafka_cluster, unique("tv2-tx"))
    pid, epoch = p.init()
    assert p.send(topic, 0, [b"x"]) == Errors.NONE
    assert p.end(commit=True)[2] == epoch + 1

    def marker_epochs() -> set[int]:
        out = set()
        for broker_id in kafka_cluster.live_brokers():
            part = kafka_cluster.broker(broker_id).replica_manager.get_partition((topic, 0))
            entry = part.log.producer_state.producers.get(pid) if part is not None else None
            out.add(entry.producer_epoch if entry is not None else -1)
        return out

    wait_until(lambda: marker_epochs() == {epoch + 1}, 10, what="the marker on every replica")
    stale = Tv2Producer(kafka_cluster, p.transactional_id)
    stale.producer_id, stale.producer_epoch = pid, epoch
    stale.sequences[(topic, 0)] = 1
    assert stale.send(topic, 0, [b"zombie"]) == Errors.INVALID_PRODUCER_EPOCH
    assert p.send(topic, 0, [b"y"]) == Errors.NONE and p.end(commit=True)[0] == Errors.NONE
    assert read_all(kafka_cluster, topic, "read_committed", 2) == [b"x", b"y"]


def test_tv2_offsets_in_transaction_without_add_offsets(kafka_cluster: Any) -> None:
    """TransactionsTest.testSendOffsetsToTransaction the TV2 way: TxnOffsetCommit v5 adds the
    group's __consumer_offsets partition itself (no AddOffsetsToTxn); the offsets become the
    group's committed offsets with the COMMIT marker, an aborted transaction's do not."""
    topic, group = unique("tv2o"), unique("g")
    kafka_cluster.create_topic(topic, 1, 3)
    p = Tv2Producer(kafka_cluster, unique("tv2-tx"))
    p.init()
    assert p.send(topic, 0, [b"o"]) == Errors.NONE
    assert p.commit_offsets(group, topic, {0: 7}) == [Errors.NONE]
    assert p.end(commit=True)[0] == Errors.NONE
    assert p.commit_offsets(group, topic, {0: 99}) == [Errors.NONE]
    assert p.end(commit=False)[0] == Errors.NONE
    wait_committed(kafka_cluster, group, topic, 7)


def test_tv1_client_unchanged_with_tv2_finalized(kafka_cluster: Any) -> None:
    """confluent-kafka (transaction version 1: AddPartitionsToTxn, EndTxn v4) on the same
    cluster, interleaved with a TV2 producer on the same topic: both read back as committed."""
    topic = unique("mix")
    kafka_cluster.create_topic(topic, 1, 3)
    tv1 = producer(kafka_cluster, unique("tv1-tx"))
    tv1.init_transactions(30)
    tv1.begin_transaction()
    tv1.produce(topic, value=b"tv1")
    tv2 = Tv2Producer(kafka_cluster, unique("tv2-tx"))
    tv2.init()
    assert tv2.send(topic, 0, [b"tv2"]) == Errors.NONE
    tv1.commit_transaction(30)
    assert tv2.end(commit=True)[0] == Errors.NONE
    assert sorted(read_all(kafka_cluster, topic, "read_committed", 2)) == [b"tv1", b"tv2"]


@pytest.mark.kafka_cluster(brokers=3, config={"emulator.transaction.version": 1})
def test_level_1_finalized(kafka_cluster: Any) -> None:
    """``emulator.transaction.version=1``: ApiVersions reports level 1 (clients stay on TV1),
    and a Produce v11 (what such a client sends) to a partition not added is refused with
    TRANSACTION_ABORTABLE, as under TV1. As in Kafka the request version decides, not the level
    (apache/kafka#15657: "if we send a request version the server can handle, we can handle
    it"): a Produce v12 still adds its partition and EndTxn v5 still bumps the epoch."""
    assert features(api_versions(kafka_cluster, 4))[2]["transaction.version"] == (1, 1)
    topic = unique("l1")
    kafka_cluster.create_topic(topic, 1, 3)
    p = Tv2Producer(kafka_cluster, unique("tv1-tx"))
    pid, epoch = p.init()
    import dataclasses

    from kafka_emu.broker.cluster.inprocess_client import produce_request
    from kafka_emu.broker.storage.record_batch import build_batch
    batch = build_batch([(b"k", b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=0, attributes=0x10)
    body = dataclasses.replace(produce_request(topic, 0, batch, acks=-1, version=11), transactional_id=p.transactional_id)
    client = RawClient(kafka_cluster.broker(kafka_cluster.leader_of(topic, 0)).bootstrap_server)
    try:
        assert int(client.send(body).responses[0].partition_responses[0].error_code) == Errors.TRANSACTION_ABORTABLE
    finally:
        client.close()
    assert p.send(topic, 0, [b"v12"]) == Errors.NONE
    assert p.end(commit=True) == (Errors.NONE, pid, epoch + 1)
    assert read_all(kafka_cluster, topic, "read_committed", 1) == [b"v12"]
