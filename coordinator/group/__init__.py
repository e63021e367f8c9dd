"""The group coordinator (Kafka's ``group-coordinator`` module): the ``GroupCoordinator`` every
group API reaches, offset management and the ``__consumer_offsets`` record formats shared by the
group types, and one package per group type (``classic`` today)."""

from kafka_emu.coordinator.group.group_coordinator import GroupCoordinator
from kafka_emu.coordinator.group.classic.group_metadata import GroupMetadata, GroupState, IllegalStateError
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.results import (
    GroupOverview, GroupSummary, JoinGroupResult, JoinGroupResultMember, LeaveGroupResult,
    LeaveMemberResponse, MemberSummary, OffsetAndMetadata, OffsetFetchPartitionData, SyncGroupResult,
)

__all__ = [
    "GroupCoordinator", "GroupMetadata", "GroupOverview", "GroupState",
    "GroupSummary", "IllegalStateError", "JoinGroupResult", "JoinGroupResultMember",
    "LeaveGroupResult", "LeaveMemberResponse", "MemberMetadata", "MemberSummary",
    "OffsetAndMetadata", "OffsetFetchPartitionData", "SyncGroupResult",
]
