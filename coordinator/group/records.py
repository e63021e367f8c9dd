"""``__consumer_offsets`` record formats (Kafka's ``group-coordinator`` message schemas) and hashing.

Keys (an int16 first: the record type, Kafka's ``apiKey`` of the key schema):
* offset commit key v1: ``group: string, topic: string, partition: int32`` (v0 is identical);
* group metadata key v2: ``group: string``;
* the consumer (KIP-848) group records, ``consumer_group_records`` below (types 3 to 8 and 16).

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
import uuid
from dataclasses import dataclass, field
from typing import Iterable

from kafka_emu.common.varint import InvalidRequestError, read_uvarint, write_uvarint

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

    def i8(self, v: int) -> "_Writer":
        self.parts.append(struct.pack(">b", v))
        return self

    def uvarint(self, v: int) -> "_Writer":
        out = bytearray()
        write_uvarint(out, v)
        self.parts.append(bytes(out))
        return self

    def compact_string(self, s: str | None) -> "_Writer":
        """A flexible version's (nullable) string: uvarint length + 1, 0 = null."""
        if s is None:
            return self.uvarint(0)
        b = s.encode("utf-8")
        self.uvarint(len(b) + 1)
        self.parts.append(b)
        return self

    def compact_bytes(self, b: bytes) -> "_Writer":
        self.uvarint(len(b) + 1)
        self.parts.append(bytes(b))
        return self

    def uuid_(self, u: uuid.UUID) -> "_Writer":
        self.parts.append(u.bytes)
        return self

    def no_tags(self) -> "_Writer":
        """An empty tagged-fields section (every flexible struct ends with one)."""
        return self.uvarint(0)

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

    def i8(self) -> int:
        v = struct.unpack_from(">b", self.buf, self.pos)[0]
        self.pos += 1
        return v

    def uvarint(self) -> int:
        try:
            value, self.pos = read_uvarint(self.buf, self.pos)
        except InvalidRequestError as e:   # truncated or overlong: a record the loader skips
            raise ValueError(str(e)) from None
        return value

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def compact_bytes(self) -> bytes:
        n = self.uvarint() - 1
        b = bytes(self.buf[self.pos:self.pos + max(n, 0)])
        self.pos += max(n, 0)
        return b

    def uuid_(self) -> uuid.UUID:
        u = uuid.UUID(bytes=bytes(self.buf[self.pos:self.pos + 16]))
        self.pos += 16
        return u

    def tags(self) -> dict[int, "_Reader"]:
        """A tagged-fields section: tag -> a reader over the field's bytes."""
        out = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            out[tag] = _Reader(self.buf[self.pos:self.pos + size])
            self.pos += size
        return out


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


def read_key(buf: bytes) -> "OffsetKey | GroupMetadataKey | ConsumerGroupKey":
    """The key of a ``__consumer_offsets`` record; ValueError for a type the emulator does not
    serve (share and streams groups)."""
    r = _Reader(buf)
    version = r.i16()
    if version in (0, 1):
        return OffsetKey(r.string() or "", r.string() or "", r.i32())
    if version == 2:
        return GroupMetadataKey(r.string() or "")
    key_type = CONSUMER_GROUP_KEY_TYPES.get(version)
    if key_type is not None:
        return key_type.read(r)
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


@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    """What a classic consumer's JoinGroup carries per protocol (Kafka's
    ``ConsumerProtocolSubscription``, versions 0-3)."""
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()   # v1+
    generation_id: int = -1                                          # v2+
    rack_id: str | None = None                                       # v3+


def read_consumer_subscription(metadata: bytes) -> ConsumerProtocolSubscription | None:
    """A ``ConsumerProtocolSubscription`` of any version, or None if it does not parse."""
    try:
        r = _Reader(metadata)
        version = r.i16()
        if version < 0:
            return None
        n = r.i32()
        if n < 0 or n > len(metadata):
            return None
        topics = []
        for _ in range(n):
            t = r.string()
            if t is None:
                return None
            topics.append(t)
        user_data = r.bytes_() if r.pos < len(metadata) else None
        owned: list[tuple[str, tuple[int, ...]]] = []
        generation, rack = -1, None
        if version >= 1 and r.pos < len(metadata):
            for _ in range(r.i32()):
                topic = r.string() or ""
                owned.append((topic, tuple(r.i32() for _ in range(r.i32()))))
        if version >= 2 and r.pos < len(metadata):
            generation = r.i32()
        if version >= 3 and r.pos < len(metadata):
            rack = r.string()
        return ConsumerProtocolSubscription(version, tuple(topics), user_data, tuple(owned), generation, rack)
    except (struct.error, UnicodeDecodeError, IndexError):
        return None


