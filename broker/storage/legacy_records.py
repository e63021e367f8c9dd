"""Message formats v0 and v1 ("MessageSet"): up-conversion on produce, down-conversion on fetch.

Only as Kafka 3.9 (``emulator.kafka.version=3.9``), for the Produce v0-v2 and Fetch v0-v3 requests
Kafka 3.9 still served. Like Kafka 3.x (message format v2 on disk whatever
``log.message.format.version`` says, KIP-724), the log holds v2 batches only:

* ``up_convert`` is ``LogValidator.convertAndAssignOffsetsNonCompressed`` and the magic-changing
  branch of ``validateMessagesAndAssignOffsetsCompressed``, minus offset assignment (the log does
  that): the shallow checks of ``UnifiedLog.analyzeAndValidateRecords`` (size against
  ``max.message.bytes``, CRC), the batch checks (every message of the first one's magic; a
  compressed message set holds one wrapper), the record checks (inner magic equal to the
  wrapper's, inner CRC, no compressed inner message, no client-set LogAppendTime), then ONE v2
  batch holding every record (no producer id, the records' own timestamps, the wrapper's
  codec; the broker's validator recompresses it if the topic says so). Errors are Kafka's
  (CORRUPT_MESSAGE, INVALID_RECORD, INVALID_TIMESTAMP, MESSAGE_TOO_LARGE).
* ``down_convert`` is ``LazyDownConversionRecords`` with ``RecordsUtil.downConvert``, to the
  byte: control batches are dropped, an uncompressed batch becomes one message per record at or
  after the fetch offset, a compressed batch one wrapper of the same codec; the records field
  is ``max(unconverted size, first converted batch)`` long, cut there, or filled up with
  Kafka's overflow batch (offset -1, a length past the end) that clients ignore; as in Kafka the
  first converted batch is followed by the conversion from the second stored batch on (which
  repeats a batch when the first ones converted to nothing). No batches at all: empty records;
  batches that all convert to nothing: a 12-byte overflow batch, so that an old client reports
  its fetch size too small (KAFKA-13116).

Differences from Kafka: the compressed bytes are this process's codec libraries' (the records in
them are Kafka's to the byte, the compressed stream is not, so the cut point of a compressed
answer can differ); the conversion statistics (``ProduceMessageConversionsPerSec``,
``FetchMessageConversionsPerSec``) are not kept.

Stateless; safe from any thread.
"""
from __future__ import annotations

import struct
import zlib
from typing import Iterator, NamedTuple

from crc32c import crc32c

from kafka_emu.broker.storage import compression
from kafka_emu.broker.storage.log_segment import iter_headers
from kafka_emu.broker.storage.log_validator import records_payload, walk_records
from kafka_emu.common.varint import read_varint
from kafka_emu.broker.storage.record_batch import HEADER_SIZE, LOG_OVERHEAD, MAGIC, write_record
from kafka_emu.common.errors import Errors, KafkaError

MAGIC_V0, MAGIC_V1 = 0, 1
NO_TIMESTAMP = -1
TIMESTAMP_TYPE_BIT = 0x08          # LogAppendTime, in a v1 message's attributes
RECORD_OVERHEAD = {MAGIC_V0: 14, MAGIC_V1: 22}   # crc, magic, attributes, [timestamp], key and value lengths
HEADER_UP_TO_MAGIC = 17            # offset, size, crc, magic (ByteBufferLogInputStream)
MAX_READ_SIZE = 128 * 1024         # LazyDownConversionRecordsSend.MAX_READ_SIZE
MIN_OVERFLOW_MESSAGE_LENGTH = LOG_OVERHEAD
_LEGACY_CODECS = (compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4)

_OFFSET_SIZE = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")


class LegacyRecord(NamedTuple):
    """One message of a v0/v1 message set (Kafka's ``LegacyRecord``) with its set entry offset."""

    offset: int
    size: int            # of the message set entry (offset and size fields included)
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    valid_crc: bool

    @property
    def codec(self) -> int:
        return self.attributes & compression.CODEC_MASK


def first_magic(records: bytes) -> int:
    """The magic byte of the first batch or message of ``records`` (-1 if too short to say)."""
    return records[16] if len(records) > 16 else -1


# --- reading v0/v1 -------------------------------------------------------------------------------

