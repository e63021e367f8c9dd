"""GroupMetadata: one classic consumer group (Kafka's ``kafka.coordinator.group.GroupMetadata``).

Locking: ``lock`` (a reentrant ``GroupLock``) guards every field of the group and of its
members; it is also the operation lock of the group's DelayedJoin/InitialDelayedJoin/DelayedSync/
DelayedHeartbeat and the lock passed to ``CoordinatorLog.append_records``. Methods here assume
the caller holds it (as Kafka's ``@nonthreadsafe`` class does). Join/sync callbacks are handed
to ``lock.defer`` so they run after the lock is released (see ``group_lock``); a callback that
raises is retried once with UNKNOWN_SERVER_ERROR, as in Kafka.

``transition_to`` logs and calls ``on_transition`` inside ``logsetup.group_context``
(``group_id``, ``generation``), so events the coordinator emits from the hook carry them too.

Read without the lock (metrics scrape): ``state`` and ``len(members)`` — single attribute reads.

The group's offsets are those of every group type (``group_offsets.GroupOffsets``); what is
classic here is when they may be committed (``validate_offset_commit``) and when they expire
(``offset_expiration_base``, Kafka's ``ClassicGroup.offsetExpirationCondition``).

Deliberate difference from Kafka: the leader re-elected on removal is the first remaining member
in insertion order (Kafka: first key of a HashMap, i.e. arbitrary).
"""
from __future__ import annotations

import enum
import uuid
from collections import Counter
from typing import Callable, Iterable

import structlog

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.group import Group, GroupType, IllegalStateError
from kafka_emu.coordinator.group.group_offsets import ExpirationBase
from kafka_emu.coordinator.group.records import GroupValue, group_metadata_key, parse_consumer_subscription_topics
from kafka_emu.logsetup import group_context
from kafka_emu.timer.time import Time
from kafka_emu.coordinator.group.results import (
    GroupOverview, GroupSummary, JoinGroupResult, JoinGroupResultMember, MemberSummary, SyncGroupResult,
)

_log = structlog.get_logger("coordinator.group")

CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


Empty = GroupState.EMPTY
PreparingRebalance = GroupState.PREPARING_REBALANCE
CompletingRebalance = GroupState.COMPLETING_REBALANCE
Stable = GroupState.STABLE
Dead = GroupState.DEAD

VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    PreparingRebalance: frozenset({Stable, CompletingRebalance, Empty}),
    CompletingRebalance: frozenset({PreparingRebalance}),
    Stable: frozenset({CompletingRebalance}),
    Empty: frozenset({PreparingRebalance}),
    Dead: frozenset({Stable, PreparingRebalance, CompletingRebalance, Empty, Dead}),
}


def _invoke_join(cb: Callable[[JoinGroupResult], None], result: JoinGroupResult, member_id: str) -> None:
    try:
        cb(result)
    except Exception:
        _log.exception("join_callback_failed", member_id=member_id)
        cb(JoinGroupResult.error_result(member_id, Errors.UNKNOWN_SERVER_ERROR))


def _invoke_sync(cb: Callable[[SyncGroupResult], None], result: SyncGroupResult, member_id: str) -> None:
    try:
        cb(result)
    except Exception:
        _log.exception("sync_callback_failed", member_id=member_id)
        cb(SyncGroupResult(error=Errors.UNKNOWN_SERVER_ERROR))


