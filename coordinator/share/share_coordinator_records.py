"""``__share_group_state`` record formats (Kafka's ``share-coordinator`` message schemas) and the
combining of state batches.

Keys (an int16 first: the record type, Kafka's ``apiKey`` of the key schema; not flexible):
``group_id: string, topic_id: uuid, partition: int32``; type 0 is ShareSnapshotKey, type 1
ShareUpdateKey.

Values (version 0, flexible; compact arrays, a tagged-fields section after each struct):
* ShareSnapshotValue: ``snapshot_epoch: int32, state_epoch: int32, leader_epoch: int32,
  start_offset: int64, create_timestamp: int64, write_timestamp: int64, state_batches:
  [first_offset: int64, last_offset: int64, delivery_state: int8, delivery_count: int16]``;
* ShareUpdateValue: ``snapshot_epoch: int32, leader_epoch: int32, start_offset: int64 (-1:
  unchanged), state_batches: [...]``.
Kafka 4.2's tagged ``DeliveryCompleteCount`` (tag 0) is read and skipped, and not written (its
default, -1, is what an absent tag means). A ``None`` value is a tombstone.

Delivery states as persisted: 0 Available, 2 Acknowledged, 4 Archived (an acquired record is
persisted as what it was before it was acquired).
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Iterable

from kafka_emu.coordinator.group.records import _Reader, _Writer   # the coordinators' record codec

SHARE_SNAPSHOT_KEY_TYPE = 0
SHARE_UPDATE_KEY_TYPE = 1
VALUE_VERSION = 0

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets sharing a delivery state and count (Kafka's ``PersisterStateBatch``)."""
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    """What the share coordinator keeps state for: one share partition of one group
    (Kafka's ``SharePartitionKey``)."""
    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_key(self) -> str:
        """The FindCoordinator key (type 2) and hashing key: ``group:topicId:partition``."""
        return f"{self.group_id}:{topic_id_string(self.topic_id)}:{self.partition}"


def topic_id_string(topic_id: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]


def key_bytes(key_type: int, key: ShareStateKey) -> bytes:
    return _Writer().i16(key_type).string(key.group_id).uuid_(key.topic_id).i32(key.partition).build()


def read_key(buf: bytes) -> tuple[int, ShareStateKey]:
    """(record type, key); ValueError for a type this coordinator does not know."""
    r = _Reader(buf)
    key_type = r.i16()
    if key_type not in (SHARE_SNAPSHOT_KEY_TYPE, SHARE_UPDATE_KEY_TYPE):
        raise ValueError(f"unknown __share_group_state key type {key_type}")
    return key_type, ShareStateKey(r.string() or "", r.uuid_(), r.i32())


def _write_batches(w: _Writer, batches: Iterable[StateBatch]) -> None:
    items = list(batches)
    w.uvarint(len(items) + 1)
    for b in items:
        w.i64(b.first_offset).i64(b.last_offset).i8(b.delivery_state).i16(b.delivery_count).no_tags()


def _read_batches(r: _Reader) -> tuple[StateBatch, ...]:
    out = []
    for _ in range(r.uvarint() - 1):
        out.append(StateBatch(r.i64(), r.i64(), r.i8(), r.i16()))
        r.tags()
    return tuple(out)


def snapshot_value_bytes(v: ShareSnapshotValue) -> bytes:
    w = _Writer().i16(VALUE_VERSION).i32(v.snapshot_epoch).i32(v.state_epoch).i32(v.leader_epoch)
    w.i64(v.start_offset).i64(v.create_timestamp).i64(v.write_timestamp)
    _write_batches(w, v.state_batches)
    return w.no_tags().build()


def update_value_bytes(v: ShareUpdateValue) -> bytes:
    w = _Writer().i16(VALUE_VERSION).i32(v.snapshot_epoch).i32(v.leader_epoch).i64(v.start_offset)
    _write_batches(w, v.state_batches)
    return w.no_tags().build()


def _value_reader(buf: bytes) -> _Reader:
    r = _Reader(buf)
    version = r.i16()
    if version != VALUE_VERSION:
        raise ValueError(f"unknown __share_group_state value version {version}")
    return r


def read_snapshot_value(buf: bytes) -> ShareSnapshotValue:
    r = _value_reader(buf)
    head = (r.i32(), r.i32(), r.i32(), r.i64(), r.i64(), r.i64())
    return ShareSnapshotValue(*head, _read_batches(r))


def read_update_value(buf: bytes) -> ShareUpdateValue:
    r = _value_reader(buf)
    head = (r.i32(), r.i32(), r.i64())
    return ShareUpdateValue(*head, _read_batches(r))


def combine_state_batches(current: Iterable[StateBatch], new: Iterable[StateBatch],
                          start_offset: int) -> tuple[StateBatch, ...]:
    """Kafka's ``PersisterStateBatchCombiner``: the new batches win where they overlap the
    current ones; everything below ``start_offset`` goes (a batch straddling it is cut); adjacent
    batches with the same state and count are merged. The result is sorted and non-overlapping."""
    pieces: list[StateBatch] = []
    new_sorted = sorted(new, key=lambda b: b.first_offset)
    for old in sorted(current, key=lambda b: b.first_offset):
        remaining = [old]
        for n in new_sorted:
            cut: list[StateBatch] = []
            for piece in remaining:
                if n.last_offset < piece.first_offset or n.first_offset > piece.last_offset:
                    cut.append(piece)
                    continue
                if piece.first_offset < n.first_offset:
                    cut.append(StateBatch(piece.first_offset, n.first_offset - 1, piece.delivery_state,
                                          piece.delivery_count))
                if piece.last_offset > n.last_offset:
                    cut.append(StateBatch(n.last_offset + 1, piece.last_offset, piece.delivery_state,
                                          piece.delivery_count))
            remaining = cut
        pieces.extend(remaining)
    pieces.extend(new_sorted)
    merged: list[StateBatch] = []
    for b in sorted(pieces, key=lambda b: b.first_offset):
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        last = merged[-1] if merged else None
        if last is not None and last.last_offset + 1 == b.first_offset \
                and (last.delivery_state, last.delivery_count) == (b.delivery_state, b.delivery_count):
            merged[-1] = StateBatch(last.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        else:
            merged.append(b)
    return tuple(merged)
