"""CurrentAssignmentBuilder: the reconciliation engine of KIP-848 (Kafka's
``CurrentAssignmentBuilder``): moves one member's current assignment towards its target.

The invariant it keeps: a partition is given to its new owner only once its previous owner no
longer holds it (``current_partition_epoch`` is -1 for a free partition, else its owner's epoch).

* STABLE at an older epoch, or UNRELEASED_PARTITIONS: compute the next assignment.
* UNREVOKED_PARTITIONS: wait until the member's reported partitions no longer include any it must
  revoke; then compute the next assignment at epoch + 1.
* Computing: per topic, keep current ∩ target; revoke current - target; assign target - current
  except partitions another member still holds ("unreleased"). Something to revoke that the member
  still reports owning -> UNREVOKED_PARTITIONS at the current epoch with only the kept partitions;
  else the member moves to the target epoch with kept + free new partitions, STABLE or
  UNRELEASED_PARTITIONS (some still held by others).
* UNKNOWN (a state written by a newer coordinator): FENCED_MEMBER_EPOCH unless the member reports
  owning nothing, then reconcile from scratch.

``owned_topic_partitions``: what the member's heartbeat reports owning, None when the heartbeat
left it out ("unchanged": then it is assumed to still own everything it had to revoke).
"""
from __future__ import annotations

import dataclasses
import uuid
from typing import Callable, Iterable

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.group.modern.consumer.consumer_group_member import ConsumerGroupMember
from kafka_emu.coordinator.group.modern.member_state import MemberState
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment

OwnedPartitions = Iterable[tuple[uuid.UUID, Iterable[int]]]   # (topic id, partitions) as the member reports them


class CurrentAssignmentBuilder:
    def __init__(self, member: ConsumerGroupMember) -> None:
        self.member = member
        self.target_epoch = 0
        self.target: Assignment = EMPTY_ASSIGNMENT
        self.current_partition_epoch: Callable[[uuid.UUID, int], int] = lambda topic_id, partition: -1
        self.owned: list[tuple[uuid.UUID, list[int]]] | None = None

    def with_target_assignment(self, epoch: int, target: Assignment) -> "CurrentAssignmentBuilder":
        self.target_epoch = epoch
        self.target = target
        return self

    def with_current_partition_epoch(self, fn: Callable[[uuid.UUID, int], int]) -> "CurrentAssignmentBuilder":
        self.current_partition_epoch = fn
        return self

    def with_owned_topic_partitions(self, owned: OwnedPartitions | None) -> "CurrentAssignmentBuilder":
        self.owned = None if owned is None else [(t, list(ps)) for t, ps in owned]
        return self

    def build(self) -> ConsumerGroupMember:
        member = self.member
        state = member.state
        if state is MemberState.STABLE:
            if member.member_epoch != self.target_epoch:
                return self._compute_next_assignment(member.member_epoch, member.assigned_partitions)
            return member
        if state is MemberState.UNREVOKED_PARTITIONS:
            if self._owns_revoked_partitions(member.partitions_pending_revocation):
                return member
            return self._compute_next_assignment(member.member_epoch + 1, member.assigned_partitions)
        if state is MemberState.UNRELEASED_PARTITIONS:
            return self._compute_next_assignment(member.member_epoch, member.assigned_partitions)
        # UNKNOWN
        if self.owned is None or self.owned:
            raise KafkaError(Errors.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                                                         "The member must abandon all its partitions and rejoin.")
        return self._compute_next_assignment(self.target_epoch, member.assigned_partitions)

    def _owns_revoked_partitions(self, pending: Assignment) -> bool:
        if self.owned is None:
            return True
        for topic_id, partitions in self.owned:
            revoking = pending.get(topic_id)
            if revoking and any(p in revoking for p in partitions):
                return True
        return False

    def _compute_next_assignment(self, member_epoch: int, current: Assignment) -> ConsumerGroupMember:
        has_unreleased = False
        assigned: dict[uuid.UUID, frozenset[int]] = {}
        revoking: dict[uuid.UUID, frozenset[int]] = {}
        to_assign: dict[uuid.UUID, frozenset[int]] = {}
        epoch_of = self.current_partition_epoch
        for topic_id in dict.fromkeys([*self.target, *current]):
            target = self.target.get(topic_id, frozenset())
            mine = current.get(topic_id, frozenset())
            kept = mine & target
            gone = mine - kept
            new = target - kept
            free = frozenset(p for p in new if epoch_of(topic_id, p) == -1)
            if len(free) != len(new):
                has_unreleased = True
            if kept:
                assigned[topic_id] = kept
            if gone:
                revoking[topic_id] = gone
            if free:
                to_assign[topic_id] = free
        member = self.member
        if revoking and self._owns_revoked_partitions(revoking):
            return dataclasses.replace(member.with_epoch(member_epoch), state=MemberState.UNREVOKED_PARTITIONS,
                                       assigned_partitions=assigned, partitions_pending_revocation=revoking)
        for topic_id, partitions in to_assign.items():
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
        state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
        return dataclasses.replace(member.with_epoch(self.target_epoch), state=state, assigned_partitions=assigned,
                                   partitions_pending_revocation=EMPTY_ASSIGNMENT)
