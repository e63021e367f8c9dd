"""Result types the coordinator hands to its callers (the wire layer maps them onto kio entities).

All error fields are Kafka error codes (ints, see ``common.errors``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafka_emu.common.errors import Errors


@dataclass(frozen=True, slots=True)
class JoinGroupResultMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    """JoinGroup response. ``members`` is non-empty only for the leader. Error responses carry
    generation -1, no protocol type/name and leader ""."""
    members: list[JoinGroupResultMember]
    member_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str
    skip_assignment: bool
    error: int

    @staticmethod
    def error_result(member_id: str, error: int) -> "JoinGroupResult":
        return JoinGroupResult([], member_id, -1, None, None, "", False, error)


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    protocol_type: str | None = None
    protocol_name: str | None = None
    member_assignment: bytes = b""
    error: int = Errors.NONE


@dataclass(frozen=True, slots=True)
class LeaveMemberResponse:
    member_id: str
    group_instance_id: str | None
    error: int


@dataclass(frozen=True, slots=True)
class LeaveGroupResult:
    top_level_error: int
    member_responses: list[LeaveMemberResponse] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset (what OffsetCommit stores and OffsetFetch returns)."""
    offset: int
    leader_epoch: int | None = None
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class OffsetFetchPartitionData:
    offset: int                  # -1 = INVALID_OFFSET (nothing committed)
    leader_epoch: int | None
    metadata: str
    error: int


INVALID_OFFSET_DATA = OffsetFetchPartitionData(-1, None, "", Errors.NONE)


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary] = field(default_factory=list)


DEAD_SUMMARY = GroupSummary("Dead", "", "", [])
EMPTY_ERROR_SUMMARY = GroupSummary("", "", "", [])


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"
