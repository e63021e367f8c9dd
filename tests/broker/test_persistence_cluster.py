"""Persistence of an in-process cluster (``log.dirs``): what a new process on the same directories
gets back, the directory layout and checks, and that without ``log.dirs`` nothing touches the disk.

Ports: LogManagerTest.testTwoLogManagersUsingSameDirFails, testLoadDirectoryIds (meta.properties),
KafkaServerTest's InconsistentClusterIdException case, LogManagerTest.testCreateLog (partition
directories in Kafka's layout), DeleteTopicTest.testRecreateTopicAfterDeletion on disk."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_emu.broker.storage.checkpoint_file import MetaProperties
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.server.config import ConfigException
from kafka_emu.broker.storage.log_dirs import InconsistentClusterIdException
from kafka_emu.broker.storage.persistent_log import PersistentLog
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(60)

NO_SOCKETS = {"listeners": ""}


def cluster(directory: Path, brokers: int = 1, **config: Any) -> EmbeddedCluster:
    return EmbeddedCluster(brokers=brokers, config={**NO_SOCKETS, "log.dirs": str(directory), **config})


# ---------------------------------------------------------------------- nothing on disk without log.dirs

_WRITES: list[str] | None = None
_WRITE_EVENTS = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.truncate", "shutil.rmtree"}


def _audit(event: str, args: tuple) -> None:
    writes = _WRITES
    if writes is None or (args and ".hypothesis" in str(args[0])):
        # hypothesis, imported by this test session, caches a character map on first use (kio's
        # schema classes touch it when first loaded): the test's process, not the broker
        return
    if event == "open":
        path, mode, flags = args
        if isinstance(path, (str, bytes, os.PathLike)) and (
                (mode is not None and any(c in str(mode) for c in "wax+"))
                or (mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))):
            writes.append(f"open {path} {mode or flags}")
    elif event in _WRITE_EVENTS:
        writes.append(f"{event} {args[0]}")


sys.addaudithook(_audit)


@pytest.fixture
def disk_writes() -> Iterator[list[str]]:
    global _WRITES
    _WRITES = []
    try:
        yield _WRITES
    finally:
        _WRITES = None


def test_without_log_dirs_nothing_touches_the_disk(disk_writes: list[str]) -> None:
    """The default: logs in memory; creating, producing to, rolling, compacting, deleting and
    closing write no file and create no directory anywhere."""
    with EmbeddedCluster(brokers=2, config={**NO_SOCKETS, "log.segment.bytes": 1024 * 1024}) as c:
        c.create_topic("t", 2, 2, configs={"segment.bytes": 2000})
        for i in range(30):
            assert c.produce("t", i % 2, [(b"k", b"v" * 200)])[0] == Errors.NONE
        c.stop_broker(1)
        c.start_broker(1)
        c.delete_topic("t")
    assert disk_writes == []


# ---------------------------------------------------------------------- what comes back

def test_restart_brings_back_topics_offsets_and_producer_state(tmp_path: Path) -> None:
    """A new cluster on the same log.dirs: topic ids, partition assignments and configs, the
    records, a group's committed offsets (through __consumer_offsets' load path) and producer
    state (from the producer snapshot: a retry of the last batch is still a duplicate, the next
    sequence is accepted); producer ids continue after the persisted block."""
    c = EmbeddedCluster(brokers=1, config={"log.dirs": str(tmp_path), "group.initial.rebalance.delay.ms": 0})
    try:
        info = c.create_topic("t", 2, 1, configs={"retention.ms": 3_600_000})
        pid = c.metadata.next_producer_id()
        first = {"producer_id": pid, "producer_epoch": 0, "base_sequence": 0}
        assert c.produce("t", 0, [(b"a", b"1")], **first) == (Errors.NONE, 0)
        assert c.produce("t", 0, [(b"b", b"2")], producer_id=pid, producer_epoch=0, base_sequence=1) == (Errors.NONE, 1)
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("t", 0, 2)], asynchronous=False)
        consumer.close()
    finally:
        c.close()
    again = EmbeddedCluster(brokers=1, config={"log.dirs": str(tmp_path)})
    try:
        restored = again.metadata.topic("t")
        assert restored.topic_id == info.topic_id and restored.configs == {"retention.ms": 3_600_000}
        assert sorted(restored.partitions) == [0, 1]
        assert [(o, v) for o, _, v in again.read_all("t", 0)] == [(0, b"1"), (1, b"2")]
        # the clean shutdown's producer snapshot keeps each producer's last batch (Kafka's
        # ProducerSnapshot): its retry is a duplicate, an older one is out of order, as in Kafka
        assert again.produce("t", 0, [(b"b", b"2")], producer_id=pid, producer_epoch=0, base_sequence=1) \
            == (Errors.NONE, 1)
        assert again.produce("t", 0, [(b"a", b"1")], **first)[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert again.produce("t", 0, [(b"c", b"3")], producer_id=pid, producer_epoch=0, base_sequence=2) \
            == (Errors.NONE, 2)
        assert again.metadata.next_producer_id() >= pid + 1000
        consumer = Consumer({"bootstrap.servers": again.bootstrap_servers, "group.id": "g"})
        assert consumer.committed([TopicPartition("t", 0)], timeout=10)[0].offset == 2
        consumer.close()
    finally:
        again.close()


def test_several_brokers_each_have_their_directory(tmp_path: Path) -> None:
    """Kafka brokers never share log dirs: broker i of a 3-broker cluster uses <dir>/broker-<i>,
    with its own meta.properties (same cluster.id, its node.id) and its replicas; a restarted
    cluster elects leaders from the persisted ISRs and serves every record."""
    c = cluster(tmp_path, 3, **{"min.insync.replicas": 2})
    try:
        c.create_topic("t", 3, 3)
        for i in range(9):
            assert c.produce("t", i % 3, [(b"k", b"%d" % i)])[0] == Errors.NONE
        cluster_id = c.metadata.cluster_id
    finally:
        c.close()
    for b in range(3):
        d = tmp_path / f"broker-{b}"
        meta = MetaProperties.read(d)
        assert (meta.cluster_id, meta.node_id) == (cluster_id, b)
        assert sorted(p.name for p in d.iterdir() if p.name.startswith("t-")) == ["t-0", "t-1", "t-2"]
        assert (d / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "emulator-cluster-metadata.json").exists()
    again = cluster(tmp_path, 3)
    try:
        for p in range(3):
            assert again.leader_of("t", p) >= 0
            assert [v for _, _, v in again.read_all("t", p)] == [b"%d" % i for i in range(p, 9, 3)]
    finally:
        again.close()


def test_broker_restart_in_process_keeps_writing_the_files(tmp_path: Path) -> None:
    """stop_broker/start_broker with log.dirs: the broker's files are closed cleanly and written
    again after the restart; a new process then reads everything."""
    c = cluster(tmp_path, 2)
    try:
        c.create_topic("t", 1, 2)
        assert c.produce("t", 0, [(b"k", b"a")])[0] == Errors.NONE
        c.stop_broker(1)
        c.start_broker(1)
        c.broker(0).partition("t", 0)
        assert c.produce("t", 0, [(b"k", b"b")])[0] == Errors.NONE
    finally:
        c.close()
    again = cluster(tmp_path, 2)
    try:
        assert [v for _, _, v in again.read_all("t", 0)] == [b"a", b"b"]
    finally:
        again.close()


def test_topic_deletion_removes_the_directory(tmp_path: Path) -> None:
    """DeleteTopicTest.testRecreateTopicAfterDeletion on disk: the partition directory goes with
    the topic; a topic re-created under the same name starts empty with a new id."""
    c = cluster(tmp_path)
    try:
        first = c.create_topic("t", 1, 1)
        assert c.produce("t", 0, [(b"k", b"old")])[0] == Errors.NONE
        c.delete_topic("t")
        assert not (tmp_path / "t-0").exists()
        second = c.create_topic("t", 1, 1)
        assert second.topic_id != first.topic_id
        assert c.produce("t", 0, [(b"k", b"new")]) == (Errors.NONE, 0)
    finally:
        c.close()


def test_stray_partition_directory_is_set_aside(tmp_path: Path) -> None:
    """A partition directory of a topic the controller does not know (or with another topic id)
    is renamed -stray at load, as Kafka 4.0 does, and not served."""
    c = cluster(tmp_path)
    try:
        c.create_topic("t", 1, 1)
    finally:
        c.close()
    (tmp_path / "ghost-0").mkdir()
    again = cluster(tmp_path)
    try:
        assert not (tmp_path / "ghost-0").exists()
        assert len(list(tmp_path.glob("ghost-0.*-stray"))) == 1
        assert ("ghost", 0) not in again.logs[0]
    finally:
        again.close()


def test_memory_budget_rolls_persisted_logs_instead_of_deleting(tmp_path: Path) -> None:
    """Over emulator.log.memory.max.bytes a persisted log loses nothing: its active segment is
    rolled (its bytes move to the page cache through the file's map)."""
    c = cluster(tmp_path, **{"emulator.log.memory.max.bytes": 2000})
    try:
        c.create_topic("t", 1, 1)
        for _ in range(10):
            assert c.produce("t", 0, [(b"k", b"v" * 500)])[0] == Errors.NONE
        manager = c.broker(0).replica_manager.log_manager
        assert manager.enforce_memory_budget() == 0
        log = c.logs[0][("t", 0)]
        assert isinstance(log, PersistentLog)
        assert log.log_start_offset == 0 and log.memory_bytes() == 0 and log.num_segments() == 2
        assert len(c.read_all("t", 0)) == 10
    finally:
        c.close()


# ---------------------------------------------------------------------- checks

def test_unwritable_log_dir_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigException, match=r"^log.dirs: .*file/logs is not a writable directory"):
        cluster(blocker / "logs")


