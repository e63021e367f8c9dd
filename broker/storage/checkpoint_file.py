"""Kafka's small text files of a log directory, read and written in Kafka's formats.

* ``CheckpointFile`` (server-common ``CheckpointFile``): line 1 the version (``0``), line 2 the
  number of entries, then one entry per line, fields separated by single spaces. Written to
  ``<file>.tmp``, fsynced, renamed over the target and the directory fsynced, so a reader sees
  the old file or the new one, never a torn one. Two entry kinds:
  ``OffsetCheckpointFile`` (``topic partition offset``: ``recovery-point-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``log-start-offset-checkpoint``) and
  ``LeaderEpochCheckpointFile`` (``epoch startOffset``: ``leader-epoch-checkpoint``).
* ``PartitionMetadataFile`` (``partition.metadata``): ``version: 0`` and ``topic_id: <base64>``.
* ``MetaProperties`` (``meta.properties``, KRaft version 1): ``version``, ``cluster.id``,
  ``node.id``, ``directory.id`` as Java properties.

A malformed file raises ``CorruptCheckpointError`` naming the file and line (Kafka: an
IOException, after which the log manager starts from scratch for that checkpoint).

Locking: none; each file has one writer (its log or log manager, under that owner's lock).
"""
from __future__ import annotations

import base64
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, TypeVar

from kafka_emu.common.properties import parse_properties

CHECKPOINT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
META_PROPERTIES_FILE = "meta.properties"

T = TypeVar("T")
TP = tuple[str, int]


class CorruptCheckpointError(Exception):
    """A checkpoint or metadata file that does not parse (names the file and the problem)."""


def fsync_dir(directory: Path) -> None:
    """Make a rename or file creation in ``directory`` durable (Kafka's ``Utils.flushDir``)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str) -> None:
    """Kafka's ``AtomicFileWriter``: write ``<path>.tmp``, fsync it, rename it over ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class CheckpointFile(Generic[T]):
    """A versioned list of entries, one per line (Kafka's ``CheckpointFile``)."""

    def __init__(self, path: Path, fields: int, format_entry: Callable[[T], str],
                 parse_entry: Callable[[list[str]], T]) -> None:
        self.path = path
        self._fields = fields
        self._format = format_entry
        self._parse = parse_entry

    def write(self, entries: list[T]) -> None:
        lines = [str(CHECKPOINT_VERSION), str(len(entries))] + [self._format(e) for e in entries]
        write_atomically(self.path, "\n".join(lines) + "\n")

    def read(self) -> list[T]:
        """The entries; [] when the file does not exist."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) < 2:
            raise CorruptCheckpointError(f"{self.path}: missing version or entry count")
        if lines[0].strip() != str(CHECKPOINT_VERSION):
            raise CorruptCheckpointError(f"{self.path}: unrecognised version {lines[0]!r}")
        try:
            expected = int(lines[1])
        except ValueError:
            raise CorruptCheckpointError(f"{self.path}: bad entry count {lines[1]!r}") from None
        entries = []
        for number, line in enumerate(lines[2:], start=3):
            fields = line.split(" ")
            try:
                if len(fields) != self._fields:
                    raise ValueError(f"{len(fields)} fields")
                entries.append(self._parse(fields))
            except ValueError as exc:
                raise CorruptCheckpointError(f"{self.path}:{number}: malformed entry {line!r} ({exc})") from None
        if len(entries) != expected:
            raise CorruptCheckpointError(f"{self.path}: expected {expected} entries, found {len(entries)}")
        return entries


def _parse_tp_offset(fields: list[str]) -> tuple[TP, int]:
    return (fields[0], int(fields[1])), int(fields[2])


def _format_tp_offset(entry: tuple[TP, int]) -> str:
    (topic, partition), offset = entry
    return f"{topic} {partition} {offset}"


class OffsetCheckpointFile:
    """``topic partition offset`` entries (Kafka's ``OffsetCheckpointFile``)."""

    def __init__(self, path: Path) -> None:
        self._file: CheckpointFile[tuple[TP, int]] = CheckpointFile(path, 3, _format_tp_offset, _parse_tp_offset)
        self.path = path

    def write(self, offsets: dict[TP, int]) -> None:
        self._file.write(sorted(offsets.items()))

    def read(self) -> dict[TP, int]:
        return dict(self._file.read())


def _parse_epoch_entry(fields: list[str]) -> tuple[int, int]:
    return int(fields[0]), int(fields[1])


class LeaderEpochCheckpointFile:
    """``epoch startOffset`` entries (Kafka's ``LeaderEpochCheckpointFile``)."""

    def __init__(self, path: Path) -> None:
        self._file: CheckpointFile[tuple[int, int]] = CheckpointFile(
            path, 2, lambda e: f"{e[0]} {e[1]}", _parse_epoch_entry)
        self.path = path

    def write(self, epochs: list[tuple[int, int]]) -> None:
        self._file.write(list(epochs))

    def read(self) -> list[tuple[int, int]]:
        return self._file.read()


def encode_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def decode_uuid(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a base64 Uuid")
    return uuid.UUID(bytes=raw)


class PartitionMetadataFile:
    """``partition.metadata``: the topic id of a partition directory (Kafka's ``PartitionMetadataFile``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, topic_id: uuid.UUID) -> None:
        write_atomically(self.path, f"version: 0\ntopic_id: {encode_uuid(topic_id)}\n")

    def read(self) -> uuid.UUID | None:
        """The topic id; None when there is no file."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return None
        try:
            fields = dict(line.split(": ", 1) for line in lines if line)
            if fields.get("version") != "0":
                raise ValueError(f"unrecognised version {fields.get('version')!r}")
            topic_id = decode_uuid(fields["topic_id"])
        except (ValueError, KeyError) as exc:
            raise CorruptCheckpointError(f"{self.path}: {exc}") from None
        if topic_id.int == 0:
            raise CorruptCheckpointError(f"{self.path}: the zero topic id is not a valid topic id")
        return topic_id


@dataclass(frozen=True)
class MetaProperties:
    """``meta.properties`` of a KRaft log directory (Kafka's ``MetaProperties``, version 1)."""

    cluster_id: str
    node_id: int
    directory_id: uuid.UUID

    def write(self, directory: Path) -> None:
        write_atomically(directory / META_PROPERTIES_FILE,
                         "#\n# written by kafka-emu\n"
                         f"version=1\ncluster.id={self.cluster_id}\nnode.id={self.node_id}\n"
                         f"directory.id={encode_uuid(self.directory_id)}\n")

    @classmethod
    def read(cls, directory: Path) -> "MetaProperties | None":
        """The directory's properties; None when it has no ``meta.properties``."""
        path = directory / META_PROPERTIES_FILE
        try:
            props = parse_properties(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        try:
            if props.get("version") != "1":
                raise ValueError(f"version {props.get('version')!r} (only KRaft version 1 is supported)")
            directory_id = decode_uuid(props["directory.id"]) if "directory.id" in props else uuid.uuid4()
            return cls(props["cluster.id"], int(props["node.id"]), directory_id)
        except (KeyError, ValueError) as exc:
            raise CorruptCheckpointError(f"{path}: {exc}") from None
