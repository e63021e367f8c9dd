"""ClassicGroupManager: the classic group type's membership (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup) and its rebalance (the ``classicGroup*`` half of Kafka's ``GroupMetadataManager``;
before Kafka 4, ``kafka.coordinator.group.GroupCoordinator``).

``GroupCoordinator`` validates the coordinator status and routes each request here with the
group id; the handlers resolve the group and do their work under the group lock
(``GroupMetadata.lock``); answers go through the caller's callback. A JoinGroup parks its
callback on the member until the group's DelayedJoin completes; a follower's SyncGroup parks
until the leader's assignment is persisted. Callbacks produced under a group lock run right
after that lock is released, on the releasing thread (see ``group_lock``; Kafka invokes them
under the lock — the emulator does not, so in-process callers may re-enter). Heartbeat,
LeaveGroup and validation-error answers are given outside any lock, as in Kafka.

Locks: group lock → (purgatory shard/timer locks, CoordinatorLog's locks). State transitions
and expired sessions reach the coordinator's metrics through ``GroupMetadata.on_transition`` and
``on_session_expired``. State transitions log inside ``logsetup.group_context`` (``group_id``, ``generation``), see
``GroupMetadata.transition_to``.

Deliberate differences from Kafka:
* callbacks run after the group lock is released (above);
* a member removed while its SyncGroup is parked (LeaveGroup / expiry) gets UNKNOWN_MEMBER_ID on
  that SyncGroup, and a second SyncGroup from a member whose first one is still parked answers
  the first with REBALANCE_IN_PROGRESS, instead of leaving a request unanswered forever (a
  JoinGroup re-sent while parked still replaces the parked callback, as in Kafka);
* ``try_complete_heartbeat``/``try_complete_join``-style checks run with the group lock already
  held by the purgatory (it is the operation lock), so the heartbeat check does not re-enter it.

Kafka quirk kept on purpose: when a static member re-joins with an unknown id in Stable and the
group record cannot be stored, Kafka reverts the member id and timeouts but keeps the new
protocols (it captures them after ``updateMember``); so does the emulator.
"""
from __future__ import annotations

from typing import Callable, TypeVar

import structlog

from kafka_emu.common import errors
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.group.classic.delayed import DelayedHeartbeat, DelayedJoin, DelayedSync, InitialDelayedJoin
from kafka_emu.coordinator.group.classic.group_metadata import (
    UNKNOWN_MEMBER_ID, CompletingRebalance, Dead, Empty, GroupMetadata, IllegalStateError,
    PreparingRebalance, Stable,
)
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupCoordinatorConfig
from kafka_emu.coordinator.group.group_metadata_manager import GroupMetadataManager
from kafka_emu.coordinator.group.records import GroupValue, MemberValue, group_metadata_key, group_metadata_value
from kafka_emu.coordinator.group.results import JoinGroupResult, LeaveGroupResult, LeaveMemberResponse, SyncGroupResult
from kafka_emu.timer import DelayedOperationPurgatory, GroupJoinKey, GroupSyncKey, MemberKey
from kafka_emu.timer.time import Time

_log = structlog.get_logger("coordinator.classic_group_manager")

R = TypeVar("R")

JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]


