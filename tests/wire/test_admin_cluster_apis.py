"""DescribeTopicPartitions, ListConfigResources, DescribeQuorum and AlterReplicaLogDirs over the
wire: kafka-python 3.0's admin calls for each, and raw requests for the cases it does not reach.

Ported: Kafka's ``DescribeTopicPartitionsRequestHandlerTest`` (testDescribeTopicPartitionsRequest:
the cursor across topics and inside a topic, the partition limit, unknown topics, the cursor
errors), ``KafkaApisTest.testListConfigResources*`` (every type, a type filter, an unsupported
type, v0's client-metrics-only answer), ``DescribeQuorumRequestTest`` (the quorum of one voter;
the wrong topic or partition) and ``AlterReplicaLogDirsRequestTest`` (testAlterReplicaLogDirsRequest:
a move between two log dirs; testAlterReplicaLogDirsRequestErrorCode: LOG_DIR_NOT_FOUND,
REPLICA_NOT_AVAILABLE).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from kafka import KafkaAdminClient, TopicPartitionReplica
from kafka.errors import LogDirNotFoundError, NoError, ReplicaNotAvailableError
from kio.index import load_request_schema as req_cls

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.common.errors import Errors
from wire_helpers import RawClient, unique

pytestmark = [pytest.mark.timeout(60), pytest.mark.kafka_cluster(brokers=3)]


@pytest.fixture()
def admin(kafka_cluster: Any) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers, request_timeout_ms=10000)
    yield client
    client.close()


@pytest.fixture()
def raw(kafka_cluster: Any) -> Iterator[RawClient]:
    client = RawClient(kafka_cluster.bootstrap_servers.split(",")[0])
    yield client
    client.close()


# ---------------------------------------------------------------- DescribeTopicPartitions
def test_describe_topic_partitions_pages_with_the_cursor(kafka_cluster: Any, admin: KafkaAdminClient) -> None:
    """Two topics of 3 and 2 partitions read 2 partitions at a time: the cursor moves inside a
    topic and across to the next; every partition's leader, replicas and ISR are the store's."""
    a, b = unique("dtp-a"), unique("dtp-b")
    kafka_cluster.create_topic(a, partitions=3, replication_factor=2)
    kafka_cluster.create_topic(b, partitions=2, replication_factor=3)
    seen: list[tuple[str, int]] = []
    cursor = None
    pages = 0
    while True:
        page = admin.describe_topic_partitions([a, b], response_partition_limit=2, cursor=cursor)
        pages += 1
        for topic in page["topics"]:
            assert topic["error_code"] == 0 and topic["topic_id"] == kafka_cluster.metadata.topic(topic["name"]).topic_id
            for p in topic["partitions"]:
                state = kafka_cluster.metadata.partition_state(topic["name"], p["partition_index"])
                assert (p["leader_id"], tuple(p["replica_nodes"]), tuple(p["isr_nodes"]), p["offline_replicas"]) == \
                    (state.leader, state.replicas, state.isr, [])
                assert p["eligible_leader_replicas"] is None and p["last_known_elr"] is None   # empty: no ELR
                seen.append((topic["name"], p["partition_index"]))
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [(a, 0), (a, 1), (a, 2), (b, 0), (b, 1)] and pages == 3


def _dtp(raw: RawClient, topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Any:
    cls = req_cls(75, 0)
    return raw.send(build(cls, topics=tuple(build(item_cls(cls, "topics"), name=t) for t in topics),
                          response_partition_limit=limit,
                          cursor=None if cursor is None else build(item_cls(cls, "cursor"), topic_name=cursor[0],
                                                                   partition_index=cursor[1])))


def test_describe_topic_partitions_errors_and_all_topics(kafka_cluster: Any, raw: RawClient) -> None:
    topic = unique("dtp")
    kafka_cluster.create_topic(topic, partitions=2, replication_factor=1)
    resp = _dtp(raw, [topic, "missing-" + topic, "bad name"])
    assert [(t.name, int(t.error_code)) for t in resp.topics] == [
        ("bad name", Errors.INVALID_TOPIC_EXCEPTION), (topic, 0), ("missing-" + topic, Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert resp.topics[1].topic_authorized_operations == 3576   # every topic operation: no authorizer
    # no topics named: every topic, in name order, from the cursor's on
    everything = _dtp(raw, [], cursor=(topic, 1))
    names = [t.name for t in everything.topics]
    assert names == sorted(n for n in kafka_cluster.metadata.topics if n >= topic)
    assert [p.partition_index for p in everything.topics[0].partitions] == [1]
    # the limit runs out exactly at a topic's end: the cursor points at the next topic's start
    resp = _dtp(raw, [topic, topic + "z"], limit=2)
    assert (resp.next_cursor.topic_name, resp.next_cursor.partition_index) == (topic + "z", 0)
    for cursor in ((topic + "-not-listed", 0), (topic, -1)):
        assert int(_dtp(raw, [topic], cursor=cursor).topics[0].error_code) == Errors.INVALID_REQUEST


# ---------------------------------------------------------------- ListConfigResources
def test_list_config_resources(kafka_cluster: Any, admin: KafkaAdminClient) -> None:
    topic = unique("lcr")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
    everything = admin.list_config_resources()
    assert everything["broker"] == ["0", "1", "2"] and everything["broker_logger"] == ["0", "1", "2"]
    assert topic in everything["topic"] and "client_metrics" not in everything and "group" not in everything
    assert admin.list_config_resources(["TOPIC"]) == {"topic": sorted(kafka_cluster.metadata.topics)}


def test_list_config_resources_versions_and_unsupported_types(raw: RawClient) -> None:
    v1 = req_cls(74, 1)
    resp = raw.send(build(v1, resource_types=(2, 64)))
    assert (int(resp.error_code), resp.config_resources) == (Errors.UNSUPPORTED_VERSION, ())
    resp = raw.send(build(v1, resource_types=(4,)))
    assert [(r.resource_name, int(r.resource_type)) for r in resp.config_resources] == [("0", 4), ("1", 4), ("2", 4)]
    v0 = raw.send(build(req_cls(74, 0)))   # ListClientMetricsResources: client-metrics resources only
    assert (int(v0.error_code), v0.config_resources) == (0, ())


# ---------------------------------------------------------------- DescribeQuorum
def test_describe_metadata_quorum(kafka_cluster: Any, admin: KafkaAdminClient) -> None:
    before = admin.describe_metadata_quorum()
    kafka_cluster.create_topic(unique("dq"), partitions=1, replication_factor=1)   # a metadata change
    quorum = admin.describe_metadata_quorum()
    (partition,) = quorum["topics"][0]["partitions"]
    assert quorum["topics"][0]["topic_name"] == "__cluster_metadata" and partition["error"] is None
    leader = kafka_cluster.metadata.controller_id
    (voter,) = partition["current_voters"]
    assert (partition["leader_id"], voter["replica_id"]) == (leader, leader) and partition["leader_epoch"] >= 1
    assert voter["log_end_offset"] == partition["high_watermark"] > \
        before["topics"][0]["partitions"][0]["current_voters"][0]["log_end_offset"]
    assert sorted(o["replica_id"] for o in partition["observers"]) == sorted({0, 1, 2} - {leader})
    assert all(o["log_end_offset"] == voter["log_end_offset"] for o in partition["observers"])
    (node,) = quorum["nodes"]
    assert node["node_id"] == leader and node["listeners"][0]["port"] == kafka_cluster.metadata.broker(leader).port


def test_describe_quorum_of_another_partition_is_unknown(raw: RawClient) -> None:
    cls = req_cls(55, 2)
    t_cls = item_cls(cls, "topics")
    resp = raw.send(build(cls, topics=(build(t_cls, topic_name="__cluster_metadata", partitions=(
        build(item_cls(t_cls, "partitions"), partition_index=1),)),)))
    part = resp.topics[0].partitions[0]
    assert (int(resp.error_code), int(part.error_code), part.error_message) == (
        0, Errors.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")


# ---------------------------------------------------------------- AlterReplicaLogDirs
def test_alter_replica_log_dirs_without_log_dirs(kafka_cluster: Any, admin: KafkaAdminClient) -> None:
    """Logs in memory: only the notional directory DescribeLogDirs names exists."""
    topic = unique("arld")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
    leader = kafka_cluster.metadata.partition_state(topic, 0).leader
    notional = f"/kafka-emu/in-memory/broker-{leader}"
    assert admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, leader): notional}) == \
        {TopicPartitionReplica(topic, 0, leader): NoError}
    assert admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, leader): "/elsewhere"}) == \
        {TopicPartitionReplica(topic, 0, leader): LogDirNotFoundError}


@pytest.fixture()
def two_dir_cluster(tmp_path: Path) -> Iterator[tuple[EmbeddedCluster, Path, Path]]:
    first, second = tmp_path / "a", tmp_path / "b"
    with EmbeddedCluster(brokers=1, config={"log.dirs": f"{first},{second}", "offsets.topic.replication.factor": 1}) \
            as cluster:
        yield cluster, first, second


def test_alter_replica_log_dirs_moves_a_log_between_directories(two_dir_cluster: tuple[EmbeddedCluster, Path, Path]
                                                                 ) -> None:
    cluster, first, second = two_dir_cluster
    topic = unique("arld")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    cluster.produce(topic, 0, [(b"k1", b"v1"), (b"k2", b"v2")])
    log = cluster.broker(0).partition(topic, 0).log
    source = log.dir.parent
    target = second if source == first else first
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        tpr = TopicPartitionReplica(topic, 0, 0)
        missing = TopicPartitionReplica(topic + "-later", 0, 0)
        assert admin.alter_replica_log_dirs({tpr: str(target), missing: str(target)}) == \
            {tpr: NoError, missing: ReplicaNotAvailableError}
        assert admin.alter_replica_log_dirs({tpr: str(target / "nope")}) == {tpr: LogDirNotFoundError}
        described = {d["log_dir"]: [t["name"] for t in d["topics"]] for d in admin.describe_log_dirs()[0]["log_dirs"]}
        assert topic in described[str(target)] and topic not in described.get(str(source), [])
    finally:
        admin.close()
    assert log.dir == target / f"{topic}-0" and not (source / f"{topic}-0").exists()
    cluster.produce(topic, 0, [(b"k3", b"v3")])   # appends and reads go on in the new directory
    assert cluster.read_all(topic, 0) == [(0, b"k1", b"v1"), (1, b"k2", b"v2"), (2, b"k3", b"v3")]
    cluster.create_topic(topic + "-later", partitions=1, replication_factor=1)   # created where it was asked for
    assert cluster.broker(0).partition(topic + "-later", 0).log.dir.parent == target


def test_a_moved_log_is_loaded_from_its_new_directory_after_a_restart(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    config = {"log.dirs": f"{first},{second}", "offsets.topic.replication.factor": 1}
    topic = unique("arld")
    with EmbeddedCluster(brokers=1, config=config) as cluster:
        cluster.create_topic(topic, partitions=1, replication_factor=1)
        cluster.produce(topic, 0, [(b"k", b"v1")])
        source = cluster.broker(0).partition(topic, 0).log.dir.parent
        target = second if source == first else first
        assert cluster.broker(0).replica_manager.alter_replica_log_dirs({(topic, 0): str(target)}) == \
            {(topic, 0): Errors.NONE}
        cluster.produce(topic, 0, [(b"k", b"v2")])
    with EmbeddedCluster(brokers=1, config=config) as again:
        assert again.broker(0).partition(topic, 0).log.dir == target / f"{topic}-0"
        assert again.read_all(topic, 0) == [(0, b"k", b"v1"), (1, b"k", b"v2")]