def test_log_dir_of_another_cluster_is_refused(tmp_path: Path) -> None:
    """KafkaServer refusing a directory of another cluster (InconsistentClusterIdException)."""
    cluster(tmp_path).close()
    meta = MetaProperties.read(tmp_path)
    MetaProperties("SomeOtherClusterId0000", 0, meta.directory_id).write(tmp_path)
    with pytest.raises(InconsistentClusterIdException, match="SomeOtherClusterId0000"):
        cluster(tmp_path)


def test_two_clusters_cannot_use_the_same_dir(tmp_path: Path) -> None:
    """LogManagerTest.testTwoLogManagersUsingSameDirFails: the .lock is held while running."""
    with cluster(tmp_path):
        with pytest.raises(ConfigException, match="in use by another broker process"):
            cluster(tmp_path)
    cluster(tmp_path).close()     # released at close


def test_persisted_cluster_keeps_its_broker_count(tmp_path: Path) -> None:
    cluster(tmp_path, 2).close()
    with pytest.raises(ConfigException, match="holds a cluster of 2 brokers"):
        cluster(tmp_path, 3)


def test_config_changes_and_new_partitions_are_persisted(tmp_path: Path) -> None:
    """Mutations made after start-up through the controller's publish points (CreatePartitions,
    AlterConfigs on a topic, on the brokers and on a group) are in the snapshot a restart reads."""
    from kafka_emu.broker.server.partition_state import PartitionState

    c = cluster(tmp_path)
    try:
        c.create_topic("t", 1, 1)
        c.metadata.create_partitions("t", 3, None)
        c.metadata.alter_topic_configs("t", lambda configs: {**configs, "retention.ms": 60_000})
        c.metadata.alter_broker_configs("", lambda configs: {**configs, "log.retention.ms": 120_000})
        c.metadata.alter_group_configs("g", lambda configs: {**configs, "consumer.session.timeout.ms": 50_000})
    finally:
        c.close()
    again = cluster(tmp_path)
    try:
        topic = again.metadata.topic("t")
        assert sorted(topic.partitions) == [0, 1, 2]
        assert all(isinstance(st, PartitionState) and st.leader == 0 for st in topic.partitions.values())
        assert topic.configs == {"retention.ms": 60_000}
        # with KIP-966's activation record, written once at format time (not again on restart)
        assert again.metadata.broker_configs("") == {"min.insync.replicas": 1, "log.retention.ms": 120_000}
        assert again.metadata.group_configs("g") == {"consumer.session.timeout.ms": 50_000}
    finally:
        again.close()


