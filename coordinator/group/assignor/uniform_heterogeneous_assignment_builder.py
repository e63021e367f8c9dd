"""UniformHeterogeneousAssignmentBuilder: the ``uniform`` assignor when members subscribe to
different topics (Kafka's ``UniformHeterogeneousAssignmentBuilder``).

1. Each member keeps the partitions it holds of the topics it still subscribes to.
2. Partitions nobody holds go, topic by topic, to the topic's least loaded subscribers (members
   compared by their total number of partitions, then by position).
3. Balancing: topic by topic, partitions move from the topic's most loaded subscribers to its
   least loaded ones until their totals differ by at most one; repeated over the topics (at most
   16 rounds) until a whole round moves nothing.

Topics are visited with the most partitions per subscriber first, then the fewest subscribers,
then by topic id (compared as Java's ``Uuid.compareTo``: signed high then low 64 bits).
A member whose assignment does not change keeps its assignment object.
"""
from __future__ import annotations

import uuid

from kafka_emu.coordinator.group.assignor.partition_assignor import (
    GroupSpec, PartitionAssignorError, SubscribedTopicDescriber,
)
from kafka_emu.coordinator.group.modern.modern_group_member import Assignment

MAX_ITERATION_COUNT = 16


def _signed64(v: int) -> int:
    return v - (1 << 64) if v >= (1 << 63) else v


def java_uuid_key(u: uuid.UUID) -> tuple[int, int]:
    """The order of Java's ``Uuid.compareTo``."""
    return _signed64(u.int >> 64), _signed64(u.int & ((1 << 64) - 1))


class _MemberAssignmentBalancer:
    """Two ranges over the members sorted by load: the least loaded (all with the same count)
    and the most loaded, widened one count at a time as members are picked from them."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted: list[int] = []
        self.least_end = 0            # exclusive
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0           # inclusive
        self.most_end = 0             # exclusive
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        sizes = self.sizes
        self.sorted = sorted(members, key=lambda m: (sizes[m], m))
        n = len(self.sorted)
        self.least_end = 0
        self.least_count = sizes[self.sorted[0]] - 1
        self.next_least = 0
        self.most_start = n
        self.most_end = n
        self.most_count = sizes[self.sorted[-1]] + 1
        self.next_most = n - 1
        return sizes[self.sorted[-1]] - sizes[self.sorted[0]]

    def next_least_loaded(self) -> int:
        sizes, order = self.sizes, self.sorted
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(order) and sizes[order[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = order[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        sizes, order = self.sizes, self.sorted
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[order[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[order[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = order[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        order = self.sorted
        i = self.next_most + 1
        order[i], order[self.most_end - 1] = order[self.most_end - 1], order[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class UniformHeterogeneousAssignmentBuilder:
    def __init__(self, group_spec: GroupSpec, describer: SubscribedTopicDescriber) -> None:
        self.group_spec = group_spec
        self.describer = describer
        self.member_ids = list(group_spec.members)
        self.sizes = [0] * len(self.member_ids)
        self.num_partitions: dict[uuid.UUID, int] = {}
        self.topic_subscribers: dict[uuid.UUID, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in group_spec.members[member_id].subscribed_topic_ids:
                if topic_id not in self.num_partitions:
                    count = describer.num_partitions(topic_id)
                    if count == -1:
                        raise PartitionAssignorError(
                            f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
                    self.num_partitions[topic_id] = count
                self.topic_subscribers.setdefault(topic_id, []).append(index)
        self.owners = {t: [-1] * n for t, n in self.num_partitions.items()}
        self.target: dict[str, Assignment] = {}
        self._copied: set[str] = set()   # members whose assignment this run already copied

    def _topic_order(self, topic_id: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
        subscribers = len(self.topic_subscribers[topic_id])
        return -self.num_partitions[topic_id] / subscribers, subscribers, java_uuid_key(topic_id)

    def build(self) -> dict[str, Assignment]:
        if not self.num_partitions:
            return {}
        self._keep_subscribed_partitions()
        self._assign_remaining_partitions()
        balanceable = [t for t, subscribers in self.topic_subscribers.items() if len(subscribers) >= 2]
        if balanceable:
            self._balance_topics(balanceable)
        return self._finish()

    def _keep_subscribed_partitions(self) -> None:
        for index, member_id in enumerate(self.member_ids):
            spec = self.group_spec.members[member_id]
            old = spec.assignment
            new: dict[uuid.UUID, frozenset[int]] | None = None
            for topic_id, partitions in old.items():
                if topic_id in spec.subscribed_topic_ids:
                    self.sizes[index] += len(partitions)
                    owners = self.owners[topic_id]
                    for p in partitions:
                        owners[p] = index
                else:
                    if new is None:
                        new = dict(old)
                    del new[topic_id]
            self.target[member_id] = old if new is None else new

    def _assign_remaining_partitions(self) -> None:
        balancer = _MemberAssignmentBalancer(self.sizes)
        unassigned = {t: [p for p, owner in enumerate(owners) if owner == -1] for t, owners in self.owners.items()}
        for topic_id in sorted((t for t, ps in unassigned.items() if ps), key=self._topic_order):
            balancer.initialize(self.topic_subscribers[topic_id])
            for p in unassigned[topic_id]:
                self._assign(topic_id, p, balancer.next_least_loaded())

    def _balance_topics(self, topic_ids: list[uuid.UUID]) -> None:
        ordered = sorted(topic_ids, key=self._topic_order)
        last_rebalanced = -1
        balancer = _MemberAssignmentBalancer(self.sizes)
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic_id in enumerate(ordered):
                if index == last_rebalanced:
                    return   # a whole round since the last move: nothing more to gain
                if self._balance_topic(topic_id, balancer) > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def _balance_topic(self, topic_id: uuid.UUID, balancer: _MemberAssignmentBalancer) -> int:
        moved = 0
        if balancer.initialize(self.topic_subscribers[topic_id]) <= 1:
            return moved
        owners = self.owners[topic_id]
        partitions = sorted(range(self.num_partitions[topic_id]), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}   # exclusive
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if most not in end or end[most] - start[most] <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            partition = partitions[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self._assign(topic_id, partition, least)
            moved += 1
        return moved

    def _assign(self, topic_id: uuid.UUID, partition: int, member_index: int) -> None:
        owners = self.owners[topic_id]
        old = owners[partition]
        if old != -1:
            self._mutable(old)[topic_id].discard(partition)
            self.sizes[old] -= 1
        self._mutable(member_index).setdefault(topic_id, set()).add(partition)
        owners[partition] = member_index
        self.sizes[member_index] += 1

    def _mutable(self, member_index: int) -> dict:
        """The member's assignment as sets this run may change (copied on first change)."""
        member_id = self.member_ids[member_index]
        if member_id not in self._copied:
            self._copied.add(member_id)
            self.target[member_id] = {t: set(ps) for t, ps in self.target[member_id].items()}
        return self.target[member_id]  # type: ignore[return-value]

    def _finish(self) -> dict[str, Assignment]:
        """Freeze the assignments this run changed."""
        for member_id in self._copied:
            self.target[member_id] = {t: frozenset(ps) for t, ps in self.target[member_id].items() if ps}
        return self.target
