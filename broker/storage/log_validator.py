"""LogValidator: check a client's batches and assign their offsets (Kafka's ``LogValidator``).

``validate_messages_and_assign_offsets`` runs on the leader, under the partition lock, after
``record_batch.parse_batches`` checked sizes, CRCs and counts. For each batch (format v2):

* batch checks (``validateBatch``, client batches only): base offset 0, not a control batch
  (INVALID_RECORD: only partition leaders write COMMIT/ABORT markers, for the transaction
  coordinator), a base sequence when it has a producer id; whether a transactional batch may
  open a transaction is the producer state's question (``broker.storage.producer_state``);
* the records are decompressed with the batch's codec (``broker.storage.compression``): a payload that
  does not decode is CORRUPT_MESSAGE; then every record is walked: the record count, the record
  lengths and the end of the records section must agree (INVALID_RECORD otherwise, Kafka's
  ``InvalidRecordException``); a record without key on a compacted topic is INVALID_RECORD; a
  client batch claiming ``LogAppendTime`` is INVALID_TIMESTAMP (unless every record carries a
  create time on a ``CreateTime`` topic, as in Kafka);
* offsets are assigned from the log end offset and the leader epoch stamped. The batch is kept
  as sent (in place) when its codec is the topic's target codec (``compression.type``;
  ``producer`` keeps any) and, for a compressed batch, its records' offset deltas are 0, 1, 2…;
  otherwise it is rebuilt with the target codec (records re-encoded with dense offset deltas),
  keeping producer id, epoch, base sequence and the transactional flag (a control batch is
  always kept as written, as in Kafka). The max timestamp is
  the largest record timestamp (``CreateTime``) or now with the ``LogAppendTime`` type bit
  (``message.timestamp.type=LogAppendTime``); the CRC is recomputed when the header changed.
* a rebuilt batch is checked against ``max.message.bytes`` again (MESSAGE_TOO_LARGE).

Stateless; the caller holds the partition lock.

Differences from Kafka on purpose: ``message.timestamp.before.max.ms`` and
``message.timestamp.after.max.ms`` are not checked (tests run brokers on mock clocks far from
the clients' wall clocks); record headers are not walked one by one (a record's length bounds it).
Record-level errors (a record without a key on a compacted topic) are reported as Kafka reports
them: ``RecordValidationError`` with one (batch index, message) per record.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, NamedTuple

from crc32c import crc32c

from kafka_emu.common.varint import read_varint, write_varint
from kafka_emu.broker.storage import compression
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_segment import BatchHeader
from kafka_emu.broker.storage.record_batch import HEADER_SIZE, NO_PRODUCER_ID, BatchInfo, new_tuple

if TYPE_CHECKING:   # the protocol package (kio) is not needed to validate records
    from kafka_emu.broker.protocol.fast_produce import RecordError

TIMESTAMP_TYPE_BIT = 0x08      # attributes bit 3: LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
NO_TIMESTAMP = -1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_OFFSET_LENGTH_EPOCH = struct.Struct(">qii")   # baseOffset, batchLength, partitionLeaderEpoch: one call
CODEC_MASK = compression.CODEC_MASK
# a varint of a client's record that is malformed or runs past its record: Kafka's
# DefaultRecord.readFrom turns any bad read into an InvalidRecordException
_BAD_RECORD = Errors.INVALID_RECORD
NONE = compression.NONE


class ValidationResult(NamedTuple):
    """The records to append (offsets assigned) and what the log needs to know about them."""

    records: bytearray             # built once, handed to the segment as is (no further copy)
    batches: list[BatchInfo]       # positions are within ``records``
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int           # -1 unless the topic uses LogAppendTime
    size_maybe_changed: bool


class RecordValidationError(KafkaError):
    """INVALID_RECORD for records of a batch, each named by its index in the batch (Kafka's
    ``RecordValidationException`` as ``LogValidator.processRecordErrors`` raises it): the
    Produce response carries them as ``record_errors`` and this message as ``error_message``."""

    def __init__(self, record_errors: list[RecordError]) -> None:
        shown = ", ".join(_record_error_string(i, m) for i, m in record_errors[:3])
        super().__init__(Errors.INVALID_RECORD,
                         f"One or more records have been rejected due to {len(record_errors)} record errors "
                         f"in total, and only showing the first three errors at most: [{shown}]")
        self.record_errors = tuple(record_errors)


def _record_error_string(batch_index: int, message: str | None) -> str:
    """Kafka's ``RecordError.toString``."""
    quoted = "null" if message is None else f"'{message}'"
    return f"RecordError(batchIndex={batch_index}, message={quoted})"


