"""Keys under which delayed operations are watched.

Kafka 4.0 types every purgatory key as a ``DelayedOperationKey`` (whose ``keyLabel`` names the
watcher list); the emulator keeps the same classes as frozen, hashable value objects that are
their own label. Any hashable object still works as a key (as in Kafka's Scala purgatory),
which tests use freely.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class DelayedOperationKey:
    """Base of the product's purgatory keys: frozen dataclasses, compared and hashed by value."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TopicPartitionOperationKey(DelayedOperationKey):
    """Produce, fetch and delete-records operations watch the partitions they touch.

    The hash is computed once: every append and every follower fetch hashes its partition's
    key several times (the purgatory shard, then the shard's watcher map)."""

    topic: str
    partition: int
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.topic, self.partition)))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, slots=True)
class GroupJoinKey(DelayedOperationKey):
    """A group's DelayedJoin / InitialDelayedJoin."""

    group_id: str


@dataclass(frozen=True, slots=True)
class GroupSyncKey(DelayedOperationKey):
    """A group's DelayedSync."""

    group_id: str


@dataclass(frozen=True, slots=True)
class MemberKey(DelayedOperationKey):
    """A member's DelayedHeartbeat."""

    group_id: str
    member_id: str
