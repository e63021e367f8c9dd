"""The classic group coordinator (JoinGroup/SyncGroup/Heartbeat/LeaveGroup/offsets).

Never imports ``broker``: it reaches ``__consumer_offsets`` only through ``CoordinatorLog``.
"""
from coordinator.group_coordinator import GroupCoordinator
from coordinator.group_metadata import GroupMetadata, GroupState, IllegalStateError
from coordinator.log import CoordinatorLog
from coordinator.member_metadata import MemberMetadata
from coordinator.results import (
    GroupOverview, GroupSummary, JoinGroupResult, JoinGroupResultMember, LeaveGroupResult,
    LeaveMemberResponse, MemberSummary, OffsetAndMetadata, OffsetFetchPartitionData, SyncGroupResult,
)

__all__ = [
    "CoordinatorLog", "GroupCoordinator", "GroupMetadata", "GroupOverview", "GroupState",
    "GroupSummary", "IllegalStateError", "JoinGroupResult", "JoinGroupResultMember",
    "LeaveGroupResult", "LeaveMemberResponse", "MemberMetadata", "MemberSummary",
    "OffsetAndMetadata", "OffsetFetchPartitionData", "SyncGroupResult",
]
