"""ModernGroup: what a KIP-848 consumer group and a KIP-932 share group share (Kafka's
``ModernGroup``): the group epoch, the members, the static members' ids, the target assignment
with its epoch (and its inverse, partition -> member), the subscribed topics with their counts and
the group's metadata hash.

Epochs: the group epoch moves when membership or subscriptions (or the subscribed topics'
metadata) change; the target assignment epoch catches up when the assignor has run for that
epoch; each member's epoch moves to the target epoch as the member reconciles. The state follows
from them (``maybe_update_group_state``, per group type).

Every mutation happens by replaying a record (``ConsumerGroupManager.replay``), so the state after a
load is the state before it. Not thread-safe: the group lock guards everything here; ``state``
and ``len(members)`` are also read without it (metrics).
"""
from __future__ import annotations

import uuid
from typing import Generic, Iterable, Mapping, TypeVar

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.group.group import Group
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment, ModernGroupMember
from kafka_emu.coordinator.group.modern.subscription import SubscriptionCount, SubscriptionType

M = TypeVar("M", bound=ModernGroupMember)


class ModernGroup(Group, Generic[M]):
    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.group_epoch = 0
        self.target_assignment_epoch = 0
        self.members: dict[str, M] = {}
        self.static_members: dict[str, str] = {}          # instance id -> member id
        self.subscribed_topic_names: dict[str, SubscriptionCount] = {}
        self.subscription_type = SubscriptionType.HOMOGENEOUS
        self.target_assignment: dict[str, Assignment] = {}
        self.inverted_target_assignment: dict[uuid.UUID, dict[int, str]] = {}
        self.metadata_hash = 0
        # the topics_version of the metadata image the hash was computed from (-1: recompute)
        self.metadata_version = -1

    # ------------------------------------------------------------------ members
    def size(self) -> int:
        return len(self.members)

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> M:
        member = self.members.get(member_id)
        if member is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}.")
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return self.static_members.get(instance_id) if instance_id is not None else None

    def static_member(self, instance_id: str | None) -> M | None:
        member_id = self.static_member_id(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    def update_member(self, new_member: M) -> None:
        old = self.members.get(new_member.member_id)
        self.members[new_member.member_id] = new_member
        self._update_subscribed_topic_names(self.subscribed_topic_names, old, new_member)
        if new_member.instance_id is not None:
            self.static_members[new_member.instance_id] = new_member.member_id
        self.on_member_updated(old, new_member)
        self.maybe_update_group_state()
        self.maybe_update_subscription_type()

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._update_subscribed_topic_names(self.subscribed_topic_names, old, None)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.on_member_updated(old, None)
        self.maybe_update_group_state()
        self.maybe_update_subscription_type()

    def on_member_updated(self, old: M | None, new: M | None) -> None:
        """The group type's own indexes of its members (partition epochs, assignors ...)."""

    def maybe_update_group_state(self) -> None:
        raise NotImplementedError

    def maybe_update_subscription_type(self) -> None:
        self.subscription_type = self.subscription_type_of(self.subscribed_topic_names, len(self.members))

    @staticmethod
    def subscription_type_of(subscribed: Mapping[str, SubscriptionCount], num_members: int) -> SubscriptionType:
        for count in subscribed.values():
            if count.by_name_count != num_members:
                return SubscriptionType.HETEROGENEOUS
        return SubscriptionType.HOMOGENEOUS

    # ------------------------------------------------------------------ subscriptions
    @staticmethod
    def _update_subscribed_topic_names(counts: dict[str, SubscriptionCount], old: ModernGroupMember | None,
                                       new: ModernGroupMember | None) -> None:
        if old is not None:
            for topic in old.subscribed_topic_names:
                apply_count(counts, topic, counts.get(topic, SubscriptionCount()).dec_name())
        if new is not None:
            for topic in new.subscribed_topic_names:
                counts[topic] = counts.get(topic, SubscriptionCount()).inc_name()

    def compute_subscribed_topic_names(self, old: M | None, new: M | None) -> dict[str, SubscriptionCount]:
        """The subscribed topics once ``old`` is replaced by ``new`` (without changing the group)."""
        counts = dict(self.subscribed_topic_names)
        self._update_subscribed_topic_names(counts, old, new)
        return counts

    def compute_subscribed_topic_names_without(self, removed: Iterable[M]) -> dict[str, SubscriptionCount]:
        counts = dict(self.subscribed_topic_names)
        for member in removed:
            self._update_subscribed_topic_names(counts, member, None)
        return counts

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names

    # ------------------------------------------------------------------ target assignment
    def target_assignment_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """A member's target assignment; a static member replacing another (same instance id)
        inherits the one of the member it replaces (Kafka's ``targetAssignment(memberId, instanceId)``)."""
        if instance_id is not None:
            previous = self.static_member_id(instance_id)
            if previous is not None:
                return self.target_assignment.get(previous, EMPTY_ASSIGNMENT)
            return EMPTY_ASSIGNMENT
        return self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)

    def update_target_assignment(self, member_id: str, assignment: Assignment) -> None:
        old = self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)
        self._update_inverted(member_id, old, assignment)
        self.target_assignment[member_id] = assignment
        self.maybe_update_group_state()

    def remove_target_assignment(self, member_id: str) -> None:
        old = self.target_assignment.pop(member_id, None)
        if old is not None:
            self._update_inverted(member_id, old, EMPTY_ASSIGNMENT)
        self.maybe_update_group_state()

    def _update_inverted(self, member_id: str, old: Assignment, new: Assignment) -> None:
        inverted = self.inverted_target_assignment
        for topic_id, partitions in old.items():
            owners = inverted.get(topic_id)
            if owners is None:
                continue
            keep = new.get(topic_id, ())
            for p in partitions:
                if p not in keep and owners.get(p) == member_id:
                    del owners[p]
            if not owners:
                del inverted[topic_id]
        for topic_id, partitions in new.items():
            owners = inverted.setdefault(topic_id, {})
            for p in partitions:
                owners[p] = member_id

    def set_group_epoch(self, epoch: int) -> None:
        self.group_epoch = epoch
        self.maybe_update_group_state()

    def set_target_assignment_epoch(self, epoch: int) -> None:
        self.target_assignment_epoch = epoch
        self.maybe_update_group_state()


def apply_count(counts: dict[str, SubscriptionCount], topic: str, count: SubscriptionCount | None) -> None:
    """Store a topic's new subscription count; None (nobody subscribes any more) removes it."""
    if count is None:
        counts.pop(topic, None)
    else:
        counts[topic] = count
