"""ModernGroupMember: a member of a KIP-848 consumer group or a KIP-932 share group (Kafka's
``ModernGroupMember``): its epochs, reconciliation state, identity and current assignment.

Immutable: a change is a new member (``dataclasses.replace``, Kafka's ``Builder``), so the group
can compare the old and the new one and write a record only when something changed. An
``Assignment`` (topic id -> partitions) is never mutated once built either.
"""
from __future__ import annotations

import uuid
from types import MappingProxyType
from dataclasses import dataclass, field
from typing import Mapping

from kafka_emu.coordinator.group.modern.member_state import MemberState

Assignment = Mapping[uuid.UUID, frozenset[int]]
EMPTY_ASSIGNMENT: Assignment = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ModernGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    assigned_partitions: Assignment = field(default_factory=lambda: EMPTY_ASSIGNMENT)

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """Stable at the target assignment's epoch: nothing left to revoke or to receive."""
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    def is_static(self) -> bool:
        return self.instance_id is not None


def assignment_size(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())
