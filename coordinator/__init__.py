"""The classic group coordinator (JoinGroup/SyncGroup/Heartbeat/LeaveGroup/offsets).

Never imports ``broker``: it reaches ``__consumer_offsets`` only through ``CoordinatorLog``.
"""
from kafka_emu.coordinator.group_coordinator import GroupCoordinator
from kafka_emu.coordinator.group_metadata import GroupMetadata, GroupState, IllegalStateError
from kafka_emu.coordinator.log import CoordinatorLog
from kafka_emu.coordinator.member_metadata import MemberMetadata
from kafka_emu.coordinator.results import (
    GroupOverview, GroupSummary, JoinGroupResult, JoinGroupResultMember, LeaveGroupResult,
    LeaveMemberResponse, MemberSummary, OffsetAndMetadata, OffsetFetchPartitionData, SyncGroupResult,
)

__all__ = [
    "CoordinatorLog", "GroupCoordinator", "GroupMetadata", "GroupOverview", "GroupState",
    "GroupSummary", "IllegalStateError", "JoinGroupResult", "JoinGroupResultMember",
    "LeaveGroupResult", "LeaveMemberResponse", "MemberMetadata", "MemberSummary",
    "OffsetAndMetadata", "OffsetFetchPartitionData", "SyncGroupResult",
]