class RecordInfo(NamedTuple):
    start: int           # position of the record's length varint in the records section
    end: int
    timestamp_delta: int
    offset_delta: int
    key_start: int
    key_length: int      # -1: no key
    value_length: int    # -1: null value (a tombstone)


def walk_records(payload: bytes | bytearray | memoryview, count: int) -> list[RecordInfo]:
    """The records of an (uncompressed) records section; INVALID_RECORD if they do not add up."""
    out: list[RecordInfo] = []
    _walk(payload, 0, len(payload), count, out)
    return out


def _walk(buf: bytes | bytearray | memoryview, pos: int, end: int, count: int,
          out: list[RecordInfo] | None) -> tuple[int, bool, bool]:
    """Walk the ``count`` records of ``buf[pos:end]`` (appending them to ``out`` when given);
    INVALID_RECORD if they do not add up. Returns (largest timestamp delta, whether the offset
    deltas are 0, 1, 2..., whether some record has no key).

    The hot path of every produce, hence written for the interpreter: a record's length and
    its key and value lengths are read to skip its body; one-byte varints (attributes,
    timestamp and offset deltas, key lengths: nearly all of them) are decoded inline, two-byte
    ones next, longer ones by ``read_varint`` (the zigzag decoding branches, to spend one
    operation on the usual non-negative value); positions stay relative to ``buf``, so a batch is
    walked where it lies, without a slice. A varint read past its record is caught by the
    overrun checks that follow, one read past the buffer by the IndexError.

    The inline decoding copies ``common.varint.read_varint``'s on purpose, measured
    compiled (2026-11-28, Cython 3.3, CPython 3.11): a call per varint instead makes the walk
    1.6x slower for a batch of five 200-byte records (1.8 µs -> 2.9 µs a walk; 25,900 -> 41,700
    instructions under callgrind), 1.5x for 100 records of 20 bytes, 1.16x for 10 KB records
    (whose lengths take three bytes and the call anyway): about 1 µs of every produce."""
    max_delta = -(1 << 63)
    dense = True
    keyless = False
    append = out.append if out is not None else None
    try:
        for i in range(count):
            b = buf[pos]
            if b < 0x80:
                length, body = (b >> 1 if not b & 1 else ~(b >> 1)), pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                v = (b & 0x7F) | (c << 7)
                length, body = (v >> 1 if not v & 1 else ~(v >> 1)), pos + 2
            else:
                length, body = read_varint(buf, pos, end, _BAD_RECORD)
            record_end = body + length
            if length < 0 or record_end > end:
                raise KafkaError(Errors.INVALID_RECORD, f"record {i} of length {length} overruns the batch")
            p = body + 1                              # attributes
            b = buf[p]
            if b < 0x80:
                ts_delta, p = (b >> 1 if not b & 1 else ~(b >> 1)), p + 1
            elif (c := buf[p + 1]) < 0x80:
                v = (b & 0x7F) | (c << 7)
                ts_delta, p = (v >> 1 if not v & 1 else ~(v >> 1)), p + 2
            else:
                ts_delta, p = read_varint(buf, p, record_end, _BAD_RECORD)
            if ts_delta > max_delta:
                max_delta = ts_delta
            b = buf[p]
            if b == i << 1 and i < 64:                # the dense offset delta i as one byte
                offset_delta = i
                p += 1
            else:
                if b < 0x80:
                    offset_delta, p = (b >> 1 if not b & 1 else ~(b >> 1)), p + 1
                elif (c := buf[p + 1]) < 0x80:
                    v = (b & 0x7F) | (c << 7)
                    offset_delta, p = (v >> 1 if not v & 1 else ~(v >> 1)), p + 2
                else:
                    offset_delta, p = read_varint(buf, p, record_end, _BAD_RECORD)
                if offset_delta != i:
                    dense = False
            b = buf[p]
            if b < 0x80:
                key_length, key_start = (b >> 1 if not b & 1 else ~(b >> 1)), p + 1
            elif (c := buf[p + 1]) < 0x80:
                v = (b & 0x7F) | (c << 7)
                key_length, key_start = (v >> 1 if not v & 1 else ~(v >> 1)), p + 2
            else:
                key_length, key_start = read_varint(buf, p, record_end, _BAD_RECORD)
            if key_length < 0:
                keyless = True
            p = key_start + (key_length if key_length > 0 else 0)
            if p > record_end:
                raise KafkaError(Errors.INVALID_RECORD, f"key of record {i} overruns the record")
            b = buf[p]
            if b < 0x80:
                value_length, p = (b >> 1 if not b & 1 else ~(b >> 1)), p + 1
            elif (c := buf[p + 1]) < 0x80:
                v = (b & 0x7F) | (c << 7)
                value_length, p = (v >> 1 if not v & 1 else ~(v >> 1)), p + 2
            else:
                value_length, p = read_varint(buf, p, record_end, _BAD_RECORD)
            if (value_length if value_length > 0 else 0) > record_end - p:
                raise KafkaError(Errors.INVALID_RECORD, f"value of record {i} overruns the record")
            if append is not None:
                append(RecordInfo(pos, record_end, ts_delta, offset_delta, key_start, key_length, value_length))
            pos = record_end
    except IndexError:
        raise KafkaError(Errors.INVALID_RECORD,
                         f"batch declares {count} records but its records section ends early") from None
    if pos != end:
        raise KafkaError(Errors.INVALID_RECORD,
                         f"{end - pos} bytes left after the {count} records the batch declares")
    return max_delta, dense, keyless


