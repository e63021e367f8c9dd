"""MemberMetadata: one member of a classic group (Kafka's ``kafka.coordinator.group.MemberMetadata``).

Not thread-safe: every field is guarded by the owning group's lock (``GroupMetadata.lock``).
"""
from __future__ import annotations

from typing import Callable

from kafka_emu.coordinator.group.results import JoinGroupResult, SyncGroupResult


class MemberMetadata:
    __slots__ = ("member_id", "group_id", "group_instance_id", "client_id", "client_host",
                 "rebalance_timeout_ms", "session_timeout_ms", "protocol_type",
                 "supported_protocols", "assignment", "awaiting_join_callback",
                 "awaiting_sync_callback", "is_new", "heartbeat_satisfied")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str,
                 client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                 protocol_type: str, supported_protocols: list[tuple[str, bytes]],
                 group_id: str = "") -> None:
        self.member_id = member_id
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.supported_protocols: list[tuple[str, bytes]] = list(supported_protocols)
        self.assignment: bytes = b""
        self.awaiting_join_callback: Callable[[JoinGroupResult], None] | None = None
        self.awaiting_sync_callback: Callable[[SyncGroupResult], None] | None = None
        self.is_new = False
        self.heartbeat_satisfied = False

    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    def is_awaiting_join(self) -> bool:
        return self.awaiting_join_callback is not None

    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync_callback is not None

    def has_satisfied_heartbeat(self) -> bool:
        if self.is_new:
            return self.heartbeat_satisfied
        if self.is_awaiting_join() or self.is_awaiting_sync():
            return True
        return self.heartbeat_satisfied

    def protocols(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.supported_protocols:
            if name == protocol:
                return meta
        raise ValueError(f"Member does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        if len(protocols) != len(self.supported_protocols):
            return False
        for (n1, m1), (n2, m2) in zip(protocols, self.supported_protocols):
            if n1 != n2 or bytes(m1) != bytes(m2):
                return False
        return True

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError("Member does not support any of the candidate protocols")

    def __repr__(self) -> str:
        return (f"MemberMetadata(member_id={self.member_id!r}, group_instance_id="
                f"{self.group_instance_id!r}, client_id={self.client_id!r}, session_timeout_ms="
                f"{self.session_timeout_ms}, rebalance_timeout_ms={self.rebalance_timeout_ms})")
