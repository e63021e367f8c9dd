"""Producer-state snapshot files: ``<20-digit offset>.snapshot`` (Kafka's ``ProducerSnapshot``
schema, ``ProducerStateManager.writeSnapshot``/``readSnapshot`` and ``SnapshotFile``).

A snapshot named by offset N holds the state of every producer after the batches below N.
Layout (big endian): int16 version (1), uint32 CRC-32C of everything after the CRC field, int32
entry count, then per producer 46 bytes: int64 producer id, int16 epoch, int32 last sequence,
int64 last offset, int32 offset delta (last offset - first offset of its last batch), int64
timestamp, int32 coordinator epoch, int64 first offset of its open transaction (-1: none). Only
each producer's last batch is kept, so after a load from a snapshot a retry is recognised as a
duplicate only when it repeats that batch (Kafka's behaviour too); a producer without a data
batch (its last entry a marker) has last offset -1.

A file that does not decode, has another version or a wrong CRC raises ``CorruptSnapshotError``;
the loader deletes it and tries the next older one (Kafka's ``loadFromSnapshot``).

Stateless.
"""
from __future__ import annotations

import os
import struct
from collections import deque
from pathlib import Path
from typing import Iterable

from crc32c import crc32c

from kafka_emu.broker.storage.file_records import offset_from_file_name, segment_path
from kafka_emu.broker.storage.producer_state import MAX_CACHED_BATCHES, CachedBatch, ProducerStateEntry
from kafka_emu.broker.storage.record_batch import NO_SEQUENCE

SNAPSHOT_SUFFIX = ".snapshot"
PRODUCER_SNAPSHOT_VERSION = 1
_VERSION = struct.Struct(">h")
_CRC = struct.Struct(">I")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_AT = 2
_ENTRIES_AT = 6     # Kafka's PRODUCER_ENTRIES_OFFSET: the CRC covers the bytes from here


class CorruptSnapshotError(Exception):
    """A snapshot file that cannot be trusted (Kafka's ``CorruptSnapshotException``)."""


def snapshot_path(directory: Path, offset: int) -> Path:
    """Kafka's ``LogFileUtils.producerSnapshotFile``."""
    return segment_path(directory, offset, SNAPSHOT_SUFFIX)


def list_snapshot_files(directory: Path) -> dict[int, Path]:
    """Offset -> path of every snapshot file of a partition directory."""
    out: dict[int, Path] = {}
    for p in directory.iterdir():
        if p.name.endswith(SNAPSHOT_SUFFIX):
            try:
                out[offset_from_file_name(p.name)] = p
            except ValueError:
                continue
    return out


def _decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's ``DefaultRecordBatch.decrementSequence`` (sequences wrap at 2^31)."""
    return sequence - decrement if sequence >= decrement else 0x7FFFFFFF - (decrement - sequence) + 1


def encode_snapshot(producers: Iterable[ProducerStateEntry]) -> bytes:
    body = bytearray()
    count = 0
    for e in producers:
        last = e.batches[-1] if e.batches else None
        body += _ENTRY.pack(e.producer_id, e.producer_epoch, e.last_seq,
                            last.last_offset if last is not None else -1,
                            last.last_offset - last.first_offset if last is not None else 0,
                            e.last_timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        count += 1
    out = bytearray(_VERSION.pack(PRODUCER_SNAPSHOT_VERSION) + b"\0\0\0\0" + _COUNT.pack(count))
    out += body
    _CRC.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_ENTRIES_AT:]))
    return bytes(out)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    if len(data) < _ENTRIES_AT + _COUNT.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {len(data)} bytes")
    version = _VERSION.unpack_from(data, 0)[0]
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    count = _COUNT.unpack_from(data, _ENTRIES_AT)[0]
    if count < 0 or len(data) != _ENTRIES_AT + _COUNT.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {count} entries in {len(data)} bytes")
    stored, computed = _CRC.unpack_from(data, _CRC_AT)[0], crc32c(memoryview(data)[_ENTRIES_AT:])
    if stored != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
                                   f"Computed crc: {computed}")
    entries = []
    for (pid, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first_offset) in _ENTRY.iter_unpack(memoryview(data)[_ENTRIES_AT + _COUNT.size:]):
        batches: deque = deque(maxlen=MAX_CACHED_BATCHES)
        if last_offset >= 0:
            first_seq = NO_SEQUENCE if last_seq == NO_SEQUENCE else _decrement_sequence(last_seq, offset_delta)
            batches.append(CachedBatch(first_seq, last_seq, last_offset - offset_delta, last_offset, timestamp))
        entries.append(ProducerStateEntry(pid, epoch, batches, coordinator_epoch, txn_first_offset, timestamp))
    return entries


def write_snapshot(path: Path, producers: Iterable[ProducerStateEntry], sync: bool) -> None:
    """Write a snapshot file (fsynced when ``sync``: at clean shutdown; a roll's snapshot is
    flushed with its segment, as Kafka's is)."""
    with open(path, "wb") as f:
        f.write(encode_snapshot(producers))
        if sync:
            f.flush()
            os.fsync(f.fileno())


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    return decode_snapshot(path.read_bytes())
