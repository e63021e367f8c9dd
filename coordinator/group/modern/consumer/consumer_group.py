"""ConsumerGroup: a KIP-848 consumer group (Kafka's ``ConsumerGroup``).

Beyond ``ModernGroup``: the state (Empty: no member; Assigning: group epoch ahead of the target
assignment; Reconciling: some member not yet at the target epoch or not STABLE; Stable), the epoch
at which each partition is currently owned (the reconciliation's "is it free?" question; a
partition is never owned by two members, ``add_partition_epochs`` enforces it), the server
assignors the members ask for, the regular expressions they subscribe with and what those
resolved to, and its members speaking the classic protocol (KIP-848's migration path).

``replay(key, value)`` applies one record: the only way the group changes, on load and on write
alike. Offsets, member-epoch checks of OffsetCommit/OffsetFetch and expiration follow Kafka's
``ConsumerGroup.validateOffsetCommit``/``validateOffsetFetch``/``offsetExpirationCondition``.
Not thread-safe: the group lock guards it (``state`` and ``members`` are also read without it).
"""
from __future__ import annotations

import dataclasses
import enum
import uuid
from dataclasses import dataclass

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.group import GroupType, IllegalStateError
from kafka_emu.coordinator.group.group_offsets import ExpirationBase
from kafka_emu.coordinator.group.modern.consumer.consumer_group_member import (
    LEAVE_GROUP_MEMBER_EPOCH, ConsumerGroupMember,
)
from kafka_emu.coordinator.group.modern.member_state import MemberState
from kafka_emu.coordinator.group.modern.modern_group import ModernGroup, apply_count
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment
from kafka_emu.coordinator.group.modern.subscription import SubscriptionCount, SubscriptionType
from kafka_emu.coordinator.group.records import (
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupKey, ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey, ConsumerGroupRecord, ConsumerGroupRegularExpressionKey,
    ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupValue,
)
from kafka_emu.coordinator.group.results import DEAD_SUMMARY, GroupOverview, GroupSummary

CONSUMER_PROTOCOL_TYPE = "consumer"
# OffsetCommit v9 brought the member epoch: a consumer-protocol member must commit with it
OFFSET_COMMIT_MEMBER_EPOCH_VERSION = 9


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """The topics a regular expression matched, at which metadata version and when."""
    topics: frozenset[str]
    version: int
    timestamp: int