class GroupMetadata(Group):
    group_type = GroupType.CLASSIC

    def __init__(self, group_id: str, initial_state: GroupState = Empty, time: Time | None = None,
                 on_transition: Callable[["GroupMetadata", GroupState, GroupState, str], None] | None = None) -> None:
        super().__init__(group_id)
        self.state = initial_state
        self._time = time
        self.current_state_timestamp: int | None = time.milliseconds() if time is not None else None
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.num_members_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.pending_sync_members: set[str] = set()
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None
        self.on_transition = on_transition
        self.rebalance_start_ms: int | None = None  # for the rebalance-time metric

    @classmethod
    def from_record(cls, group_id: str, gv: GroupValue, time: Time,
                    on_transition: Callable[["GroupMetadata", GroupState, GroupState, str], None] | None
                    ) -> "GroupMetadata":
        """The group a loaded ``GroupMetadataValue`` describes: Stable with its members and their
        assignments, or Empty (Kafka's ``ClassicGroup.fromRecord``)."""
        group = cls(group_id, Stable if gv.members else Empty, time, on_transition)
        group.generation_id = gv.generation
        group.protocol_type = gv.protocol_type or None
        group.protocol_name = gv.protocol
        if gv.current_state_timestamp is not None:
            group.current_state_timestamp = gv.current_state_timestamp
        for mv in gv.members:
            member = MemberMetadata(mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host,
                                    mv.rebalance_timeout, mv.session_timeout, gv.protocol_type,
                                    [(gv.protocol or "", mv.subscription)], group_id)
            member.assignment = mv.assignment
            group.add(member, None)
        group.leader_id = gv.leader
        group.protocol_type = gv.protocol_type or None
        group.subscribed_topics = group._compute_subscribed_topics()
        return group

    # ------------------------------------------------------------------ basics
    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def has_static_member(self, instance_id: str | None) -> bool:
        return instance_id is not None and instance_id in self.static_members

    def current_static_member_id(self, instance_id: str | None) -> str | None:
        return self.static_members.get(instance_id) if instance_id is not None else None

    def all_member_metadata(self) -> list[MemberMetadata]:
        return list(self.members.values())

    def not_yet_rejoined_members(self) -> dict[str, MemberMetadata]:
        return {mid: m for mid, m in self.members.items() if not m.is_awaiting_join()}

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    # ------------------------------------------------------------------ membership
    def add(self, member: MemberMetadata, callback: Callable[[JoinGroupResult], None] | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise IllegalStateError(
                    f"Static member with groupInstanceId={member.group_instance_id} cannot be added "
                    f"to group {self.group_id} since it is already a member.")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        assert self.protocol_type == member.protocol_type
        assert self.supports_protocols(member.protocol_type, member.protocols())
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._inc_supported_protocols(member)
        member.awaiting_join_callback = callback
        if member.is_awaiting_join():
            self.num_members_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._dec_supported_protocols(member)
            if member.is_awaiting_join():
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def add_pending_member(self, member_id: str) -> bool:
        if member_id in self.members:
            raise IllegalStateError(f"Attempt to add pending member {member_id} which is already "
                                    f"a stable member of the group")
        if member_id in self.pending_members:
            return False
        self.pending_members.add(member_id)
        return True

    def remove_pending_member(self, member_id: str) -> None:
        self.pending_members.discard(member_id)

    def add_pending_sync_member(self, member_id: str) -> bool:
        if member_id not in self.members:
            raise IllegalStateError(f"Attempt to add pending sync member {member_id} which is "
                                    f"not a member of the group")
        if member_id in self.pending_sync_members:
            return False
        self.pending_sync_members.add(member_id)
        return True

    def remove_pending_sync_member(self, member_id: str) -> bool:
        if member_id not in self.members:
            raise IllegalStateError(f"Attempt to remove pending sync member {member_id} which is "
                                    f"not a member of the group")
        if member_id in self.pending_sync_members:
            self.pending_sync_members.discard(member_id)
            return True
        return False

    def has_received_sync_from_all_members(self) -> bool:
        return not self.pending_sync_members

    def clear_pending_sync_members(self) -> None:
        self.pending_sync_members.clear()

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      callback: Callable[[JoinGroupResult], None] | None) -> None:
        self._dec_supported_protocols(member)
        member.supported_protocols = list(protocols)
        self._inc_supported_protocols(member)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join():
            self.num_members_awaiting_join += 1
        elif callback is None and member.is_awaiting_join():
            self.num_members_awaiting_join -= 1
        member.awaiting_join_callback = callback

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> None:
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise ValueError(f"Cannot replace non-existing member id {old_member_id}")
        # Fence a duplicate member at once if it waits for a join or sync answer.
        self.maybe_invoke_join_callback(member, JoinGroupResult.error_result(old_member_id, Errors.FENCED_INSTANCE_ID))
        self.maybe_invoke_sync_callback(member, SyncGroupResult(error=Errors.FENCED_INSTANCE_ID))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[group_instance_id] = new_member_id

    def maybe_invoke_join_callback(self, member: MemberMetadata, result: JoinGroupResult) -> None:
        cb = member.awaiting_join_callback
        if cb is None:
            return
        member.awaiting_join_callback = None
        self.num_members_awaiting_join -= 1
        member_id = member.member_id
        self.lock.defer(lambda: _invoke_join(cb, result, member_id))

    def maybe_invoke_sync_callback(self, member: MemberMetadata, result: SyncGroupResult) -> bool:
        cb = member.awaiting_sync_callback
        if cb is None:
            return False
        member.awaiting_sync_callback = None
        member_id = member.member_id
        self.lock.defer(lambda: _invoke_sync(cb, result, member_id))
        return True

    def _inc_supported_protocols(self, member: MemberMetadata) -> None:
        for name, _ in member.supported_protocols:
            self.supported_protocols[name] += 1

    def _dec_supported_protocols(self, member: MemberMetadata) -> None:
        for name, _ in member.supported_protocols:
            self.supported_protocols[name] -= 1
            if self.supported_protocols[name] <= 0:
                del self.supported_protocols[name]

    # ------------------------------------------------------------------ states
    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[PreparingRebalance]

    def transition_to(self, group_state: GroupState, reason: str = "") -> None:
        previous = self.state
        if previous not in VALID_PREVIOUS_STATES[group_state]:
            raise IllegalStateError(
                f"Group {self.group_id} should be in the {sorted(s.value for s in VALID_PREVIOUS_STATES[group_state])} "
                f"states before moving to {group_state} state. Instead it is in {previous} state")
        self.state = group_state
        if self._time is not None:
            self.current_state_timestamp = self._time.milliseconds()
        with group_context(self.group_id, self.generation_id):
            _log.info("group_state_transition", from_state=previous.value, to_state=group_state.value,
                      reason=reason, members=len(self.members))
            if self.on_transition is not None:
                self.on_transition(self, previous, group_state, reason)

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        if not self.members:
            raise IllegalStateError("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda k: votes[k])

    def supports_protocols(self, member_protocol_type: str, member_protocols: Iterable[str]) -> bool:
        protocols = set(member_protocols)
        if self.is_(Empty):
            return bool(member_protocol_type) and bool(protocols)
        n = len(self.members)
        return (self.protocol_type == member_protocol_type
                and any(self.supported_protocols.get(p, 0) == n for p in protocols))

    def _compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            try:
                t = parse_consumer_subscription_topics(m.metadata(self.protocol_name))
            except ValueError:
                t = None
            if t is None:
                return None
            topics |= t
        return topics

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(CompletingRebalance, "join phase completed")
        else:
            self.protocol_name = None
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(Empty, "join phase completed with no members")
        self.clear_pending_sync_members()

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join():
            return True
        for mid, m in self.members.items():
            if m.is_awaiting_join():
                self.leader_id = mid
                return True
        return False

    def current_member_metadata(self) -> list[JoinGroupResultMember]:
        if self.is_(Dead) or self.is_(PreparingRebalance):
            raise IllegalStateError(f"Cannot obtain member metadata for group in state {self.state}")
        assert self.protocol_name is not None
        return [JoinGroupResultMember(mid, m.group_instance_id, m.metadata(self.protocol_name))
                for mid, m in self.members.items()]

    def summary(self) -> GroupSummary:
        if self.is_(Stable):
            protocol = self.protocol_name or ""
            members = [MemberSummary(mid, m.group_instance_id, m.client_id, m.client_host,
                                     m.metadata(protocol), m.assignment)
                       for mid, m in self.members.items()]
            return GroupSummary(self.state.value, self.protocol_type or "", protocol, members)
        members = [MemberSummary(mid, m.group_instance_id, m.client_id, m.client_host, b"", b"")
                   for mid, m in self.members.items()]
        return GroupSummary(self.state.value, self.protocol_type or "", "", members)

    def overview(self) -> GroupOverview:
        return GroupOverview(self.group_id, self.protocol_type or "", self.state.value)

    # ------------------------------------------------------------------ Group
    def is_dead(self) -> bool:
        return self.state is Dead

    def is_empty(self) -> bool:
        return self.state is Empty

    def mark_dead(self, reason: str) -> None:
        self.transition_to(Dead, reason)

    def state_name(self) -> str:
        return self.state.value

    def tombstone_keys(self) -> list[bytes]:
        """The group record's tombstone, once a generation was written (Kafka writes the group
        record from generation 1 on)."""
        return [group_metadata_key(self.group_id)] if self.generation_id > 0 else []

    def validate_current_member(self, member_id: str, group_instance_id: str | None) -> int | None:
        """The member checks of JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit
        (Kafka's ``validateMember``): FENCED_INSTANCE_ID for a static member's stale id."""
        if group_instance_id is not None:
            current = self.current_static_member_id(group_instance_id)
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                _log.info("fenced_static_member", group_id=self.group_id, instance_id=group_instance_id,
                          member_id=member_id, current_member_id=current)
                return Errors.FENCED_INSTANCE_ID
        if not self.has(member_id):
            return Errors.UNKNOWN_MEMBER_ID
        return None

    def validate_offset_commit(self, member_id: str, group_instance_id: str | None, generation_id: int,
                               is_transactional: bool, api_version: int) -> int | None:
        if self.is_(Dead):
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.is_(Empty):
            return None  # manual assignment / admin tools: member and instance id are ignored
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self.validate_current_member(member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != self.generation_id:
                return Errors.ILLEGAL_GENERATION
        elif not is_transactional and not self.is_(Empty):
            # only members commit to a non-empty group; not for transactional commits, whose
            # older versions carry no member id and generation
            return Errors.UNKNOWN_MEMBER_ID
        if not is_transactional and self.is_(CompletingRebalance):
            return Errors.REBALANCE_IN_PROGRESS
        return None

    def validate_offset_delete(self) -> int | None:
        if not self.is_(Empty) and self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return Errors.NON_EMPTY_GROUP
        return None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Members' subscriptions unknown (not parsed yet): subscribed if they speak the consumer
        protocol (Kafka's ``ClassicGroup.isSubscribedToTopic``)."""
        if self.subscribed_topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in self.subscribed_topics

    def offset_expiration_base(self) -> ExpirationBase | None:
        if self.protocol_type is not None and self.is_(Empty):
            # no member left: the retention runs from when the group became Empty (from the
            # commit for a group record written before current_state_timestamp existed)
            ts = self.current_state_timestamp
            return lambda om: ts if ts is not None else om.commit_timestamp
        if self.protocol_type == CONSUMER_PROTOCOL_TYPE and self.subscribed_topics is not None and self.is_(Stable):
            return lambda om: om.commit_timestamp
        if self.protocol_type is None:  # a "simple" consumer storing offsets only
            return lambda om: om.commit_timestamp
        return None

    def __repr__(self) -> str:
        return (f"GroupMetadata(group_id={self.group_id!r}, generation={self.generation_id}, "
                f"protocol_type={self.protocol_type!r}, state={self.state.value}, "
                f"members={list(self.members)})")
