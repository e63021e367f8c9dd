"""A hand-written codec for Fetch, the request a consumer sends in a loop.

Why: with one consumer reading along a 1,000 msg/s producer, kio's generic reader (plus the
codec's array-bounds walk) and writer (phantom-type checks on every integer, a temporary
buffer per tagged-field section) were about a quarter of the broker's Python time. As
``broker.protocol.fast_produce`` does for Produce, this module parses the request and writes
the response with ``struct`` and nothing else, for the 4.x versions (v4-v18); v0-v3 (served
as Kafka 3.9 only (``emulator.kafka.version=3.9``), with down-conversion) stay on kio.

* ``decode_fetch_request(version, frame, offset)`` returns a :class:`FetchRequestData` (every
  field kio's FetchRequest of that version has, same names; ``max_wait`` in ms where kio has a
  timedelta) or None for anything it is not sure of: a truncated body, a count larger than the
  bytes left, a null where Kafka forbids one, invalid UTF-8, tagged fields out of order or a
  known tagged field whose declared size is not what it holds. The caller then decodes with
  kio, whose checks (``broker.protocol.codec``) give the error Kafka gives, so the fast path
  never accepts a frame the kio path would refuse. Unknown tagged fields are skipped, as Kafka
  does; the known ones (``cluster_id``, ``replica_state`` from v15, the partitions'
  ``replica_directory_id`` from v17 and ``high_watermark`` from v18) are read as kio reads them.
* ``encode_fetch_body(version, topics, error)`` writes the response body (no header) from the
  broker's read results (any ``PartitionData``: the server's ``LogReadResult``, resolved per
  partition by ``broker.apis.fetch.partition_responses``); None where a value does not fit the format, and
  the caller uses kio. Tagged fields are written as kio writes them: only when not at their
  default (``diverging_epoch``, ``current_leader``; ``snapshot_id`` and ``node_endpoints`` are
  never set by the broker). The bytes are kio's exactly (``tests/wire/test_fast_fetch.py``
  compares both directions for every version).

Stateless (a bounded cache of topic ids); safe from any thread.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence
from uuid import UUID

from kafka_emu.broker.protocol.fast_wire import DECODE_ERRORS, Malformed, count, length, uvarint, write_count, write_string
from kafka_emu.common.api_keys import ApiKeys

FETCH = int(ApiKeys.FETCH)   # an int: compared with every request's key
FIRST_VERSION = 4        # the oldest layout handled here (v0-v3: kio with broker.protocol.legacy_schema)
LAST_VERSION = 18        # the newest layout known here (a newer one goes to kio until added)
FIRST_FLEXIBLE = 12
FIRST_SESSION = 7        # session_id, session_epoch, forgotten topics; the response's error_code, session_id
FIRST_TOPIC_ID = 13
FIRST_REPLICA_STATE = 15   # replica id and epoch move into the tagged replica_state

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_HEAD_V4 = struct.Struct(">iiiib")      # replica_id, max_wait, min_bytes, max_bytes, isolation_level
_HEAD_V7 = struct.Struct(">iiiibii")    # ... session_id, session_epoch
_HEAD_V15 = struct.Struct(">iiibii")    # v7's without replica_id
_REPLICA_STATE = struct.Struct(">iq")
# partition, [current_leader_epoch,] fetch_offset, [last_fetched_epoch,] [log_start_offset,] partition_max_bytes
_PART_V4 = struct.Struct(">iqi")
_PART_V5 = struct.Struct(">iqqi")
_PART_V9 = struct.Struct(">iiqqi")
_PART_V12 = struct.Struct(">iiqiqi")
_RESP_PART = struct.Struct(">ihqq")     # partition_index, error_code, high_watermark, last_stable_offset
_RESP_TOP_V7 = struct.Struct(">ihi")    # throttle_time, error_code, session_id
_ABORTED = struct.Struct(">qq")
_DIVERGING_TAG = struct.Struct(">BBiqB")   # tag 0, size 13, epoch, end_offset, no tags
_LEADER_TAG = struct.Struct(">BBiiB")      # tag 1, size 9, leader_id, leader_epoch, no tags
_ZERO_UUID = bytes(16)
_NULL = {False: b"\xff\xff\xff\xff", True: b"\x00"}   # a null array or bytes: int32 -1, compact 0
_NOT_SET = (-1, -1)   # EpochEndOffset and LeaderIdAndEpoch at their defaults


# --- requests ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ReplicaState:
    """FetchRequest's ``replica_state`` (v15+, tag 1): a follower's id and broker epoch."""

    replica_id: int = -1
    replica_epoch: int = -1


DEFAULT_REPLICA_STATE = ReplicaState()   # a consumer's: the tag is absent


@dataclass(slots=True, eq=False)
class FetchPartition:
    partition: int
    current_leader_epoch: int        # v9+ (else -1)
    fetch_offset: int
    last_fetched_epoch: int          # v12+ (else -1)
    log_start_offset: int            # v5+ (else -1)
    partition_max_bytes: int


# The follower-only tagged fields are in subclasses, present from the version kio has them:
# code that mirrors a request generically (``broker.protocol.error_response`` copies a field
# ``high_watermark`` into the answer) then sees the fields kio's entity has.

@dataclass(slots=True, eq=False)
class FetchPartitionV17(FetchPartition):
    replica_directory_id: UUID | None = None   # tag 0


@dataclass(slots=True, eq=False)
class FetchPartitionV18(FetchPartitionV17):
    high_watermark: int = 0x7FFFFFFFFFFFFFFF   # tag 1


@dataclass(slots=True, eq=False)
class FetchTopic:
    topic: str | None                # v4..v12
    topic_id: UUID | None            # v13+
    partitions: tuple[FetchPartition, ...]


@dataclass(slots=True, eq=False)
class ForgottenTopic:
    topic: str | None                # v7..v12
    topic_id: UUID | None            # v13+
    partitions: tuple[int, ...]


@dataclass(slots=True, eq=False)
class FetchRequestData:
    """A decoded FetchRequest with kio's field names; ``max_wait`` is in ms (kio: timedelta).

    Fields a version does not have hold kio's defaults (``replica_id`` -1 from v15, where it
    is ``replica_state.replica_id``; sessionless 0/-1 before v7; empty forgotten topics and
    rack before v7/v11; no cluster id before v12)."""

    replica_id: int
    replica_state: ReplicaState
    max_wait: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: tuple[FetchTopic, ...]
    forgotten_topics_data: tuple[ForgottenTopic, ...]
    rack_id: str
    cluster_id: str | None


def fetch_replica_id(body: Any, version: int) -> int:
    """The fetching replica's id a Fetch request (kio's, or a ``FetchRequestData``) states, -1
    for a consumer (Kafka's ``FetchRequest.replicaId``): from v15 in ``replica_state``."""
    return int(body.replica_state.replica_id) if version >= FIRST_REPLICA_STATE else int(body.replica_id)


def decode_fetch_request(version: int, frame: bytes, offset: int) -> FetchRequestData | None:
    """The FetchRequest body at ``offset``, or None when kio should decide (see module doc).

    ``version`` is one the network layer admitted (``broker.apis.fetch`` declares them);
    ``tests/wire/test_fast_fetch.py`` checks this codec against kio for each of them."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    try:
        return _decode(version, frame, offset)
    except DECODE_ERRORS:
        return None


def _string(buf: bytes, off: int, end: int, flexible: bool) -> tuple[str, int]:
    """A non-null (compact) string and the offset after it; raises on a null (Kafka's
    FetchRequest has no nullable string kio reads as one) or bytes past ``end``."""
    n, off = length(buf, off, end, flexible, nullable=False)
    return buf[off:off + n].decode("utf-8"), off + n


def _uuid(raw: bytes) -> UUID | None:
    """kio reads the all-zero id as None."""
    return None if raw == _ZERO_UUID else UUID(bytes=raw)


def _topic_id(buf: bytes, off: int) -> UUID | None:
    raw = buf[off:off + 16]
    if len(raw) != 16:
        raise Malformed
    return _uuid(raw)


_TagReaders = dict[int, tuple[str, Callable[[bytes, int, int], object]]]   # tag -> (field, reader)


def _topic_key(buf: bytes, off: int, end: int, by_id: bool, flexible: bool) -> tuple[str | None, UUID | None, int]:
    """(name before v13, id from v13, offset after) of a fetched or forgotten topic."""
    if by_id:
        return None, _topic_id(buf, off), off + 16
    name, off = _string(buf, off, end, flexible)
    return name, None, off


def _tags(buf: bytes, off: int, end: int, known: _TagReaders | None) -> tuple[dict[str, Any] | None, int]:
    """A tagged-field section: (field name -> value of the ``known`` tags present, or None if
    there are none) and the offset after it. Unknown tags are skipped; tags out of order, or a
    known one whose value does not fill exactly its declared size, are left to kio."""
    n = buf[off]
    if n == 0:
        return None, off + 1
    n, off = uvarint(buf, off)
    values: dict[str, Any] = {}   # field -> value (str, UUID, int, ReplicaState: the field's type)
    last = -1
    for _ in range(n):
        tag, off = uvarint(buf, off)
        size, off = uvarint(buf, off)
        stop = off + size
        if tag <= last or stop > end:
            raise Malformed
        last = tag
        field = None if known is None else known.get(tag)
        if field is not None:
            values[field[0]] = field[1](buf, off, stop)
        off = stop
    return values or None, off


def _exactly(stop: int, off: int) -> None:
    if off != stop:
        raise Malformed


def _read_cluster_id(buf: bytes, off: int, stop: int) -> str:
    # kio refuses a null here (Kafka's schema allows one): left to kio, like every null
    value, off = _string(buf, off, stop, True)
    _exactly(stop, off)
    return value


def _read_replica_state(buf: bytes, off: int, stop: int) -> ReplicaState:
    replica_id, replica_epoch = _REPLICA_STATE.unpack_from(buf, off)
    _, off = _tags(buf, off + _REPLICA_STATE.size, stop, None)
    _exactly(stop, off)
    return ReplicaState(replica_id, replica_epoch)


def _read_directory_id(buf: bytes, off: int, stop: int) -> UUID | None:
    _exactly(stop, off + 16)
    return _topic_id(buf, off)


def _read_high_watermark(buf: bytes, off: int, stop: int) -> int:
    _exactly(stop, off + 8)
    return _I64.unpack_from(buf, off)[0]


_TOP_TAGS: _TagReaders = {0: ("cluster_id", _read_cluster_id)}
_TOP_TAGS_V15: _TagReaders = {**_TOP_TAGS, 1: ("replica_state", _read_replica_state)}
_PART_TAGS_V17: _TagReaders = {0: ("replica_directory_id", _read_directory_id)}
_PART_TAGS_V18: _TagReaders = {**_PART_TAGS_V17, 1: ("high_watermark", _read_high_watermark)}


def _decode(version: int, buf: bytes, off: int) -> FetchRequestData:
    flexible = version >= FIRST_FLEXIBLE
    by_id = version >= FIRST_TOPIC_ID
    end = len(buf)
    session_id, session_epoch = 0, -1
    if version >= FIRST_REPLICA_STATE:
        replica_id = -1
        max_wait, min_bytes, max_bytes, isolation, session_id, session_epoch = _HEAD_V15.unpack_from(buf, off)
        off += _HEAD_V15.size
    elif version >= FIRST_SESSION:
        replica_id, max_wait, min_bytes, max_bytes, isolation, session_id, session_epoch = \
            _HEAD_V7.unpack_from(buf, off)
        off += _HEAD_V7.size
    else:
        replica_id, max_wait, min_bytes, max_bytes, isolation = _HEAD_V4.unpack_from(buf, off)
        off += _HEAD_V4.size
    part_struct = _PART_V12 if version >= 12 else _PART_V9 if version >= 9 else _PART_V5 if version >= 5 else _PART_V4
    part_size = part_struct.size
    part_tags = _PART_TAGS_V18 if version >= 18 else _PART_TAGS_V17 if version >= 17 else None
    part_cls = FetchPartitionV18 if version >= 18 else FetchPartitionV17 if version >= 17 else FetchPartition
    topics = []
    n_topics, off = count(buf, off, end, flexible)
    for _ in range(n_topics):
        name, topic_id, off = _topic_key(buf, off, end, by_id, flexible)
        parts = []
        n_parts, off = count(buf, off, end, flexible)
        for _ in range(n_parts):
            values = part_struct.unpack_from(buf, off)
            off += part_size
            if version >= 12:
                tagged, off = _tags(buf, off, end, part_tags)   # only v17+ knows partition tags
                p = part_cls(*values) if tagged is None else part_cls(*values, **tagged)
            elif version >= 9:
                idx, cle, fetch_offset, log_start, max_part = values
                p = FetchPartition(idx, cle, fetch_offset, -1, log_start, max_part)
            elif version >= 5:
                idx, fetch_offset, log_start, max_part = values
                p = FetchPartition(idx, -1, fetch_offset, -1, log_start, max_part)
            else:
                idx, fetch_offset, max_part = values
                p = FetchPartition(idx, -1, fetch_offset, -1, -1, max_part)
            parts.append(p)
        if flexible:
            _, off = _tags(buf, off, end, None)
        topics.append(FetchTopic(name, topic_id, tuple(parts)))
    forgotten = []
    if version >= FIRST_SESSION:
        n_forgotten, off = count(buf, off, end, flexible)
        for _ in range(n_forgotten):
            name, topic_id, off = _topic_key(buf, off, end, by_id, flexible)
            n_parts, off = count(buf, off, end, flexible)
            if off + 4 * n_parts > end:
                raise Malformed
            indexes = struct.unpack_from(f">{n_parts}i", buf, off)
            off += 4 * n_parts
            if flexible:
                _, off = _tags(buf, off, end, None)
            forgotten.append(ForgottenTopic(name, topic_id, indexes))
    rack_id = ""
    if version >= 11:
        rack_id, off = _string(buf, off, end, flexible)
    cluster_id: str | None = None
    replica_state = DEFAULT_REPLICA_STATE
    if flexible:
        tagged, off = _tags(buf, off, end, _TOP_TAGS_V15 if version >= FIRST_REPLICA_STATE else _TOP_TAGS)
        if tagged is not None:
            cluster_id = tagged.get("cluster_id")
            replica_state = tagged.get("replica_state", replica_state)
    if off > end:
        raise Malformed
    return FetchRequestData(replica_id, replica_state, max_wait, min_bytes, max_bytes, isolation,
                            session_id, session_epoch, tuple(topics), tuple(forgotten), rack_id, cluster_id)


# --- responses -----------------------------------------------------------------------------------

class AbortedTransaction(Protocol):
    """An aborted transaction a read_committed fetch skips (Kafka's ``AbortedTransaction``)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def first_offset(self) -> int: ...


class PartitionData(Protocol):
    """One partition's read result as the response writes it (Kafka's
    ``FetchResponseData.PartitionData``); the server's ``LogReadResult`` is one."""

    @property
    def records(self) -> bytes | None: ...
    @property
    def error(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def last_stable_offset(self) -> int: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def diverging_epoch(self) -> tuple[int, int] | None: ...   # (epoch, end offset)
    @property
    def leader_id(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def aborted_transactions(self) -> Sequence[AbortedTransaction] | None: ...   # read_committed only


# (topic key as the client sent it: name, or id from v13; topic name, None if unknown;
# (partition index, read result, whether its leader hint is sent) in request order) of one
# answered topic
TopicResults = tuple["str | UUID | None", "str | None", Sequence[tuple[int, PartitionData, bool]]]


def encode_fetch_body(version: int, topics: Sequence[TopicResults], error: int = 0,
                      throttle_time_ms: int = 0) -> bytes | None:
    """A FetchResponse body. A result's ``diverging_epoch`` and, where its hint flag is set,
    (``leader_id``, ``leader_epoch``) are written as the tagged ``diverging_epoch`` and
    ``current_leader`` (v12+) unless at their defaults (-1, -1), as kio writes them. None when a value does not fit the wire format (the caller
    falls back to kio)."""
    try:
        return _encode(version, topics, error, throttle_time_ms)
    except struct.error:   # a value out of its field's range: kio's writer says which
        return None


def _encode(version: int, topics: Sequence[TopicResults], error: int, throttle_time_ms: int) -> bytes | None:
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    flexible = version >= FIRST_FLEXIBLE
    by_id = version >= FIRST_TOPIC_ID
    with_log_start = version >= 5
    with_replica = version >= 11
    out = bytearray()
    # session 0: every consumer fetch is a full one
    if version >= FIRST_SESSION:
        out += _RESP_TOP_V7.pack(throttle_time_ms, error, 0)
    else:
        out += _I32.pack(throttle_time_ms)
    write_count(out, len(topics), flexible)
    for key, name, parts in topics:
        if by_id:
            if key is None:
                out += _ZERO_UUID
            elif isinstance(key, UUID):
                out += key.bytes
            else:
                return None
        else:
            if not write_string(out, name or "", flexible):
                return None
        write_count(out, len(parts), flexible)
        for idx, r, leader_hint in parts:
            out += _RESP_PART.pack(idx, r.error, r.high_watermark, r.last_stable_offset)
            if with_log_start:
                out += _I64.pack(r.log_start_offset)
            aborted = r.aborted_transactions
            if aborted is None:
                out += _NULL[flexible]
            else:
                write_count(out, len(aborted), flexible)
                for t in aborted:
                    out += _ABORTED.pack(t.producer_id, t.first_offset)
                    if flexible:
                        out.append(0)
            if with_replica:
                out += b"\xff\xff\xff\xff"   # preferred_read_replica: none (no KIP-392 selector)
            records = r.records
            if records is None:
                out += _NULL[flexible]
            else:
                write_count(out, len(records), flexible)
                out += records
            if flexible:
                diverging = r.diverging_epoch
                if diverging == _NOT_SET:
                    diverging = None
                leader = (r.leader_id, r.leader_epoch)
                has_leader = leader_hint and leader != _NOT_SET
                if diverging is None and not has_leader:
                    out.append(0)
                else:
                    out.append((diverging is not None) + has_leader)
                    if diverging is not None:
                        out += _DIVERGING_TAG.pack(0, 13, diverging[0], diverging[1], 0)
                    if has_leader:
                        out += _LEADER_TAG.pack(1, 9, leader[0], leader[1], 0)
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)   # no tagged fields (node_endpoints empty)
    return bytes(out)


def error_counts(version: int, topics: Sequence[TopicResults], error: int = 0) -> dict[int, int]:
    """Kafka's ``FetchResponse.errorCounts`` as the metrics read it from a kio entity: the
    top-level error (a field from v7) and every partition's."""
    counts: dict[int, int] = {error: 1} if version >= FIRST_SESSION else {}
    for _, _, parts in topics:
        for _, r, _ in parts:
            code = r.error
            counts[code] = counts.get(code, 0) + 1
    return counts
