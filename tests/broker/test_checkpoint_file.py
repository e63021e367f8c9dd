"""Kafka's text and index file formats: round trips (hypothesis) and the exact bytes Kafka writes.

Ports: CheckpointFileTest / OffsetCheckpointFileTest (testReturnEmptyOffsetsIfEmptyFileIsPresent,
testHandleMultipleLinesWithSameTopicAndPartition's format, testThrowIfVersionIsNotRecognised),
LeaderEpochCheckpointFileTest (shouldPersistAndOverwriteAndReloadFile), PartitionMetadataFileTest
(testSetRecordWithIdZero), OffsetIndexTest.testReopen / TimeIndexTest (entries survive a reopen),
OffsetIndexTest.testSanityLastOffsetEqualToBaseOffset and the index sanity checks."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.storage.checkpoint_file import (
    CorruptCheckpointError,
    LeaderEpochCheckpointFile,
    MetaProperties,
    OffsetCheckpointFile,
    PartitionMetadataFile,
    decode_uuid,
    encode_uuid,
)
from kafka_emu.broker.storage.file_records import (
    CorruptIndexError,
    encode_offset_index,
    encode_time_index,
    offset_from_file_name,
    filename_prefix_from_offset,
    read_offset_index,
    read_time_index,
)
from kafka_emu.broker.storage.log_segment import OffsetIndex, TimeIndex

pytestmark = pytest.mark.timeout(60)

topics = st.text(st.sampled_from("abcXYZ019._-"), min_size=1, max_size=30)
offsets = st.integers(0, 2**63 - 1)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.tuples(topics, st.integers(0, 2**31 - 1)), offsets, max_size=20))
def test_offset_checkpoint_round_trip(tmp_path_factory: pytest.TempPathFactory, entries: dict) -> None:
    path = tmp_path_factory.mktemp("cp") / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(path).write(entries)
    assert OffsetCheckpointFile(path).read() == entries
    lines = path.read_text().split("\n")
    assert lines[0] == "0" and lines[1] == str(len(entries)) and lines[-1] == ""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), offsets), max_size=20))
def test_leader_epoch_checkpoint_round_trip(tmp_path_factory: pytest.TempPathFactory, epochs: list) -> None:
    path = tmp_path_factory.mktemp("cp") / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(path).write(epochs)
    assert LeaderEpochCheckpointFile(path).read() == epochs


def test_offset_checkpoint_text_is_kafkas(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    OffsetCheckpointFile(path).write({("my-topic", 3): 42, ("a", 0): 7})
    assert path.read_text() == "0\n2\na 0 7\nmy-topic 3 42\n"
    assert not (tmp_path / "replication-offset-checkpoint.tmp").exists()


def test_missing_checkpoint_is_empty_and_bad_ones_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "cp"
    assert OffsetCheckpointFile(path).read() == {}
    for text in ("1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "0\n1\nt x 1\n", "0\n"):
        path.write_text(text)
        with pytest.raises(CorruptCheckpointError):
            OffsetCheckpointFile(path).read()


@settings(max_examples=60, deadline=None)
@given(st.uuids())
def test_partition_metadata_round_trip(tmp_path_factory: pytest.TempPathFactory, topic_id: uuid.UUID) -> None:
    path = tmp_path_factory.mktemp("pm") / "partition.metadata"
    if topic_id.int == 0:
        PartitionMetadataFile(path).write(topic_id)
        with pytest.raises(CorruptCheckpointError):
            PartitionMetadataFile(path).read()
        return
    PartitionMetadataFile(path).write(topic_id)
    assert PartitionMetadataFile(path).read() == topic_id
    assert path.read_text() == f"version: 0\ntopic_id: {encode_uuid(topic_id)}\n"


def test_uuid_text_is_kafkas_base64() -> None:
    """Kafka's Uuid.toString: URL-safe base64 without padding (22 characters)."""
    value = uuid.UUID("00000000-0000-0001-0000-000000000002")
    assert encode_uuid(value) == "AAAAAAAAAAEAAAAAAAAAAg"
    assert decode_uuid("AAAAAAAAAAEAAAAAAAAAAg") == value