class ConsumerGroup(ModernGroup[ConsumerGroupMember]):
    group_type = GroupType.CONSUMER

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.state = ConsumerGroupState.EMPTY
        self.current_partition_epochs: dict[uuid.UUID, dict[int, int]] = {}
        self.server_assignors: dict[str, int] = {}
        self.subscribed_regular_expressions: dict[str, int] = {}
        self.resolved_regular_expressions: dict[str, ResolvedRegularExpression] = {}
        self.num_classic_protocol_members = 0
        self.classic_protocols: dict[str, int] = {}   # protocol name -> classic members supporting it
        self.deleted = False      # its ConsumerGroupMetadata tombstone was replayed

    # ------------------------------------------------------------------ Group
    def is_dead(self) -> bool:
        return self.state is ConsumerGroupState.DEAD

    def is_empty(self) -> bool:
        return self.state is ConsumerGroupState.EMPTY

    def mark_dead(self, reason: str) -> None:
        self.state = ConsumerGroupState.DEAD

    def state_name(self) -> str:
        return self.state.value

    def overview(self) -> GroupOverview:
        return GroupOverview(self.group_id, CONSUMER_PROTOCOL_TYPE, self.state.value, GroupType.CONSUMER.value)

    def summary(self) -> GroupSummary:
        """DescribeGroups describes classic groups only: a consumer group reads as not found."""
        return DEAD_SUMMARY

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_id: int,
                               is_transactional: bool, api_version: int) -> int | None:
        if self.is_dead():
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and not self.members:
            return None   # the admin client, or a consumer not using group management
        if is_transactional and generation_id == -1 and member_id == "" and group_instance_id is None:
            return None   # TxnOffsetCommit's member fields are optional
        member = self.members.get(member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        if not is_transactional and not member.use_classic_protocol() and api_version < OFFSET_COMMIT_MEMBER_EPOCH_VERSION:
            return Errors.UNSUPPORTED_VERSION
        return self._validate_member_epoch(generation_id, member)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        """OffsetFetch v9+ names the member and its epoch (Kafka's ``validateOffsetFetch``)."""
        if member_id is None and member_epoch < 0:
            return None
        member = self.members.get(member_id or "")
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        return self._validate_member_epoch(member_epoch, member)

    @staticmethod
    def _validate_member_epoch(received: int, member: ConsumerGroupMember) -> int | None:
        if received != member.member_epoch:
            return Errors.ILLEGAL_GENERATION if member.use_classic_protocol() else Errors.STALE_MEMBER_EPOCH
        return None

    def validate_offset_delete(self) -> int | None:
        return None

    def offset_expiration_base(self) -> ExpirationBase | None:
        return lambda om: om.commit_timestamp

    def tombstone_keys(self) -> list[bytes]:
        return [record.key.encode() for record in self.tombstone_records()]

    def tombstone_records(self, replaced: tuple[str, str] | None = None) -> list[ConsumerGroupRecord]:
        """The records deleting the group, in the order replay needs (Kafka's
        ``createGroupTombstoneRecords``); ``replaced``: (leaving, joining) member ids when a
        static member's replacement is tombstoned instead of the member it replaces."""
        gid = self.group_id

        def ids() -> list[str]:
            if replaced is None:
                return list(self.members)
            return [replaced[1] if m == replaced[0] else m for m in self.members]

        out = [ConsumerGroupRecord(ConsumerGroupCurrentMemberAssignmentKey(gid, m), None) for m in ids()]
        out += [ConsumerGroupRecord(ConsumerGroupTargetAssignmentMemberKey(gid, m), None) for m in ids()]
        out.append(ConsumerGroupRecord(ConsumerGroupTargetAssignmentMetadataKey(gid), None))
        out += [ConsumerGroupRecord(ConsumerGroupMemberMetadataKey(gid, m), None) for m in ids()]
        out += [ConsumerGroupRecord(ConsumerGroupRegularExpressionKey(gid, r), None)
                for r in self.resolved_regular_expressions]
        out.append(ConsumerGroupRecord(ConsumerGroupMetadataKey(gid), None))
        return out

    # ------------------------------------------------------------------ state
    def maybe_update_group_state(self) -> None:
        if self.state is ConsumerGroupState.DEAD:
            return
        if not self.members:
            self.state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.target_assignment_epoch:
            self.state = ConsumerGroupState.ASSIGNING
        elif any(not m.is_reconciled_to(self.target_assignment_epoch) for m in self.members.values()):
            self.state = ConsumerGroupState.RECONCILING
        else:
            self.state = ConsumerGroupState.STABLE

    def maybe_update_subscription_type(self) -> None:
        self.subscription_type = self.subscription_type_of_regex(
            self.subscribed_regular_expressions, self.subscribed_topic_names, len(self.members))

    @staticmethod
    def subscription_type_of_regex(regexes: dict[str, int], topics: dict[str, SubscriptionCount],
                                   num_members: int) -> SubscriptionType:
        """Homogeneous when every member names the same topics, or every member subscribes with
        the same single regular expression and nobody by name (Kafka's ``subscriptionType``)."""
        if not regexes:
            return ModernGroup.subscription_type_of(topics, num_members)
        if next(iter(regexes.values())) == num_members:
            for count in topics.values():
                if count.by_regex_count != 1 or count.by_name_count > 0:
                    return SubscriptionType.HETEROGENEOUS
            return SubscriptionType.HOMOGENEOUS
        return SubscriptionType.HETEROGENEOUS

    def on_member_updated(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None) -> None:
        for member, delta in ((old, -1), (new, 1)):
            if member is None:
                continue
            if member.server_assignor_name is not None:
                _count(self.server_assignors, member.server_assignor_name, delta)
            if member.subscribed_topic_regex:
                _count(self.subscribed_regular_expressions, member.subscribed_topic_regex, delta)
            if member.use_classic_protocol():
                self.num_classic_protocol_members += delta
                for name, _ in member.supported_classic_protocols():
                    _count(self.classic_protocols, name, delta)
        if old is not None:
            self._remove_partition_epochs(old.assigned_partitions, old.member_epoch)
            self._remove_partition_epochs(old.partitions_pending_revocation, old.member_epoch)
        if new is not None:
            self._add_partition_epochs(new.assigned_partitions, new.member_epoch)
            self._add_partition_epochs(new.partitions_pending_revocation, new.member_epoch)

    # ------------------------------------------------------------------ partition epochs
    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning the partition now, -1 if it is free."""
        epochs = self.current_partition_epochs.get(topic_id)
        return -1 if epochs is None else epochs.get(partition, -1)

    def _add_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        for topic_id, partitions in assignment.items():
            epochs = self.current_partition_epochs.setdefault(topic_id, {})
            for p in partitions:
                previous = epochs.get(p)
                if previous is not None:
                    raise IllegalStateError(f"Cannot set the epoch of {topic_id}-{p} to {epoch} because the "
                                            f"partition is still owned at epoch {previous}")
                epochs[p] = epoch

    def _remove_partition_epochs(self, assignment: Assignment, expected_epoch: int) -> None:
        for topic_id, partitions in assignment.items():
            epochs = self.current_partition_epochs.get(topic_id)
            if epochs is None:
                raise IllegalStateError(f"Cannot remove the epoch {expected_epoch} from {topic_id} because it "
                                        f"does not have any epoch")
            for p in partitions:
                previous = epochs.pop(p, None)
                if previous != expected_epoch:
                    raise IllegalStateError(f"Cannot remove the epoch {expected_epoch} from {topic_id}-{p} "
                                            f"because the partition is still owned at a different epoch {previous}")
            if not epochs:
                del self.current_partition_epochs[topic_id]

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Some partition of the member's target is still held by another member."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target_assignment.get(member.member_id, EMPTY_ASSIGNMENT).items():
            mine = member.assigned_partitions.get(topic_id, frozenset())
            for p in partitions:
                if p not in mine and self.current_partition_epoch(topic_id, p) != -1:
                    return True
        return False

    # ------------------------------------------------------------------ subscriptions
    def num_subscribed_members(self, regex: str) -> int:
        return self.subscribed_regular_expressions.get(regex, 0)

    def compute_subscribed_topic_names(self, old: ConsumerGroupMember | None,
                                       new: ConsumerGroupMember | None) -> dict[str, SubscriptionCount]:
        counts = super().compute_subscribed_topic_names(old, new)
        old_regex = old.subscribed_topic_regex if old is not None and old.subscribed_topic_regex else None
        new_regex = new.subscribed_topic_regex if new is not None and new.subscribed_topic_regex else None
        if old_regex is not None and old_regex != new_regex and self.num_subscribed_members(old_regex) == 1:
            resolved = self.resolved_regular_expressions.get(old_regex)
            if resolved is not None:
                for topic in resolved.topics:
                    apply_count(counts, topic, counts.get(topic, SubscriptionCount()).dec_regex())
        return counts

    def compute_subscribed_regular_expressions(self, old: ConsumerGroupMember | None,
                                               new: ConsumerGroupMember | None) -> dict[str, int]:
        counts = dict(self.subscribed_regular_expressions)
        if old is not None and old.subscribed_topic_regex:
            _count(counts, old.subscribed_topic_regex, -1)
        if new is not None and new.subscribed_topic_regex:
            _count(counts, new.subscribed_topic_regex, 1)
        return counts

    def compute_preferred_server_assignor(self, old: ConsumerGroupMember | None,
                                          new: ConsumerGroupMember | None) -> str | None:
        """The assignor most members ask for (the first such in member order on a tie)."""
        counts = dict(self.server_assignors)
        for member, delta in ((old, -1), (new, 1)):
            if member is not None and member.server_assignor_name is not None:
                _count(counts, member.server_assignor_name, delta)
        return max(counts, key=lambda k: counts[k]) if counts else None

    def preferred_server_assignor(self) -> str | None:
        return self.compute_preferred_server_assignor(None, None)

    def update_resolved_regular_expression(self, regex: str, resolved: ResolvedRegularExpression) -> None:
        self.remove_resolved_regular_expression(regex)
        self.resolved_regular_expressions[regex] = resolved
        for topic in resolved.topics:
            self.subscribed_topic_names[topic] = self.subscribed_topic_names.get(topic, SubscriptionCount()).inc_regex()
        self.maybe_update_subscription_type()

    def remove_resolved_regular_expression(self, regex: str) -> None:
        old = self.resolved_regular_expressions.pop(regex, None)
        if old is not None:
            for topic in old.topics:
                apply_count(self.subscribed_topic_names, topic,
                       self.subscribed_topic_names.get(topic, SubscriptionCount()).dec_regex())
            self.maybe_update_subscription_type()

    def subscribed_topics_of(self, member: ConsumerGroupMember) -> set[str]:
        """The topic names a member subscribes to: by name and through its regular expression."""
        topics = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            resolved = self.resolved_regular_expressions.get(member.subscribed_topic_regex)
            if resolved is not None:
                topics |= resolved.topics
        return topics

    # ------------------------------------------------------------------ classic members
    def supports_classic_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        """A classic member may join when it speaks the consumer protocol type and one of its
        protocols is supported by every classic member already in (Kafka's
        ``supportsClassicProtocols``)."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE:
            return False
        if self.is_empty():
            return bool(protocols)
        return any(self.classic_protocols.get(name, 0) == self.num_classic_protocol_members for name in protocols)

    def all_members_use_classic_protocol_except(self, leaving: list[ConsumerGroupMember]) -> bool:
        classic_leaving = sum(1 for m in leaving if m.use_classic_protocol())
        return self.num_classic_protocol_members - classic_leaving == len(self.members) - len(leaving)

    # ------------------------------------------------------------------ replay
    def replay(self, key: ConsumerGroupKey, value: ConsumerGroupValue | None) -> None:
        """Apply one record (Kafka's ``GroupMetadataManager.replay`` of the consumer-group records)."""
        if isinstance(key, ConsumerGroupMetadataKey):
            if value is None:
                self.deleted = True
                self.mark_dead("group deleted")
            else:
                self.deleted = False
                if self.state is ConsumerGroupState.DEAD:
                    self.state = ConsumerGroupState.EMPTY
                self.metadata_hash = value.metadata_hash  # type: ignore[union-attr]
                self.set_group_epoch(value.epoch)          # type: ignore[union-attr]
        elif isinstance(key, ConsumerGroupMemberMetadataKey):
            if value is None:
                self.remove_member(key.member_id)
            else:
                member = self.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
                self.update_member(member.with_metadata(value))  # type: ignore[arg-type]
        elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
            if value is None:
                member = self.members.get(key.member_id)
                if member is not None:
                    self.update_member(_left(member))
            else:
                member = self.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
                self.update_member(member.with_assignment(value))  # type: ignore[arg-type]
        elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
            if value is None:
                self.remove_target_assignment(key.member_id)
            else:
                self.update_target_assignment(key.member_id, value.topic_partitions)  # type: ignore[union-attr]
        elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
            self.set_target_assignment_epoch(-1 if value is None else value.assignment_epoch)  # type: ignore[union-attr]
        elif isinstance(key, ConsumerGroupRegularExpressionKey):
            if value is None:
                self.remove_resolved_regular_expression(key.regular_expression)
            else:
                self.update_resolved_regular_expression(key.regular_expression, ResolvedRegularExpression(
                    frozenset(value.topics), value.version, value.timestamp))  # type: ignore[union-attr]
        # ConsumerGroupPartitionMetadata (Kafka 4.0's subscription metadata): nothing to apply


def _left(member: ConsumerGroupMember) -> ConsumerGroupMember:
    """The member once its current assignment is tombstoned: it owns nothing, at epoch -1."""
    return dataclasses.replace(member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                               previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                               assigned_partitions=EMPTY_ASSIGNMENT, partitions_pending_revocation=EMPTY_ASSIGNMENT)


def _count(counts: dict[str, int], key: str, delta: int) -> None:
    value = counts.get(key, 0) + delta
    if value > 0:
        counts[key] = value
    else:
        counts.pop(key, None)