def iter_messages(data: bytes) -> Iterator[LegacyRecord]:
    """The shallow messages of a message set; a partial trailing one is dropped, as Kafka's
    ``ByteBufferLogInputStream`` does. CORRUPT_MESSAGE for a size below the v0 overhead or a
    message whose fields overrun it."""
    pos, end = 0, len(data)
    while end - pos >= LOG_OVERHEAD:
        offset, size = _OFFSET_SIZE.unpack_from(data, pos)
        if size < RECORD_OVERHEAD[MAGIC_V0]:
            raise KafkaError(Errors.CORRUPT_MESSAGE,
                             f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD[MAGIC_V0]})")
        if end - pos < HEADER_UP_TO_MAGIC or end - pos < LOG_OVERHEAD + size:
            return
        yield _parse_message(data, pos + LOG_OVERHEAD, size, offset)
        pos += LOG_OVERHEAD + size


def _parse_message(data: bytes, start: int, size: int, offset: int) -> LegacyRecord:
    end = start + size
    stored_crc = _U32.unpack_from(data, start)[0]
    magic, attributes = data[start + 4], data[start + 5]
    if magic not in RECORD_OVERHEAD:   # LogValidator.validateBatch / validateRecord: magic mismatch
        raise KafkaError(Errors.INVALID_RECORD, f"message of magic {magic} in a v0/v1 message set")
    pos = start + 6
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        if pos + 8 > end:
            raise KafkaError(Errors.CORRUPT_MESSAGE, "message ends inside its timestamp")
        timestamp = _I64.unpack_from(data, pos)[0]
        pos += 8
    key, pos = _sized_bytes(data, pos, end)
    value, pos = _sized_bytes(data, pos, end)
    if pos != end:
        raise KafkaError(Errors.CORRUPT_MESSAGE, f"{end - pos} bytes left after the message's value")
    valid = stored_crc == zlib.crc32(data[start + 4:end])
    return LegacyRecord(offset, LOG_OVERHEAD + size, magic, attributes, timestamp, key, value, valid)


