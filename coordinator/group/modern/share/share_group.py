"""ShareGroup: a KIP-932 share group (Kafka's ``ShareGroup``): a ``ModernGroup`` of
``ShareGroupMember``s whose target assignment comes from the ``simple`` assignor.

States (Kafka's ``ShareGroup.ShareGroupState``): Empty (no members), Stable (members), Dead
(deleted or unloaded). A share group has no committed offsets in ``__consumer_offsets``: its
progress is each share partition's state, kept by the share coordinator in
``__share_group_state``; so OffsetCommit, OffsetFetch and OffsetDelete answer GROUP_ID_NOT_FOUND
("... is not a consumer group.") and DescribeGroups describes it as dead, as Kafka's
classic-describe does for modern groups.

Difference from Kafka on purpose: the membership and target assignment are kept in memory only
(Kafka writes them to ``__consumer_offsets`` as ShareGroup* records, types 10-15): when the
group's coordinator moves or restarts, its members get UNKNOWN_MEMBER_ID on their next
heartbeat and join again with epoch 0, each then getting its partitions back at once (a share
member has nothing to revoke). What a share group has consumed survives: it is the
share partitions' state in ``__share_group_state``.

Not thread-safe: the group lock guards everything; ``state`` and ``size()`` are read without it.
"""
from __future__ import annotations

import enum

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.group import GroupType
from kafka_emu.coordinator.group.group_offsets import ExpirationBase
from kafka_emu.coordinator.group.modern.modern_group import ModernGroup
from kafka_emu.coordinator.group.modern.share.share_group_member import ShareGroupMember
from kafka_emu.coordinator.group.results import DEAD_SUMMARY, GroupOverview, GroupSummary

PROTOCOL_TYPE = "share"


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


class ShareGroup(ModernGroup[ShareGroupMember]):
    group_type = GroupType.SHARE

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.state = ShareGroupState.EMPTY

    # ------------------------------------------------------------------ Group
    def is_dead(self) -> bool:
        return self.state is ShareGroupState.DEAD

    def is_empty(self) -> bool:
        return self.state is ShareGroupState.EMPTY

    def mark_dead(self, reason: str) -> None:
        self.state = ShareGroupState.DEAD

    def state_name(self) -> str:
        return self.state.value

    def overview(self) -> GroupOverview:
        return GroupOverview(self.group_id, PROTOCOL_TYPE, self.state.value, GroupType.SHARE.value)

    def summary(self) -> GroupSummary:
        return DEAD_SUMMARY

    def maybe_update_group_state(self) -> None:
        if self.state is ShareGroupState.DEAD:
            return
        self.state = ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_id: int,
                               is_transactional: bool, api_version: int) -> int | None:
        return Errors.GROUP_ID_NOT_FOUND

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        return Errors.GROUP_ID_NOT_FOUND

    def validate_offset_delete(self) -> int | None:
        return Errors.GROUP_ID_NOT_FOUND

    def offset_expiration_base(self) -> ExpirationBase | None:
        return None

    def tombstone_keys(self) -> list[bytes]:
        return []
