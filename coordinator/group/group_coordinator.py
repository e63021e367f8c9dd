"""GroupCoordinator: the one entry every group API reaches (Kafka's ``GroupCoordinatorService``
with the ``GroupCoordinatorShard`` of each ``__consumer_offsets`` partition).

Each handler validates the coordinator status first (inactive: COORDINATOR_NOT_AVAILABLE; the
group's partition loading: COORDINATOR_LOAD_IN_PROGRESS, not owned: NOT_COORDINATOR), then hands
the request to the group type that serves it:
* ``GroupMetadataManager``: the groups of every type, the partitions this broker owns, loading;
* ``OffsetMetadataManager``: offset commits, fetches, transactional offsets, for every type;
* ``classic.ClassicGroupManager``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup of classic groups;
* ``modern.consumer.ConsumerGroupManager``: ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848);
* ``modern.share.ShareGroupManager``: ShareGroupHeartbeat and ShareGroupDescribe (KIP-932).

Locks: each group's lock (``Group.lock``) guards the group and its offsets; ``_epoch_lock`` the
partition epochs; ``_metrics_lock`` only the metric counters (``rebalances_started``,
``rebalance_count``, ``rebalance_time_ms_total``, ``rebalance_time_ms_max``,
``heartbeat_expirations``) and is never held while calling out.

Deliberate differences from Kafka (each type's own are in its class):
* load replays the whole partition from ``CoordinatorLog.read_batches`` in one go;
* tombstones go through the acks=-1 ``CoordinatorLog`` (Kafka appends them with acks=0).

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
* ``handle_delete_offsets(group_id, partitions)`` → ``(error, {(topic, partition): error})``;
* ``handle_share_group_heartbeat(ShareGroupHeartbeatRequest, callback)`` →
  ``callback(ShareGroupHeartbeatResult)``; ``handle_share_group_describe(group_ids)`` →
  ``[ShareGroupDescription]``; ``share_group_exists(group_id)`` → error code.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import structlog

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.metadata_image import EmptyMetadataImage, MetadataImage
from kafka_emu.coordinator.group.classic.classic_group_manager import (
    ClassicGroupManager, JoinCallback, SyncCallback,
)
from kafka_emu.coordinator.group.classic.group_metadata import (
    CompletingRebalance, GroupMetadata, GroupState, PreparingRebalance, Stable,
)
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.coordinator.group.coordinator_timer import CoordinatorTimer
from kafka_emu.coordinator.group.group import Group
from kafka_emu.coordinator.group.group_metadata_manager import (
    GroupMetadataManager,
    InlineScheduler,
    Scheduler,
)
from kafka_emu.coordinator.group.group_offsets import TopicPartition
from kafka_emu.coordinator.group.modern.consumer.consumer_group import ConsumerGroup, ConsumerGroupState
from kafka_emu.coordinator.group.modern.consumer.consumer_group_manager import ConsumerGroupManager
from kafka_emu.coordinator.group.modern.share.share_group import ShareGroup, ShareGroupState
from kafka_emu.coordinator.group.modern.share.share_group_manager import ShareGroupManager
from kafka_emu.coordinator.group.offset_metadata_manager import OffsetMetadataManager
from kafka_emu.coordinator.group.results import (
    DEAD_SUMMARY, EMPTY_ERROR_SUMMARY, ConsumerGroupDescription, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResult, GroupOverview, GroupSummary, JoinGroupResult, LeaveGroupResult,
    OffsetAndMetadata, OffsetFetchPartitionData, ShareGroupDescription, ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResult, SyncGroupResult,
)
from kafka_emu.timer import (
    DelayedOperationPurgatory, PurgatorySnapshot, SystemTimer, SystemTimerReaper, Time, Timer,
)

_log = structlog.get_logger("coordinator.group_coordinator")


@dataclass(frozen=True, slots=True)
class GroupCoordinatorSnapshot:
    """Kafka's GroupMetadataManager gauges and group-coordinator-metrics, plus committed offsets
    (group, topic, partition → offset) for consumer-group lag."""

    groups_by_state: Mapping[str, int]        # classic groups by Kafka's state names, every state present
    consumer_groups_by_state: Mapping[str, int]   # consumer groups (KIP-848) likewise
    share_groups_by_state: Mapping[str, int]      # share groups (KIP-932) likewise
    members: int
    committed_offsets: Mapping[tuple[str, str, int], int]
    rebalances_started: int
    rebalances_completed: int                 # CompletingRebalance -> Stable
    rebalance_time_ms_total: int              # PreparingRebalance entered -> Stable, summed
    rebalance_time_ms_max: int
    heartbeat_expirations: int
    consumer_rebalances: int                  # consumer group epoch bumps
    share_rebalances: int                     # share group epoch bumps
    purgatories: tuple[PurgatorySnapshot, ...]   # Heartbeat and Rebalance


OFFSET_COMMIT_LATEST_VERSION = 10
# APIs for which only a null group id is invalid (empty string allowed).
_NULL_ONLY_APIS = {"offset_commit", "offset_fetch", "describe_groups", "delete_groups"}


class GroupCoordinator:
    """See the module docstring. Public handlers are listed under "handlers"; the broker calls
    ``startup``/``shutdown``/``on_elected``/``on_resigned``."""

    def __init__(self, broker_id: int, config: GroupCoordinatorConfig, log: CoordinatorLog,
                 time: Time, heartbeat_purgatory: DelayedOperationPurgatory,
                 rebalance_purgatory: DelayedOperationPurgatory, timer: Timer,
                 scheduler: Scheduler | InlineScheduler | None = None, image: MetadataImage | None = None,
                 group_config: Callable[[str], Mapping[str, int]] | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.time = time
        self.heartbeat_purgatory = heartbeat_purgatory
        self.rebalance_purgatory = rebalance_purgatory
        self.group_manager = GroupMetadataManager(broker_id, config, log, time, scheduler,
                                                  on_transition=self._on_transition)
        self.offset_manager = OffsetMetadataManager(config, log, self.group_manager.partition_for,
                                                    self.group_manager.has_local_replica)
        self.classic = ClassicGroupManager(config, log, time, self.group_manager, heartbeat_purgatory,
                                           rebalance_purgatory, self._on_session_expired)
        self.timer = CoordinatorTimer(timer)
        self.consumer = ConsumerGroupManager(config, log, time, self.group_manager, self.classic, self.timer,
                                             image if image is not None else EmptyMetadataImage(),
                                             group_config or (lambda group_id: {}), self._on_consumer_rebalance,
                                             self._on_session_expired)
        self.share = ShareGroupManager(config, self.group_manager, self.timer,
                                       image if image is not None else EmptyMetadataImage(),
                                       group_config or (lambda group_id: {}), self._on_share_rebalance,
                                       self._on_session_expired)
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
        self.consumer_rebalances = 0        # consumer group epoch bumps (Kafka's consumer-group-rebalance)
        self.share_rebalances = 0           # share group epoch bumps (Kafka's share-group-rebalance)
    # ================================================================== construction / lifecycle
    @classmethod
    def create(cls, broker_id: int, config: Mapping[str, Any] | None, log: CoordinatorLog,
               time: Time | None = None, timer: Timer | None = None,
               timer_factory: Callable[[str], Timer] | None = None,
               scheduler: Scheduler | InlineScheduler | None = None, image: MetadataImage | None = None,
               group_config: Callable[[str], Mapping[str, int]] | None = None) -> "GroupCoordinator":
        """Build a coordinator with its ``Heartbeat`` and ``Rebalance`` purgatories (classic
        groups) and its timer (consumer groups' session and rebalance timeouts).

        * ``timer``: one shared timer (e.g. a ``MockTimer``) for all three; reapers are disabled
          and the caller drives the clock (``timer.advance_clock``). Loading then runs inline
          unless a ``scheduler`` is given.
        * ``timer_factory(name)``: a timer per purgatory, with reapers enabled.
        * neither: a ``SystemTimer`` per purgatory on ``time``, with reapers; and the
          ``group-coordinator`` ``SystemTimer`` with its ``group-coordinator-reaper``.
        * ``image``: the broker's topics (the consumer groups' subscriptions); ``group_config(group_id)``:
          the group's dynamic configs (``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms``).
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
            timer = SystemTimerReaper(f"group-coordinator-reaper-{broker_id}", SystemTimer("group-coordinator", time=time))
        return cls(broker_id, cfg, log, time, hb, rb, timer, scheduler, image, group_config)

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
        self.timer.close()
        if self._cleanup_thread is not None:
            self._cleanup_thread.join(timeout=5)

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
        manager = self.group_manager

        def complete() -> None:
            groups = [g for g in manager.current_groups() if manager.partition_for(g.group_id) in partitions]
            self.offset_manager.handle_txn_completion(groups, producer_id, is_commit)

        manager.scheduler.schedule(f"handle-txn-completion-{producer_id}", complete)

    # ================================================================== metrics hooks
    def _on_transition(self, group: GroupMetadata, previous: GroupState, new: GroupState, reason: str) -> None:
        """A classic group changed state: count rebalances and their duration."""
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

    def _on_consumer_rebalance(self) -> None:
        with self._metrics_lock:
            self.consumer_rebalances += 1

    def _on_share_rebalance(self) -> None:
        with self._metrics_lock:
            self.share_rebalances += 1

    def _on_session_expired(self) -> None:
        with self._metrics_lock:
            self.heartbeat_expirations += 1

    def snapshot(self) -> GroupCoordinatorSnapshot:
        """One pass over the loaded groups, without their locks: a group in mid-transition is
        counted in either state, and ``offsets`` is copied at once (``dict(...)`` of a dict is one
        call under the interpreter lock)."""
        by_state = {state.value: 0 for state in GroupState}
        consumer_by_state = {state.value: 0 for state in ConsumerGroupState}
        share_by_state = {state.value: 0 for state in ShareGroupState}
        members = 0
        committed: dict[tuple[str, str, int], int] = {}
        for group in self.group_manager.current_groups():
            counts = by_state if isinstance(group, GroupMetadata) else \
                share_by_state if isinstance(group, ShareGroup) else consumer_by_state
            counts[group.state_name()] = counts.get(group.state_name(), 0) + 1
            members += group.size()
            for (topic, partition), offset in dict(group.offsets).items():
                committed[(group.group_id, topic, partition)] = offset.offset
        return GroupCoordinatorSnapshot(
            groups_by_state=by_state, consumer_groups_by_state=consumer_by_state,
            share_groups_by_state=share_by_state, share_rebalances=self.share_rebalances, members=members,
            committed_offsets=committed, consumer_rebalances=self.consumer_rebalances,
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
    # ================================================================== classic membership
    def handle_join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                          require_known_member_id: bool, client_id: str, client_host: str,
                          rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                          protocols: list[tuple[str, bytes]], callback: JoinCallback,
                          reason: str | None = None, supports_skipping_assignment: bool = False) -> None:
        """JoinGroup (Kafka's ``GroupCoordinatorService.joinGroup``). ``member_id`` "" = unknown.
        ``require_known_member_id`` = request version >= 4 and no instance id.
        ``callback(JoinGroupResult)`` fires exactly once, possibly later (when the join phase
        completes) and on another thread."""
        error = self._validate_group_status(group_id, "join_group")
        if error is not None:
            callback(JoinGroupResult.error_result(member_id, error))
            return
        if (session_timeout_ms < self.config.group_min_session_timeout_ms
                or session_timeout_ms > self.config.group_max_session_timeout_ms):
            callback(JoinGroupResult.error_result(member_id, Errors.INVALID_SESSION_TIMEOUT))
            return
        group = self.consumer.acquire(group_id)
        if isinstance(group, ConsumerGroup):
            try:
                if not group.is_empty():   # Kafka's classicGroupJoinToConsumerGroup
                    self.consumer.classic_members.join(group, member_id, group_instance_id, require_known_member_id,
                                                       client_id, client_host, rebalance_timeout_ms,
                                                       session_timeout_ms, protocol_type, protocols, callback)
                    return
                self.consumer.classic_members.replace_empty_consumer_group(group)
            finally:
                group.lock.release()
        elif group is not None:
            group.lock.release()
        self.classic.join_group(group_id, member_id, group_instance_id, require_known_member_id, client_id,
                                client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                callback, reason, supports_skipping_assignment)

    def handle_sync_group(self, group_id: str, generation: int, member_id: str, protocol_type: str | None,
                          protocol_name: str | None, group_instance_id: str | None,
                          group_assignment: dict[str, bytes], callback: SyncCallback) -> None:
        """SyncGroup. ``group_assignment`` is the leader's member id -> assignment map (empty
        for followers). ``callback(SyncGroupResult)`` fires exactly once; for a follower syncing
        before the leader it fires once the leader's assignment is persisted."""
        error = self._validate_group_status(group_id, "sync_group")
        if error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            callback(SyncGroupResult(error=Errors.REBALANCE_IN_PROGRESS))
            return
        if error is not None:
            callback(SyncGroupResult(error=error))
            return
        group = self.consumer.acquire(group_id)
        if isinstance(group, ConsumerGroup):
            try:
                result = (SyncGroupResult(error=Errors.UNKNOWN_MEMBER_ID) if group.is_empty() else
                          self.consumer.classic_members.sync(group, generation, member_id, protocol_type,
                                                             protocol_name, group_instance_id))
                group.lock.defer(lambda: callback(result))
            finally:
                group.lock.release()
            return
        if group is not None:
            group.lock.release()
        self.classic.sync_group(group_id, generation, member_id, protocol_type, protocol_name, group_instance_id,
                                group_assignment, callback)

    def handle_heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                         generation_id: int, callback: Callable[[int], None]) -> None:
        """Heartbeat; ``callback(error_code)`` fires once, synchronously, outside the lock."""
        error = self._validate_group_status(group_id, "heartbeat")
        if error is not None:
            callback(Errors.NONE if error == Errors.COORDINATOR_LOAD_IN_PROGRESS else error)
            return
        group = self.consumer.acquire(group_id)
        if isinstance(group, ConsumerGroup):
            try:
                error = self.consumer.classic_members.heartbeat(group, member_id, group_instance_id, generation_id)
            finally:
                group.lock.release()
            callback(error)
            return
        if group is not None:
            group.lock.release()
        callback(self.classic.heartbeat(group_id, member_id, group_instance_id, generation_id))

    def handle_leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]],
                           callback: Callable[[LeaveGroupResult], None]) -> None:
        """LeaveGroup; ``members`` = [(member_id, group_instance_id, reason)].
        ``callback(LeaveGroupResult)`` fires once, synchronously, after the lock is released."""
        error = self._validate_group_status(group_id, "leave_group")
        if error is not None:
            callback(LeaveGroupResult(error, []))
            return
        group = self.consumer.acquire(group_id)
        if isinstance(group, ConsumerGroup):
            try:
                self.consumer.classic_members.leave(group, members, callback)
            finally:
                group.lock.release()
            return
        if group is not None:
            group.lock.release()
        self.classic.leave_group(group_id, members, callback)

    def try_complete_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool,
                               force_complete: Callable[[], bool]) -> bool:
        """A classic member's DelayedHeartbeat completion check (GroupCoordinatorTest's
        ``tryCompleteHeartbeat`` cases reach it here)."""
        return self.classic.try_complete_heartbeat(group, member_id, is_pending, force_complete)

    def on_expire_heartbeat(self, group: GroupMetadata, member_id: str, is_pending: bool) -> None:
        """A classic member's session expired (``onExpireHeartbeat``)."""
        self.classic.on_expire_heartbeat(group, member_id, is_pending)

    # ================================================================== consumer groups (KIP-848)
    def handle_consumer_group_heartbeat(self, request: ConsumerGroupHeartbeatRequest,
                                        callback: Callable[[ConsumerGroupHeartbeatResult], None]) -> None:
        """ConsumerGroupHeartbeat (Kafka's ``GroupCoordinatorService.consumerGroupHeartbeat``): the
        request is checked first (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR), then the coordinator
        status; ``callback`` fires once, possibly later (after the records are replicated) and on
        another thread."""
        if not self._active:
            callback(ConsumerGroupHeartbeatResult(Errors.COORDINATOR_NOT_AVAILABLE))
            return
        try:
            self.consumer.validate_request(request)
        except KafkaError as e:
            callback(ConsumerGroupHeartbeatResult(e.code, e.message or None))
            return
        error = self._validate_group_status(request.group_id, "consumer_group_heartbeat")
        if error is not None:
            callback(ConsumerGroupHeartbeatResult(error))
            return
        self.consumer.heartbeat(request, callback)

    def handle_consumer_group_describe(self, group_ids: Iterable[str]) -> list[ConsumerGroupDescription]:
        """ConsumerGroupDescribe: one description per group id, in request order. Synchronous."""
        out = []
        for group_id in group_ids:
            error = self._validate_group_status(group_id, "consumer_group_describe")
            out.append(ConsumerGroupDescription(group_id, error) if error is not None
                       else self.consumer.describe(group_id))
        return out

    # ================================================================== share groups (KIP-932)
    def handle_share_group_heartbeat(self, request: ShareGroupHeartbeatRequest,
                                     callback: Callable[[ShareGroupHeartbeatResult], None]) -> None:
        """ShareGroupHeartbeat (Kafka's ``GroupCoordinatorService.shareGroupHeartbeat``): the
        request is checked first (INVALID_REQUEST), then the coordinator status; ``callback``
        fires once, on this thread."""
        if not self._active:
            callback(ShareGroupHeartbeatResult(Errors.COORDINATOR_NOT_AVAILABLE))
            return
        try:
            self.share.validate_request(request)
        except KafkaError as e:
            callback(ShareGroupHeartbeatResult(e.code, e.message or None))
            return
        error = self._validate_group_status(request.group_id, "share_group_heartbeat")
        if error is not None:
            callback(ShareGroupHeartbeatResult(error))
            return
        self.share.heartbeat(request, callback)

    def handle_share_group_describe(self, group_ids: Iterable[str]) -> list[ShareGroupDescription]:
        """ShareGroupDescribe: one description per group id, in request order. Synchronous."""
        out = []
        for group_id in group_ids:
            error = self._validate_group_status(group_id, "share_group_describe")
            out.append(ShareGroupDescription(group_id, error) if error is not None else self.share.describe(group_id))
        return out

    def share_group_exists(self, group_id: str) -> int:
        """Whether ``group_id`` is a share group here: NONE, GROUP_ID_NOT_FOUND (none, or of
        another type), or the coordinator status error (the share-offset admin APIs ask first)."""
        error = self._validate_group_status(group_id, "share_group_offsets")
        if error is not None:
            return error
        group = self.group_manager.get_group(group_id)
        return Errors.NONE if isinstance(group, ShareGroup) and not group.is_dead() else Errors.GROUP_ID_NOT_FOUND

    def share_group_is_empty(self, group_id: str) -> bool:
        group = self.group_manager.get_group(group_id)
        return not isinstance(group, ShareGroup) or group.is_empty()

    # ================================================================== OffsetCommit
    def handle_commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                              generation_id: int, offset_metadata: dict[TopicPartition, OffsetAndMetadata],
                              callback: Callable[[dict[TopicPartition, int]], None],
                              api_version: int = OFFSET_COMMIT_LATEST_VERSION) -> None:
        """OffsetCommit (Kafka's ``OffsetMetadataManager.commitOffset``): ``generation_id`` is the
        member epoch for a consumer group (v9+). ``callback({(topic, partition): error})`` fires
        once, after the append is replicated (acks=-1) or failed, outside the group lock."""
        error = self._validate_group_status(group_id, "offset_commit")
        if error is not None:
            callback({tp: error for tp in offset_metadata})
            return
        group = self.group_manager.get_group(group_id)
        if group is None:
            if generation_id < 0:
                # Not using Kafka for group management ("simple" consumer / admin): allow it.
                group = self.group_manager.get_or_maybe_create_group(group_id, True)
            else:
                callback({tp: Errors.ILLEGAL_GENERATION for tp in offset_metadata})
                return
        with group.lock:
            error = group.validate_offset_commit(member_id, group_instance_id, generation_id, False, api_version)
            if error is not None:
                result = {tp: error for tp in offset_metadata}
                group.lock.defer(lambda: callback(result))
                return
            if isinstance(group, GroupMetadata) and group.state in (Stable, PreparingRebalance):
                # the classic protocol's commits keep the member's session alive
                self.classic.complete_and_schedule_next_heartbeat_expiration(group, group.get(member_id))
            self.offset_manager.store_offsets(group, offset_metadata, callback)

    def handle_txn_commit_offsets(self, group_id: str, transactional_id: str, producer_id: int,
                                  producer_epoch: int, member_id: str, group_instance_id: str | None,
                                  generation_id: int, offset_metadata: dict[TopicPartition, OffsetAndMetadata],
                                  callback: Callable[[dict[TopicPartition, int]], None]) -> None:
        """TxnOffsetCommit (``commitTransactionalOffset``): the offsets are written as the
        producer's transactional batch and stay pending until its COMMIT marker lands
        (``schedule_handle_txn_completion``); an ABORT marker drops them. A group not known yet is
        created (Kafka does the same for a transactional commit)."""
        error = self._validate_group_status(group_id, "txn_offset_commit")
        if error is not None:
            callback({tp: error for tp in offset_metadata})
            return
        group = self.group_manager.get_or_maybe_create_group(group_id, True)
        with group.lock:
            error = group.validate_offset_commit(member_id, group_instance_id, generation_id, True,
                                                 OFFSET_COMMIT_LATEST_VERSION)
            if error is not None:
                result = {tp: error for tp in offset_metadata}
                group.lock.defer(lambda: callback(result))
                return
            self.offset_manager.store_offsets(group, offset_metadata, callback,
                                              producer_id=producer_id, producer_epoch=producer_epoch,
                                              transactional_id=transactional_id)

    # ================================================================== OffsetFetch
    def handle_fetch_offsets(self, group_id: str, require_stable: bool = False,
                             partitions: Iterable[TopicPartition] | None = None, member_id: str | None = None,
                             member_epoch: int = -1) -> tuple[int, dict[TopicPartition, OffsetFetchPartitionData]]:
        """OffsetFetch: (group error, {(topic, partition): data}); ``partitions`` None = every
        partition with a committed offset; ``member_id``/``member_epoch`` (v9+) are checked
        against a consumer group's member (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID). Synchronous."""
        error = self._validate_group_status(group_id, "offset_fetch")
        if error is not None:
            return error, {}
        group = self.group_manager.get_group(group_id)
        if group is not None:
            with group.lock:
                error = group.validate_offset_fetch(member_id, member_epoch)
            if error is not None:
                return error, {}
        return Errors.NONE, self.offset_manager.fetch_offsets(group, require_stable, partitions)

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
        """ListGroups: (error, overviews). Filters are case-insensitive. While any partition
        loads the error is COORDINATOR_LOAD_IN_PROGRESS but the list is still returned."""
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE, []
        error = Errors.COORDINATOR_LOAD_IN_PROGRESS if self.group_manager.is_loading() else Errors.NONE
        state_filter = {s.lower() for s in (states or [])}
        type_filter = {t.lower() for t in (types or [])}
        out = []
        for g in self.group_manager.current_groups():
            if ((not state_filter or g.state_name().lower() in state_filter)
                    and (not type_filter or g.group_type.value in type_filter)):
                out.append(g.overview())
        return error, out

    def _group_not_found(self, group_id: str) -> int:
        """A group that is not (or no longer) here: GROUP_ID_NOT_FOUND if this broker owns its
        partition, else NOT_COORDINATOR."""
        return Errors.GROUP_ID_NOT_FOUND if self.group_manager.group_not_exists(group_id) else Errors.NOT_COORDINATOR

    def handle_delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """DeleteGroups: {group_id: error}. Empty groups go Dead at once; tombstones are
        appended in the background. Synchronous."""
        result: dict[str, int] = {}
        eligible: list[Group] = []
        for gid in group_ids:
            error = self._validate_group_status(gid, "delete_groups")
            if error is not None:
                result[gid] = error
                continue
            group = self.group_manager.get_group(gid)
            if group is None:
                result[gid] = self._group_not_found(gid)
                continue
            with group.lock:
                if group.is_dead():
                    result[gid] = self._group_not_found(gid)
                elif group.is_empty():
                    group.mark_dead("DeleteGroups")
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
        """OffsetDelete (Kafka's ``OffsetMetadataManager.deleteOffsets``): (group error,
        {(topic, partition): error}); with a group error the partition map is empty. Offsets of
        topics the group subscribes to stay (GROUP_SUBSCRIBED_TO_TOPIC). Synchronous; tombstones
        are appended in the background."""
        partitions = list(partitions)
        error = self._validate_group_status(group_id, "offset_delete")
        if error is not None:
            return error, {}
        group = self.group_manager.get_group(group_id)
        if group is None:
            return self._group_not_found(group_id), {}
        result: dict[TopicPartition, int] = {}
        with group.lock:
            if group.is_dead():
                return self._group_not_found(group_id), {}
            error = group.validate_offset_delete()
            if error is not None:
                return error, {}
            eligible = [tp for tp in partitions if not group.is_subscribed_to_topic(tp[0])]
            for tp in partitions:
                if tp not in eligible:
                    result[tp] = Errors.GROUP_SUBSCRIBED_TO_TOPIC
        if eligible:
            self.group_manager.cleanup_group_metadata([group], lambda g: g.remove_offsets(eligible))
            for tp in eligible:
                result[tp] = Errors.NONE
        return Errors.NONE, result

    # ================================================================== load / unload
    def _on_group_loaded(self, group: Group) -> None:
        if isinstance(group, GroupMetadata):
            self.classic.on_group_loaded(group)
        elif isinstance(group, ConsumerGroup):
            self.consumer.on_group_loaded(group)

    def _on_group_unloaded(self, group: Group) -> None:
        if isinstance(group, GroupMetadata):
            self.classic.on_group_unloaded(group)
        elif isinstance(group, ConsumerGroup):
            self.consumer.on_group_unloaded(group)
        elif isinstance(group, ShareGroup):
            self.share.on_group_unloaded(group)

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
