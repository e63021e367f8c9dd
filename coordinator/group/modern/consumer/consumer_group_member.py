"""ConsumerGroupMember: a member of a consumer group (Kafka's ``ConsumerGroupMember``).

Beyond what every modern member has: its rebalance timeout (how long it may take to revoke), its
regular expression subscription, the server assignor it asks for, the partitions it must still
revoke, and, for a member that speaks the classic protocol (JoinGroup/SyncGroup inside a consumer
group, KIP-848's migration path), its session timeout and protocols. ``from_records`` /
``to_*_value`` are its two records, ``ConsumerGroupMemberMetadataValue`` (what it asked for) and
``ConsumerGroupCurrentMemberAssignmentValue`` (where its reconciliation stands).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kafka_emu.coordinator.group.modern.member_state import MemberState
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment, ModernGroupMember
from kafka_emu.coordinator.group.records import (
    ClassicMemberMetadata, ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupMemberMetadataValue,
)

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember(ModernGroupMember):
    rebalance_timeout_ms: int = -1
    subscribed_topic_regex: str | None = None
    server_assignor_name: str | None = None
    partitions_pending_revocation: Assignment = field(default_factory=lambda: EMPTY_ASSIGNMENT)
    classic_member_metadata: ClassicMemberMetadata | None = None

    def use_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def supported_classic_protocols(self) -> tuple[tuple[str, bytes], ...]:
        return self.classic_member_metadata.supported_protocols if self.classic_member_metadata is not None else ()

    def with_epoch(self, epoch: int) -> "ConsumerGroupMember":
        """Kafka's ``updateMemberEpoch``: the current epoch becomes the previous one."""
        return dataclasses.replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def with_metadata(self, value: ConsumerGroupMemberMetadataValue) -> "ConsumerGroupMember":
        return dataclasses.replace(
            self, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=frozenset(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor_name=value.server_assignor, classic_member_metadata=value.classic_member_metadata)

    def with_assignment(self, value: ConsumerGroupCurrentMemberAssignmentValue) -> "ConsumerGroupMember":
        return dataclasses.replace(
            self, member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            state=MemberState.of(value.state), assigned_partitions=value.assigned_partitions,
            partitions_pending_revocation=value.partitions_pending_revocation)

    def metadata_value(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            self.instance_id, self.rack_id, self.client_id, self.client_host,
            tuple(sorted(self.subscribed_topic_names)), self.subscribed_topic_regex, self.rebalance_timeout_ms,
            self.server_assignor_name, self.classic_member_metadata)

    def assignment_value(self) -> ConsumerGroupCurrentMemberAssignmentValue:
        return ConsumerGroupCurrentMemberAssignmentValue(
            self.member_epoch, self.previous_member_epoch, int(self.state), dict(self.assigned_partitions),
            dict(self.partitions_pending_revocation))


def has_assigned_partitions_changed(old: ConsumerGroupMember, new: ConsumerGroupMember) -> bool:
    return old.assigned_partitions != new.assigned_partitions
