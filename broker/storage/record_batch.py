"""Record batch format v2 (magic 2): header parsing, validation, offset rewrite and a builder.

Layout of the 61-byte header (big endian)::

    0 baseOffset i64 | 8 batchLength i32 | 12 partitionLeaderEpoch i32 | 16 magic i8
    17 crc u32 | 21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64
    35 maxTimestamp i64 | 43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32
    57 recordCount i32 | 61 records...

The CRC-32C covers bytes 21..end, so the broker rewrites ``baseOffset`` and
``partitionLeaderEpoch`` in place without touching it. Validation covers what a broker must
check without decompressing: sizes, magic, CRC, record count vs ``lastOffsetDelta``, and
``message.max.bytes``; the per-record checks are ``broker.storage.log_validator``'s (leader appends).
"""
from __future__ import annotations

import struct
import time as _time
from typing import Iterable, Iterator, NamedTuple

from crc32c import crc32c

from kafka_emu.common.varint import read_varint, write_varint
from kafka_emu.common.errors import Errors, KafkaError

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
MAGIC = 2
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")

# Builds a NamedTuple from a tuple of its fields without the class's generated ``__new__`` (a
# Python function): about a third of the cost, for the objects every append creates.
new_tuple = tuple.__new__


class BatchInfo(NamedTuple):
    """One batch found in a records buffer (``position`` is where it starts in that buffer)."""

    position: int
    size: int
    base_offset: int
    last_offset_delta: int
    leader_epoch: int
    attributes: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % 0x80000000

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)


def parse_batches(data: bytes | memoryview, max_batch_size: int | None = None,
                  check_crc: bool = True) -> list[BatchInfo]:
    """Parse and validate every batch of ``data``; raise ``KafkaError`` on the first bad one.

    ``check_crc=False`` is for batches the broker already holds (replicated or stored): no CRC
    check, and a record count below the offset span is accepted, as compaction leaves it."""
    view = memoryview(data)
    total = len(view)
    pos = 0
    out: list[BatchInfo] = []
    if total == 0:
        raise KafkaError(Errors.INVALID_RECORD, "empty record set")
    while pos < total:
        if total - pos < HEADER_SIZE:
            raise KafkaError(Errors.CORRUPT_MESSAGE, f"truncated batch header at {pos}")
        (base_offset, length, leader_epoch, magic, crc, attributes, last_delta, _base_ts, max_ts,
         pid, pepoch, base_seq, count) = _HEADER.unpack_from(view, pos)
        if magic != MAGIC:
            raise KafkaError(Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"magic {magic} is not supported")
        size = length + LOG_OVERHEAD
        if length < HEADER_SIZE - LOG_OVERHEAD or pos + size > total:
            raise KafkaError(Errors.CORRUPT_MESSAGE, f"batch length {length} does not fit at {pos}")
        if max_batch_size is not None and size > max_batch_size:
            raise KafkaError(Errors.MESSAGE_TOO_LARGE,
                             f"batch of {size} bytes exceeds message.max.bytes {max_batch_size}")
        if check_crc and crc32c(view[pos + 21:pos + size]) != crc:
            raise KafkaError(Errors.CORRUPT_MESSAGE, f"CRC mismatch in batch at {pos}")
        if (count <= 0 or last_delta != count - 1) if check_crc else (count < 0 or count > last_delta + 1):
            raise KafkaError(Errors.INVALID_RECORD,
                             f"record count {count} does not match last offset delta {last_delta}")
        out.append(new_tuple(BatchInfo, (pos, size, base_offset, last_delta, leader_epoch, attributes, max_ts,
                                         pid, pepoch, base_seq, count)))
        pos += size
    return out


def rewrite_batch_header(buf: bytearray, position: int, base_offset: int, leader_epoch: int) -> None:
    """Assign the batch's offsets and leader epoch in place (both outside the CRC)."""
    _I64.pack_into(buf, position, base_offset)
    _I32.pack_into(buf, position + 12, leader_epoch)


# ---------------------------------------------------------------------- builder and reader


def write_record(out: bytearray, timestamp_delta: int, offset_delta: int, key: bytes | None,
                 value: bytes | None) -> None:
    """Append one length-prefixed v2 record without headers (attributes 0) to ``out``: the one
    record encoder every batch builder uses."""
    rec = bytearray(b"\x00")
    write_varint(rec, timestamp_delta)
    write_varint(rec, offset_delta)
    for field in (key, value):
        if field is None:
            write_varint(rec, -1)
        else:
            write_varint(rec, len(field))
            rec += field
    write_varint(rec, 0)
    write_varint(out, len(rec))
    out += rec


def build_batch(records: Iterable[tuple[bytes | None, bytes | None]], *, base_offset: int = 0,
                timestamp_ms: int | None = None, producer_id: int = NO_PRODUCER_ID,
                producer_epoch: int = -1, base_sequence: int = NO_SEQUENCE,
                leader_epoch: int = -1, attributes: int = 0) -> bytes:
    """An uncompressed v2 batch of (key, value) records without headers."""
    ts = int(_time.time() * 1000) if timestamp_ms is None else timestamp_ms
    body = bytearray()
    count = 0
    for i, (key, value) in enumerate(records):
        write_record(body, 0, i, key, value)
        count += 1
    if count == 0:
        raise ValueError("a batch needs at least one record")
    tail = struct.pack(">hiqqqhii", attributes, count - 1, ts, ts, producer_id, producer_epoch,
                       base_sequence, count) + bytes(body)
    crc = crc32c(tail)
    head = struct.pack(">qiibI", base_offset, len(tail) + 9, leader_epoch, MAGIC, crc)
    return head + tail


def iter_records(data: bytes | memoryview) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record of every uncompressed batch in ``data``."""
    view = memoryview(data)
    pos = 0
    total = len(view)
    while pos + HEADER_SIZE <= total:
        (base_offset, length, _e, _m, _crc, attributes, _ld, _bt, _mt, _p, _pe, _bs,
         count) = _HEADER.unpack_from(view, pos)
        end = pos + length + LOG_OVERHEAD
        if attributes & 0x07:
            raise KafkaError(Errors.CORRUPT_MESSAGE, "compressed batches are not decoded")
        rpos = pos + HEADER_SIZE
        for _ in range(count):
            _len, rpos = read_varint(view, rpos)
            rpos += 1  # attributes
            _ts, rpos = read_varint(view, rpos)
            delta, rpos = read_varint(view, rpos)
            klen, rpos = read_varint(view, rpos)
            key = None if klen < 0 else bytes(view[rpos:rpos + klen])
            rpos += max(klen, 0)
            vlen, rpos = read_varint(view, rpos)
            value = None if vlen < 0 else bytes(view[rpos:rpos + vlen])
            rpos += max(vlen, 0)
            hcount, rpos = read_varint(view, rpos)
            for _h in range(hcount):
                hk, rpos = read_varint(view, rpos)
                rpos += hk
                hv, rpos = read_varint(view, rpos)
                rpos += max(hv, 0)
            if not attributes & 0x20:  # skip control records
                yield base_offset + delta, key, value
        pos = end
