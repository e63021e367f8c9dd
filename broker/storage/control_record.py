"""Control records: the COMMIT and ABORT markers that end a transaction on a partition.

After Kafka's ``ControlRecordType``, ``EndTransactionMarker`` and
``MemoryRecords.withEndTransactionMarker``. A marker is a batch of format v2 with the
transactional (0x10) and control (0x20) attribute bits, the producer id and epoch of the
transaction, base sequence -1 and one record: its key is {int16 version 0, int16 type}
(ABORT 0, COMMIT 1) and its value {int16 version 0, int32 coordinator epoch}. Only partition
leaders write them, for the transaction coordinator (``ReplicaManager.write_txn_markers``);
clients may not (``LogValidator`` answers INVALID_RECORD). Consumers skip control batches and
use COMMIT/ABORT only through the aborted-transaction list of a read_committed fetch.

Stateless.
"""
from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from kafka_emu.broker.storage.log_validator import CONTROL_BIT, TRANSACTIONAL_BIT
from kafka_emu.common.varint import read_varint
from kafka_emu.broker.storage.record_batch import HEADER_SIZE, NO_SEQUENCE, build_batch
from kafka_emu.common.errors import Errors, KafkaError

CURRENT_CONTROL_RECORD_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VALUE_VERSION = 0
END_TXN_MARKER_VALUE_SIZE = 6

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    """Kafka's ``ControlRecordType`` (the type field of a control record's key)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1

    @classmethod
    def parse(cls, key: bytes | memoryview) -> "ControlRecordType":
        if len(key) < _KEY.size:
            raise KafkaError(Errors.INVALID_RECORD,
                             f"invalid control record key: {len(key)} bytes, at least {_KEY.size} expected")
        _version, type_id = _KEY.unpack_from(key, 0)
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


class EndTransactionMarker(NamedTuple):
    control_type: ControlRecordType   # COMMIT or ABORT
    coordinator_epoch: int

    @property
    def is_abort(self) -> bool:
        return self.control_type is ControlRecordType.ABORT


def end_txn_marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int,
                         committed: bool, timestamp_ms: int) -> bytes:
    """The control batch a leader appends for one transaction (``withEndTransactionMarker``):
    offsets are assigned by the log like any other batch."""
    control_type = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
    key = _KEY.pack(CURRENT_CONTROL_RECORD_KEY_VERSION, control_type)
    value = _VALUE.pack(CURRENT_END_TXN_MARKER_VALUE_VERSION, coordinator_epoch)
    return build_batch([(key, value)], timestamp_ms=timestamp_ms, producer_id=producer_id,
                       producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                       attributes=TRANSACTIONAL_BIT | CONTROL_BIT)


def read_end_txn_marker(buf: bytes | bytearray | memoryview, position: int,
                        record_count: int) -> EndTransactionMarker | None:
    """The marker of the uncompressed control batch at ``position`` of ``buf``; None for an
    empty control batch (Kafka: the transaction was cleaned away, nothing to complete).

    INVALID_RECORD when its first record is not an END_TXN marker or its value is short."""
    if record_count == 0:
        return None
    pos = position + HEADER_SIZE
    _length, pos = read_varint(buf, pos)
    pos += 1                                   # record attributes
    _ts_delta, pos = read_varint(buf, pos)
    _offset_delta, pos = read_varint(buf, pos)
    key_length, pos = read_varint(buf, pos)
    if key_length < 0:
        raise KafkaError(Errors.INVALID_RECORD, "control record without a key")
    control_type = ControlRecordType.parse(bytes(buf[pos:pos + key_length]))
    pos += key_length
    if control_type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        raise KafkaError(Errors.INVALID_RECORD,
                         f"invalid record with control type {control_type.name}: not an end transaction marker")
    value_length, pos = read_varint(buf, pos)
    if value_length < END_TXN_MARKER_VALUE_SIZE:
        raise KafkaError(Errors.INVALID_RECORD,
                         f"invalid end transaction marker value of {value_length} bytes")
    _version, coordinator_epoch = _VALUE.unpack_from(buf, pos)
    return EndTransactionMarker(control_type, coordinator_epoch)
