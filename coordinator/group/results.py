"""Result types the coordinator hands to its callers (the wire layer maps them onto kio entities).

All error fields are Kafka error codes (ints, see ``common.errors``).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Mapping

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


# ------------------------------------------------------------------------ consumer groups (KIP-848)
TopicIdPartitions = Mapping[uuid.UUID, frozenset[int]]   # topic id -> partitions


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    """A ConsumerGroupHeartbeat's fields (None: "unchanged since the last heartbeat")."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] | None = None   # (topic id, partitions)
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResult:
    error: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicIdPartitions | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: list[tuple[uuid.UUID, str, tuple[int, ...]]]          # (topic id, name, partitions)
    target_assignment: list[tuple[uuid.UUID, str, tuple[int, ...]]]
    member_type: int        # 1 classic, 0 consumer protocol (ConsumerGroupDescribe v1)


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    error: int
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[ConsumerGroupMemberDescription] = field(default_factory=list)


# ------------------------------------------------------------------------ share groups (KIP-932)
@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeatRequest:
    """A ShareGroupHeartbeat's fields (None: "unchanged since the last heartbeat")."""
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


# ShareGroupHeartbeatResponse carries ConsumerGroupHeartbeatResponse's fields: one result type
ShareGroupHeartbeatResult = ConsumerGroupHeartbeatResult


@dataclass(frozen=True, slots=True)
class ShareGroupMemberDescription:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: list[tuple[uuid.UUID, str, tuple[int, ...]]]          # (topic id, name, partitions)


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    group_id: str
    error: int
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[ShareGroupMemberDescription] = field(default_factory=list)
