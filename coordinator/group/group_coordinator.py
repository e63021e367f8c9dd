"""GroupCoordinator: the classic (JoinGroup/SyncGroup) group coordinator
(Kafka's ``kafka.coordinator.group.GroupCoordinator``).

Every handler validates the coordinator status (``validateGroupStatus``), resolves the group and does its work
under the group lock (``GroupMetadata.lock``); answers go through the caller's callback. A
JoinGroup parks its callback on the member until the group's DelayedJoin completes; a follower's
SyncGroup parks until the leader's assignment is persisted. Callbacks produced under a group
lock run right after that lock is released, on the releasing thread (see ``group_lock``;
Kafka invokes them under the lock — the emulator does not, so in-process callers may re-enter).
Heartbeat, LeaveGroup and validation-error answers are given outside any lock, as in Kafka.

Locks: group lock → (purgatory shard/timer locks, CoordinatorLog's locks). ``_metrics_lock``
only guards the metric counters (``rebalances_started``, ``rebalance_count``,
``rebalance_time_ms_total``, ``rebalance_time_ms_max``, ``heartbeat_expirations``) and is never
held while calling out. State transitions log inside ``logsetup.group_context``
(``group_id``, ``generation``), see ``GroupMetadata.transition_to``.

Deliberate differences from Kafka:
* callbacks run after the group lock is released (above);
* a member removed while its SyncGroup is parked (LeaveGroup / expiry) gets UNKNOWN_MEMBER_ID on
  that SyncGroup, and a second SyncGroup from a member whose first one is still parked answers
  the first with REBALANCE_IN_PROGRESS, instead of leaving a request unanswered forever (a
  JoinGroup re-sent while parked still replaces the parked callback, as in Kafka);
* ``try_complete_heartbeat``/``try_complete_join``-style checks run with the group lock already
  held by the purgatory (it is the operation lock), so the heartbeat check does not re-enter it;
* no KIP-848 groups;
* load replays the whole partition from ``CoordinatorLog.read_records`` in one go;
* tombstones go through the acks=-1 ``CoordinatorLog`` (Kafka appends them with acks=0).

Kafka quirk kept on purpose: when a static member re-joins with an unknown id in Stable and the
group record cannot be stored, Kafka reverts the member id and timeouts but keeps the new
protocols (it captures them after ``updateMember``); so does the emulator.

Handler summary (all arguments positional-or-keyword; error fields are Kafka codes):
* ``handle_join_group(group_id, member_id, group_instance_id, require_known_member_id, client_id,
  client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, callback,
  reason=None, supports_skipping_assignment=False)`` → ``callback(JoinGroupResult)``;
* ``handle_sync_group(group_id, generation, member_id, protocol_type, protocol_name,
  group_instance_id, group_assignment, callback)`` → ``callback(SyncGroupResult)``;
* ``handle_heartbeat(group_id, member_id, group_instance_id, generation_id, callback)`` →
  ``callback(error)``;
* ``handle_leave_group(group_id, [(member_id, group_instance_id, reason)], callback)`` →
  ``callback(LeaveGroupResult)``;
* ``handle_commit_offsets(group_id, member_id, group_instance_id, generation_id,
  {(topic, partition): OffsetAndMetadata}, callback)`` → ``callback({(topic, partition): error})``;
* ``handle_txn_commit_offsets(group_id, transactional_id, producer_id, producer_epoch, member_id,
  group_instance_id, generation_id, {(topic, partition): OffsetAndMetadata}, callback)`` →
  ``callback({(topic, partition): error})``; the offsets count once the transaction's COMMIT
  marker lands (``schedule_handle_txn_completion``);
* ``handle_fetch_offsets(group_id, require_stable, partitions | None)`` →
  ``(error, {(topic, partition): OffsetFetchPartitionData})``;
* ``handle_describe_groups(group_ids)`` → ``[(group_id, error, GroupSummary)]``
  (``handle_describe_group(group_id)`` → ``(error, GroupSummary)``);
* ``handle_list_groups(states=None, types=None)`` → ``(error, [GroupOverview])``;
* ``handle_delete_groups(group_ids)`` → ``{group_id: error}``;
* ``handle_delete_offsets(group_id, partitions)`` → ``(error, {(topic, partition): error})``.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, TypeVar

import structlog

from kafka_emu.common import errors
from kafka_emu.coordinator.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupCoordinatorConfig
from kafka_emu.coordinator.group.classic.delayed import DelayedHeartbeat, DelayedJoin, DelayedSync, InitialDelayedJoin
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import (
    CompletingRebalance, Dead, Empty, GroupMetadata, GroupState, IllegalStateError,
    PreparingRebalance, Stable,
)
from kafka_emu.coordinator.group.group_metadata_manager import (
    GroupMetadataManager,
    InlineScheduler,
    Scheduler,
    TopicPartition,
)
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.results import (
    DEAD_SUMMARY, EMPTY_ERROR_SUMMARY, GroupOverview, GroupSummary, JoinGroupResult,
    LeaveGroupResult, LeaveMemberResponse, OffsetAndMetadata, OffsetFetchPartitionData,
    SyncGroupResult,
)
from kafka_emu.timer import (
    DelayedOperationPurgatory, GroupJoinKey, GroupSyncKey, MemberKey, PurgatorySnapshot, SystemTimer,
    Time, Timer,
)

_log = structlog.get_logger("coordinator.group_coordinator")


@dataclass(frozen=True, slots=True)
class GroupCoordinatorSnapshot:
    """Kafka's GroupMetadataManager gauges and group-coordinator-metrics, plus committed offsets
    (group, topic, partition → offset) for consumer-group lag."""

    groups_by_state: Mapping[str, int]        # Kafka's state names, every state present
    members: int
    committed_offsets: Mapping[tuple[str, str, int], int]
    rebalances_started: int
    rebalances_completed: int                 # CompletingRebalance -> Stable
    rebalance_time_ms_total: int              # PreparingRebalance entered -> Stable, summed
    rebalance_time_ms_max: int
    heartbeat_expirations: int
    purgatories: tuple[PurgatorySnapshot, ...]   # Heartbeat and Rebalance


R = TypeVar("R")

UNKNOWN_MEMBER_ID = ""
JoinCallback = Callable[[JoinGroupResult], None]
SyncCallback = Callable[[SyncGroupResult], None]

# APIs for which only a null group id is invalid (empty string allowed).
_NULL_ONLY_APIS = {"offset_commit", "offset_fetch", "describe_groups", "delete_groups"}


class GroupCoordinator:
    """See the module docstring. Public handlers are listed under "handlers"; the broker calls
    ``startup``/``shutdown``/``on_elected``/``on_resigned``."""

    def __init__(self, broker_id: int, config: GroupCoordinatorConfig, log: CoordinatorLog,
                 time: Time, heartbeat_purgatory: DelayedOperationPurgatory,
                 rebalance_purgatory: DelayedOperationPurgatory,
                 scheduler: Scheduler | InlineScheduler | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.time = time
        self.heartbeat_purgatory = heartbeat_purgatory
        self.rebalance_purgatory = rebalance_purgatory
        self.group_manager = GroupMetadataManager(broker_id, config, log, time, scheduler,
                                                  on_transition=self._on_transition)
        self._active = False
        self._epochs: dict[int, int] = {}
        self._epoch_lock = threading.Lock()
        self._cleanup_stop = threading.Event()
        self._cleanup_thread: threading.Thread | None = None
        # metrics, read by snapshot() (guarded by _metrics_lock for writes)
        self._metrics_lock = threading.Lock()
        self.rebalances_started = 0
        self.rebalance_count = 0            # completed rebalances (CompletingRebalance -> Stable)
        self.rebalance_time_ms_total = 0    # PreparingRebalance entered -> Stable, summed
        self.rebalance_time_ms_max = 0      # the longest such rebalance seen
        self.heartbeat_expirations = 0      # members removed because their session expired

    # ================================================================== construction / lifecycle
    @classmethod
    def create(cls, broker_id: int, config: Mapping[str, Any] | None, log: CoordinatorLog,
               time: Time | None = None, timer: Timer | None = None,
               timer_factory: Callable[[str], Timer] | None = None,
               scheduler: Scheduler | InlineScheduler | None = None) -> "GroupCoordinator":
        """Build a coordinator with its ``Heartbeat`` and ``Rebalance`` purgatories.

        * ``timer``: one shared timer (e.g. a ``MockTimer``) for both purgatories; reapers are
          disabled and the caller drives the clock (``timer.advance_clock``). Loading then runs
          inline unless a ``scheduler`` is given.
        * ``timer_factory(name)``: a timer per purgatory, with reapers enabled.
        * neither: a ``SystemTimer`` per purgatory on ``time``, with reapers.
        """
        time = time or Time.SYSTEM
        cfg = GroupCoordinatorConfig.from_mapping(config)
        if timer is not None:
            hb = DelayedOperationPurgatory("Heartbeat", timer=timer, broker_id=broker_id,
                                           reaper_enabled=False, time=time)
            rb = DelayedOperationPurgatory("Rebalance", timer=timer, broker_id=broker_id,
                                           reaper_enabled=False, time=time)
            if scheduler is None:
                scheduler = InlineScheduler()
        else:
            factory = timer_factory or (lambda name: SystemTimer(name, time=time))
            hb = DelayedOperationPurgatory("Heartbeat", timer=factory("Heartbeat"), broker_id=broker_id, time=time)
            rb = DelayedOperationPurgatory("Rebalance", timer=factory("Rebalance"), broker_id=broker_id, time=time)
        return cls(broker_id, cfg, log, time, hb, rb, scheduler)

    def startup(self, enable_metadata_expiration: bool = True) -> None:
        _log.info("group_coordinator_starting", broker_id=self.broker_id)
        if enable_metadata_expiration and not isinstance(self.group_manager.scheduler, InlineScheduler):
            self._cleanup_thread = threading.Thread(
                target=self._cleanup_loop, name=f"group-metadata-cleanup-{self.broker_id}", daemon=True)
            self._cleanup_thread.start()
        self._active = True

    def shutdown(self) -> None:
        _log.info("group_coordinator_shutting_down", broker_id=self.broker_id)
        self._active = False
        self._cleanup_stop.set()
        self.group_manager.shutdown()
        self.heartbeat_purgatory.shutdown()
        self.rebalance_purgatory.shutdown()
        if self._cleanup_thread is not None:
            self._cleanup_thread.join(timeout=5)

    def is_active(self) -> bool:
        return self._active

    def partition_for(self, group_id: str) -> int:
        """``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`` (FindCoordinator)."""
        return self.group_manager.partition_for(group_id)

    def is_partition_owned(self, partition: int) -> bool:
        return self.group_manager.is_partition_owned(partition)

    def is_partition_loading(self, partition: int) -> bool:
        return self.group_manager.is_partition_loading(partition)

    def on_loading(self, partition: int, epoch: int) -> None:
        """This broker became leader of ``__consumer_offsets-<partition>`` in ``epoch`` but cannot
        read it yet (its HW still trails what the previous leader committed); ``on_elected``
        follows once it can. Meanwhile the partition counts as loading, so its groups' requests
        get COORDINATOR_LOAD_IN_PROGRESS, as from Kafka's coordinator, which schedules the load
        the moment it becomes leader."""
        with self._epoch_lock:
            current = self._epochs.get(partition)
            if current is not None and epoch <= current:
                return
        self.group_manager.mark_loading(partition)

    def on_elected(self, partition: int, epoch: int) -> None:
        """This broker became leader of ``__consumer_offsets-<partition>``: load it."""
        with self._epoch_lock:
            current = self._epochs.get(partition)
            if current is not None and epoch <= current:
                _log.warning("ignored_stale_election", partition=partition, epoch=epoch, current=current)
                return
            self._epochs[partition] = epoch
        _log.info("elected_group_coordinator", broker_id=self.broker_id, partition=partition, epoch=epoch)
        self.group_manager.schedule_load_group_and_offsets(partition, epoch, self._on_group_loaded)

    def on_resigned(self, partition: int, epoch: int | None = None) -> None:
        """This broker lost leadership of ``__consumer_offsets-<partition>``: unload its groups."""
        with self._epoch_lock:
            current = self._epochs.get(partition)
            if epoch is not None and current is not None and current > epoch:
                _log.warning("ignored_stale_resignation", partition=partition, epoch=epoch, current=current)
                return
            if epoch is not None:
                self._epochs[partition] = epoch
        _log.info("resigned_group_coordinator", broker_id=self.broker_id, partition=partition, epoch=epoch)
        self.group_manager.remove_groups_for_partition(partition, epoch, self._on_group_unloaded)

    def on_partitions_deleted(self, partitions: Iterable[TopicPartition]) -> int:
        """Topic partitions were deleted: remove their committed (and pending) offsets from every
        group this coordinator owns, writing the tombstones (Kafka's ``onPartitionsDeleted``), so
        a topic re-created with the same name starts without committed offsets. Returns the
        number of offsets removed."""
        deleted = list(partitions)
        removed = self.group_manager.cleanup_group_metadata(
            self.group_manager.current_groups(), lambda g: g.remove_offsets(deleted))
        if removed:
            _log.info("deleted_partitions_offsets_removed", broker_id=self.broker_id, offsets=removed,
                      partitions=len(deleted))
        return removed

    def schedule_handle_txn_completion(self, producer_id: int, offsets_partitions: Iterable[int],
                                       is_commit: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` landed on these ``__consumer_offsets``
        partitions: materialise (commit) or drop (abort) the producer's pending transactional
        offsets of the groups in them (Kafka's ``scheduleHandleTxnCompletion``), on the group
        manager's scheduler as in Kafka (inline with an inline scheduler). Called by the broker's
        WriteTxnMarkers path after the markers are appended."""
        partitions = set(offsets_partitions)
        self.group_manager.scheduler.schedule(
            f"handle-txn-completion-{producer_id}",
            lambda: self.group_manager.handle_txn_completion(producer_id, partitions, is_commit))

    # ================================================================== metrics hooks
    def _on_transition(self, group: GroupMetadata, previous: GroupState, new: GroupState, reason: str) -> None:
        now = self.time.milliseconds()
        with self._metrics_lock:
            if new is PreparingRebalance:
                self.rebalances_started += 1
                group.rebalance_start_ms = now
            elif new is Stable and previous is CompletingRebalance:
                self.rebalance_count += 1
                if group.rebalance_start_ms is not None:
                    took = now - group.rebalance_start_ms
                    self.rebalance_time_ms_total += took
                    if took > self.rebalance_time_ms_max:
                        self.rebalance_time_ms_max = took
                group.rebalance_start_ms = None

    def snapshot(self) -> GroupCoordinatorSnapshot:
        """One pass over the loaded groups, without their locks: a group in mid-transition is
        counted in either state, and ``offsets`` is copied at once (``dict(...)`` of a dict is one
        call under the interpreter lock)."""
        by_state = {state.value: 0 for state in GroupState}
        members = 0
        committed: dict[tuple[str, str, int], int] = {}
        for group in self.group_manager.current_groups():
            by_state[group.state.value] += 1
            members += len(group.members)
            for (topic, partition), offset in dict(group.offsets).items():
                committed[(group.group_id, topic, partition)] = offset.offset
        return GroupCoordinatorSnapshot(
            groups_by_state=by_state, members=members, committed_offsets=committed,
            rebalances_started=self.rebalances_started, rebalances_completed=self.rebalance_count,
            rebalance_time_ms_total=self.rebalance_time_ms_total,
            rebalance_time_ms_max=self.rebalance_time_ms_max,
            heartbeat_expirations=self.heartbeat_expirations,
            purgatories=(self.heartbeat_purgatory.snapshot(), self.rebalance_purgatory.snapshot()))

    # ================================================================== validation
    def _validate_group_status(self, group_id: str | None, api: str) -> int | None:
        if group_id is None or (group_id == "" and api not in _NULL_ONLY_APIS):
            return Errors.INVALID_GROUP_ID
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE
        manager = self.group_manager
        partition = manager.partition_for(group_id)
        if manager.is_partition_loading(partition):
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        if not manager.is_partition_owned(partition):
            return Errors.NOT_COORDINATOR
        return None

    @staticmethod
    def _validate_current_member(group: GroupMetadata, member_id: str, group_instance_id: str | None) -> int | None:
        if group_instance_id is not None:
            current = group.current_static_member_id(group_instance_id)
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                _log.info("fenced_static_member", group_id=group.group_id, instance_id=group_instance_id,
                          member_id=member_id, current_member_id=current)
                return Errors.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return Errors.UNKNOWN_MEMBER_ID
        return None

    # ================================================================== JoinGroup
    def handle_join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                          require_known_member_id: bool, client_id: str, client_host: str,
                          rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                          protocols: list[tuple[str, bytes]], callback: JoinCallback,
                          reason: str | None = None, supports_skipping_assignment: bool = False) -> None:
        """JoinGroup (``GroupCoordinator.handleJoinGroup``). ``member_id`` "" = unknown. ``require_known_member_id`` = request
        version >= 4 and no instance id. ``callback(JoinGroupResult)`` fires exactly once, possibly
        later (when the join phase completes) and on another thread."""
        error = self._validate_group_status(group_id, "join_group")
        if error is not None:
            callback(JoinGroupResult.error_result(member_id, error))
            return
        if (session_timeout_ms < self.config.group_min_session_timeout_ms
                or session_timeout_ms > self.config.group_max_session_timeout_ms):
            callback(JoinGroupResult.error_result(member_id, Errors.INVALID_SESSION_TIMEOUT))
            return
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.group_manager.get_or_maybe_create_group(group_id, is_unknown)
        if group is None:
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
        error = self._validate_current_member(group, member_id, group_instance_id)
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
        self._complete_and_schedule_next_heartbeat_expiration(group, member)
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
                            self._complete_and_schedule_next_heartbeat_expiration(group, member)
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

                self.group_manager.store_group(group, assignment, on_stored)
            else:
                self._maybe_prepare_rebalance(
                    group, f"Group's selectedProtocol will change because static member {new_member_id} "
                           f"with instance id {group_instance_id} joined with change of protocol; "
                           f"client reason: {reason}")
        elif state is CompletingRebalance:
            self._prepare_rebalance(group, f"Updating metadata for static member {new_member_id} with "
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
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                             f"{group_instance_id}; client reason: {reason}")

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                                     session_timeout_ms: int, callback: JoinCallback, reason: str) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, callback)
        self._maybe_prepare_rebalance(group, reason)

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        with group.lock:
            if group.can_rebalance():
                self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
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
                  partition=self.partition_for(group.group_id), reason=reason)
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
            self._maybe_prepare_rebalance(group, reason)
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
                    self.group_manager.store_group(group, {}, on_stored)
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
                        self._complete_and_schedule_next_heartbeat_expiration(group, member)
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
                self._prepare_rebalance(group, f"Removing {pending} on pending sync request expiration")

    # ================================================================== SyncGroup
    def handle_sync_group(self, group_id: str, generation: int, member_id: str, protocol_type: str | None,
                          protocol_name: str | None, group_instance_id: str | None,
                          group_assignment: dict[str, bytes], callback: SyncCallback) -> None:
        """SyncGroup (``handleSyncGroup``). ``group_assignment`` is the leader's member id -> assignment map
        (empty for followers). ``callback(SyncGroupResult)`` fires exactly once; for a
        follower syncing before the leader it fires once the leader's assignment is persisted."""
        error = self._validate_group_status(group_id, "sync_group")
        if error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            callback(SyncGroupResult(error=Errors.REBALANCE_IN_PROGRESS))
            return
        if error is not None:
            callback(SyncGroupResult(error=error))
            return
        group = self.group_manager.get_group(group_id)
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
                                    self._maybe_prepare_rebalance(
                                        group, f"Error when storing group assignment during SyncGroup "
                                               f"(member: {member_id})")
                                else:
                                    self._set_and_propagate_assignment(group, assignment)
                                    group.transition_to(Stable, f"leader {member_id} assignment persisted")

                    self.group_manager.store_group(group, assignment, on_stored)
            elif state is Stable:
                self._remove_pending_sync_member(group, member_id)
                member = group.get(member_id)
                respond(SyncGroupResult(group.protocol_type, group.protocol_name, member.assignment, Errors.NONE))
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
            else:
                raise IllegalStateError(f"Reached unexpected state {state} for group {group_id}")

    def _validate_sync_group(self, group: GroupMetadata, generation: int, member_id: str,
                             protocol_type: str | None, protocol_name: str | None,
                             group_instance_id: str | None) -> int | None:
        if group.is_(Dead):
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = self._validate_current_member(group, member_id, group_instance_id)
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
                self._complete_and_schedule_next_heartbeat_expiration(group, m)

    # ================================================================== Heartbeat
    def handle_heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                         generation_id: int, callback: Callable[[int], None]) -> None:
        """Heartbeat (``handleHeartbeat``); ``callback(error_code)`` fires once, synchronously, outside the lock."""
        error = self._validate_group_status(group_id, "heartbeat")
        if error is not None:
            callback(Errors.NONE if error == Errors.COORDINATOR_LOAD_IN_PROGRESS else error)
            return
        callback(self._heartbeat(group_id, member_id, group_instance_id, generation_id))

    def _heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> int:
        group = self.group_manager.get_group(group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        with group.lock:
            if group.is_(Dead):
                return Errors.COORDINATOR_NOT_AVAILABLE
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != group.generation_id:
                return Errors.ILLEGAL_GENERATION
            state = group.state
            if state is Empty:
                return Errors.UNKNOWN_MEMBER_ID
            member = group.get(member_id)
            self._complete_and_schedule_next_heartbeat_expiration(group, member)
            return Errors.REBALANCE_IN_PROGRESS if state is PreparingRebalance else Errors.NONE

    def _complete_and_schedule_next_heartbeat_expiration(self, group: GroupMetadata, member: MemberMetadata) -> None:
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
                    with self._metrics_lock:
                        self.heartbeat_expirations += 1
                    self._remove_member_and_update_group(
                        group, member, f"removing member {member_id} on heartbeat expiration")

    # ================================================================== LeaveGroup
    def handle_leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]],
                           callback: Callable[[LeaveGroupResult], None]) -> None:
        """LeaveGroup (``handleLeaveGroup``); ``members`` = [(member_id, group_instance_id, reason)].
        ``callback(LeaveGroupResult)`` fires once, synchronously, after the lock is released."""
        error = self._validate_group_status(group_id, "leave_group")
        if error is not None:
            callback(LeaveGroupResult(error, []))
            return
        group = self.group_manager.get_group(group_id)
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
                    err = self._validate_current_member(group, member_id, instance_id)
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

    # ================================================================== OffsetCommit
    def handle_commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                              generation_id: int, offset_metadata: dict[TopicPartition, OffsetAndMetadata],
                              callback: Callable[[dict[TopicPartition, int]], None]) -> None:
        """OffsetCommit (``handleCommitOffsets``). ``offset_metadata``: (topic, partition) -> OffsetAndMetadata.
        ``callback({(topic, partition): error})`` fires once, after the append is replicated
        (acks=-1) or failed, outside the group lock."""
        error = self._validate_group_status(group_id, "offset_commit")
        if error is not None:
            callback({tp: error for tp in offset_metadata})
            return
        group = self.group_manager.get_group(group_id)
        if group is None:
            if generation_id < 0:
                # Not using Kafka for group management ("simple" consumer / admin): allow it.
                group = self.group_manager.add_group(self.group_manager.new_group(group_id))
            else:
                callback({tp: Errors.ILLEGAL_GENERATION for tp in offset_metadata})
                return
        with group.lock:
            respond = self._responder(group, callback)
            error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
            if error is not None:
                respond({tp: error for tp in offset_metadata})
                return
            state = group.state
            if state is Empty:
                self.group_manager.store_offsets(group, member_id, offset_metadata, callback)
            elif state is Stable or state is PreparingRebalance:
                member = group.get(member_id)
                self._complete_and_schedule_next_heartbeat_expiration(group, member)
                self.group_manager.store_offsets(group, member_id, offset_metadata, callback)
            elif state is CompletingRebalance:
                respond({tp: Errors.REBALANCE_IN_PROGRESS for tp in offset_metadata})
            else:
                raise IllegalStateError(f"Logic error: unexpected group state {state}")

    def handle_txn_commit_offsets(self, group_id: str, transactional_id: str, producer_id: int,
                                  producer_epoch: int, member_id: str, group_instance_id: str | None,
                                  generation_id: int, offset_metadata: dict[TopicPartition, OffsetAndMetadata],
                                  callback: Callable[[dict[TopicPartition, int]], None]) -> None:
        """TxnOffsetCommit (``handleTxnCommitOffsets``): the offsets are written as the
        producer's transactional batch and stay pending until its COMMIT marker lands
        (``schedule_handle_txn_completion``); an ABORT marker drops them. A group not known yet is
        created (Kafka does the same for a transactional commit)."""
        error = self._validate_group_status(group_id, "txn_offset_commit")
        if error is not None:
            callback({tp: error for tp in offset_metadata})
            return
        group = self.group_manager.get_group(group_id)
        if group is None:
            group = self.group_manager.add_group(self.group_manager.new_group(group_id))
        with group.lock:
            respond = self._responder(group, callback)
            error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id,
                                                 is_transactional=True)
            if error is not None:
                respond({tp: error for tp in offset_metadata})
                return
            self.group_manager.store_offsets(group, member_id, offset_metadata, callback,
                                             producer_id=producer_id, producer_epoch=producer_epoch,
                                             transactional_id=transactional_id)

    def _validate_offset_commit(self, group: GroupMetadata, generation_id: int, member_id: str,
                                group_instance_id: str | None, is_transactional: bool = False) -> int | None:
        if group.is_(Dead):
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(Empty):
            return None  # manual assignment / admin tools: member and instance id are ignored
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_current_member(group, member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != group.generation_id:
                return Errors.ILLEGAL_GENERATION
            return None
        if not is_transactional and not group.is_(Empty):
            # only members commit to a non-empty group; not for transactional commits, whose
            # older versions carry no member id and generation
            return Errors.UNKNOWN_MEMBER_ID
        return None

    # ================================================================== OffsetFetch
    def handle_fetch_offsets(self, group_id: str, require_stable: bool = False,
                             partitions: Iterable[TopicPartition] | None = None
                             ) -> tuple[int, dict[TopicPartition, OffsetFetchPartitionData]]:
        """OffsetFetch (``handleFetchOffsets``): (top-level error, {(topic, partition): data}); ``partitions``
        None = every partition with a committed offset. Synchronous."""
        error = self._validate_group_status(group_id, "offset_fetch")
        if error is not None:
            return error, {}
        return Errors.NONE, self.group_manager.get_offsets(group_id, require_stable, partitions)

    # ================================================================== Describe / List / Delete
    def handle_describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self._validate_group_status(group_id, "describe_groups")
        if error is not None:
            return error, EMPTY_ERROR_SUMMARY
        group = self.group_manager.get_group(group_id)
        if group is None:
            return Errors.NONE, DEAD_SUMMARY
        with group.lock:
            return Errors.NONE, group.summary()

    def handle_describe_groups(self, group_ids: Iterable[str]) -> list[tuple[str, int, GroupSummary]]:
        """DescribeGroups: [(group_id, error, summary)] in request order. Synchronous."""
        return [(gid, *self.handle_describe_group(gid)) for gid in group_ids]

    def handle_list_groups(self, states: Iterable[str] | None = None,
                           types: Iterable[str] | None = None) -> tuple[int, list[GroupOverview]]:
        """ListGroups: (error, overviews). Filters are case-insensitive; only type "classic"
        exists here. While any partition loads the error is COORDINATOR_LOAD_IN_PROGRESS but
        the list is still returned."""
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE, []
        error = Errors.COORDINATOR_LOAD_IN_PROGRESS if self.group_manager.is_loading() else Errors.NONE
        state_filter = {s.lower() for s in (states or [])}
        type_filter = {t.lower() for t in (types or [])}
        if type_filter and "classic" not in type_filter:
            return error, []
        out = []
        for g in self.group_manager.current_groups():
            if not state_filter or g.state.value.lower() in state_filter:
                out.append(g.overview())
        return error, out

    def handle_delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """DeleteGroups: {group_id: error}. Empty groups go Dead at once; tombstones are
        appended in the background. Synchronous."""
        result: dict[str, int] = {}
        eligible: list[GroupMetadata] = []
        for gid in group_ids:
            error = self._validate_group_status(gid, "delete_groups")
            if error is not None:
                result[gid] = error
                continue
            group = self.group_manager.get_group(gid)
            if group is None:
                result[gid] = Errors.GROUP_ID_NOT_FOUND if self.group_manager.group_not_exists(gid) else Errors.NOT_COORDINATOR
                continue
            with group.lock:
                if group.is_(Dead):
                    result[gid] = (Errors.GROUP_ID_NOT_FOUND if self.group_manager.group_not_exists(gid)
                                   else Errors.NOT_COORDINATOR)
                elif group.is_(Empty):
                    group.transition_to(Dead, "DeleteGroups")
                    eligible.append(group)
                else:
                    result[gid] = Errors.NON_EMPTY_GROUP
        if eligible:
            removed = self.group_manager.cleanup_group_metadata(eligible, lambda g: g.remove_offsets(list(g.offsets)))
            for g in eligible:
                result[g.group_id] = Errors.NONE
            _log.info("groups_deleted", groups=[g.group_id for g in eligible], offsets_removed=removed)
        return result

    def handle_delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition]
                              ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete (``handleDeleteOffsets``): (group error, {(topic, partition): error}); with a group error
        the partition map is empty. Synchronous; tombstones are appended in the background."""
        partitions = list(partitions)
        error = self._validate_group_status(group_id, "offset_delete")
        if error is not None:
            return error, {}
        group = self.group_manager.get_group(group_id)
        if group is None:
            return (Errors.GROUP_ID_NOT_FOUND if self.group_manager.group_not_exists(group_id)
                    else Errors.NOT_COORDINATOR), {}
        result: dict[TopicPartition, int] = {}
        with group.lock:
            state = group.state
            if state is Dead:
                return (Errors.GROUP_ID_NOT_FOUND if self.group_manager.group_not_exists(group_id)
                        else Errors.NOT_COORDINATOR), {}
            if state is Empty:
                eligible = partitions
            elif group.protocol_type == "consumer":
                subscribed = group.subscribed_topics  # None (unknown) counts as subscribed
                eligible = [tp for tp in partitions if subscribed is not None and tp[0] not in subscribed]
                for tp in partitions:
                    if tp not in eligible:
                        result[tp] = Errors.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                return Errors.NON_EMPTY_GROUP, {}
        if eligible:
            self.group_manager.cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            for tp in eligible:
                result[tp] = Errors.NONE
        return Errors.NONE, result

    # ================================================================== load / unload
    def _on_group_loaded(self, group: GroupMetadata) -> None:
        with group.lock:
            _log.info("group_loaded", group_id=group.group_id, generation=group.generation_id,
                      state=group.state.value, members=group.size())
            assert group.is_(Stable) or group.is_(Empty)
            if group.size() > self.config.group_max_size:
                self._prepare_rebalance(group, f"Freshly-loaded group is over capacity "
                                               f"({self.config.group_max_size}). Rebalancing in order to "
                                               f"give a chance for consumers to commit offsets")
            for m in group.all_member_metadata():
                self._complete_and_schedule_next_heartbeat_expiration(group, m)

    def _on_group_unloaded(self, group: GroupMetadata) -> None:
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

    # ================================================================== offset expiration
    def cleanup_group_metadata(self) -> int:
        """Expire offsets past ``offsets.retention.minutes`` and drop Empty groups without offsets
        (Kafka's periodic ``cleanupGroupMetadata``). Returns the number of offsets removed."""
        now = self.time.milliseconds()
        retention = self.config.offsets_retention_ms
        return self.group_manager.cleanup_group_metadata(
            self.group_manager.current_groups(), lambda g: g.remove_expired_offsets(now, retention))

    def _cleanup_loop(self) -> None:
        interval = self.config.offsets_retention_check_interval_ms / 1000.0
        while not self._cleanup_stop.wait(interval):
            try:
                removed = self.cleanup_group_metadata()
                if removed:
                    _log.info("expired_offsets_removed", count=removed)
            except Exception:
                _log.exception("group_metadata_cleanup_failed")
