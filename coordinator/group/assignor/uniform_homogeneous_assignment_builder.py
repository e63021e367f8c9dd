"""UniformHomogeneousAssignmentBuilder: the ``uniform`` assignor when every member subscribes to
the same topics (Kafka's ``UniformHomogeneousAssignmentBuilder``).

Balance first, then stickiness: with ``P`` partitions over ``M`` members each member's quota is
``P // M``, and ``P % M`` of them get one more. Walking the members in order, a member keeps up to
its quota of the partitions it already holds (the extra partition goes to a member that holds
enough to use it, unless only as many members are left as extra partitions remain); what exceeds
the quota, what belongs to topics no longer subscribed, and partitions nobody holds are then handed
to the members below their quota, in member order. A member whose assignment does not change
keeps its assignment object. O(members + partitions).
"""
from __future__ import annotations

import uuid

from kafka_emu.coordinator.group.assignor.partition_assignor import (
    GroupSpec, PartitionAssignorError, SubscribedTopicDescriber,
)
from kafka_emu.coordinator.group.modern.modern_group_member import Assignment


def build_homogeneous(group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> dict[str, Assignment]:
    members = group_spec.members
    subscribed = next(iter(members.values())).subscribed_topic_ids
    if not subscribed:
        return {}
    unassigned: list[tuple[uuid.UUID, int]] = []
    total = 0
    for topic_id in subscribed:
        count = describer.num_partitions(topic_id)
        if count == -1:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
        owners = group_spec.inverted_member_assignment.get(topic_id, {})
        unassigned.extend((topic_id, p) for p in range(count) if p not in owners)
        total += count
    member_count = len(members)
    minimum_quota, extra_left = divmod(total, member_count)

    # Revoke what is above quota or no longer subscribed (Kafka's maybeRevokePartitions).
    target: dict[str, Assignment] = {}
    unfilled: list[tuple[str, int]] = []
    for index, (member_id, spec) in enumerate(members.items()):
        old = spec.assignment
        new: dict[uuid.UUID, frozenset[int]] | None = None
        quota = minimum_quota
        has_extra = False
        if extra_left > 0:
            quota += 1
            has_extra = True
        for topic_id, partitions in old.items():
            if topic_id in subscribed:
                if len(partitions) <= quota:
                    quota -= len(partitions)
                else:
                    kept = []
                    for p in sorted(partitions):
                        if quota > 0:
                            quota -= 1
                            kept.append(p)
                        else:
                            unassigned.append((topic_id, p))
                    if new is None:
                        new = dict(old)
                    new[topic_id] = frozenset(kept)
                    if not kept:
                        del new[topic_id]
            else:
                if new is None:
                    new = dict(old)
                del new[topic_id]
        if quota > 0 and has_extra and member_count - index > extra_left:
            # give the extra partition up for another member to claim, unless this member is one
            # of the last ones that must take the remaining extra partitions
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((member_id, quota))
        if has_extra:
            extra_left -= 1
        target[member_id] = old if new is None else new

    # Hand out the rest (Kafka's assignRemainingPartitions).
    i = 0
    for member_id, quota in unfilled:
        if i >= len(unassigned):
            break
        grown = {k: set(v) for k, v in target[member_id].items()}
        for topic_id, p in unassigned[i:i + quota]:
            grown.setdefault(topic_id, set()).add(p)
        i += min(quota, len(unassigned) - i)
        target[member_id] = {k: frozenset(v) for k, v in grown.items()}
    if i < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return target
