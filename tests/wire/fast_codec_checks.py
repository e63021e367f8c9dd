"""The checks both hand-written request decoders (``fast_produce``, ``fast_fetch``) must pass
against kio: on any frame, the fast decoder either declines (None) or agrees with a successful
kio decode, and where kio refuses a frame the fast path declines, so ``decode_request_fast``
raises exactly when ``decode_request`` does; and ``kio_bytes``, kio's encoding of an entity, which
the hand-written encoders must match byte for byte."""
from __future__ import annotations

import io
from typing import Any, Callable

import pytest
from kio.serial import entity_writer

from kafka_emu.broker.protocol.codec import decode_request, decode_request_fast, decode_request_header
from kafka_emu.common.varint import InvalidRequestError

FastDecoder = Callable[[int, bytes, int], Any]   # (version, frame, body offset) -> data or None
Same = Callable[[Any, Any], bool]                 # (fast result, kio entity) -> equal


def kio_bytes(body: object) -> bytes:
    """``body`` (a kio entity) as kio writes it."""
    buf = io.BytesIO()
    entity_writer(type(body))(buf, body)
    return buf.getvalue()


def check_frame(version: int, frame: bytes, decode_fast: FastDecoder, same: Same) -> None:
    """One frame (without its size prefix) through both decoders."""
    header = decode_request_header(frame)
    fast = decode_fast(version, frame, header.size)
    try:
        slow = decode_request(header, frame)
    except InvalidRequestError:
        assert fast is None, "the fast decoder accepted a frame kio refuses"
        with pytest.raises(InvalidRequestError):
            decode_request_fast(header, frame)
        return
    assert fast is None or same(fast, slow)


def check_every_prefix(version: int, frame: bytes, decode_fast: FastDecoder, same: Same) -> None:
    """``check_frame`` on every truncation of the body."""
    header = decode_request_header(frame)
    for cut in range(header.size, len(frame)):
        check_frame(version, frame[:cut], decode_fast, same)


def mutated(frame: bytes, flips: list[tuple[int, int]]) -> bytes:
    """``frame`` with the body bytes at the given offsets (past its end: ignored) set to the values."""
    out = bytearray(frame)
    start = decode_request_header(frame).size
    for pos, value in flips:
        if start + pos < len(out):
            out[start + pos] = value
    return bytes(out)
