"""SimpleAssignor: the share groups' server-side assignor (Kafka's ``SimpleAssignor``, KIP-932).

A share group's partitions are not owned exclusively: records are handed out by the
share-partition leader, one acquisition at a time, so a partition may go to several members and
no member revokes anything. The assignor only spreads the subscribed partitions:

1. every subscribed partition goes to one of the members subscribed to its topic, the one with
   the fewest partitions so far (ties: the member that already had it in its current target,
   then the group's member order), so partitions are balanced across members;
2. every member still without a partition (more members than partitions) then shares the
   partition of its topics with the fewest members, so three members of a one-partition topic
   all fetch from partition 0.

Deterministic for a given group spec; a member keeps its current partitions where balance allows
(step 1's tie-break), so a joining member moves few partitions.

Difference from Kafka on purpose: Kafka 4.1's homogeneous and heterogeneous builders spread
members over partitions by hashing and rounding (``SimpleHomogeneousAssignmentBuilder``); the
counts per member and per partition come out the same (balanced to within one), the exact
pairing can differ.
"""
from __future__ import annotations

import uuid

from kafka_emu.coordinator.group.assignor.partition_assignor import GroupSpec, SubscribedTopicDescriber
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment


class SimpleAssignor:
    name = "simple"

    def assign(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> dict[str, Assignment]:
        members = list(group_spec.members)
        topics = sorted({t for spec in group_spec.members.values() for t in spec.subscribed_topic_ids})
        subscribers: dict[uuid.UUID, list[str]] = {
            t: [m for m in members if t in group_spec.members[m].subscribed_topic_ids] for t in topics}
        order = {m: i for i, m in enumerate(members)}
        owned: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
        counts = dict.fromkeys(members, 0)
        sharers: dict[tuple[uuid.UUID, int], int] = {}
        for topic_id in topics:
            for partition in range(max(describer.num_partitions(topic_id), 0)):
                def rank(m: str, topic_id: uuid.UUID = topic_id, partition: int = partition) -> tuple[int, int, int]:
                    had = partition in group_spec.members[m].assignment.get(topic_id, ())
                    return counts[m], 0 if had else 1, order[m]
                chosen = min(subscribers[topic_id], key=rank)
                owned[chosen].setdefault(topic_id, set()).add(partition)
                counts[chosen] += 1
                sharers[(topic_id, partition)] = 1
        for m in members:
            if counts[m] or not group_spec.members[m].subscribed_topic_ids:
                continue
            candidates = [tp for tp in sharers if tp[0] in group_spec.members[m].subscribed_topic_ids]
            if not candidates:
                continue
            tp = min(candidates, key=lambda tp: (sharers[tp], tp))
            owned[m].setdefault(tp[0], set()).add(tp[1])
            counts[m] += 1
            sharers[tp] += 1
        result: dict[str, Assignment] = {}
        for m in members:
            new = {t: frozenset(ps) for t, ps in owned[m].items()}
            current = group_spec.members[m].assignment
            result[m] = current if dict(current) == new else (new or EMPTY_ASSIGNMENT)
        return result