def records_payload(batch: bytes | bytearray | memoryview, attributes: int) -> bytes | memoryview:
    """The batch's records section, decompressed (CORRUPT_MESSAGE if it does not decode)."""
    view = memoryview(batch)[HEADER_SIZE:]
    codec = attributes & compression.CODEC_MASK
    if codec == compression.NONE:
        return view
    try:
        return compression.decompress(codec, view)
    except compression.CompressionError as exc:
        raise KafkaError(Errors.CORRUPT_MESSAGE, str(exc)) from None


def record_timestamps(buf: bytes | bytearray, header: BatchHeader) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record of a stored batch (decompressed if need be); a
    ``LogAppendTime`` batch gives each record the batch's timestamp, as Kafka's records do."""
    with memoryview(buf) as view:
        batch = view[header.position:header.position + header.size]
        attrs = _I16.unpack_from(batch, 21)[0]
        count = _I32.unpack_from(batch, 57)[0]
        base_ts = _I64.unpack_from(batch, 27)[0]
        records = walk_records(records_payload(batch, attrs), count)
        batch.release()
    if attrs & TIMESTAMP_TYPE_BIT:
        return [(header.base_offset + r.offset_delta, header.max_timestamp) for r in records]
    return [(header.base_offset + r.offset_delta, base_ts + r.timestamp_delta) for r in records]


def _dense_records(payload: bytes | memoryview, records: list[RecordInfo]) -> bytes:
    """The records re-encoded with offset deltas 0, 1, 2, … (everything else kept)."""
    out = bytearray()
    for i, r in enumerate(records):
        if r.offset_delta == i:
            out += payload[r.start:r.end]
            continue
        _, body = read_varint(payload, r.start, r.end, _BAD_RECORD)
        p = body + 1
        _, p = read_varint(payload, p, r.end, _BAD_RECORD)
        _, after_delta = read_varint(payload, p, r.end, _BAD_RECORD)
        rec = bytearray(payload[body:p])          # attributes, timestamp delta
        write_varint(rec, i)
        rec += payload[after_delta:r.end]
        write_varint(out, len(rec))
        out += rec
    return bytes(out)


def validate_messages_and_assign_offsets(data: bytes | bytearray | memoryview, infos: list[BatchInfo],
                                         offset_counter: int, leader_epoch: int, config: LogConfig, now_ms: int,
                                         topic_partition: str, from_client: bool = True) -> ValidationResult:
    """Validate a leader append's batches and assign offsets from ``offset_counter`` (the LEO);
    ``from_client`` is Kafka's origin CLIENT (coordinators' batches skip the client checks).

    ``infos`` are ``parse_batches(data)``, so they tile ``data``. Uncompressed records are
    walked where they lie in ``data``; a batch kept in place is copied once into the result and
    its header patched there (offset and epoch; attributes, max timestamp and CRC only when
    they change), as Kafka's in-place offset assignment does."""
    log_append = config.message_timestamp_type == "LogAppendTime"
    # Kafka's BrokerCompressionType.targetCompression: None for ``producer`` (keep the batch's)
    topic_codec = compression.BY_TOPIC_CONFIG.get(config.compression_type)
    single = len(infos) == 1      # every client produce: one batch filling ``data``
    out = bytearray(data) if single else bytearray()
    batches: list[BatchInfo] = []
    max_timestamp = NO_TIMESTAMP
    shallow_offset = offset_counter
    changed = False
    for info in infos:
        # unpacked at once: reading a NamedTuple's fields by name costs ten times more (3.11)
        position, size, base_offset, _, _, attrs, batch_max, producer_id, producer_epoch, base_sequence, \
            count = info
        if from_client:   # Kafka's LogValidator.validateBatch for a client (origin CLIENT) batch of format v2
            if base_offset != 0:
                raise KafkaError(Errors.INVALID_RECORD,
                                 f"The baseOffset of the record batch in the append to {topic_partition} "
                                 f"should be 0, but it is {base_offset}")
            if attrs & CONTROL_BIT:
                raise KafkaError(Errors.INVALID_RECORD, "Clients are not allowed to write control records")
            if producer_id != NO_PRODUCER_ID and base_sequence < 0:
                raise KafkaError(Errors.INVALID_RECORD,
                                 f"Invalid sequence number {base_sequence} in record batch with "
                                 f"producerId {producer_id}")
        source = attrs & CODEC_MASK
        if source == NONE:
            payload, records_start, records_end = data, position + HEADER_SIZE, position + size
        else:
            payload = records_payload(memoryview(data)[position:position + size], attrs)
            records_start, records_end = 0, len(payload)
        max_delta, dense, keyless = _walk(payload, records_start, records_end, count, None)
        base_ts = _I64.unpack_from(data, position + 27)[0]
        if keyless and config.compact:
            message = f"Compacted topic cannot accept message without key in topic partition {topic_partition}."
            raise RecordValidationError([(i, message) for i, r in enumerate(
                _records(payload, records_start, records_end, count)) if r.key_length < 0])
        if attrs & TIMESTAMP_TYPE_BIT and (log_append or any(
                base_ts + r.timestamp_delta == NO_TIMESTAMP for r in _records(payload, records_start,
                                                                              records_end, count))):
            raise KafkaError(Errors.INVALID_TIMESTAMP,
                             f"Invalid timestamp type in batch of {topic_partition}: clients may not set "
                             f"LogAppendTime")
        if log_append:
            new_max = now_ms
            new_attrs = attrs | TIMESTAMP_TYPE_BIT
        else:
            new_max = base_ts + max_delta
            if new_max < NO_TIMESTAMP:
                new_max = NO_TIMESTAMP
            new_attrs = attrs & ~TIMESTAMP_TYPE_BIT
        # a control batch (a marker) is always kept as written
        target = source if topic_codec is None or attrs & CONTROL_BIT else topic_codec
        if target == source and (dense or source == NONE):
            if single:
                start = 0
            else:
                start = len(out)
                out += memoryview(data)[position:position + size]
            if new_attrs != attrs or new_max != batch_max:
                _finish_header_at(out, start, new_attrs, new_max)
        else:
            section = _dense_records(payload, _records(payload, records_start, records_end, count))
            if target != NONE:
                section = compression.compress(target, section, config.compression_levels.get(
                    compression.NAMES[target]))
            new_attrs = (new_attrs & ~CODEC_MASK) | target
            rebuilt = bytearray(memoryview(data)[position:position + HEADER_SIZE])
            rebuilt += section
            _I32.pack_into(rebuilt, 8, len(rebuilt) - 12)
            _I32.pack_into(rebuilt, 23, count - 1)
            if single:
                out = rebuilt
                start = 0
            else:
                start = len(out)
                out += rebuilt
            _finish_header_at(out, start, new_attrs, new_max)
            changed = True
            size = len(rebuilt)
            if size > config.max_message_bytes:
                raise KafkaError(Errors.MESSAGE_TOO_LARGE,
                                 f"batch of {size} bytes after recompression exceeds "
                                 f"max.message.bytes {config.max_message_bytes}")
        _OFFSET_LENGTH_EPOCH.pack_into(out, start, offset_counter, size - 12, leader_epoch)
        last_offset = offset_counter + count - 1
        if new_max > max_timestamp:
            max_timestamp = new_max
            shallow_offset = last_offset
        batches.append(new_tuple(BatchInfo, (start, size, offset_counter, count - 1, leader_epoch, new_attrs, new_max,
                                             producer_id, producer_epoch, base_sequence, count)))
        offset_counter = last_offset + 1
    return new_tuple(ValidationResult, (out, batches, offset_counter - 1, max_timestamp, shallow_offset,
                                        now_ms if log_append else -1, changed))


def _records(buf: bytes | bytearray | memoryview, start: int, end: int, count: int) -> list[RecordInfo]:
    """The records of ``buf[start:end]`` (positions in ``buf``), for the paths off the common one."""
    out: list[RecordInfo] = []
    _walk(buf, start, end, count, out)
    return out


def _finish_header_at(buf: bytearray, start: int, attributes: int, max_timestamp: int) -> None:
    """Set a batch's attributes and max timestamp, then its CRC (bytes 21..end)."""
    _I16.pack_into(buf, start + 21, attributes)
    _I64.pack_into(buf, start + 35, max_timestamp)
    end = start + _I32.unpack_from(buf, start + 8)[0] + 12
    _U32.pack_into(buf, start + 17, crc32c(memoryview(buf)[start + 21:end]))