@settings(max_examples=40, deadline=None)
@given(st.text(st.sampled_from("abcdefABC0123_-"), min_size=1, max_size=22), st.integers(0, 2**31 - 1), st.uuids())
def test_meta_properties_round_trip(tmp_path_factory: pytest.TempPathFactory, cluster_id: str, node: int,
                                    directory_id: uuid.UUID) -> None:
    d = tmp_path_factory.mktemp("meta")
    MetaProperties(cluster_id, node, directory_id).write(d)
    assert MetaProperties.read(d) == MetaProperties(cluster_id, node, directory_id)
    text = (d / "meta.properties").read_text()
    assert "version=1\n" in text and f"node.id={node}\n" in text


def test_meta_properties_of_another_version_are_refused(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=0\ncluster.id=x\n")
    with pytest.raises(CorruptCheckpointError, match="version"):
        MetaProperties.read(tmp_path)
    assert MetaProperties.read(tmp_path / "nothing-here") is None


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**40), st.lists(st.tuples(st.integers(1, 1000), st.integers(1, 5000)), max_size=50))
def test_offset_index_round_trip(base: int, steps: list) -> None:
    """OffsetIndexTest.testReopen: the .index bytes give back the same entries."""
    index = OffsetIndex(base, 1 << 20)
    offset, position = base, 0
    for d_offset, d_position in steps:
        offset += d_offset
        position += d_position
        index.append(offset, position)
    data = encode_offset_index(index)
    assert len(data) == 8 * len(steps)
    assert read_offset_index(data, base, 1 << 20, position + 1).items() == index.items()
    if steps:
        assert encode_offset_index(index, len(steps) - 1) == data[-8:]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**40), st.lists(st.tuples(st.integers(1, 10**6), st.integers(0, 1000)), max_size=50))
def test_time_index_round_trip(base: int, steps: list) -> None:
    """TimeIndexTest: the .timeindex bytes give back the same (timestamp, offset) entries."""
    index = TimeIndex(base, 1 << 20)
    ts, offset = 1_700_000_000_000, base
    for d_ts, d_offset in steps:
        ts += d_ts
        offset += d_offset
        index.maybe_append(ts, offset)
    data = encode_time_index(index)
    assert len(data) == 12 * len(steps)
    assert read_time_index(data, base, 1 << 20).items() == index.items()


def test_index_sanity_checks() -> None:
    """AbstractIndex.sanityCheck: size not a multiple of the entry, entries going backwards,
    positions past the log, timestamps going backwards are all CorruptIndexException."""
    index = OffsetIndex(100, 1 << 20)
    index.append(105, 10)
    index.append(110, 20)
    good = encode_offset_index(index)
    with pytest.raises(CorruptIndexError):
        read_offset_index(good + b"\x00", 100, 1 << 20, 100)
    with pytest.raises(CorruptIndexError):
        read_offset_index(good[8:] + good[:8], 100, 1 << 20, 100)
    with pytest.raises(CorruptIndexError):
        read_offset_index(good, 100, 1 << 20, 15)          # a position past the log's end
    times = TimeIndex(100, 1 << 20)
    times.maybe_append(2000, 101)
    times.maybe_append(3000, 102)
    data = encode_time_index(times)
    with pytest.raises(CorruptIndexError):
        read_time_index(data[12:] + data[:12], 100, 1 << 20)


def test_segment_file_names() -> None:
    """LogFileUtils.filenamePrefixFromOffset / offsetFromFileName."""
    assert filename_prefix_from_offset(42) == "00000000000000000042"
    assert offset_from_file_name("00000000000000000042.timeindex") == 42
    with pytest.raises(ValueError):
        offset_from_file_name("leader-epoch-checkpoint")
