"""Primitives shared by the hand-written codecs (``fast_produce``, ``fast_fetch``).

The decoders accept only what they are sure kio accepts: each reader raises
:class:`Malformed` (or one of ``DECODE_ERRORS``) where a frame is doubtful, and the decoder
then returns None so that kio decodes the frame and reports Kafka's error. The writers write
what kio's writers write. Stateless.
"""
from __future__ import annotations

import struct

from kafka_emu.common.varint import InvalidRequestError, read_uvarint, write_uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class Malformed(Exception):
    """Hand the frame to kio, which reports the error as Kafka would."""


# what a decoder catches to decline a frame: ours, a varint's, a read past the end, bad UTF-8
DECODE_ERRORS = (Malformed, InvalidRequestError, struct.error, IndexError, UnicodeDecodeError)


def uvarint(buf: bytes, off: int) -> tuple[int, int]:
    """``read_uvarint`` with the one-byte case (nearly every length and count) first; values
    beyond an int32 (never a valid length, count, tag or size) are left to kio."""
    b = buf[off]
    if b < 0x80:
        return b, off + 1
    value, off = read_uvarint(buf, off)
    if value > 0x7FFFFFFF:
        raise Malformed
    return value, off


def length(buf: bytes, off: int, end: int, flexible: bool, nullable: bool, wide: bool = False) -> tuple[int, int]:
    """A string/bytes length (-1: null) and the offset after it; raises where a null is not
    allowed or the bytes run past ``end``."""
    if flexible:
        n, off = uvarint(buf, off)
        n -= 1
    elif wide:
        n = _I32.unpack_from(buf, off)[0]
        off += 4
    else:
        n = _I16.unpack_from(buf, off)[0]
        off += 2
    if n < -1 or (n == -1 and not nullable) or off + n > end:
        raise Malformed
    return n, off


def count(buf: bytes, off: int, end: int, flexible: bool) -> tuple[int, int]:
    """A non-null array length and the offset after it; raises when negative or larger than
    the bytes left before ``end`` (every element takes at least one)."""
    if flexible:
        n, off = uvarint(buf, off)
        n -= 1
    else:
        n = _I32.unpack_from(buf, off)[0]
        off += 4
    if n < 0 or n > end - off:
        raise Malformed
    return n, off


def write_count(out: bytearray, n: int, flexible: bool) -> None:
    """An array length, or the length of bytes/records (compact: n + 1, else int32)."""
    if flexible:
        write_uvarint(out, n + 1)
    else:
        out += _I32.pack(n)


def write_string(out: bytearray, value: str | None, flexible: bool) -> bool:
    """Append a (nullable, compact) string; false if it does not fit the format."""
    if value is None:
        out += b"\x00" if flexible else b"\xff\xff"
        return True
    raw = value.encode()
    if flexible:
        write_uvarint(out, len(raw) + 1)
    elif len(raw) > 0x7FFF:
        return False
    else:
        out += _I16.pack(len(raw))
    out += raw
    return True
