"""ConsumerGroupManager: the consumer group protocol of KIP-848 (the ``consumerGroup*`` half of
Kafka's ``GroupMetadataManager``): ConsumerGroupHeartbeat, ConsumerGroupDescribe, the session and
rebalance timeouts, and the members that speak the classic protocol inside a consumer group
(``ClassicMembers``, ``classic_members.py``).

A heartbeat, in Kafka's order:
1. the member is created or updated from the request's non-null fields; a changed member writes
   its ``ConsumerGroupMemberMetadata`` record; a changed subscription (names, a regular
   expression that resolves, or the subscribed topics' metadata hash) bumps the group epoch
   (``ConsumerGroupMetadata``);
2. a group epoch ahead of the target assignment's runs the group's assignor
   (``TargetAssignmentBuilder``), writing the members' changed targets and the new target epoch;
3. the member is reconciled towards its target (``CurrentAssignmentBuilder``), writing its
   ``ConsumerGroupCurrentMemberAssignment`` and arming (or dropping) its rebalance timeout when it
   must revoke partitions; its session timeout is re-armed;
4. the records are replayed onto the group (``ConsumerGroup.replay``, what a load does too) and
   appended to ``__consumer_offsets`` as one batch; the answer (member id and epoch, heartbeat
   interval, the assignment when it changed or the request was full) goes out once the append is
   replicated, or the append's error (Kafka's ``handleOperationException`` mapping).

Timeouts (``CoordinatorTimer`` tasks, Kafka's names): ``session-timeout-<group>-<member>``
(``consumer.session.timeout.ms`` of the group, else ``group.consumer.session.timeout.ms``; a
classic member's own session timeout) fences the member; ``rebalance-timeout-<group>-<member>``
fences a member still at the epoch in which it had to revoke partitions.

Locking: each group's lock guards the group; a heartbeat holds it from lookup to the append
(which uses it as the DelayedProduce lock); callbacks run after it is released
(``GroupLock.defer``). A group replaced by another type (conversions) is marked dead, so a request
that found the old object retries or fails as for a dead group. ``_create_lock`` serialises the
creation of new groups.

Deliberate differences from Kafka:
* the group's state is applied before its records are replicated and is not rolled back if the
  append fails (Kafka reverts to the last committed snapshot); such failures come with a lost
  leadership, which unloads the partition, or a timeout, after which the members' next heartbeats
  see the new state;
* a heartbeat that writes no record is answered at once (Kafka waits for the group's earlier
  writes to be committed);
* regular expressions are Python's (``re.fullmatch``), not RE2/J; they are resolved in the
  heartbeat that brings them and re-resolved on the first heartbeat after any topic is created or
  deleted or grows (Kafka resolves asynchronously, at most every 10 s, and refreshes every 10 min);
* the metadata hash (KIP-1101) is a BLAKE2b-64 of each subscribed topic's id, name and partition
  count, not hash4j's XXH3 over also the partitions' racks: a log written by Kafka loads with
  different hashes, which recomputes each group's target assignment once;
* the assignors are not rack-aware; the members' rack ids are kept and described only;
* topic and group authorization is not checked (the emulator has no authorizer).
"""
from __future__ import annotations

import dataclasses
import re
import threading
import uuid
from typing import TYPE_CHECKING, Callable, Mapping

import structlog

from kafka_emu.common.errors import Errors, KafkaError, map_coordinator_operation_error
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.group.assignor import BUILTIN_ASSIGNORS, PartitionAssignorError
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.coordinator.group.group_config import CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS
from kafka_emu.coordinator.group.coordinator_timer import CoordinatorTimer
from kafka_emu.coordinator.group.group import Group
from kafka_emu.coordinator.group.group_metadata_manager import GroupMetadataManager
from kafka_emu.coordinator.group.modern.consumer.consumer_group import (
    ConsumerGroup, ResolvedRegularExpression,
)
from kafka_emu.coordinator.group.modern.consumer.consumer_group_member import (
    LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroupMember, has_assigned_partitions_changed,
)
from kafka_emu.coordinator.group.modern.consumer.current_assignment_builder import CurrentAssignmentBuilder
from kafka_emu.coordinator.group.modern.member_state import MemberState
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment
from kafka_emu.coordinator.group.modern.subscription import SubscriptionCount, SubscriptionType
from kafka_emu.coordinator.group.modern.target_assignment_builder import TargetAssignmentBuilder
from kafka_emu.coordinator.group.modern.consumer.classic_members import ClassicMembers
from kafka_emu.coordinator.group.modern.consumer.consumer_group_records import (
    OwnedPartitions, Records, assignment_record, compute_metadata_hash, epoch_record, is_subset, join_key,
    member_tombstones, random_member_id, rebalance_timeout_key, session_timeout_key, subscription_record, sync_key,
    target_epoch_record, target_record,
)
from kafka_emu.coordinator.group.records import (
    ConsumerGroupRecord, ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue,
)
from kafka_emu.coordinator.group.results import (
    ConsumerGroupDescription, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResult,
    ConsumerGroupMemberDescription,
)
from kafka_emu.coordinator.metadata_image import MetadataImage
from kafka_emu.timer.time import Time

