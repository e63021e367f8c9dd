"""TargetAssignmentBuilder: runs a group's server-side assignor and turns the result into records
(Kafka's ``TargetAssignmentBuilder``).

Input: the group's members and target assignment, plus the members this heartbeat adds,
changes or removes. A static member replacing another (same instance id) starts from the target
assignment of the member it replaces. Output: the new target assignment of every member and the
records that persist it: one per member whose target assignment changed (compared by identity
first: assignors return the same object for a member they leave alone) and the target
assignment epoch. The records are replayed by the caller, like any other.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Callable, Generic, Mapping, TypeVar

from kafka_emu.coordinator.group.assignor.partition_assignor import (
    ConsumerGroupPartitionAssignor, GroupSpec, MemberSubscriptionAndAssignment,
)
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment, ModernGroupMember
from kafka_emu.coordinator.group.modern.subscription import SubscriptionType
from kafka_emu.coordinator.metadata_image import MetadataImage

M = TypeVar("M", bound=ModernGroupMember)
R = TypeVar("R")


class MetadataImageDescriber:
    """Partition counts by topic id from the metadata image (Kafka's ``SubscribedTopicDescriberImpl``)."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image

    def num_partitions(self, topic_id: uuid.UUID) -> int:
        name = self.image.topics_by_id.get(topic_id)
        topic = self.image.topics.get(name) if name is not None else None
        return len(topic.partitions) if topic is not None else -1


@dataclass(frozen=True, slots=True)
class TargetAssignmentResult(Generic[R]):
    records: list[R]
    target_assignment: dict[str, Assignment]


class TargetAssignmentBuilder(Generic[M, R]):
    """``subscribed_topic_ids(member)``: the member's subscription as topic ids (names and, for
    consumer groups, resolved regular expressions); ``member_record(member_id, assignment)`` and
    ``epoch_record(epoch)`` build the group type's records."""

    def __init__(self, group_epoch: int, assignor: ConsumerGroupPartitionAssignor, image: MetadataImage,
                 subscribed_topic_ids: Callable[[M], frozenset[uuid.UUID]],
                 member_record: Callable[[str, Assignment], R], epoch_record: Callable[[int], R]) -> None:
        self.group_epoch = group_epoch
        self.assignor = assignor
        self.image = image
        self.subscribed_topic_ids = subscribed_topic_ids
        self.member_record = member_record
        self.epoch_record = epoch_record
        self.members: Mapping[str, M] = {}
        self.static_members: Mapping[str, str] = {}
        self.subscription_type = SubscriptionType.HOMOGENEOUS
        self.target_assignment: Mapping[str, Assignment] = {}
        self.inverted_target_assignment: Mapping[uuid.UUID, Mapping[int, str]] = {}
        self.updated_members: dict[str, M | None] = {}

    def with_group(self, members: Mapping[str, M], static_members: Mapping[str, str],
                   subscription_type: SubscriptionType, target_assignment: Mapping[str, Assignment],
                   inverted_target_assignment: Mapping[uuid.UUID, Mapping[int, str]]) -> "TargetAssignmentBuilder[M, R]":
        self.members = members
        self.static_members = static_members
        self.subscription_type = subscription_type
        self.target_assignment = target_assignment
        self.inverted_target_assignment = inverted_target_assignment
        return self

    def add_or_update_member(self, member_id: str, member: M) -> "TargetAssignmentBuilder[M, R]":
        self.updated_members[member_id] = member
        return self

    def remove_member(self, member_id: str) -> "TargetAssignmentBuilder[M, R]":
        self.updated_members[member_id] = None
        return self

    def _spec(self, member: M, assignment: Assignment) -> MemberSubscriptionAndAssignment:
        return MemberSubscriptionAndAssignment(member.rack_id, member.instance_id,
                                               self.subscribed_topic_ids(member), assignment)

    def build(self) -> TargetAssignmentResult[R]:
        """Raises ``PartitionAssignorError`` when the assignor cannot assign."""
        specs: dict[str, MemberSubscriptionAndAssignment] = {}
        for member_id, member in self.members.items():
            specs[member_id] = self._spec(member, self.target_assignment.get(member_id, EMPTY_ASSIGNMENT))
        for member_id, updated in self.updated_members.items():
            if updated is None:
                specs.pop(member_id, None)
                continue
            assignment = self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)
            if updated.instance_id is not None:
                previous = self.static_members.get(updated.instance_id)
                if previous is not None and previous != member_id:
                    assignment = self.target_assignment.get(previous, EMPTY_ASSIGNMENT)
            specs[member_id] = self._spec(updated, assignment)
        new_assignment = self.assignor.assign(
            GroupSpec(specs, self.subscription_type, self.inverted_target_assignment),
            MetadataImageDescriber(self.image))
        records: list[R] = []
        result: dict[str, Assignment] = {}
        for member_id in specs:
            new = new_assignment.get(member_id, EMPTY_ASSIGNMENT)
            old = self.target_assignment.get(member_id)
            if new is not old and new != old:
                records.append(self.member_record(member_id, new))
            result[member_id] = new
        records.append(self.epoch_record(self.group_epoch))
        return TargetAssignmentResult(records, result)