def parse_consumer_subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of a ``ConsumerProtocolSubscription`` (any version), or None if unparsable."""
    subscription = read_consumer_subscription(metadata)
    return None if subscription is None else set(subscription.topics)


def consumer_protocol_assignment(partitions: dict[str, list[int]], version: int = 0,
                                 user_data: bytes | None = None) -> bytes:
    """A ``ConsumerProtocolAssignment`` (versions 0-3 share one layout): what a classic member
    of a consumer group gets in its SyncGroup answer."""
    w = _Writer().i16(min(max(version, 0), 3)).i32(len(partitions))
    for topic, ps in partitions.items():
        w.string(topic).i32(len(ps))
        for p in ps:
            w.i32(p)
    return w.bytes_(user_data).build()


def read_consumer_assignment(data: bytes) -> tuple[dict[str, list[int]], bytes | None] | None:
    """(topic -> partitions, user data) of a ``ConsumerProtocolAssignment``, None if it does not parse."""
    try:
        r = _Reader(data)
        if r.i16() < 0:
            return None
        out: dict[str, list[int]] = {}
        for _ in range(r.i32()):
            topic = r.string() or ""
            out.setdefault(topic, []).extend(r.i32() for _ in range(r.i32()))
        user_data = r.bytes_() if r.pos < len(data) else None
        return out, user_data
    except (struct.error, UnicodeDecodeError, IndexError):
        return None


def consumer_subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    """A ``ConsumerProtocolSubscription`` v0 (for tests and the benchmark)."""
    w = _Writer().i16(0).i32(len(topics))
    for t in topics:
        w.string(t)
    return w.bytes_(user_data).build()


# ----------------------------------------------------------------------------- consumer groups
# Kafka's ConsumerGroup*Key/Value schemas (KIP-848). Keys are version 0 and not flexible; values
# are version 0 and flexible (compact strings and arrays, a tagged-fields section per struct).
# ``Assignment`` maps a topic id to its partitions.
Assignment = dict[uuid.UUID, frozenset[int]]


def _write_assignment(w: _Writer, assignment: Assignment) -> None:
    w.uvarint(len(assignment) + 1)
    for topic_id, partitions in assignment.items():
        w.uuid_(topic_id).uvarint(len(partitions) + 1)
        for p in sorted(partitions):
            w.i32(p)
        w.no_tags()


def _read_assignment(r: _Reader) -> Assignment:
    out: Assignment = {}
    for _ in range(r.uvarint() - 1):
        topic_id = r.uuid_()
        out[topic_id] = frozenset(r.i32() for _ in range(r.uvarint() - 1))
        r.tags()
    return out


def _write_strings(w: _Writer, items: Iterable[str]) -> None:
    items = list(items)
    w.uvarint(len(items) + 1)
    for item in items:
        w.compact_string(item)


def _read_strings(r: _Reader) -> tuple[str, ...]:
    return tuple(r.compact_string() or "" for _ in range(r.uvarint() - 1))


def _value_writer() -> _Writer:
    return _Writer().i16(0)


def _value_reader(buf: bytes) -> _Reader:
    r = _Reader(buf)
    version = r.i16()
    if version != 0:
        raise ValueError(f"unknown consumer group record value version {version}")
    return r


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    """Type 3: the group epoch (value ``ConsumerGroupMetadataValue``); its tombstone deletes the group."""
    TYPE = 3
    group_id: str

    def encode(self) -> bytes:
        return _Writer().i16(self.TYPE).string(self.group_id).build()

    @classmethod
    def read(cls, r: _Reader) -> "ConsumerGroupMetadataKey":
        return cls(r.string() or "")


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    """Type 4: subscription metadata of Kafka 4.0, replaced by ``metadata_hash`` in 4.1
    (KIP-1101): read and ignored, never written. Difference: Kafka 4.1 writes its tombstone at
    the group's next heartbeat after loading one; the emulator leaves it (nothing reads it)."""
    TYPE = 4
    group_id: str

    def encode(self) -> bytes:
        return _Writer().i16(self.TYPE).string(self.group_id).build()

    @classmethod
    def read(cls, r: _Reader) -> "ConsumerGroupPartitionMetadataKey":
        return cls(r.string() or "")


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    """Type 5: a member's subscription (value ``ConsumerGroupMemberMetadataValue``)."""
    TYPE = 5
    group_id: str
    member_id: str

    def encode(self) -> bytes:
        return _Writer().i16(self.TYPE).string(self.group_id).string(self.member_id).build()

    @classmethod
    def read(cls, r: _Reader) -> "ConsumerGroupMemberMetadataKey":
        return cls(r.string() or "", r.string() or "")


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    """Type 6: the target assignment epoch."""
    TYPE = 6
    group_id: str

    def encode(self) -> bytes:
        return _Writer().i16(self.TYPE).string(self.group_id).build()

    @classmethod
    def read(cls, r: _Reader) -> "ConsumerGroupTargetAssignmentMetadataKey":
        return cls(r.string() or "")


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    """Type 7: a member's target assignment."""
    TYPE = 7
    group_id: str
    member_id: str

    def encode(self) -> bytes:
        return _Writer().i16(self.TYPE).string(self.group_id).string(self.member_id).build()

    @classmethod
    def read(cls, r: _Reader) -> "ConsumerGroupTargetAssignmentMemberKey":
        return cls(r.string() or "", r.string() or "")


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    """Type 8: a member's current assignment, epochs and reconciliation state."""
    TYPE = 8
    group_id: str
    member_id: str

    def encode(self) -> bytes:
        return _Writer().i16(self.TYPE).string(self.group_id).string(self.member_id).build()

    @classmethod
    def read(cls, r: _Reader) -> "ConsumerGroupCurrentMemberAssignmentKey":
        return cls(r.string() or "", r.string() or "")


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    """Type 16: the topics a subscribed regular expression resolved to."""
    TYPE = 16
    group_id: str
    regular_expression: str

    def encode(self) -> bytes:
        return _Writer().i16(self.TYPE).string(self.group_id).string(self.regular_expression).build()

    @classmethod
    def read(cls, r: _Reader) -> "ConsumerGroupRegularExpressionKey":
        return cls(r.string() or "", r.string() or "")


