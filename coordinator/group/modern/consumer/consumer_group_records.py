"""The records a consumer group writes, built from its members (Kafka's
``GroupCoordinatorRecordHelpers`` for consumer groups), the batch a request writes (``Records``),
the timer keys, and the small functions both the consumer protocol (``ConsumerGroupManager``)
and its classic members (``ClassicMembers``) use."""
from __future__ import annotations

import base64
import hashlib
import struct
import uuid
from typing import Iterable, Iterator

from kafka_emu.coordinator.group.modern.consumer.consumer_group import ConsumerGroup
from kafka_emu.coordinator.group.modern.consumer.consumer_group_member import ConsumerGroupMember
from kafka_emu.coordinator.group.modern.modern_group_member import Assignment
from kafka_emu.coordinator.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue, ConsumerGroupRecord, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from kafka_emu.coordinator.metadata_image import MetadataImage

RawRecord = tuple[bytes, bytes | None]          # a record of another group type (conversions)
OwnedPartitions = Iterable[tuple[uuid.UUID, Iterable[int]]]


class Records:
    """The records one request (or timeout) writes, in order: each is replayed onto its group
    when the request is done (``ConsumerGroupManager.write``), except those ``apply`` replayed at
    once because what follows reads their effect (a conversion's group, a regular expression's
    resolution); records of another group type are only appended."""

    def __init__(self) -> None:
        self.entries: list[tuple[ConsumerGroupRecord | RawRecord, bool]] = []   # (record, replayed already)

    def append(self, record: ConsumerGroupRecord | RawRecord) -> None:
        self.entries.append((record, False))

    def extend(self, records: Iterable[ConsumerGroupRecord]) -> None:
        self.entries.extend((r, False) for r in records)

    def apply(self, group: ConsumerGroup, record: ConsumerGroupRecord) -> None:
        group.replay(record.key, record.value)
        self.entries.append((record, True))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __iter__(self) -> Iterator[ConsumerGroupRecord | RawRecord]:
        return (record for record, _ in self.entries)


def random_member_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: 16 random bytes, URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def session_timeout_key(group_id: str, member_id: str) -> str:
    return f"session-timeout-{group_id}-{member_id}"


def rebalance_timeout_key(group_id: str, member_id: str) -> str:
    return f"rebalance-timeout-{group_id}-{member_id}"


def join_key(group_id: str, member_id: str) -> str:
    return f"join-{group_id}-{member_id}"


def sync_key(group_id: str, member_id: str) -> str:
    return f"sync-{group_id}-{member_id}"


def compute_metadata_hash(topic_names: Iterable[str], image: MetadataImage) -> int:
    """The group's metadata hash: changes when a subscribed topic is created, deleted or grows
    (see the module docstring for how it differs from Kafka's); 0 without topics."""
    digest = hashlib.blake2b(digest_size=8)
    found = False
    for name in sorted(topic_names):
        topic = image.topics.get(name)
        if topic is None:
            continue
        found = True
        digest.update(topic.topic_id.bytes)
        digest.update(name.encode())
        digest.update(struct.pack(">i", len(topic.partitions)))
    return struct.unpack(">q", digest.digest())[0] if found else 0


def is_subset(owned: OwnedPartitions | None, assignment: Assignment) -> bool:
    """The member owns only partitions of ``assignment`` (Kafka's ``isSubset``)."""
    if owned is None:
        return False
    for topic_id, partitions in owned:
        assigned = assignment.get(topic_id, frozenset())
        if any(p not in assigned for p in partitions):
            return False
    return True


def assignment_record(group_id: str, member: ConsumerGroupMember) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member.member_id),
                               member.assignment_value())


def subscription_record(group_id: str, member: ConsumerGroupMember) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(ConsumerGroupMemberMetadataKey(group_id, member.member_id), member.metadata_value())


def epoch_record(group_id: str, epoch: int, metadata_hash: int) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch, metadata_hash))


def target_record(group_id: str, member_id: str, assignment: Assignment) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
                               ConsumerGroupTargetAssignmentMemberValue(dict(assignment)))


def target_epoch_record(group_id: str, epoch: int) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(ConsumerGroupTargetAssignmentMetadataKey(group_id),
                               ConsumerGroupTargetAssignmentMetadataValue(epoch))


def member_tombstones(group_id: str, member_id: str) -> list[ConsumerGroupRecord]:
    """A member's removal, in the order replay needs (Kafka's ``removeMember``)."""
    return [ConsumerGroupRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None),
            ConsumerGroupRecord(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None),
            ConsumerGroupRecord(ConsumerGroupMemberMetadataKey(group_id, member_id), None)]
