"""ShareGroupMember: a member of a KIP-932 share group (Kafka's ``ShareGroupMember``).

A share group member has no reconciliation: a partition may be assigned to several members and
records are handed out by the share-partition leader, so there is nothing to revoke. The member's
assignment is its target assignment, at the target assignment epoch, from the heartbeat after
the assignor ran (Kafka's ``ShareGroupAssignmentBuilder``). Immutable, like every
``ModernGroupMember``.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_emu.coordinator.group.modern.modern_group_member import ModernGroupMember

LEAVE_GROUP_MEMBER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ShareGroupMember(ModernGroupMember):
    """No fields beyond ``ModernGroupMember``'s: a share member has no instance id (static
    membership), no rebalance timeout and no server assignor of its own."""
