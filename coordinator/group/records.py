"""``__consumer_offsets`` record formats (Kafka's ``GroupMetadataManager`` schemas) and hashing.

Keys (version int16 first):
* offset commit key v1: ``group: string, topic: string, partition: int32`` (v0 is identical);
* group metadata key v2: ``group: string``.

Values:
* offset commit value v3: ``offset: int64, leader_epoch: int32 (-1 = none), metadata: string,
  commit_timestamp: int64`` (v1, which also has ``expire_timestamp``, is read too);
* group metadata value v3: ``protocol_type: string, generation: int32, protocol: nullable string,
  leader: nullable string, current_state_timestamp: int64, members: [member_id: string,
  group_instance_id: nullable string, client_id: string, client_host: string,
  rebalance_timeout: int32, session_timeout: int32, subscription: bytes, assignment: bytes]``
  (v0-v2 are read too).

A ``None`` value is a tombstone (offset deleted / group removed).
Strings are int16-length-prefixed UTF-8 (-1 = null), bytes int32-length-prefixed.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit signed overflow)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def kafka_utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``n & 0x7fffffff`` (so Integer.MIN_VALUE maps to 0, not negative)."""
    return n & 0x7FFFFFFF


def partition_for(group_id: str, num_partitions: int) -> int:
    return kafka_utils_abs(java_string_hashcode(group_id)) % num_partitions


# ----------------------------------------------------------------------------- writer / reader
class _Writer:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i16(self, v: int) -> "_Writer":
        self.parts.append(_I16.pack(v))
        return self

    def i32(self, v: int) -> "_Writer":
        self.parts.append(_I32.pack(v))
        return self

    def i64(self, v: int) -> "_Writer":
        self.parts.append(_I64.pack(v))
        return self

    def string(self, s: str | None) -> "_Writer":
        if s is None:
            self.parts.append(_I16.pack(-1))
        else:
            b = s.encode("utf-8")
            self.parts.append(_I16.pack(len(b)))
            self.parts.append(b)
        return self

    def bytes_(self, b: bytes | None) -> "_Writer":
        if b is None:
            self.parts.append(_I32.pack(-1))
        else:
            self.parts.append(_I32.pack(len(b)))
            self.parts.append(bytes(b))
        return self

    def build(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def i16(self) -> int:
        v = _I16.unpack_from(self.buf, self.pos)[0]
        self.pos += 2
        return v

    def i32(self) -> int:
        v = _I32.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return v

    def i64(self) -> int:
        v = _I64.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return v

    def string(self) -> str | None:
        n = self.i16()
        if n < 0:
            return None
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def bytes_(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        b = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return b


# ----------------------------------------------------------------------------- keys
@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _Writer().i16(OFFSET_COMMIT_KEY_VERSION).string(group).string(topic).i32(partition).build()


def group_metadata_key(group: str) -> bytes:
    return _Writer().i16(GROUP_METADATA_KEY_VERSION).string(group).build()


def read_key(buf: bytes) -> OffsetKey | GroupMetadataKey:
    r = _Reader(buf)
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.string() or "", r.string() or "", r.i32())
    if version == 2:
        return GroupMetadataKey(r.string() or "")
    raise ValueError(f"unknown __consumer_offsets key version {version}")


# ----------------------------------------------------------------------------- offset values
@dataclass(frozen=True)
class OffsetValue:
    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None


def offset_commit_value(offset: int, leader_epoch: int | None, metadata: str, commit_timestamp: int) -> bytes:
    return (_Writer().i16(OFFSET_COMMIT_VALUE_VERSION).i64(offset)
            .i32(-1 if leader_epoch is None else leader_epoch)
            .string(metadata).i64(commit_timestamp).build())


def read_offset_value(buf: bytes) -> OffsetValue:
    r = _Reader(buf)
    version = r.i16()
    if version == 0:
        return OffsetValue(r.i64(), None, r.string() or "", r.i64())
    if version == 1:
        off, meta, ts, exp = r.i64(), r.string() or "", r.i64(), r.i64()
        return OffsetValue(off, None, meta, ts, exp)
    if version == 2:
        return OffsetValue(r.i64(), None, r.string() or "", r.i64())
    if version >= 3:  # v4 (flexible) is not written by this emulator
        off, epoch, meta, ts = r.i64(), r.i32(), r.string() or "", r.i64()
        return OffsetValue(off, None if epoch < 0 else epoch, meta, ts)
    raise ValueError(f"unknown offset value version {version}")


# ----------------------------------------------------------------------------- group values
@dataclass(frozen=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int | None
    members: list[MemberValue] = field(default_factory=list)


def group_metadata_value(v: GroupValue) -> bytes:
    w = (_Writer().i16(GROUP_METADATA_VALUE_VERSION).string(v.protocol_type).i32(v.generation)
         .string(v.protocol).string(v.leader)
         .i64(-1 if v.current_state_timestamp is None else v.current_state_timestamp)
         .i32(len(v.members)))
    for m in v.members:
        (w.string(m.member_id).string(m.group_instance_id).string(m.client_id).string(m.client_host)
         .i32(m.rebalance_timeout).i32(m.session_timeout).bytes_(m.subscription).bytes_(m.assignment))
    return w.build()


def read_group_value(buf: bytes) -> GroupValue:
    r = _Reader(buf)
    version = r.i16()
    if version < 0 or version > 3:
        raise ValueError(f"unknown group metadata value version {version}")
    protocol_type = r.string() or ""
    generation = r.i32()
    protocol = r.string()
    leader = r.string()
    ts = r.i64() if version >= 2 else None
    if ts is not None and ts < 0:
        ts = None
    members = []
    for _ in range(r.i32()):
        member_id = r.string() or ""
        instance_id = r.string() if version >= 3 else None
        client_id = r.string() or ""
        client_host = r.string() or ""
        session_timeout = rebalance_timeout = 0
        if version >= 1:
            rebalance_timeout = r.i32()
            session_timeout = r.i32()
        else:
            session_timeout = r.i32()
            rebalance_timeout = session_timeout
        subscription = r.bytes_() or b""
        assignment = r.bytes_() or b""
        members.append(MemberValue(member_id, instance_id, client_id, client_host,
                                   rebalance_timeout, session_timeout, subscription, assignment))
    return GroupValue(protocol_type, generation, protocol, leader, ts, members)


def parse_consumer_subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of a ``ConsumerProtocolSubscription`` (any version), or None if unparsable."""
    try:
        r = _Reader(metadata)
        version = r.i16()
        if version < 0:
            return None
        n = r.i32()
        if n < 0 or n > len(metadata):
            return None
        topics = set()
        for _ in range(n):
            t = r.string()
            if t is None:
                return None
            topics.add(t)
        return topics
    except (struct.error, UnicodeDecodeError, IndexError):
        return None


def consumer_subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    """A ``ConsumerProtocolSubscription`` v0 (for tests and the benchmark)."""
    w = _Writer().i16(0).i32(len(topics))
    for t in topics:
        w.string(t)
    return w.bytes_(user_data).build()
