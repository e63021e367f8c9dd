"""A hand-written codec for Produce, the request a broker answers most often.

Why: kio's generic reader and writer validate every value through phantom types, build frozen
dataclasses and route tagged fields through temporary buffers. For a small acks=1 produce that
was about half of the broker's Python time per request (decode ~20 µs, response entities and
encoding ~25 µs of ~45). This module parses the request and writes the response with ``struct``
and nothing else.

* ``decode_produce_request(version, frame, offset)`` returns a :class:`ProduceRequestData` (the
  fields the broker reads, same names as kio's) or None for anything it is not sure of: a
  truncated body, a count larger than the bytes left, a null where Kafka forbids one, invalid
  UTF-8. The caller then decodes with kio, whose checks (``broker.protocol.codec``) give the
  error Kafka gives, so the fast path never accepts a frame the kio path would refuse. Unknown
  tagged fields are skipped, as Kafka does.
* ``encode_produce_body(version, topics)`` writes the response body (no header) from plain
  values; ``encode_produce_response(entity)`` does the same for a kio ProduceResponse entity of
  the shapes the broker builds (no ``current_leader`` or ``node_endpoints``), else returns None
  and the caller uses kio. The bytes are kio's exactly
  (``tests/wire/test_fast_produce.py`` compares both directions for every version).

Stateless; safe from any thread.
"""
from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from typing import Any, Iterable
from uuid import UUID

from kio.static.constants import EntityType

from kafka_emu.broker.protocol.fast_wire import DECODE_ERRORS, Malformed, count, length, write_count, write_string
from kafka_emu.common.varint import skip_tagged_fields
from kafka_emu.common.api_keys import ApiKeys

_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
_PART_V3 = struct.Struct(">ihqq")        # index, error_code, base_offset, log_append_time
_PART_V5 = struct.Struct(">ihqqq")       # ... log_start_offset (v5+)
PRODUCE = int(ApiKeys.PRODUCE)   # an int: compared with every request's key
FIRST_VERSION = 3   # the oldest layout written here (v0-v2: kio with broker.protocol.legacy_schema)

# (index of the record in its batch, message): why a batch was refused (Kafka's ProduceResponse.RecordError)
RecordError = tuple[int, "str | None"]
# (index, error code, base offset, log append time (-1: none), log start offset, error message,
# record errors) of one answered partition
PartitionResult = tuple[int, int, int, int, int, "str | None", tuple[RecordError, ...]]


# --- requests ------------------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class PartitionProduceData:
    index: int
    records: bytes | None


@dataclass(slots=True, eq=False)
class TopicProduceData:
    name: str | None          # v3..v12
    topic_id: UUID | None     # v13
    partition_data: tuple[PartitionProduceData, ...]


@dataclass(slots=True, eq=False)
class ProduceRequestData:
    """A decoded ProduceRequest with kio's field names; ``timeout`` is in ms (kio: timedelta)."""

    transactional_id: str | None
    acks: int
    timeout: int
    topic_data: tuple[TopicProduceData, ...]


def decode_produce_request(version: int, frame: bytes, offset: int) -> ProduceRequestData | None:
    """The ProduceRequest body at ``offset``, or None when kio should decide (see module doc).

    ``version`` is one the network layer admitted (``broker.apis.produce`` declares them);
    ``tests/wire/test_fast_produce.py`` checks this codec against kio for each of them. The
    layouts before v3 (``broker.protocol.legacy_schema``) are left to kio."""
    if version < FIRST_VERSION:
        return None
    try:
        return _decode(version, frame, offset)
    except DECODE_ERRORS:
        return None


def _skip_tags(buf: bytes, off: int) -> int:
    """After a flexible struct's tagged fields (none, one zero byte, is the usual case)."""
    return off + 1 if buf[off] == 0 else skip_tagged_fields(buf, off)


