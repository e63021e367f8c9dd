"""Keys under which delayed operations are watched.

Kafka 4.0 requires keys to implement ``DelayedOperationKey`` (a ``keyLabel``); the emulator keeps
the same classes as frozen, hashable value objects. Any hashable object still works as a key
(as in Kafka's Scala purgatory), which tests use freely.
"""
from __future__ import annotations

from dataclasses import dataclass


class DelayedOperationKey:
    __slots__ = ()

    def key_label(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class TopicPartitionOperationKey(DelayedOperationKey):
    """Produce, fetch and delete-records operations watch the partitions they touch."""

    topic: str
    partition: int

    def key_label(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class TopicKey(DelayedOperationKey):
    topic: str

    def key_label(self) -> str:
        return self.topic


@dataclass(frozen=True, slots=True)
class GroupJoinKey(DelayedOperationKey):
    """A group's DelayedJoin / InitialDelayedJoin."""

    group_id: str

    def key_label(self) -> str:
        return f"join-{self.group_id}"


@dataclass(frozen=True, slots=True)
class GroupSyncKey(DelayedOperationKey):
    """A group's DelayedSync."""

    group_id: str

    def key_label(self) -> str:
        return f"sync-{self.group_id}"


@dataclass(frozen=True, slots=True)
class MemberKey(DelayedOperationKey):
    """A member's DelayedHeartbeat."""

    group_id: str
    member_id: str

    def key_label(self) -> str:
        return f"{self.group_id}-{self.member_id}"