def _sized_bytes(data: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise KafkaError(Errors.CORRUPT_MESSAGE, "message ends inside a length")
    n = _I32.unpack_from(data, pos)[0]
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > end:
        raise KafkaError(Errors.CORRUPT_MESSAGE, f"a field of {n} bytes overruns the message")
    return bytes(data[pos:pos + n]), pos + n


def _inner_messages(wrapper: LegacyRecord) -> list[LegacyRecord]:
    """The messages compressed in ``wrapper`` (Kafka's ``DeepRecordsIterator``)."""
    if wrapper.codec not in _LEGACY_CODECS:
        raise KafkaError(Errors.INVALID_RECORD,
                         f"Invalid wrapper compressionType found in legacy deep record: {wrapper.codec}")
    value = wrapper.value or b""
    if wrapper.codec == compression.LZ4 and wrapper.magic == MAGIC_V0:
        value = lz4_header_checksum(value, broken=False)   # magic 0 frames carry Kafka's broken one
    try:
        raw = compression.decompress(wrapper.codec, value)
    except compression.CompressionError as exc:
        raise KafkaError(Errors.CORRUPT_MESSAGE, str(exc)) from None
    return list(iter_messages(raw))


# --- produce: v0/v1 -> one v2 batch --------------------------------------------------------------

def up_convert(records: bytes, max_message_bytes: int) -> bytes:
    """The v2 batch a v0/v1 message set becomes (see the module docstring); a set whose first
    batch is already v2 comes back unchanged (Kafka accepts v2 batches in Produce v0-v2)."""
    if first_magic(records) >= MAGIC:
        return records
    shallow = list(iter_messages(records))
    if not shallow:
        raise KafkaError(Errors.INVALID_RECORD, "Record batch has no batches at all")
    codec = compression.NONE
    for message in shallow:   # UnifiedLog.analyzeAndValidateRecords
        if message.size > max_message_bytes:
            raise KafkaError(Errors.MESSAGE_TOO_LARGE,
                             f"The record batch size in the append is {message.size} bytes which exceeds the maximum "
                             f"configured value of {max_message_bytes}.")
        if not message.valid_crc:
            raise KafkaError(Errors.CORRUPT_MESSAGE, "Record is corrupt (stored crc does not match its bytes)")
        if message.codec != compression.NONE:
            codec = message.codec
    first = shallow[0]
    if codec != compression.NONE and len(shallow) > 1:
        raise KafkaError(Errors.INVALID_RECORD, "Compressed outer record has more than one batch")
    out: list[tuple[int, bytes | None, bytes | None]] = []
    for message in shallow:
        if message.magic != first.magic:
            raise KafkaError(Errors.INVALID_RECORD, f"Batch magic {message.magic} is not the same as the first "
                                                    f"batch's magic byte {first.magic}")
        inner = _inner_messages(message) if message.codec != compression.NONE else [message]
        for index, record in enumerate(inner):
            if message.codec != compression.NONE:
                if record.codec != compression.NONE:
                    raise KafkaError(Errors.INVALID_RECORD, f"Compressed outer record should not have an inner "
                                                            f"record with a compression attribute set (record {index})")
                if record.magic != message.magic:
                    raise KafkaError(Errors.INVALID_RECORD, f"Record {index}'s magic does not match outer magic "
                                                            f"{message.magic}")
                if not record.valid_crc:
                    raise KafkaError(Errors.CORRUPT_MESSAGE, f"Record {index} is corrupt (stored crc does not match)")
            if message.magic == MAGIC_V1 and message.attributes & TIMESTAMP_TYPE_BIT:
                raise KafkaError(Errors.INVALID_TIMESTAMP, "Invalid timestamp type in message. Producer should not "
                                                           "set timestamp type to LogAppendTime.")
            timestamp = record.timestamp if message.magic == MAGIC_V1 else NO_TIMESTAMP
            out.append((timestamp, record.key, record.value))
    if not out:
        raise KafkaError(Errors.INVALID_RECORD, "the compressed message set holds no messages")
    return build_v2_batch(out, codec)


def build_v2_batch(records: list[tuple[int, bytes | None, bytes | None]], codec: int) -> bytes:
    """A v2 batch of (timestamp, key, value) records at base offset 0, as Kafka's
    ``MemoryRecordsBuilder`` writes it for a non-idempotent producer: base timestamp the first
    record's, max timestamp the largest (-1 if none), no headers."""
    base_ts = records[0][0]
    max_ts = NO_TIMESTAMP
    section = bytearray()
    for delta, (timestamp, key, value) in enumerate(records):
        write_record(section, timestamp - base_ts, delta, key, value)
        max_ts = max(max_ts, timestamp)
    payload = compression.compress(codec, bytes(section)) if codec != compression.NONE else bytes(section)
    tail = struct.pack(">hiqqqhii", codec, len(records) - 1, base_ts, max_ts, -1, -1, -1, len(records)) + payload
    return struct.pack(">qiibI", 0, len(tail) + 9, -1, MAGIC, crc32c(tail)) + tail


# --- fetch: v2 -> v0/v1 --------------------------------------------------------------------------

def down_convert(records: bytes, to_magic: int, first_offset: int) -> bytes:
    """The records field Kafka 3.9 sends a Fetch v0-v3 client for ``records`` (stored v2
    batches) fetched from ``first_offset`` (see the module docstring). KafkaError
    UNSUPPORTED_COMPRESSION_TYPE if the first batch to convert is zstd."""
    batches = [bytes(records[h.position:h.position + h.size]) for h in iter_headers(records)]
    first = b""
    for batch in batches:      # LazyDownConversionRecords' constructor: iterator(0)
        first = _convert_batches([batch], to_magic, first_offset)
        if first:
            break
    if not first:   # nothing convertible: an overflow batch if there were batches, else nothing
        return _overflow(MIN_OVERFLOW_MESSAGE_LENGTH) if batches else b""
    size = max(len(records), len(first))
    out = bytearray(first)
    rest = batches[1:]   # the send's iterator skips one stored batch, whichever the first came from
    try:
        while rest and len(out) < size:
            chunk, read = [rest[0]], len(rest[0])
            for batch in rest[1:]:
                if read + len(batch) > MAX_READ_SIZE:
                    break
                chunk.append(batch)
                read += len(batch)
            rest = rest[len(chunk):]
            out += _convert_batches(chunk, to_magic, first_offset)
    except KafkaError:
        pass   # zstd after the first chunk: Kafka fills the rest with its overflow batch
    if len(out) < size:
        out += _overflow(size - len(out))
    return bytes(out[:size])


def _overflow(remaining: int) -> bytes:
    """``LazyDownConversionRecordsSend.buildOverflowBatch``: the first ``remaining`` bytes of a
    batch header claiming more bytes than are left."""
    batch = bytearray(max(MIN_OVERFLOW_MESSAGE_LENGTH, min(remaining + 1, MAX_READ_SIZE)))
    _OFFSET_SIZE.pack_into(batch, 0, -1, max(remaining + 1, HEADER_SIZE))
    return bytes(batch[:remaining])


def _convert_batches(batches: list[bytes], to_magic: int, first_offset: int) -> bytes:
    """``RecordsUtil.downConvert`` of v2 ``batches`` to ``to_magic`` (0 or 1)."""
    out = bytearray()
    for batch in batches:
        attributes = struct.unpack_from(">h", batch, 21)[0]
        if attributes & 0x20:    # a control batch
            continue
        codec = attributes & compression.CODEC_MASK
        if codec == compression.ZSTD:
            raise KafkaError(Errors.UNSUPPORTED_COMPRESSION_TYPE,
                             "Down-conversion of zstandard-compressed batches is not supported")
        base_offset = _I64.unpack_from(batch, 0)[0]
        base_ts, max_ts = struct.unpack_from(">qq", batch, 27)
        count = _I32.unpack_from(batch, 57)[0]
        log_append = bool(attributes & TIMESTAMP_TYPE_BIT)
        payload = records_payload(batch, attributes)
        converted = []
        for info in walk_records(payload, count):
            offset = base_offset + info.offset_delta
            if codec == compression.NONE and offset < first_offset:
                continue
            key = None if info.key_length < 0 else bytes(payload[info.key_start:info.key_start + info.key_length])
            value_start = info.key_start + max(info.key_length, 0)
            value_length, value_start = read_varint(payload, value_start)
            value = None if value_length < 0 else bytes(payload[value_start:value_start + value_length])
            timestamp = max_ts if log_append else base_ts + info.timestamp_delta
            converted.append((offset, timestamp, key, value))
        if converted:
            out += _legacy_batch(converted, to_magic, codec, log_append, max_ts)
    return bytes(out)


def _legacy_batch(records: list[tuple[int, int, bytes | None, bytes | None]], magic: int, codec: int,
                  log_append: bool, log_append_time: int) -> bytes:
    """``RecordsUtil.convertRecordBatch``: what ``MemoryRecordsBuilder`` writes for ``magic`` < 2."""
    ts_attribute = TIMESTAMP_TYPE_BIT if log_append and magic == MAGIC_V1 else 0
    if codec == compression.NONE:
        return b"".join(_message(offset, magic, ts_attribute, log_append_time if log_append else ts, key, value)
                        for offset, ts, key, value in records)
    base = records[0][0]
    inner = b"".join(
        _message(offset - base if magic == MAGIC_V1 else offset, magic, ts_attribute,
                 log_append_time if log_append else ts, key, value)
        for offset, ts, key, value in records)
    payload = compression.compress(codec, inner)
    if codec == compression.LZ4 and magic == MAGIC_V0:
        payload = lz4_header_checksum(payload, broken=True)
    max_ts = max((ts for _, ts, _, _ in records), default=NO_TIMESTAMP) if magic == MAGIC_V1 else NO_TIMESTAMP
    wrapper_ts = log_append_time if log_append else max(max_ts, NO_TIMESTAMP)
    return _message(records[-1][0], magic, ts_attribute | codec, wrapper_ts, None, payload)


def _message(offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None,
             value: bytes | None) -> bytes:
    body = bytearray((magic, attributes))
    if magic == MAGIC_V1:
        body += _I64.pack(timestamp)
    for field in (key, value):
        body += _I32.pack(-1 if field is None else len(field))
        if field is not None:
            body += field
    return _OFFSET_SIZE.pack(offset, len(body) + 4) + _U32.pack(zlib.crc32(body)) + bytes(body)


# --- LZ4 frames of magic 0 -----------------------------------------------------------------------

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32_short(data: bytes) -> int:
    """XXH32 with seed 0 of fewer than 16 bytes (an LZ4 frame descriptor)."""
    h = (_P5 + len(data)) & _M32
    pos = 0
    while pos + 4 <= len(data):
        h = (h + struct.unpack_from("<I", data, pos)[0] * _P3) & _M32
        h = (_rotl(h, 17) * _P4) & _M32
        pos += 4
    for b in data[pos:]:
        h = (h + b * _P5) & _M32
        h = (_rotl(h, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def lz4_header_checksum(frame: bytes, broken: bool) -> bytes:
    """``frame`` with its header checksum recomputed: over the frame descriptor (LZ4's rule), or
    with ``broken`` over the magic number too, as Kafka writes (and expects) for magic 0
    (``KafkaLZ4BlockOutputStream(useBrokenFlagDescriptorChecksum)``, KAFKA-3160)."""
    if len(frame) < 7:
        return frame
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)   # FLG, BD, content size, dict id
    if len(frame) <= end:
        return frame
    covered = frame[:end] if broken else frame[4:end]
    return frame[:end] + bytes(((xxh32_short(covered) >> 8) & 0xFF,)) + frame[end + 1:]