def _decode(version: int, buf: bytes, off: int) -> ProduceRequestData:
    flexible = version >= 9
    end = len(buf)
    n, off = length(buf, off, end, flexible, True)
    transactional_id = None if n < 0 else buf[off:off + n].decode("utf-8")
    off += max(n, 0)
    acks, timeout = _ACKS_TIMEOUT.unpack_from(buf, off)
    off += 6
    topics = []
    n_topics, off = count(buf, off, end, flexible)
    for _ in range(n_topics):
        if version >= 13:
            raw = buf[off:off + 16]
            if len(raw) != 16:
                raise Malformed
            off += 16
            topic_id = UUID(bytes=raw) if raw != _ZERO_UUID else None
            name = None
        else:
            n, off = length(buf, off, end, flexible, False)
            name, topic_id = buf[off:off + n].decode("utf-8"), None
            off += n
        parts = []
        n_parts, off = count(buf, off, end, flexible)
        for _ in range(n_parts):
            index = _I32.unpack_from(buf, off)[0]
            n, off = length(buf, off + 4, end, flexible, True, wide=True)
            records = None if n < 0 else buf[off:off + n]
            off += max(n, 0)
            if flexible:
                off = _skip_tags(buf, off)
            parts.append(PartitionProduceData(index, records))
        if flexible:
            off = _skip_tags(buf, off)
        topics.append(TopicProduceData(name, topic_id, tuple(parts)))
    if flexible:
        off = _skip_tags(buf, off)
    if off > end:
        raise Malformed
    return ProduceRequestData(transactional_id, acks, timeout, tuple(topics))


_ZERO_UUID = bytes(16)


# --- responses -----------------------------------------------------------------------------------

def encode_produce_body(version: int, topics: Iterable[tuple[Any, list[PartitionResult]]],
                        throttle_ms: int = 0) -> bytes | None:
    """A ProduceResponse body from (topic name, or id from v13; partition results) pairs.

    None when a value does not fit the wire format (the caller falls back to kio)."""
    if version < FIRST_VERSION:
        return None
    flexible = version >= 9
    topics = list(topics)
    out = bytearray()
    write_count(out, len(topics), flexible)
    for key, parts in topics:
        if version >= 13:
            raw_id = bytes(16) if key is None else getattr(key, "bytes", None)
            if raw_id is None:
                return None
            out += raw_id
        else:
            if not write_string(out, key or "", flexible):
                return None
        write_count(out, len(parts), flexible)
        for index, code, base_offset, log_append_time, log_start_offset, msg, record_errors in parts:
            if version >= 5:
                out += _PART_V5.pack(index, code, base_offset, log_append_time, log_start_offset)
            else:
                out += _PART_V3.pack(index, code, base_offset, log_append_time)
            if version >= 8:
                if not record_errors:
                    out += b"\x01" if flexible else b"\x00\x00\x00\x00"
                else:
                    write_count(out, len(record_errors), flexible)
                    for batch_index, batch_message in record_errors:
                        out += _I32.pack(batch_index)
                        if not write_string(out, batch_message, flexible):
                            return None
                        if flexible:
                            out.append(0)
                if not write_string(out, msg, flexible):
                    return None
            if flexible:
                out.append(0)   # no tagged fields (current_leader at its default)
        if flexible:
            out.append(0)
    out += _I32.pack(throttle_ms)
    if flexible:
        out.append(0)           # no tagged fields (no node_endpoints)
    return bytes(out)


@lru_cache(maxsize=None)
def _default_leader(cls: type) -> Any:
    leader_cls = getattr(sys.modules[cls.__module__], "LeaderIdAndEpoch", None)
    return None if leader_cls is None else leader_cls()


def encode_produce_response(body: Any) -> bytes | None:
    """The encoded body of a kio ProduceResponse entity, or None when this fast path does not apply."""
    cls = type(body)
    if getattr(cls, "__api_key__", None) != PRODUCE or getattr(cls, "__type__", None) is not EntityType.response:
        return None
    version = cls.__version__
    if version < FIRST_VERSION or (version >= 10 and body.node_endpoints):
        return None
    default_leader = _default_leader(type(body)) if version >= 10 else None
    topics = []
    for topic in body.responses:
        parts: list[PartitionResult] = []
        for p in topic.partition_responses:
            if default_leader is not None and p.current_leader != default_leader:
                return None
            append_time = p.log_append_time
            parts.append((p.index, p.error_code.value, p.base_offset,
                          -1 if append_time is None else round(append_time.timestamp() * 1000),
                          p.log_start_offset if version >= 5 else -1,
                          p.error_message if version >= 8 else None,
                          tuple((e.batch_index, e.batch_index_error_message) for e in p.record_errors)
                          if version >= 8 else ()))
        topics.append((topic.topic_id if version >= 13 else topic.name, parts))
    throttle = body.throttle_time
    ms = round(throttle.total_seconds() * 1000) if isinstance(throttle, timedelta) else int(throttle)
    return encode_produce_body(version, topics, ms)
