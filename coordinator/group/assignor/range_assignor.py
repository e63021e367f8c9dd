"""RangeAssignor: the ``range`` server-side assignor (Kafka's ``RangeAssignor``).

Per topic, the members subscribed to it (static members first, by instance id, then the others
by member id) get contiguous ranges of partitions, the first ``partitions % members`` of them one
partition more. When all members subscribe to the same topics with the same partition counts,
each member gets the same partition numbers of every topic (co-partitioning). Not sticky: the
ranges follow from the sorted members alone, so static members keep theirs across restarts.
"""
from __future__ import annotations

import uuid

from kafka_emu.coordinator.group.assignor.partition_assignor import (
    GroupSpec, PartitionAssignorError, SubscribedTopicDescriber,
)
from kafka_emu.coordinator.group.modern.modern_group_member import Assignment
from kafka_emu.coordinator.group.modern.subscription import SubscriptionType


class _TopicRanges:
    __slots__ = ("topic_id", "num_partitions", "num_members", "min_quota", "extra_partitions", "next_range")

    def __init__(self, topic_id: uuid.UUID, num_partitions: int, num_members: int) -> None:
        self.topic_id = topic_id
        self.num_partitions = num_partitions
        self.num_members = num_members
        self.min_quota = -1
        self.extra_partitions = -1
        self.next_range = 0

    def next(self) -> frozenset[int] | None:
        if self.min_quota == -1:
            self.min_quota, self.extra_partitions = divmod(self.num_partitions, self.num_members)
        quota = self.min_quota
        if self.extra_partitions > 0:
            quota += 1
            self.extra_partitions -= 1
        start, end = self.next_range, min(self.next_range + quota, self.num_partitions)
        self.next_range = end
        return frozenset(range(start, end)) if start < end else None


class RangeAssignor:
    name = "range"

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> dict[str, Assignment]:
        if not group_spec.members:
            return {}
        member_ids = self._sorted_member_ids(group_spec)
        topics: dict[uuid.UUID, _TopicRanges] = {}
        if group_spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            for topic_id in group_spec.members[member_ids[0]].subscribed_topic_ids:
                topics[topic_id] = _TopicRanges(topic_id, self._partitions(describer, topic_id), len(member_ids))
        else:
            for member_id in member_ids:
                for topic_id in group_spec.members[member_id].subscribed_topic_ids:
                    ranges = topics.get(topic_id)
                    if ranges is None:
                        ranges = topics[topic_id] = _TopicRanges(topic_id, self._partitions(describer, topic_id), 0)
                    ranges.num_members += 1
        out: dict[str, Assignment] = {}
        for member_id in member_ids:
            assignment = {}
            for topic_id in group_spec.members[member_id].subscribed_topic_ids:
                partitions = topics[topic_id].next()
                if partitions is not None:
                    assignment[topic_id] = partitions
            out[member_id] = assignment
        return out

    @staticmethod
    def _partitions(describer: SubscribedTopicDescriber, topic_id: uuid.UUID) -> int:
        n = describer.num_partitions(topic_id)
        if n == -1:
            raise PartitionAssignorError("Member is subscribed to a non-existent topic")
        return n

    @staticmethod
    def _sorted_member_ids(group_spec: GroupSpec) -> list[str]:
        """Static members first, by instance id; then the others by member id."""
        members = group_spec.members
        return sorted(members, key=lambda m: (0, members[m].instance_id, m) if members[m].instance_id is not None
                      else (1, "", m))
