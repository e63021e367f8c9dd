"""What a server-side assignor is given and returns (Kafka's ``GroupSpec``,
``MemberSubscriptionAndAssignment``, ``SubscribedTopicDescriber``, ``ConsumerGroupPartitionAssignor``).

An assignor sees each member's subscribed topic ids and current target assignment, the topics'
partition counts, and which partitions some member's target assignment already holds; it returns
member id -> assignment (topic id -> partitions) for every member. Assignments it is given are
immutable: an assignor returns the same object for a member whose assignment it keeps, so the
``TargetAssignmentBuilder`` can tell unchanged members apart by identity.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Mapping, Protocol

from kafka_emu.coordinator.group.modern.modern_group_member import Assignment
from kafka_emu.coordinator.group.modern.subscription import SubscriptionType


class PartitionAssignorError(Exception):
    """Kafka's ``PartitionAssignorException``: the assignment cannot be computed (the heartbeat
    that triggered it gets UNKNOWN_SERVER_ERROR)."""


@dataclass(frozen=True, slots=True)
class MemberSubscriptionAndAssignment:
    rack_id: str | None
    instance_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Assignment


@dataclass(frozen=True, slots=True)
class GroupSpec:
    members: Mapping[str, MemberSubscriptionAndAssignment]    # in the group's member order
    subscription_type: SubscriptionType
    inverted_member_assignment: Mapping[uuid.UUID, Mapping[int, str]]

    def is_partition_assigned(self, topic_id: uuid.UUID, partition: int) -> bool:
        owners = self.inverted_member_assignment.get(topic_id)
        return owners is not None and partition in owners


class SubscribedTopicDescriber(Protocol):
    def num_partitions(self, topic_id: uuid.UUID) -> int:
        """The topic's partition count, -1 if it does not exist."""
        ...


class ConsumerGroupPartitionAssignor(Protocol):
    name: str

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> dict[str, Assignment]:
        ...