if TYPE_CHECKING:
    from kafka_emu.coordinator.group.classic.classic_group_manager import ClassicGroupManager

_log = structlog.get_logger("coordinator.consumer_group_manager")

# ConsumerGroupHeartbeat v1+ carries a member id the client generated (KIP-1082)
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
# the per-group overrides (IncrementalAlterConfigs on the GROUP resource, Kafka's GroupConfig)

class ConsumerGroupManager:
    """See the module docstring."""

    def __init__(self, config: GroupCoordinatorConfig, log: CoordinatorLog, time: Time,
                 group_manager: GroupMetadataManager, classic: ClassicGroupManager, timer: CoordinatorTimer,
                 image: MetadataImage, group_config: Callable[[str], Mapping[str, int]],
                 on_rebalance: Callable[[], None], on_session_expired: Callable[[], None] = lambda: None) -> None:
        self.config = config
        self.log = log
        self.time = time
        self.group_manager = group_manager
        self.timer = timer
        self.image = image
        self.group_config = group_config
        self._on_rebalance = on_rebalance
        self._on_session_expired = on_session_expired
        self.assignors = {name: BUILTIN_ASSIGNORS[name] for name in config.consumer_group_assignors}
        self.default_assignor = config.consumer_group_assignors[0]
        self._create_lock = threading.Lock()
        self.classic_members = ClassicMembers(self, classic)

    # ================================================================== configs
    def session_timeout_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id).get(CONSUMER_SESSION_TIMEOUT_MS,
                                                   self.config.consumer_group_session_timeout_ms))

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id).get(CONSUMER_HEARTBEAT_INTERVAL_MS,
                                                   self.config.consumer_group_heartbeat_interval_ms))

    # ================================================================== group lookup
    def acquire(self, group_id: str) -> Group | None:
        """The group now in the cache, with its lock held (None: no such group)."""
        while True:
            group = self.group_manager.get_group(group_id)
            if group is None:
                return None
            group.lock.acquire()
            if self.group_manager.get_group(group_id) is group:
                return group
            group.lock.release()   # replaced meanwhile (converted or deleted): look again

    def acquire_or_create(self, group_id: str) -> Group:
        """The group with its lock held; a new empty consumer group if there is none (Kafka's
        group is created by the replay of its first record; here it is in the cache at once and
        ``drop_if_unused`` takes it back when the request that created it fails)."""
        while True:
            group = self.acquire(group_id)
            if group is not None:
                return group
            with self._create_lock:
                if self.group_manager.get_group(group_id) is None:
                    self.group_manager.add_group(ConsumerGroup(group_id))

    def drop_if_unused(self, group: ConsumerGroup) -> None:
        """A group created for a request that wrote nothing goes again (lock held)."""
        if group.group_epoch == 0 and not group.members and not group.has_offsets():
            group.mark_dead("created by a failed request")
            self.group_manager.remove_group_if_same(group)

    # ================================================================== ConsumerGroupHeartbeat
    def validate_request(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid`` (INVALID_REQUEST,
        UNSUPPORTED_ASSIGNOR), checked before the group is looked at."""
        if (req.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or req.member_epoch > 0
                or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH) and req.member_id == "":
            raise KafkaError(Errors.INVALID_REQUEST, "MemberId can't be empty.")
        if req.group_id == "":
            raise KafkaError(Errors.INVALID_REQUEST, "GroupId can't be empty.")
        if req.instance_id == "":
            raise KafkaError(Errors.INVALID_REQUEST, "InstanceId can't be empty.")
        if req.rack_id == "":
            raise KafkaError(Errors.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise KafkaError(Errors.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise KafkaError(Errors.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise KafkaError(Errors.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must "
                                                         "be non-null when (re-)joining.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise KafkaError(Errors.INVALID_REQUEST, "InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise KafkaError(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.assignors:
            raise KafkaError(Errors.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(self.assignors)}.")

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest,
                  callback: Callable[[ConsumerGroupHeartbeatResult], None]) -> None:
        """ConsumerGroupHeartbeat (the coordinator status is checked by the caller)."""
        try:
            self.validate_request(req)
        except KafkaError as e:
            callback(ConsumerGroupHeartbeatResult(e.code, e.message or None))
            return
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            self._leave(req, callback)
        else:
            self._heartbeat(req, callback)

    def _heartbeat(self, req: ConsumerGroupHeartbeatRequest,
                   callback: Callable[[ConsumerGroupHeartbeatResult], None]) -> None:
        create = req.member_epoch == 0
        found = self.acquire_or_create(req.group_id) if create else self.acquire(req.group_id)
        if found is None:
            callback(ConsumerGroupHeartbeatResult(Errors.GROUP_ID_NOT_FOUND,
                                                  f"Consumer group {req.group_id} not found."))
            return
        locked: list[Group] = [found]
        group: ConsumerGroup | None = None
        try:
            records = Records()
            group = self._consumer_group_for(found, create, records)
            if group is not found:
                locked.append(group)
            result = self._regular_heartbeat(group, req, records)
            self.write(group, records, lambda error: callback(
                result if error is None else ConsumerGroupHeartbeatResult(error)))
        except KafkaError as e:
            if isinstance(found, ConsumerGroup):
                self.drop_if_unused(found)
            error = ConsumerGroupHeartbeatResult(e.code, e.message or None)
            found.lock.defer(lambda: callback(error))
        except PartitionAssignorError as e:
            _log.error("target_assignment_failed", group_id=req.group_id, error=str(e))
            failed = ConsumerGroupHeartbeatResult(Errors.UNKNOWN_SERVER_ERROR,
                                                  f"Failed to compute a new target assignment: {e}")
            found.lock.defer(lambda: callback(failed))
        finally:
            for g in reversed(locked):
                g.lock.release()

    def _consumer_group_for(self, group: Group, create: bool, records: Records) -> ConsumerGroup:
        """Kafka's ``getOrMaybeCreateConsumerGroup``: the consumer group the heartbeat goes to,
        converting a classic group when the member joins (lock of ``group`` held)."""
        if isinstance(group, ConsumerGroup):
            if group.is_dead():
                raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
            return group
        if create:
            return self.classic_members.convert_to_consumer_group(group, records)
        raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is not a consumer group.")

    def _regular_heartbeat(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest,
                           records: Records) -> ConsumerGroupHeartbeatResult:
        """Kafka's ``consumerGroupHeartbeat``: the records (replayed by ``write``) and the answer."""
        group_id = group.group_id
        self.throw_if_group_is_full(group, req.member_id)
        member_id = req.member_id or random_member_id()
        if req.instance_id is None:
            member = self._dynamic_member(group, member_id, req.member_epoch, req.topic_partitions,
                                          req.member_epoch == 0)
        else:
            member = self.static_member(group, member_id, req.member_epoch, req.instance_id, req.topic_partitions,
                                        req.member_epoch == 0, False, records)
        updated = dataclasses.replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            server_assignor_name=req.server_assignor if req.server_assignor is not None else member.server_assignor_name,
            subscribed_topic_names=(frozenset(req.subscribed_topic_names) if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=(req.subscribed_topic_regex if req.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=req.client_id, client_host=req.client_host, classic_member_metadata=None)
        bump = group.group_epoch == 0
        bump |= self.has_member_subscription_changed(group_id, member, updated, records)
        bump |= self.maybe_update_regular_expressions(group, member, updated, records)
        target_epoch, target = self.update_group_and_target(group, member, updated, bump, records)
        updated = self.maybe_reconcile(group, updated, target_epoch, target, req.topic_partitions, records)
        self.schedule_session_timeout(group_id, member_id, self.session_timeout_ms(group_id))
        full = (req.rebalance_timeout_ms != -1 and (req.subscribed_topic_names is not None
                                                   or req.subscribed_topic_regex is not None)
                and req.topic_partitions is not None)
        assignment = None
        if req.member_epoch == 0 or full or has_assigned_partitions_changed(member, updated):
            assignment = dict(updated.assigned_partitions)
        return ConsumerGroupHeartbeatResult(Errors.NONE, None, updated.member_id, updated.member_epoch,
                                            self.heartbeat_interval_ms(group_id), assignment)

    def throw_if_group_is_full(self, group: ConsumerGroup, member_id: str) -> None:
        if len(group.members) >= self.config.consumer_group_max_size and (member_id == "" or member_id not in group.members):
            raise KafkaError(Errors.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of "
                             f"{self.config.consumer_group_max_size} members.")

    @staticmethod
    def throw_if_member_epoch_is_invalid(member: ConsumerGroupMember, received: int,
                                         owned: OwnedPartitions | None) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``: an epoch ahead of the member's, or
        behind it (other than the previous epoch with owned partitions within the current
        assignment, as when the answer bumping the epoch was lost) is fenced."""
        if received > member.member_epoch:
            raise KafkaError(Errors.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a greater member epoch ({received}) than the one known "
                             f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                             f"partitions and rejoin.")
        if received < member.member_epoch:
            if received != member.previous_member_epoch or not is_subset(owned, member.assigned_partitions):
                raise KafkaError(Errors.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({received}) than the one "
                                 f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                                 f"all its partitions and rejoin.")

    def _dynamic_member(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                        owned: OwnedPartitions | None, create: bool) -> ConsumerGroupMember:
        """Kafka's ``getOrMaybeSubscribeDynamicConsumerGroupMember``."""
        member = group.members.get(member_id)
        if member is None:
            if not create:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                           f"{group.group_id}.")
            _log.info("member_joins_consumer_group", group_id=group.group_id, member_id=member_id,
                      protocol="consumer")
            return ConsumerGroupMember(member_id)
        self.throw_if_member_epoch_is_invalid(member, member_epoch, owned)
        return member

    def static_member(self, group: ConsumerGroup, member_id: str, member_epoch: int, instance_id: str,
                      owned: OwnedPartitions | None, create: bool, use_classic: bool,
                      records: Records) -> ConsumerGroupMember:
        """Kafka's ``getOrMaybeSubscribeStaticConsumerGroupMember``: a static member joining with
        an instance id another member still holds takes its place if that member left with epoch
        -2 (or either speaks the classic protocol), else UNRELEASED_INSTANCE_ID."""
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                _log.info("static_member_joins_consumer_group", group_id=group.group_id, member_id=member_id,
                          instance_id=instance_id)
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            if not use_classic and not existing.use_classic_protocol() \
                    and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise KafkaError(Errors.UNRELEASED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance_id} cannot join the group "
                                 f"because the instance id is owned by {existing.member_id} member.")
            replacement = dataclasses.replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            self.replace_member(records, group, existing, replacement)
            _log.info("static_member_replaced", group_id=group.group_id, instance_id=instance_id,
                      member_id=member_id, replaced_member_id=existing.member_id)
            return replacement
        if existing is None:
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        self.throw_if_instance_id_is_fenced(existing, group.group_id, member_id, instance_id)
        if not use_classic:
            self.throw_if_member_epoch_is_invalid(existing, member_epoch, owned)
        return existing

    @staticmethod
    def throw_if_instance_id_is_fenced(member: ConsumerGroupMember, group_id: str, member_id: str,
                                       instance_id: str) -> None:
        if member.member_id != member_id:
            _log.info("static_member_fenced", group_id=group_id, member_id=member_id, instance_id=instance_id,
                      current_member_id=member.member_id)
            raise KafkaError(Errors.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                                                        f"was fenced by member {member.member_id}.")

    @staticmethod
    def replace_member(records: Records, group: ConsumerGroup, old: ConsumerGroupMember,
                       new: ConsumerGroupMember) -> None:
        """The records putting ``new`` in the place of ``old``: it inherits the old member's target
        and current assignment (Kafka's ``replaceMember``)."""
        gid = group.group_id
        records.extend(member_tombstones(gid, old.member_id))
        records.append(subscription_record(gid, new))
        records.append(target_record(gid, new.member_id, group.target_assignment_of(old.member_id)))
        records.append(assignment_record(gid, new))

    @staticmethod
    def has_member_subscription_changed(group_id: str, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                                        records: Records) -> bool:
        """A changed member writes its subscription record; true if the topic names changed."""
        if updated != member:
            records.append(subscription_record(group_id, updated))
            return updated.subscribed_topic_names != member.subscribed_topic_names
        return False

    # ------------------------------------------------------------------ regular expressions
    def maybe_update_regular_expressions(self, group: ConsumerGroup, member: ConsumerGroupMember,
                                         updated: ConsumerGroupMember, records: Records) -> bool:
        """Resolve the member's new regular expression, and re-resolve the group's once topics
        changed; the resolutions are replayed at once so the assignment below sees their topics.
        True if the group epoch must be bumped."""
        old_regex, new_regex = member.subscribed_topic_regex or None, updated.subscribed_topic_regex or None
        bump = False
        version = self.image.topics_version
        if old_regex != new_regex:
            if old_regex is not None and group.num_subscribed_members(old_regex) == 1:
                records.append(ConsumerGroupRecord(ConsumerGroupRegularExpressionKey(group.group_id, old_regex), None))
            if new_regex is not None:
                resolved = group.resolved_regular_expressions.get(new_regex)
                if resolved is not None:
                    bump = True
                else:
                    pattern = self.compile_regex(new_regex)
                    resolution = self.resolve(pattern, version)
                    self._record_resolution(group, new_regex, resolution, records)
                    bump = bool(resolution.topics)
        for regex, resolved in list(group.resolved_regular_expressions.items()):
            if resolved.version != version and group.num_subscribed_members(regex) > 0:
                resolution = self.resolve(re.compile(regex), version)
                self._record_resolution(group, regex, resolution, records)
                bump |= resolution.topics != resolved.topics
        return bump

    @staticmethod
    def compile_regex(regex: str) -> re.Pattern[str]:
        try:
            return re.compile(regex)
        except re.error as e:
            raise KafkaError(Errors.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}.") from None

    def resolve(self, pattern: re.Pattern[str], version: int) -> ResolvedRegularExpression:
        topics = frozenset(name for name in list(self.image.topics) if pattern.fullmatch(name))
        return ResolvedRegularExpression(topics, version, self.time.milliseconds())

    @staticmethod
    def _record_resolution(group: ConsumerGroup, regex: str, resolution: ResolvedRegularExpression,
                           records: Records) -> None:
        record = ConsumerGroupRecord(ConsumerGroupRegularExpressionKey(group.group_id, regex),
                                     ConsumerGroupRegularExpressionValue(tuple(sorted(resolution.topics)),
                                                                         resolution.version, resolution.timestamp))
        records.apply(group, record)

    # ------------------------------------------------------------------ epochs and target assignment
    def update_group_and_target(self, group: ConsumerGroup, member: ConsumerGroupMember | None,
                                updated: ConsumerGroupMember, bump: bool,
                                records: Records) -> tuple[int, Assignment]:
        """Steps 1 (end) and 2 of a heartbeat: the group epoch (bumped if asked or if the
        subscribed topics' metadata changed) and the member's target assignment at the target epoch."""
        group_epoch = group.group_epoch
        subscription_type = group.subscription_type
        if bump or group.metadata_version != self.image.topics_version:
            group_epoch, subscription_type = self.update_subscription_metadata(group, bump, member, updated, records)
        if group_epoch > group.target_assignment_epoch:
            return group_epoch, self.update_target_assignment(group, group_epoch, member, updated,
                                                              subscription_type, records)
        return group.target_assignment_epoch, group.target_assignment_of(updated.member_id, updated.instance_id)

    def update_subscription_metadata(self, group: ConsumerGroup, bump: bool, member: ConsumerGroupMember | None,
                                     updated: ConsumerGroupMember, records: Records) -> tuple[int, SubscriptionType]:
        """Kafka's ``updateSubscriptionMetadata``: the metadata hash of the subscribed topics; a
        changed hash bumps the group epoch too."""
        regexes = group.compute_subscribed_regular_expressions(member, updated)
        topics = group.compute_subscribed_topic_names(member, updated)
        metadata_hash = compute_metadata_hash(topics, self.image)
        members = len(group.members)
        if updated.member_id not in group.members and group.static_member_id(updated.instance_id) is None:
            members += 1
        subscription_type = ConsumerGroup.subscription_type_of_regex(regexes, topics, members)
        group_epoch = group.group_epoch
        if metadata_hash != group.metadata_hash:
            bump = True
        if bump:
            group_epoch += 1
            records.append(epoch_record(group.group_id, group_epoch, metadata_hash))
            _log.info("group_epoch_bumped", group_id=group.group_id, epoch=group_epoch)
            self._on_rebalance()
        group.metadata_version = self.image.topics_version
        return group_epoch, subscription_type

    def subscribed_topic_ids(self, group: ConsumerGroup) -> Callable[[ConsumerGroupMember], frozenset[uuid.UUID]]:
        topics = self.image.topics
        cache: dict[tuple[frozenset[str], str | None], frozenset[uuid.UUID]] = {}

        def ids(member: ConsumerGroupMember) -> frozenset[uuid.UUID]:
            key = (member.subscribed_topic_names, member.subscribed_topic_regex)
            found = cache.get(key)
            if found is None:
                found = cache[key] = frozenset(topics[name].topic_id for name in group.subscribed_topics_of(member)
                                               if name in topics)
            return found
        return ids

    def update_target_assignment(self, group: ConsumerGroup, group_epoch: int, member: ConsumerGroupMember | None,
                                 updated: ConsumerGroupMember | None, subscription_type: SubscriptionType,
                                 records: Records) -> Assignment:
        """Kafka's ``updateTargetAssignment``: run the group's preferred assignor for ``group_epoch``
        with ``updated`` in place of ``member``; the member's new target."""
        name = group.compute_preferred_server_assignor(member, updated) or self.default_assignor
        gid = group.group_id
        builder = TargetAssignmentBuilder(
            group_epoch, self.assignors.get(name, self.assignors[self.default_assignor]), self.image,
            self.subscribed_topic_ids(group), lambda mid, a: target_record(gid, mid, a),
            lambda epoch: target_epoch_record(gid, epoch),
        ).with_group(group.members, group.static_members, subscription_type, group.target_assignment,
                     group.inverted_target_assignment)
        if updated is not None:
            builder.add_or_update_member(updated.member_id, updated)
            previous = group.static_member_id(updated.instance_id)
            if previous is not None and previous != updated.member_id:
                builder.remove_member(previous)
        result = builder.build()
        records.extend(result.records)
        _log.info("target_assignment_computed", group_id=gid, epoch=group_epoch, assignor=name,
                  members=len(result.target_assignment))
        if updated is None:
            return EMPTY_ASSIGNMENT
        return result.target_assignment.get(updated.member_id, EMPTY_ASSIGNMENT)

    def maybe_reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember, target_epoch: int,
                        target: Assignment, owned: OwnedPartitions | None,
                        records: Records) -> ConsumerGroupMember:
        """Step 3: reconcile the member; a consumer-protocol member that must revoke gets a
        rebalance timeout (classic members have join and sync timeouts instead)."""
        if member.is_reconciled_to(target_epoch):
            return member
        updated = (CurrentAssignmentBuilder(member).with_target_assignment(target_epoch, target)
                   .with_current_partition_epoch(group.current_partition_epoch)
                   .with_owned_topic_partitions(owned).build())
        if updated != member:
            records.append(assignment_record(group.group_id, updated))
            if not updated.use_classic_protocol():
                if updated.state is MemberState.UNREVOKED_PARTITIONS:
                    self.schedule_rebalance_timeout(group.group_id, updated.member_id, updated.member_epoch,
                                                    updated.rebalance_timeout_ms)
                else:
                    self.timer.cancel(rebalance_timeout_key(group.group_id, updated.member_id))
        return updated

    # ================================================================== leaving and fencing
    def _leave(self, req: ConsumerGroupHeartbeatRequest, callback: Callable[[ConsumerGroupHeartbeatResult], None]) -> None:
        """Kafka's ``consumerGroupLeave``: epoch -1 removes the member; epoch -2 (a static member
        leaving for a while) keeps its assignment until its session expires or it comes back."""
        group = self.acquire(req.group_id)
        if group is None:
            callback(ConsumerGroupHeartbeatResult(Errors.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found."))
            return
        try:
            if not isinstance(group, ConsumerGroup) or group.is_dead():
                raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group.")
            records = Records()
            response = ConsumerGroupHeartbeatResult(Errors.NONE, None, req.member_id, req.member_epoch)
            if req.instance_id is None:
                member = group.member(req.member_id)
                _log.info("member_left_consumer_group", group_id=group.group_id, member_id=member.member_id)
                self.fence_members(group, [member], records)
            else:
                member = group.static_member(req.instance_id)
                if member is None:
                    raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
                self.throw_if_instance_id_is_fenced(member, group.group_id, req.member_id, req.instance_id)
                if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    _log.info("static_member_left_temporarily", group_id=group.group_id, member_id=member.member_id,
                              instance_id=req.instance_id)
                    leaving = dataclasses.replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                                  partitions_pending_revocation=EMPTY_ASSIGNMENT)
                    records.append(assignment_record(group.group_id, leaving))
                    response = ConsumerGroupHeartbeatResult(Errors.NONE, None, member.member_id,
                                                            LEAVE_GROUP_STATIC_MEMBER_EPOCH)
                else:
                    _log.info("static_member_left_consumer_group", group_id=group.group_id,
                              member_id=member.member_id, instance_id=req.instance_id)
                    self.fence_members(group, [member], records)
            self.write(group, records, lambda error: callback(
                response if error is None else ConsumerGroupHeartbeatResult(error)))
        except KafkaError as e:
            error = ConsumerGroupHeartbeatResult(e.code, e.message or None)
            group.lock.defer(lambda: callback(error))
        finally:
            group.lock.release()

    def fence_members(self, group: ConsumerGroup, members: list[ConsumerGroupMember], records: Records) -> None:
        """Remove ``members`` and bump the group epoch (Kafka's ``consumerGroupFenceMembers``), or
        turn the group into a classic group if only classic members stay (a downgrade)."""
        if not members:
            return
        if self.classic_members.maybe_downgrade(group, members, records):
            return
        gid = group.group_id
        for member in members:
            records.extend(member_tombstones(gid, member.member_id))
        deleted_regexes = self._maybe_delete_resolved_regexes(group, members, records)
        topics = group.compute_subscribed_topic_names_without(members)
        for regex in deleted_regexes:
            for topic in group.resolved_regular_expressions[regex].topics:
                count = topics.get(topic, SubscriptionCount()).dec_regex()
                if count is None:
                    topics.pop(topic, None)
                else:
                    topics[topic] = count
        epoch = group.group_epoch + 1
        records.append(epoch_record(gid, epoch, compute_metadata_hash(topics, self.image)))
        _log.info("group_epoch_bumped", group_id=gid, epoch=epoch, fenced=[m.member_id for m in members])
        self._on_rebalance()
        for member in members:
            self.cancel_timers(gid, member.member_id)

    @staticmethod
    def _maybe_delete_resolved_regexes(group: ConsumerGroup, members: list[ConsumerGroupMember],
                                       records: Records) -> list[str]:
        counts: dict[str, int] = {}
        for member in members:
            if member.subscribed_topic_regex:
                counts[member.subscribed_topic_regex] = counts.get(member.subscribed_topic_regex, 0) + 1
        deleted = []
        for regex, count in counts.items():
            if group.num_subscribed_members(regex) == count:
                records.append(ConsumerGroupRecord(ConsumerGroupRegularExpressionKey(group.group_id, regex), None))
                if regex in group.resolved_regular_expressions:
                    deleted.append(regex)
        return deleted

    def fence_member_operation(self, group_id: str, member_id: str, reason: str,
                               member_epoch: int | None = None) -> bool:
        """A timeout fell due: fence the member if it is still there (and, for a rebalance
        timeout, still at ``member_epoch``); True if it was fenced."""
        group = self.acquire(group_id)
        if group is None:
            return False
        try:
            if not isinstance(group, ConsumerGroup) or group.is_dead():
                return False
            member = group.members.get(member_id)
            if member is None or (member_epoch is not None and member.member_epoch != member_epoch):
                return False
            _log.info("member_fenced", group_id=group_id, member_id=member_id, reason=reason)
            records = Records()
            self.fence_members(group, [member], records)
            self.write(group, records, lambda error: None)
            return True
        finally:
            group.lock.release()

    def _session_expired(self, group_id: str, member_id: str) -> None:
        if self.fence_member_operation(group_id, member_id, "the member session expired"):
            self._on_session_expired()

    # ================================================================== timers
    def schedule_session_timeout(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self.timer.schedule(session_timeout_key(group_id, member_id), timeout_ms,
                            lambda: self._session_expired(group_id, member_id))

    def schedule_rebalance_timeout(self, group_id: str, member_id: str, member_epoch: int, timeout_ms: int) -> None:
        self.timer.schedule(rebalance_timeout_key(group_id, member_id), timeout_ms, lambda: self.fence_member_operation(
            group_id, member_id, f"it failed to transition from epoch {member_epoch} within {timeout_ms}ms",
            member_epoch))

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        for key in (session_timeout_key, rebalance_timeout_key, join_key, sync_key):
            self.timer.cancel(key(group_id, member_id))

    # ================================================================== writing
    def write(self, group: ConsumerGroup, records: Records, done: Callable[[int | None], None]) -> None:
        """Replay ``records`` onto ``group`` (lock held), append them as one batch and call
        ``done(None)`` once replicated, ``done(error)`` if the append failed; ``done`` runs after
        the group lock is released."""
        for record, replayed in records.entries:
            if not replayed and isinstance(record, ConsumerGroupRecord):
                group.replay(record.key, record.value)
        if group.deleted:
            self.group_manager.remove_group_if_same(group)
        if not records:
            group.lock.defer(lambda: done(None))
            return
        encoded = [r.encode() if isinstance(r, ConsumerGroupRecord) else r for r in records]

        def on_append(error: int) -> None:
            if error != Errors.NONE:
                _log.warning("consumer_group_write_failed", group_id=group.group_id, error=error)
            result = None if error == Errors.NONE else map_coordinator_operation_error(error)
            group.lock.defer(lambda: done(result))

        if not self.group_manager.has_local_replica(group.group_id):
            on_append(Errors.NOT_LEADER_OR_FOLLOWER)
            return
        self.log.append_records(self.group_manager.partition_for(group.group_id), encoded,
                                self.config.offsets_commit_timeout_ms, group.lock, on_append)

    # ================================================================== load / unload
    def on_group_loaded(self, group: ConsumerGroup) -> None:
        """Arm the loaded members' session timeouts, and the rebalance timeouts of those that
        must revoke (Kafka's ``onLoaded``)."""
        with group.lock:
            _log.info("consumer_group_loaded", group_id=group.group_id, epoch=group.group_epoch,
                      members=len(group.members))
            for member in group.members.values():
                classic = member.classic_member_metadata
                self.schedule_session_timeout(group.group_id, member.member_id,
                                              classic.session_timeout_ms if classic is not None
                                              else self.session_timeout_ms(group.group_id))
                if member.state is MemberState.UNREVOKED_PARTITIONS and not member.use_classic_protocol():
                    self.schedule_rebalance_timeout(group.group_id, member.member_id, member.member_epoch,
                                                    member.rebalance_timeout_ms)

    def on_group_unloaded(self, group: ConsumerGroup) -> None:
        with group.lock:
            _log.info("consumer_group_unloaded", group_id=group.group_id, epoch=group.group_epoch)
            for member_id in list(group.members):
                self.cancel_timers(group.group_id, member_id)
            group.mark_dead("partition unloaded")

    # ================================================================== ConsumerGroupDescribe
    def describe(self, group_id: str) -> ConsumerGroupDescription:
        """ConsumerGroupDescribe of one group this coordinator owns (Kafka's ``asDescribedGroup``)."""
        group = self.group_manager.get_group(group_id)
        if not isinstance(group, ConsumerGroup):
            return ConsumerGroupDescription(group_id, Errors.GROUP_ID_NOT_FOUND,
                                            f"Group {group_id} not found." if group is None
                                            else f"Group {group_id} is not a consumer group.")
        with group.lock:
            if group.is_dead():
                return ConsumerGroupDescription(group_id, Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            members = [ConsumerGroupMemberDescription(
                m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                tuple(sorted(m.subscribed_topic_names)), m.subscribed_topic_regex,
                self._describe_assignment(m.assigned_partitions),
                self._describe_assignment(group.target_assignment.get(m.member_id, EMPTY_ASSIGNMENT)),
                1 if m.use_classic_protocol() else 0) for m in group.members.values()]
            return ConsumerGroupDescription(group_id, Errors.NONE, None, group.state.value, group.group_epoch,
                                            group.target_assignment_epoch,
                                            group.preferred_server_assignor() or self.default_assignor, members)

    def _describe_assignment(self, assignment: Assignment) -> list[tuple[uuid.UUID, str, tuple[int, ...]]]:
        out = []
        for topic_id, partitions in assignment.items():
            name = self.image.topics_by_id.get(topic_id)
            if name is not None:
                out.append((topic_id, name, tuple(sorted(partitions))))
        return out

