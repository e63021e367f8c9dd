"""Varints, the one module: Kafka's ``ByteUtils`` varint readers and writers.

* Unsigned (``UNSIGNED_VARINT``: the protocol's compact lengths, counts, tag numbers and sizes):
  ``read_uvarint``, ``write_uvarint``, ``skip_tagged_fields``. Reading is bounds checked and
  refuses varints longer than five bytes, as ``ByteUtils.readUnsignedVarint`` does;
  ``InvalidRequestError`` lives here so the generic and the hand-written codecs raise the same
  error without importing each other.
* Signed, zigzag encoded (``VARINT``/``VARLONG``: a v2 record's length, deltas, key and value
  lengths, header counts): ``read_varint``, ``write_varint``, for the record format
  (``broker.storage``: batches, the LogValidator, the cleaner, control records, down-conversion).
  A varint longer than ten bytes, or running past the record it belongs to, is the caller's
  Kafka error (``KafkaError``).

The LogValidator's record walk decodes one- and two-byte signed varints inline rather than
calling ``read_varint`` (``broker.storage.log_validator._walk`` says by how much that is faster).
Stateless.
"""
from __future__ import annotations

import sys

from kafka_emu.common.errors import Errors, KafkaError


class InvalidRequestError(Exception):
    """The frame cannot be parsed as the request it claims to be (Kafka: InvalidRequestException)."""


def read_uvarint(buf: memoryview | bytes, offset: int) -> tuple[int, int]:
    """(value, new_offset); raises InvalidRequestError on truncation or overlong varints."""
    value = 0
    shift = 0
    n = len(buf)
    while True:
        if offset >= n:
            raise InvalidRequestError("truncated varint")
        b = buf[offset]
        offset += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise InvalidRequestError("varint too long")


def write_uvarint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def skip_tagged_fields(buf: memoryview | bytes, offset: int, end: int | None = None) -> int:
    """Offset after a tagged-field section (count, then tag/size/bytes per field); raises
    InvalidRequestError when a field runs past ``end`` (default: the buffer's end)."""
    limit = len(buf) if end is None else end
    count, offset = read_uvarint(buf, offset)
    for _ in range(count):
        _tag, offset = read_uvarint(buf, offset)
        size, offset = read_uvarint(buf, offset)
        offset += size
        if offset > limit:
            raise InvalidRequestError("truncated tagged field")
    return offset


_UNBOUNDED = sys.maxsize


def read_varint(buf: bytes | bytearray | memoryview, pos: int, end: int = _UNBOUNDED,
                error: int = Errors.CORRUPT_MESSAGE) -> tuple[int, int]:
    """A zigzag-encoded varint (``ByteUtils.readVarlong``): (value, position after it).

    ``KafkaError(error)`` when it is longer than ten bytes or does not end before ``end`` (the
    end of its record); without ``end``, reading past the buffer raises IndexError, which the
    readers of stored batches leave to their callers."""
    shift = 0
    result = 0
    while True:
        if pos >= end:
            raise KafkaError(error, "record ends inside a varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise KafkaError(error, "varint longer than 10 bytes")


def write_varint(out: bytearray, n: int) -> None:
    """Append ``n`` zigzag encoded (``ByteUtils.writeVarlong``)."""
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


__all__ = ["InvalidRequestError", "read_uvarint", "read_varint", "skip_tagged_fields", "write_uvarint",
           "write_varint"]
