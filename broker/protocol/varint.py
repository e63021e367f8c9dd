"""Unsigned varints (Kafka's ``UNSIGNED_VARINT``: compact lengths, counts, tag numbers and sizes).

Shared by the generic codec and the hand-written Produce codec. Reading is bounds checked and
refuses varints longer than five bytes, as Kafka's ``ByteUtils.readUnsignedVarint`` does;
``InvalidRequestError`` lives here so both codecs raise the same error without importing each
other. Stateless.
"""
from __future__ import annotations


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