def test_dynamic_flush_interval_applies_at_once(tmp_path: Path) -> None:
    """log.flush.interval.messages is a dynamic broker config (DynamicLogConfig): set through
    AlterConfigs it reaches every log, whose next append is fsynced."""
    from kafka_emu.broker.server.dynamic_config import validate_broker_configs

    c = cluster(tmp_path)
    try:
        c.create_topic("t", 1, 1)
        assert c.produce("t", 0, [(b"k", b"a")])[0] == Errors.NONE
        log = c.logs[0][("t", 0)]
        assert log.recovery_point == 0
        c.metadata.alter_broker_configs(
            "", lambda configs: {**configs, **validate_broker_configs({"log.flush.interval.messages": "1"})})
        assert c.produce("t", 0, [(b"k", b"b")])[0] == Errors.NONE
        assert log.recovery_point == log.log_end_offset == 2
    finally:
        c.close()


def test_describe_log_dirs_reports_the_real_directories(tmp_path: Path) -> None:
    """DescribeLogDirs' source with log.dirs: each configured directory with the partitions it
    holds and its file system's total and usable bytes (Kafka's describeLogDirs)."""
    c = cluster(tmp_path, **{"log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}"})
    try:
        c.create_topic("t", 2, 1)
        dirs = c.broker(0).replica_manager.log_manager.log_dirs()
        assert sorted(d.path for d in dirs) == [str(tmp_path / "a"), str(tmp_path / "b")]
        assert sorted((lg.topic, lg.partition) for d in dirs for lg in d.logs if lg.topic == "t") == [("t", 0), ("t", 1)]
        assert all(d.total_bytes >= d.usable_bytes > 0 for d in dirs)
    finally:
        c.close()


def test_client_quotas_survive_a_restart(tmp_path: Path) -> None:
    """Client quotas are controller state: a restart on the same log.dirs brings them back, and
    the broker's quota managers apply them from the start."""
    c = cluster(tmp_path)
    try:
        c.metadata.alter_client_quotas([([("user", "alice"), ("client-id", None)], [("producer_byte_rate", 4096.0)]),
                                        ([("client-id", "app")], [("request_percentage", 25.0)])])
    finally:
        c.close()
    again = cluster(tmp_path)
    try:
        assert dict(again.metadata.describe_client_quotas([], strict=False)) == {
            (("client-id", None), ("user", "alice")): {"producer_byte_rate": 4096.0},
            (("client-id", "app"),): {"request_percentage": 25.0}}
        quotas = again.broker(0).quotas
        assert quotas.produce.quota("alice", "any") == 4096.0 and quotas.request.quota("bob", "app") == 25.0
    finally:
        again.close()