class ClassicGroupManager:
    """See the module docstring."""

    def __init__(self, config: GroupCoordinatorConfig, log: CoordinatorLog, time: Time,
                 group_manager: GroupMetadataManager, heartbeat_purgatory: DelayedOperationPurgatory,
                 rebalance_purgatory: DelayedOperationPurgatory, on_session_expired: Callable[[], None]) -> None:
        self.config = config
        self.log = log
        self.time = time
        self.group_manager = group_manager
        self.heartbeat_purgatory = heartbeat_purgatory
        self.rebalance_purgatory = rebalance_purgatory
        self._on_session_expired = on_session_expired

    def classic_group(self, group_id: str) -> GroupMetadata | None:
        group = self.group_manager.get_group(group_id)
        return group if isinstance(group, GroupMetadata) else None

    # ================================================================== JoinGroup
    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                   require_known_member_id: bool, client_id: str, client_host: str,
                   rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], callback: JoinCallback,
                   reason: str | None = None, supports_skipping_assignment: bool = False) -> None:
        """JoinGroup to a classic group (Kafka's ``classicGroupJoinToClassicGroup``)."""
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.group_manager.get_or_maybe_create_group(group_id, is_unknown)
        if not isinstance(group, GroupMetadata):
            callback(JoinGroupResult.error_result(member_id, Errors.UNKNOWN_MEMBER_ID))
            return
        join_reason = reason or "not provided"
        with group.lock:
            respond = self._responder(group, callback)
            if not self._accept_joining_member(group, member_id):
                group.remove(member_id)
                self.heartbeat_purgatory.check_and_complete(MemberKey(group_id, member_id))
                respond(JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.GROUP_MAX_SIZE_REACHED))
            elif is_unknown:
                self._do_new_member_join_group(group, group_instance_id, require_known_member_id,
                                               supports_skipping_assignment, client_id, client_host,
                                               rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                               protocols, callback, join_reason)
            else:
                self._do_current_member_join_group(group, member_id, group_instance_id, client_id,
                                                   client_host, rebalance_timeout_ms, session_timeout_ms,
                                                   protocol_type, protocols, callback, join_reason)
            if group.is_(PreparingRebalance):
                self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))

    @staticmethod
    def _responder(group: GroupMetadata, callback: Callable[[R], None]) -> Callable[[R], None]:
        def respond(result: R) -> None:
            group.lock.defer(lambda: callback(result))
        return respond

    @staticmethod
    def _join_rejected(group: GroupMetadata, member_id: str, protocol_type: str,
                       protocols: list[tuple[str, bytes]], respond: JoinCallback) -> bool:
        """The checks both JoinGroup paths (unknown and known member) make first; true = answered."""
        if group.is_(Dead):
            respond(JoinGroupResult.error_result(member_id, Errors.COORDINATOR_NOT_AVAILABLE))
            return True
        if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            respond(JoinGroupResult.error_result(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
            return True
        return False

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        state = group.state
        if state is Empty or state is Dead:
            return True
        if state is PreparingRebalance:
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join())
                    or group.num_members_awaiting_join < self.config.group_max_size)
        return group.has(member_id) or group.size() < self.config.group_max_size

    def _do_new_member_join_group(self, group: GroupMetadata, group_instance_id: str | None,
                                  require_known_member_id: bool, supports_skipping_assignment: bool,
                                  client_id: str, client_host: str, rebalance_timeout_ms: int,
                                  session_timeout_ms: int, protocol_type: str,
                                  protocols: list[tuple[str, bytes]], callback: JoinCallback, reason: str) -> None:
        respond = self._responder(group, callback)
        if self._join_rejected(group, UNKNOWN_MEMBER_ID, protocol_type, protocols, respond):
            return
        new_member_id = group.generate_member_id(client_id, group_instance_id)
        if group_instance_id is not None:
            old_member_id = group.current_static_member_id(group_instance_id)
            if old_member_id is not None:
                _log.info("static_member_rejoin_unknown_id", group_id=group.group_id,
                          instance_id=group_instance_id, state=group.state.value,
                          old_member_id=old_member_id, new_member_id=new_member_id)
                self._update_static_member_and_rebalance(group, old_member_id, new_member_id,
                                                         group_instance_id, protocols, rebalance_timeout_ms,
                                                         session_timeout_ms, callback, reason,
                                                         supports_skipping_assignment)
            else:
                self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id,
                                               group_instance_id, client_id, client_host, protocol_type,
                                               protocols, group, callback, reason)
        elif require_known_member_id:
            group.add_pending_member(new_member_id)
            self._add_pending_member_expiration(group, new_member_id, session_timeout_ms)
            respond(JoinGroupResult.error_result(new_member_id, Errors.MEMBER_ID_REQUIRED))
        else:
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, new_member_id, None,
                                           client_id, client_host, protocol_type, protocols, group,
                                           callback, reason)

    def _do_current_member_join_group(self, group: GroupMetadata, member_id: str,
                                      group_instance_id: str | None, client_id: str, client_host: str,
                                      rebalance_timeout_ms: int, session_timeout_ms: int,
                                      protocol_type: str, protocols: list[tuple[str, bytes]],
                                      callback: JoinCallback, reason: str) -> None:
        respond = self._responder(group, callback)
        if self._join_rejected(group, member_id, protocol_type, protocols, respond):
            return
        if group.is_pending_member(member_id):
            if group_instance_id is not None:
                raise IllegalStateError(f"Received unexpected JoinGroup with groupInstanceId={group_instance_id} "
                                        f"for pending member with memberId={member_id}")
            self._add_member_and_rebalance(rebalance_timeout_ms, session_timeout_ms, member_id, None,
                                           client_id, client_host, protocol_type, protocols, group,
                                           callback, reason)
            return
        error = group.validate_current_member(member_id, group_instance_id)
        if error is not None:
            respond(JoinGroupResult.error_result(member_id, error))
            return
        member = group.get(member_id)
        state = group.state
        why = f"Member {member_id} joining group during {state}; client reason: {reason}"
        if state is PreparingRebalance:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                              session_timeout_ms, callback, why)
        elif state is CompletingRebalance:
            if member.matches(protocols):
                respond(JoinGroupResult(
                    group.current_member_metadata() if group.is_leader(member_id) else [],
                    member_id, group.generation_id, group.protocol_type, group.protocol_name,
                    group.leader_id or "", False, Errors.NONE))
            else:
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, callback, why)
        elif state is Stable:
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, callback, why)
            else:
                respond(JoinGroupResult([], member_id, group.generation_id, group.protocol_type,
                                        group.protocol_name, group.leader_id or "", False, Errors.NONE))
        else:  # Empty or Dead: unexpected, let the member reset and rejoin
            _log.warning("join_in_unexpected_state", group_id=group.group_id, member_id=member_id,
                         state=state.value)
            respond(JoinGroupResult.error_result(member_id, Errors.UNKNOWN_MEMBER_ID))

    def _update_static_member_and_rebalance(self, group: GroupMetadata, old_member_id: str,
                                            new_member_id: str, group_instance_id: str,
                                            protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                                            session_timeout_ms: int, callback: JoinCallback, reason: str,
                                            supports_skipping_assignment: bool) -> None:
        current_leader = group.leader_id
        group.replace_static_member(group_instance_id, old_member_id, new_member_id)
        member = group.get(new_member_id)
        # The old id's heartbeat expires harmlessly (that id is gone); schedule one for the new id.
        self.complete_and_schedule_next_heartbeat_expiration(group, member)
        old_rebalance_timeout = member.rebalance_timeout_ms
        old_session_timeout = member.session_timeout_ms
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        # As in Kafka, the protocols are captured *after* the update, so a failed store reverts the
        # member id and the timeouts but keeps the new protocols.
        old_protocols = member.supported_protocols
        state = group.state
        if state is Stable:
            if group.protocol_name == group.select_protocol():
                assignment = {m.member_id: m.assignment for m in group.all_member_metadata()}

                def on_stored(error: int) -> None:
                    with group.lock:
                        if error != Errors.NONE:
                            _log.warning("static_member_persist_failed", group_id=group.group_id,
                                         instance_id=group_instance_id, error=errors.name(error))
                            group.update_member(member, old_protocols, old_rebalance_timeout,
                                                old_session_timeout, None)
                            group.replace_static_member(group_instance_id, new_member_id, old_member_id)
                            self.complete_and_schedule_next_heartbeat_expiration(group, member)
                            result = JoinGroupResult([], UNKNOWN_MEMBER_ID, group.generation_id,
                                                     group.protocol_type, group.protocol_name,
                                                     current_leader or "", False, error)
                            group.lock.defer(lambda: callback(result))
                        elif supports_skipping_assignment:
                            is_leader = group.is_leader(new_member_id)
                            group.maybe_invoke_join_callback(member, JoinGroupResult(
                                group.current_member_metadata() if is_leader else [], new_member_id,
                                group.generation_id, group.protocol_type, group.protocol_name,
                                group.leader_id or "", is_leader, Errors.NONE))
                        else:
                            group.maybe_invoke_join_callback(member, JoinGroupResult(
                                [], new_member_id, group.generation_id, group.protocol_type,
                                group.protocol_name, current_leader or "", False, Errors.NONE))

                self.store_group(group, assignment, on_stored)
            else:
                self._maybeprepare_rebalance(
                    group, f"Group's selectedProtocol will change because static member {new_member_id} "
                           f"with instance id {group_instance_id} joined with change of protocol; "
                           f"client reason: {reason}")
        elif state is CompletingRebalance:
            self.prepare_rebalance(group, f"Updating metadata for static member {new_member_id} with "
                                           f"instance id {group_instance_id}; client reason: {reason}")
        elif state is Empty or state is Dead:
            raise IllegalStateError(f"Group {group.group_id} was not supposed to be in the state {state} "
                                    f"when the unknown static member {group_instance_id} rejoins.")
        # PreparingRebalance: the callback stays parked

    def _add_member_and_rebalance(self, rebalance_timeout_ms: int, session_timeout_ms: int, member_id: str,
                                  group_instance_id: str | None, client_id: str, client_host: str,
                                  protocol_type: str, protocols: list[tuple[str, bytes]],
                                  group: GroupMetadata, callback: JoinCallback, reason: str) -> None:
        member = MemberMetadata(member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, protocols, group.group_id)
        member.is_new = True
        if group.is_(PreparingRebalance) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, callback)
        # New members cannot heartbeat while their JoinGroup is parked: time out the join instead.
        self._complete_and_schedule_next_expiration(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybeprepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                             f"{group_instance_id}; client reason: {reason}")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                                     session_timeout_ms: int, callback: JoinCallback, reason: str) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self._maybeprepare_rebalance(group, reason)

    def _maybeprepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        with group.lock:
            if group.can_rebalance():
                self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(CompletingRebalance):
            self._reset_and_propagate_assignment_error(group, Errors.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        if group.is_(Empty):
            delay = self.config.group_initial_rebalance_delay_ms
            op: DelayedJoin = InitialDelayedJoin(self, self.rebalance_purgatory, group, delay, delay,
                                                 max(group.rebalance_timeout_ms() - delay, 0))
        else:
            op = DelayedJoin(self, group, group.rebalance_timeout_ms())
        group.transition_to(PreparingRebalance, reason)
        _log.info("preparing_rebalance", group_id=group.group_id, generation=group.generation_id,
                  partition=self.group_manager.partition_for(group.group_id), reason=reason)
        self.rebalance_purgatory.try_complete_else_watch(op, [GroupJoinKey(group.group_id)])

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.clear_pending_sync_members()
        self.rebalance_purgatory.check_and_complete(GroupSyncKey(group.group_id))

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        # A new member may time out with a parked JoinGroup: answer it before removing it.
        group.maybe_invoke_join_callback(member, JoinGroupResult.error_result(UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID))
        # Emulator addition: never leave a parked SyncGroup unanswered.
        group.maybe_invoke_sync_callback(member, SyncGroupResult(error=Errors.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        state = group.state
        if state is Stable or state is CompletingRebalance:
            self._maybeprepare_rebalance(group, reason)
        elif state is PreparingRebalance:
            self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_member(member_id)
        if group.is_(PreparingRebalance):
            self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))

    def _remove_heartbeat_for_leaving_member(self, group: GroupMetadata, member_id: str) -> None:
        self.heartbeat_purgatory.check_and_complete(MemberKey(group.group_id, member_id))

    def _add_pending_member_expiration(self, group: GroupMetadata, member_id: str, timeout_ms: int) -> None:
        op = DelayedHeartbeat(self, group, member_id, True, timeout_ms)
        self.heartbeat_purgatory.try_complete_else_watch(op, [MemberKey(group.group_id, member_id)])

    # ------------------------------------------------------------------ join completion
    def try_complete_join(self, group: GroupMetadata, force_complete: Callable[[], bool]) -> bool:
        with group.lock:
            if group.has_all_members_joined():
                return force_complete()
            return False

    def on_complete_join(self, group: GroupMetadata) -> None:
        with group.lock:
            not_rejoined = [m for m in group.not_yet_rejoined_members().values() if not m.is_static_member()]
            if not_rejoined:
                _log.info("removing_members_not_rejoined", group_id=group.group_id,
                          members=[m.member_id for m in not_rejoined])
                for m in not_rejoined:
                    group.maybe_invoke_sync_callback(m, SyncGroupResult(error=Errors.UNKNOWN_MEMBER_ID))
                    group.remove(m.member_id)
                    self._remove_heartbeat_for_leaving_member(group, m.member_id)
            if group.is_(Dead):
                _log.info("dead_group_skips_rebalance", group_id=group.group_id)
            elif not group.maybe_elect_new_joined_leader() and group.members:
                _log.error("rebalance_not_completed_no_member_rejoined", group_id=group.group_id,
                           generation=group.generation_id)
                self.rebalance_purgatory.try_complete_else_watch(
                    DelayedJoin(self, group, group.rebalance_timeout_ms()), [GroupJoinKey(group.group_id)])
            else:
                group.init_next_generation()
                if group.is_(Empty):
                    def on_stored(error: int) -> None:
                        if error != Errors.NONE:
                            _log.warning("store_empty_group_failed", group_id=group.group_id,
                                         generation=group.generation_id, error=errors.name(error))
                    self.store_group(group, {}, on_stored)
                else:
                    leader_members = None
                    for member in group.all_member_metadata():
                        if group.is_leader(member.member_id):
                            if leader_members is None:
                                leader_members = group.current_member_metadata()
                            members = leader_members
                        else:
                            members = []
                        group.maybe_invoke_join_callback(member, JoinGroupResult(
                            members, member.member_id, group.generation_id, group.protocol_type,
                            group.protocol_name, group.leader_id or "", False, Errors.NONE))
                        self.complete_and_schedule_next_heartbeat_expiration(group, member)
                        member.is_new = False
                        group.add_pending_sync_member(member.member_id)
                    self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        op = DelayedSync(self, group, group.generation_id, group.rebalance_timeout_ms())
        self.rebalance_purgatory.try_complete_else_watch(op, [GroupSyncKey(group.group_id)])

    def try_complete_pending_sync(self, group: GroupMetadata, generation_id: int,
                                  force_complete: Callable[[], bool]) -> bool:
        with group.lock:
            if generation_id != group.generation_id:
                return force_complete()
            if group.state in (Dead, Empty, PreparingRebalance):
                return force_complete()
            if group.has_received_sync_from_all_members():
                return force_complete()
            return False

    def on_expire_pending_sync(self, group: GroupMetadata, generation_id: int) -> None:
        with group.lock:
            if generation_id != group.generation_id:
                return
            if group.state in (CompletingRebalance, Stable) and not group.has_received_sync_from_all_members():
                pending = list(group.pending_sync_members)
                _log.info("removing_members_without_sync", group_id=group.group_id,
                          generation=generation_id, members=pending)
                for mid in pending:
                    m = group.members.get(mid)
                    if m is not None:
                        group.maybe_invoke_sync_callback(m, SyncGroupResult(error=Errors.UNKNOWN_MEMBER_ID))
                    group.remove(mid)
                    self._remove_heartbeat_for_leaving_member(group, mid)
                self.prepare_rebalance(group, f"Removing {pending} on pending sync request expiration")

    # ================================================================== SyncGroup
    def sync_group(self, group_id: str, generation: int, member_id: str, protocol_type: str | None,
                   protocol_name: str | None, group_instance_id: str | None,
                   group_assignment: dict[str, bytes], callback: SyncCallback) -> None:
        """SyncGroup of a classic group (Kafka's ``classicGroupSyncToClassicGroup``)."""
        group = self.classic_group(group_id)
        if group is None:
            callback(SyncGroupResult(error=Errors.UNKNOWN_MEMBER_ID))
            return
        with group.lock:
            respond = self._responder(group, callback)
            error = self._validate_sync_group(group, generation, member_id, protocol_type, protocol_name,
                                              group_instance_id)
            if error is not None:
                respond(SyncGroupResult(error=error))
                return
            state = group.state
            if state is Empty:
                respond(SyncGroupResult(error=Errors.UNKNOWN_MEMBER_ID))
            elif state is PreparingRebalance:
                respond(SyncGroupResult(error=Errors.REBALANCE_IN_PROGRESS))
            elif state is CompletingRebalance:
                member = group.get(member_id)
                if member.awaiting_sync_callback is not None:  # duplicate: answer the older one
                    group.maybe_invoke_sync_callback(member, SyncGroupResult(error=Errors.REBALANCE_IN_PROGRESS))
                member.awaiting_sync_callback = callback
                self._remove_pending_sync_member(group, member_id)
                if group.is_leader(member_id):
                    _log.info("assignment_received_from_leader", group_id=group.group_id,
                              member_id=member_id, generation=group.generation_id, members=group.size())
                    assignment = dict(group_assignment)
                    for mid in group.members:
                        assignment.setdefault(mid, b"")
                    gen = group.generation_id

                    def on_stored(store_error: int) -> None:
                        with group.lock:
                            if group.is_(CompletingRebalance) and gen == group.generation_id:
                                if store_error != Errors.NONE:
                                    self._reset_and_propagate_assignment_error(group, store_error)
                                    self._maybeprepare_rebalance(
                                        group, f"Error when storing group assignment during SyncGroup "
                                               f"(member: {member_id})")
                                else:
                                    self._set_and_propagate_assignment(group, assignment)
                                    group.transition_to(Stable, f"leader {member_id} assignment persisted")

                    self.store_group(group, assignment, on_stored)
            elif state is Stable:
                self._remove_pending_sync_member(group, member_id)
                member = group.get(member_id)
                respond(SyncGroupResult(group.protocol_type, group.protocol_name, member.assignment, Errors.NONE))
                self.complete_and_schedule_next_heartbeat_expiration(group, member)
            else:
                raise IllegalStateError(f"Reached unexpected state {state} for group {group_id}")

    def _validate_sync_group(self, group: GroupMetadata, generation: int, member_id: str,
                             protocol_type: str | None, protocol_name: str | None,
                             group_instance_id: str | None) -> int | None:
        if group.is_(Dead):
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = group.validate_current_member(member_id, group_instance_id)
        if error is not None:
            return error
        if generation != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        if protocol_type is not None and group.protocol_type != protocol_type:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and group.protocol_name != protocol_name:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove_pending_sync_member(member_id)
        self.rebalance_purgatory.check_and_complete(GroupSyncKey(group.group_id))

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: int) -> None:
        if not group.is_(CompletingRebalance):
            raise IllegalStateError(f"Group {group.group_id} must be in CompletingRebalance state but is in {group.state}.")
        for m in group.all_member_metadata():
            m.assignment = b""
        self._propagate_assignment(group, error)

    def _set_and_propagate_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        if not group.is_(CompletingRebalance):
            raise IllegalStateError(f"Group {group.group_id} must be in CompletingRebalance state but is in {group.state}.")
        for m in group.all_member_metadata():
            m.assignment = assignment.get(m.member_id, b"")
        self._propagate_assignment(group, Errors.NONE)

    def _propagate_assignment(self, group: GroupMetadata, error: int) -> None:
        ptype, pname = (group.protocol_type, group.protocol_name) if error == Errors.NONE else (None, None)
        for m in group.all_member_metadata():
            if group.maybe_invoke_sync_callback(m, SyncGroupResult(ptype, pname, m.assignment, error)):
                # A session that expired while we waited for the leader/store was ignored: re-arm.
                self.complete_and_schedule_next_heartbeat_expiration(group, m)

    # ================================================================== Heartbeat
    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> int:
        """Heartbeat of a classic group member (Kafka's ``classicGroupHeartbeatToClassicGroup``):
        the error code to answer."""
        group = self.classic_group(group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        with group.lock:
            if group.is_(Dead):
                return Errors.COORDINATOR_NOT_AVAILABLE
            error = group.validate_current_member(member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != group.generation_id:
                return Errors.ILLEGAL_GENERATION
            state = group.state
            if state is Empty:
                return Errors.UNKNOWN_MEMBER_ID
            member = group.get(member_id)
            self.complete_and_schedule_next_heartbeat_expiration(group, member)
            return Errors.REBALANCE_IN_PROGRESS if state is PreparingRebalance else Errors.NONE

    def complete_and_schedule_next_heartbeat_expiration(self, group: GroupMetadata, member: MemberMetadata) -> None:
        self._complete_and_schedule_next_expiration(group, member, member.session_timeout_ms)

    def _complete_and_schedule_next_expiration(self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int) -> None:
        key = MemberKey(group.group_id, member.member_id)
        member.heartbeat_satisfied = True
        self.heartbeat_purgatory.check_and_complete(key)
        member.heartbeat_satisfied = False
        self.heartbeat_purgatory.try_complete_else_watch(
            DelayedHeartbeat(self, group, member.member_id, False, timeout_ms), [key])

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force_complete: Callable[[], bool]) -> bool:
        # Called by the purgatory with the operation lock, i.e. the group lock, already held
        # (Kafka re-enters ``group.inLock`` here; the emulator skips the redundant re-entry).
        if group.state is Dead:
            return force_complete()
        if is_pending:
            return force_complete() if member_id in group.members else False
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return force_complete()
        return False

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        with group.lock:
            if group.is_(Dead):
                _log.info("heartbeat_expired_dead_group", group_id=group.group_id, member_id=member_id)
            elif is_pending:
                _log.info("pending_member_expired", group_id=group.group_id, member_id=member_id)
                self._remove_pending_member_and_update_group(group, member_id)
            elif group.has(member_id):
                member = group.get(member_id)
                if not member.has_satisfied_heartbeat():
                    _log.info("member_session_expired", group_id=group.group_id, member_id=member_id,
                              generation=group.generation_id)
                    self._on_session_expired()
                    self._remove_member_and_update_group(
                        group, member, f"removing member {member_id} on heartbeat expiration")

    # ================================================================== LeaveGroup
    def leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]],
                    callback: Callable[[LeaveGroupResult], None]) -> None:
        """LeaveGroup of classic group members (Kafka's ``classicGroupLeaveToClassicGroup``);
        ``members`` = [(member_id, group_instance_id, reason)]."""
        group = self.classic_group(group_id)
        if group is None:
            callback(LeaveGroupResult(Errors.NONE, [LeaveMemberResponse(mid, iid, Errors.UNKNOWN_MEMBER_ID)
                                                    for mid, iid, _ in members]))
            return
        with group.lock:
            respond = self._responder(group, callback)
            if group.is_(Dead):
                respond(LeaveGroupResult(Errors.COORDINATOR_NOT_AVAILABLE, []))
                return
            responses = []
            for member_id, instance_id, reason in members:
                if member_id == UNKNOWN_MEMBER_ID:
                    current = group.current_static_member_id(instance_id)
                    if current is not None:
                        self._remove_current_member_from_group(group, current, reason)
                        err = Errors.NONE
                    else:
                        err = Errors.UNKNOWN_MEMBER_ID
                elif group.is_pending_member(member_id):
                    self._remove_pending_member_and_update_group(group, member_id)
                    self.heartbeat_purgatory.check_and_complete(MemberKey(group.group_id, member_id))
                    err = Errors.NONE
                else:
                    err = group.validate_current_member(member_id, instance_id)
                    if err is None:
                        self._remove_current_member_from_group(group, member_id, reason)
                        err = Errors.NONE
                responses.append(LeaveMemberResponse(member_id, instance_id, err))
            respond(LeaveGroupResult(Errors.NONE, responses))

    def _remove_current_member_from_group(self, group: GroupMetadata, member_id: str, reason: str | None) -> None:
        member = group.get(member_id)
        self._remove_member_and_update_group(
            group, member, f"Removing member {member_id} on LeaveGroup; client reason: {reason or 'not provided'}")
        self._remove_heartbeat_for_leaving_member(group, member_id)
        _log.info("member_left_group", group_id=group.group_id, member_id=member_id, reason=reason)

    # ================================================================== persistence
    def group_record(self, group: GroupMetadata, assignment: dict[str, bytes]) -> tuple[bytes, bytes]:
        """The group's ``GroupMetadataValue`` record with the members' ``assignment``."""
        protocol = group.protocol_name
        members = []
        for mid, m in group.members.items():
            members.append(MemberValue(
                mid, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.session_timeout_ms, m.metadata(protocol) if protocol is not None else b"",
                assignment.get(mid, b"")))
        value = GroupValue(group.protocol_type or "", group.generation_id, protocol, group.leader_id,
                           group.current_state_timestamp if group.current_state_timestamp is not None
                           else self.time.milliseconds(), members)
        return group_metadata_key(group.group_id), group_metadata_value(value)

    def store_group(self, group: GroupMetadata, assignment: dict[str, bytes],
                    callback: Callable[[int], None]) -> None:
        """Persist the group record (caller holds the group lock); ``callback(mapped_error)``
        runs once the append is replicated or failed."""
        if not self.group_manager.has_local_replica(group.group_id):
            callback(Errors.NOT_COORDINATOR)
            return
        records = [self.group_record(group, assignment)]

        def on_append(error: int) -> None:
            if error != Errors.NONE:
                _log.debug("store_group_failed", group_id=group.group_id,
                           generation=group.generation_id, error=errors.name(error))
            callback(errors.map_store_group_error(error))

        self.log.append_records(self.group_manager.partition_for(group.group_id), records,
                                self.config.offsets_commit_timeout_ms, group.lock, on_append)

    def complete_all_callbacks(self, group: GroupMetadata, error: int) -> None:
        """Answer every parked JoinGroup and SyncGroup with ``error`` (Kafka's
        ``completeAllJoinFutures``/``completeAllSyncFutures``): the group is being converted."""
        for m in group.all_member_metadata():
            group.maybe_invoke_join_callback(m, JoinGroupResult.error_result(m.member_id, error))
            group.maybe_invoke_sync_callback(m, SyncGroupResult(error=error))
            self._remove_heartbeat_for_leaving_member(group, m.member_id)

    # ================================================================== load / unload
    def on_group_loaded(self, group: GroupMetadata) -> None:
        with group.lock:
            _log.info("group_loaded", group_id=group.group_id, generation=group.generation_id,
                      state=group.state.value, members=group.size())
            assert group.is_(Stable) or group.is_(Empty)
            if group.size() > self.config.group_max_size:
                self.prepare_rebalance(group, f"Freshly-loaded group is over capacity "
                                               f"({self.config.group_max_size}). Rebalancing in order to "
                                               f"give a chance for consumers to commit offsets")
            for m in group.all_member_metadata():
                self.complete_and_schedule_next_heartbeat_expiration(group, m)

    def on_group_unloaded(self, group: GroupMetadata) -> None:
        with group.lock:
            _log.info("group_unloaded", group_id=group.group_id, generation=group.generation_id)
            previous = group.state
            group.transition_to(Dead, "partition unloaded")
            if previous is PreparingRebalance:
                for m in group.all_member_metadata():
                    group.maybe_invoke_join_callback(m, JoinGroupResult.error_result(m.member_id, Errors.NOT_COORDINATOR))
                self.rebalance_purgatory.check_and_complete(GroupJoinKey(group.group_id))
            elif previous is Stable or previous is CompletingRebalance:
                for m in group.all_member_metadata():
                    group.maybe_invoke_sync_callback(m, SyncGroupResult(error=Errors.NOT_COORDINATOR))
                    self.heartbeat_purgatory.check_and_complete(MemberKey(group.group_id, m.member_id))
            self._remove_sync_expiration(group)

