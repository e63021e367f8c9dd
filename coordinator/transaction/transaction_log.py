"""``__transaction_state`` record formats (Kafka's ``TransactionLog``, ``TransactionLogKey`` and
``TransactionLogValue`` message schemas).

* Key, version 0 (non-flexible): ``int16 version, TransactionalId: string``.
* Value, versions 0-1 (flexible from 1): ``int16 version, ProducerId: int64, ProducerEpoch: int16,
  TransactionTimeoutMs: int32, TransactionStatus: int8, TransactionPartitions: nullable
  [Topic: string, PartitionIds: [int32]], TransactionLastUpdateTimestampMs: int64,
  TransactionStartTimestampMs: int64``; v1 adds the tagged fields 0 ``PreviousProducerId``
  (int64, default -1), 1 ``NextProducerId`` (int64, default -1) and 2
  ``ClientTransactionVersion`` (int16, default 0), written only when not the default.
* A ``None`` value is a tombstone (an expired transactional id).

The coordinator writes value v1 (Kafka does when the finalized ``transaction.version`` is at
least 1; the emulator writes it at level 0 too, the ``3.9`` mode's level, where Kafka 3.9 writes
v0 - v1 readers read both); ``TransactionPartitions`` is null in the Empty state and
the partitions are grouped by topic. ``lastProducerEpoch`` is not persisted (Kafka's format
has no field for it). Unknown key versions raise ``ValueError``, which the loader skips.
"""
from __future__ import annotations

import struct

from kafka_emu.common.varint import read_uvarint, skip_tagged_fields, write_uvarint
from kafka_emu.coordinator.group.records import java_string_hashcode, kafka_utils_abs
from kafka_emu.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH, TransactionMetadata, TransactionState, TxnTransitMetadata,
)

KEY_VERSION = 0
VALUE_VERSION = 1

_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """``Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions``."""
    return kafka_utils_abs(java_string_hashcode(transactional_id)) % num_partitions


def key_bytes(transactional_id: str) -> bytes:
    raw = transactional_id.encode("utf-8")
    return _I16.pack(KEY_VERSION) + _I16.pack(len(raw)) + raw


def read_key(buf: bytes) -> str:
    version = _I16.unpack_from(buf, 0)[0]
    if version != KEY_VERSION:
        raise ValueError(f"unknown __transaction_state key version {version}")
    n = _I16.unpack_from(buf, 2)[0]
    return buf[4:4 + n].decode("utf-8")


def value_bytes(m: TxnTransitMetadata) -> bytes:
    """Value v1 of a transition (Kafka's ``TransactionLog.valueToBytes``)."""
    if m.txn_state is TransactionState.DEAD:
        raise ValueError("Dead is written as a tombstone, never as a value")
    out = bytearray(_I16.pack(VALUE_VERSION))
    out += _I64.pack(m.producer_id) + _I16.pack(m.producer_epoch) + _I32.pack(m.txn_timeout_ms)
    out += _I8.pack(m.txn_state.id)
    if m.txn_state is TransactionState.EMPTY:
        if m.topic_partitions:
            raise ValueError(f"Transaction is not expected to have any partitions since its state is "
                             f"Empty: {m}")
        write_uvarint(out, 0)   # null compact array
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(m.topic_partitions):
            by_topic.setdefault(topic, []).append(partition)
        write_uvarint(out, len(by_topic) + 1)
        for topic, partitions in by_topic.items():
            raw = topic.encode("utf-8")
            write_uvarint(out, len(raw) + 1)
            out += raw
            write_uvarint(out, len(partitions) + 1)
            for p in partitions:
                out += _I32.pack(p)
            write_uvarint(out, 0)   # no tagged fields in the entry
    out += _I64.pack(m.txn_last_update_timestamp) + _I64.pack(m.txn_start_timestamp)
    tags: list[tuple[int, bytes]] = []
    if m.prev_producer_id != -1:
        tags.append((0, _I64.pack(m.prev_producer_id)))
    if m.next_producer_id != -1:
        tags.append((1, _I64.pack(m.next_producer_id)))
    if m.client_transaction_version != 0:
        tags.append((2, _I16.pack(m.client_transaction_version)))
    write_uvarint(out, len(tags))
    for tag, data in tags:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
    return bytes(out)


def read_value(transactional_id: str, buf: bytes) -> TransactionMetadata:
    """A ``TransactionMetadata`` from a value of version 0 or 1 (Kafka's ``readTxnRecordValue``);
    higher versions are read as v1 (their extra fields would be tagged)."""
    version = _I16.unpack_from(buf, 0)[0]
    if version < 0:
        raise ValueError(f"unknown __transaction_state value version {version}")
    flexible = version >= 1
    pos = 2
    producer_id = _I64.unpack_from(buf, pos)[0]
    epoch = _I16.unpack_from(buf, pos + 8)[0]
    timeout_ms = _I32.unpack_from(buf, pos + 10)[0]
    state = TransactionState.from_id(_I8.unpack_from(buf, pos + 14)[0])
    pos += 15
    partitions: set[tuple[str, int]] = set()
    count, pos = _read_length(buf, pos, flexible, _I32)
    for _ in range(max(count, 0)):
        ln, pos = _read_length(buf, pos, flexible, _I16)
        topic = buf[pos:pos + ln].decode("utf-8")
        pos += ln
        np_, pos = _read_length(buf, pos, flexible, _I32)
        for _ in range(max(np_, 0)):
            partitions.add((topic, _I32.unpack_from(buf, pos)[0]))
            pos += 4
        if flexible:
            pos = skip_tagged_fields(buf, pos)
    last_update = _I64.unpack_from(buf, pos)[0]
    start = _I64.unpack_from(buf, pos + 8)[0]
    pos += 16
    prev_pid, next_pid, client_tv = -1, -1, 0
    if flexible:
        ntags, pos = read_uvarint(buf, pos)
        for _ in range(ntags):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            if tag == 0:
                prev_pid = _I64.unpack_from(buf, pos)[0]
            elif tag == 1:
                next_pid = _I64.unpack_from(buf, pos)[0]
            elif tag == 2:
                client_tv = _I16.unpack_from(buf, pos)[0]
            pos += size
    if state is TransactionState.EMPTY and partitions:
        raise ValueError(f"transactional id {transactional_id} is Empty but lists partitions")
    return TransactionMetadata(transactional_id, producer_id, prev_pid, next_pid, epoch, NO_PRODUCER_EPOCH,
                               timeout_ms, state, partitions, start, last_update, client_tv)


def _read_length(buf: bytes, pos: int, flexible: bool, fixed: struct.Struct) -> tuple[int, int]:
    """(length, position after it) of a string or array: a compact unsigned varint (length + 1,
    0 = null) in flexible versions, else ``fixed`` (-1 = null)."""
    if flexible:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    return fixed.unpack_from(buf, pos)[0], pos + fixed.size