ConsumerGroupKey = (ConsumerGroupMetadataKey | ConsumerGroupPartitionMetadataKey | ConsumerGroupMemberMetadataKey
                    | ConsumerGroupTargetAssignmentMetadataKey | ConsumerGroupTargetAssignmentMemberKey
                    | ConsumerGroupCurrentMemberAssignmentKey | ConsumerGroupRegularExpressionKey)
CONSUMER_GROUP_KEY_TYPES: dict[int, type] = {k.TYPE: k for k in (
    ConsumerGroupMetadataKey, ConsumerGroupPartitionMetadataKey, ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupRegularExpressionKey)}


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0     # tagged field 0 (Kafka 4.1, KIP-1101)

    def encode(self) -> bytes:
        w = _value_writer().i32(self.epoch)
        if self.metadata_hash == 0:
            return w.no_tags().build()
        return w.uvarint(1).uvarint(0).uvarint(8).i64(self.metadata_hash).build()

    @classmethod
    def read(cls, buf: bytes) -> "ConsumerGroupMetadataValue":
        r = _value_reader(buf)
        epoch = r.i32()
        tagged = r.tags().get(0)
        return cls(epoch, tagged.i64() if tagged is not None else 0)


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member of a consumer group that speaks the classic protocol: its JoinGroup session
    timeout and protocols (name, ConsumerProtocolSubscription)."""
    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic_member_metadata: ClassicMemberMetadata | None = None   # tagged field 0

    def encode(self) -> bytes:
        w = (_value_writer().compact_string(self.instance_id).compact_string(self.rack_id)
             .compact_string(self.client_id).compact_string(self.client_host))
        _write_strings(w, self.subscribed_topic_names)
        w.compact_string(self.subscribed_topic_regex).i32(self.rebalance_timeout_ms).compact_string(self.server_assignor)
        classic = self.classic_member_metadata
        if classic is None:
            return w.no_tags().build()
        inner = _Writer().i32(classic.session_timeout_ms).uvarint(len(classic.supported_protocols) + 1)
        for name, metadata in classic.supported_protocols:
            inner.compact_string(name).compact_bytes(metadata).no_tags()
        body = inner.no_tags().build()
        return w.uvarint(1).uvarint(0).uvarint(len(body)).build() + body

    @classmethod
    def read(cls, buf: bytes) -> "ConsumerGroupMemberMetadataValue":
        r = _value_reader(buf)
        instance_id, rack_id = r.compact_string(), r.compact_string()
        client_id, client_host = r.compact_string() or "", r.compact_string() or ""
        topics = _read_strings(r)
        regex, rebalance_timeout, assignor = r.compact_string(), r.i32(), r.compact_string()
        classic = None
        tagged = r.tags().get(0)
        if tagged is not None:
            session_timeout = tagged.i32()
            protocols = []
            for _ in range(tagged.uvarint() - 1):
                name = tagged.compact_string() or ""
                protocols.append((name, tagged.compact_bytes()))
                tagged.tags()
            classic = ClassicMemberMetadata(session_timeout, tuple(protocols))
        return cls(instance_id, rack_id, client_id, client_host, topics, regex, rebalance_timeout, assignor, classic)


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int

    def encode(self) -> bytes:
        return _value_writer().i32(self.assignment_epoch).no_tags().build()

    @classmethod
    def read(cls, buf: bytes) -> "ConsumerGroupTargetAssignmentMetadataValue":
        return cls(_value_reader(buf).i32())


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: Assignment

    def encode(self) -> bytes:
        w = _value_writer()
        _write_assignment(w, self.topic_partitions)
        return w.no_tags().build()

    @classmethod
    def read(cls, buf: bytes) -> "ConsumerGroupTargetAssignmentMemberValue":
        return cls(_read_assignment(_value_reader(buf)))


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int             # MemberState's value
    assigned_partitions: Assignment
    partitions_pending_revocation: Assignment

    def encode(self) -> bytes:
        w = _value_writer().i32(self.member_epoch).i32(self.previous_member_epoch).i8(self.state)
        _write_assignment(w, self.assigned_partitions)
        _write_assignment(w, self.partitions_pending_revocation)
        return w.no_tags().build()

    @classmethod
    def read(cls, buf: bytes) -> "ConsumerGroupCurrentMemberAssignmentValue":
        r = _value_reader(buf)
        epoch, previous, state = r.i32(), r.i32(), r.i8()
        return cls(epoch, previous, state, _read_assignment(r), _read_assignment(r))


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int

    def encode(self) -> bytes:
        w = _value_writer()
        _write_strings(w, self.topics)
        return w.i64(self.version).i64(self.timestamp).no_tags().build()

    @classmethod
    def read(cls, buf: bytes) -> "ConsumerGroupRegularExpressionValue":
        r = _value_reader(buf)
        topics = _read_strings(r)
        return cls(topics, r.i64(), r.i64())


ConsumerGroupValue = (ConsumerGroupMetadataValue | ConsumerGroupMemberMetadataValue
                      | ConsumerGroupTargetAssignmentMetadataValue | ConsumerGroupTargetAssignmentMemberValue
                      | ConsumerGroupCurrentMemberAssignmentValue | ConsumerGroupRegularExpressionValue)
# key type -> the value type its records carry (None: read and ignored)
CONSUMER_GROUP_VALUE_TYPES: dict[int, type | None] = {
    ConsumerGroupMetadataKey.TYPE: ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey.TYPE: None,
    ConsumerGroupMemberMetadataKey.TYPE: ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMetadataKey.TYPE: ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey.TYPE: ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupCurrentMemberAssignmentKey.TYPE: ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupRegularExpressionKey.TYPE: ConsumerGroupRegularExpressionValue,
}


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    """One consumer-group record as the coordinator writes and replays it (value None: a
    tombstone)."""
    key: ConsumerGroupKey
    value: ConsumerGroupValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return self.key.encode(), None if self.value is None else self.value.encode()


def read_consumer_group_value(key: ConsumerGroupKey, buf: bytes | None) -> ConsumerGroupValue | None:
    value_type = CONSUMER_GROUP_VALUE_TYPES[key.TYPE]
    if buf is None or value_type is None:
        return None
    return value_type.read(buf)
