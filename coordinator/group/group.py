"""Group: what every group type provides to the coordinator and to offset management (Kafka's
``org.apache.kafka.coordinator.group.Group`` interface).

The group types are ``classic`` (``classic.group_metadata.GroupMetadata``, JoinGroup/SyncGroup),
``consumer`` (KIP-848) and ``share`` (KIP-932); each derives from this class and so carries its
offsets (``GroupOffsets``). The coordinator reaches a group's type-specific handling through
``group_type``; offset commits, fetches, expiration and deletion use only the methods here.

Every method is called with the group's ``lock`` held, except where a method says otherwise.
"""
from __future__ import annotations

import enum

from kafka_emu.coordinator.group.group_offsets import GroupOffsets, IllegalStateError
from kafka_emu.coordinator.group.results import GroupOverview, GroupSummary
from kafka_emu.coordinator.group_lock import GroupLock

__all__ = ["Group", "GroupType", "IllegalStateError"]


class GroupType(enum.Enum):
    """Kafka's ``Group.GroupType``: the names ListGroups' ``GroupType`` and its type filter use."""
    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"

    def __str__(self) -> str:
        return self.value


class Group(GroupOffsets):
    group_type: GroupType

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.lock = GroupLock()

    def is_dead(self) -> bool:
        """Removed from the coordinator (deleted, expired or unloaded): every request gets
        COORDINATOR_NOT_AVAILABLE or a retry through FindCoordinator."""
        raise NotImplementedError

    def is_empty(self) -> bool:
        """No members (Kafka's ``isEmpty``): an empty group without offsets is deleted."""
        raise NotImplementedError

    def mark_dead(self, reason: str) -> None:
        raise NotImplementedError

    def size(self) -> int:
        """The number of members; read without the lock (metrics)."""
        raise NotImplementedError

    def state_name(self) -> str:
        """The state as ListGroups and DescribeGroups name it; read without the lock (metrics)."""
        raise NotImplementedError

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_id: int,
                               is_transactional: bool, api_version: int) -> int | None:
        """Kafka's ``Group.validateOffsetCommit``: the error code an OffsetCommit (or a
        TxnOffsetCommit) of this member and generation/epoch gets, None if it may commit."""
        raise NotImplementedError

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        """Kafka's ``Group.validateOffsetFetch`` (OffsetFetch v9+ names the member): the group's
        error, None if its offsets may be fetched."""
        return None

    def validate_offset_delete(self) -> int | None:
        """Kafka's ``Group.validateOffsetDelete`` (the group is not dead): the error an
        OffsetDelete gets, None if offsets of unsubscribed topics may go."""
        raise NotImplementedError

    def tombstone_keys(self) -> list[bytes]:
        """Keys of the records whose tombstones remove this group from the log once it is dead
        (Kafka's ``createGroupTombstoneRecords``)."""
        raise NotImplementedError

    def overview(self) -> GroupOverview:
        """The group as ListGroups lists it."""
        raise NotImplementedError

    def summary(self) -> GroupSummary:
        """The group as DescribeGroups describes it."""
        raise NotImplementedError
