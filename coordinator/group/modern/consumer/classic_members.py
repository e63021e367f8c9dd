"""ClassicMembers: members speaking the classic protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup) inside a consumer group, and the conversions between the two group types (Kafka's
``classicGroup*ToConsumerGroup``, ``convertToConsumerGroup``, ``convertToClassicGroup``): KIP-848's
path for rolling a group from classic to consumer-protocol clients and back.

* Upgrade: a consumer-protocol member joining a classic group turns it into a consumer group
  (``convert_to_consumer_group``): an empty classic group is simply replaced; a non-empty one,
  if ``group.consumer.migration.policy`` allows upgrades, uses the consumer protocol type and fits
  ``group.consumer.max.size``, becomes a consumer group whose classic members keep their
  generation as member epoch and their assignment (else GROUP_ID_NOT_FOUND, as Kafka answers).
* Classic members of a consumer group: a JoinGroup subscribes (or updates) the member as a
  consumer-protocol heartbeat would and answers with its member epoch as the generation; its
  SyncGroup gets its current assignment as a ``ConsumerProtocolAssignment``; its Heartbeat answers
  REBALANCE_IN_PROGRESS whenever it has something to reconcile, so it rejoins; it is fenced after
  its session timeout, or after its rebalance timeout when it does not rejoin (``join-``) or sync
  (``sync-``) in time.
* Downgrade: when the members that leave (or expire) leave only classic members behind and the
  policy allows downgrades (and ``group.max.size`` holds them), the group becomes a classic group
  that rebalances at once (``maybe_downgrade``); a JoinGroup to an empty consumer group replaces it
  with a classic group. The offsets move with the group.

Deliberate difference from Kafka: a classic static member replacing the last consumer-protocol
member does not downgrade the group (Kafka's ``validateOnlineDowngradeWithReplacedMember``); the
group downgrades when the replaced member's session or rebalance ends instead.

Every method is called with the consumer group's lock held (``ConsumerGroupManager.acquire``).
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable

import structlog

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.group.classic.group_metadata import (
    CONSUMER_PROTOCOL_TYPE, Empty, GroupMetadata, Stable,
)
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.group import Group
from kafka_emu.coordinator.group.modern.consumer.consumer_group import ConsumerGroup
from kafka_emu.coordinator.group.modern.consumer.consumer_group_member import ConsumerGroupMember
from kafka_emu.coordinator.group.modern.consumer.consumer_group_records import (
    Records, assignment_record, compute_metadata_hash, epoch_record, join_key, random_member_id, subscription_record,
    sync_key, target_epoch_record, target_record,
)
from kafka_emu.coordinator.group.modern.member_state import MemberState
from kafka_emu.coordinator.group.modern.modern_group_member import Assignment
from kafka_emu.coordinator.group.records import (
    ClassicMemberMetadata, consumer_protocol_assignment, group_metadata_key, read_consumer_assignment,
    read_consumer_subscription,
)
from kafka_emu.coordinator.group.results import (
    JoinGroupResult, LeaveGroupResult, LeaveMemberResponse, SyncGroupResult,
)

if TYPE_CHECKING:
    from kafka_emu.coordinator.group.classic.classic_group_manager import ClassicGroupManager
    from kafka_emu.coordinator.group.modern.consumer.consumer_group_manager import ConsumerGroupManager

_log = structlog.get_logger("coordinator.classic_members")

UNKNOWN_MEMBER_ID = ""


class ClassicMembers:
    def __init__(self, consumer: "ConsumerGroupManager", classic: "ClassicGroupManager") -> None:
        self.consumer = consumer
        self.classic = classic

    # ================================================================== topic names and ids
    def _to_ids(self, by_name: dict[str, list[int]] | tuple[tuple[str, tuple[int, ...]], ...]) -> Assignment:
        topics = self.consumer.image.topics
        items = by_name.items() if isinstance(by_name, dict) else by_name
        out = {}
        for name, partitions in items:
            topic = topics.get(name)
            if topic is not None and partitions:
                out[topic.topic_id] = frozenset(partitions)
        return out

    def _assignment_bytes(self, assignment: Assignment, protocols: tuple[tuple[str, bytes], ...]) -> bytes:
        """A member's partitions as a ``ConsumerProtocolAssignment`` of the version of its
        subscription (Kafka's ``prepareAssignment``)."""
        names = self.consumer.image.topics_by_id
        by_name = {names[t]: sorted(ps) for t, ps in assignment.items() if t in names}
        subscription = read_consumer_subscription(protocols[0][1]) if protocols else None
        return consumer_protocol_assignment(by_name, subscription.version if subscription is not None else 0)

    # ================================================================== upgrade
    def convert_to_consumer_group(self, group: Group, records: Records) -> ConsumerGroup:
        """The consumer group replacing classic ``group`` (its lock held) as a member joins with
        the consumer protocol; the new group is returned with its lock held too."""
        if not isinstance(group, GroupMetadata) or group.is_dead():
            raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is not a consumer group.")
        new = ConsumerGroup(group.group_id)
        if group.is_(Empty):
            _log.info("empty_classic_group_converted", group_id=group.group_id)
        else:
            self._validate_online_upgrade(group)
            self.classic.complete_all_callbacks(group, Errors.REBALANCE_IN_PROGRESS)
            for record in self._consumer_group_records_of(group):
                records.apply(new, record)
            _log.info("classic_group_converted_to_consumer_group", group_id=group.group_id,
                      members=len(new.members))
        records.append((group_metadata_key(group.group_id), None))
        self._replace(group, new)
        for member in new.members.values():
            classic = member.classic_member_metadata
            assert classic is not None
            self.consumer.schedule_session_timeout(group.group_id, member.member_id, classic.session_timeout_ms)
        return new

    def _validate_online_upgrade(self, group: GroupMetadata) -> None:
        config = self.consumer.config
        if not config.is_upgrade_enabled():
            reason = "online upgrade is disabled"
        elif group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            reason = "the group does not use the consumer embedded protocol"
        elif group.size() > config.consumer_group_max_size:
            reason = "the group size exceeds the consumer group maximum size"
        else:
            return
        _log.info("classic_group_not_upgraded", group_id=group.group_id, reason=reason)
        raise KafkaError(Errors.GROUP_ID_NOT_FOUND,
                         f"Cannot upgrade classic group {group.group_id} to consumer group because {reason}.")

    def _consumer_group_records_of(self, group: GroupMetadata) -> list:
        """The records of the consumer group a non-empty classic group becomes (Kafka's
        ``ConsumerGroup.fromClassicGroup`` and ``createConsumerGroupRecords``): every member
        STABLE at the generation, its target and current assignment what it was assigned."""
        gid, epoch = group.group_id, group.generation_id
        members = []
        for m in group.all_member_metadata():
            if m.assignment:
                parsed = read_consumer_assignment(m.assignment)
                if parsed is None:
                    raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer "
                                                                f"group because the embedded consumer protocol is malformed.")
                by_name, user_data = parsed
                if user_data:
                    raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group "
                                                                f"because an unsupported custom assignor is in use.")
                assigned = self._to_ids(by_name)
            else:
                assigned = {}
            subscription = read_consumer_subscription(m.metadata(group.protocol_name or ""))
            if subscription is None:
                raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group "
                                                            f"because the embedded consumer protocol is malformed.")
            members.append(ConsumerGroupMember(
                m.member_id, member_epoch=epoch, previous_member_epoch=epoch, state=MemberState.STABLE,
                instance_id=m.group_instance_id, rack_id=subscription.rack_id, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=frozenset(subscription.topics),
                assigned_partitions=assigned, rebalance_timeout_ms=m.rebalance_timeout_ms,
                classic_member_metadata=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.supported_protocols))))
        topics = {t for m in members for t in m.subscribed_topic_names}
        out = [subscription_record(gid, m) for m in members]
        out.append(epoch_record(gid, epoch, compute_metadata_hash(topics, self.consumer.image)))
        out += [target_record(gid, m.member_id, m.assigned_partitions) for m in members]
        out.append(target_epoch_record(gid, epoch))
        out += [assignment_record(gid, m) for m in members]
        return out

    def _replace(self, old: Group, new: Group) -> None:
        """``new`` takes ``old``'s place (and offsets) in the cache; ``new``'s lock is taken."""
        new.lock.acquire()
        new.take_offsets_from(old)
        self.consumer.group_manager.replace_group(old, new)
        old.mark_dead(f"converted to a {new.group_type} group")

    # ================================================================== downgrade
    def maybe_downgrade(self, group: ConsumerGroup, leaving: list[ConsumerGroupMember], records: Records) -> bool:
        """Kafka's ``validateOnlineDowngradeWithFencedMembers`` + ``convertToClassicGroup``: the
        members left are all classic members: the group becomes a classic group that rebalances."""
        config = self.consumer.config
        remaining = len(group.members) - len(leaving)
        if (not group.all_members_use_classic_protocol_except(leaving) or remaining <= 0
                or not config.is_downgrade_enabled() or remaining > config.group_max_size):
            return False
        records.extend(group.tombstone_records())
        classic = self.classic.group_manager.new_group(group.group_id, Stable)
        classic.generation_id = group.group_epoch
        classic.protocol_type = CONSUMER_PROTOCOL_TYPE
        leaving_ids = {m.member_id for m in leaving}
        for member in group.members.values():
            if member.member_id in leaving_ids:
                continue
            assert member.classic_member_metadata is not None
            classic.add(MemberMetadata(member.member_id, member.instance_id, member.client_id, member.client_host,
                                       member.rebalance_timeout_ms, member.classic_member_metadata.session_timeout_ms,
                                       CONSUMER_PROTOCOL_TYPE, list(member.supported_classic_protocols()),
                                       group.group_id))
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic._compute_subscribed_topics()
        for m in classic.all_member_metadata():
            m.assignment = self._assignment_bytes(group.target_assignment.get(m.member_id, {}),
                                                  tuple(m.supported_protocols))
        for member_id in list(group.members):
            self.consumer.cancel_timers(group.group_id, member_id)
        self._replace(group, classic)
        try:
            records.append(self.classic.group_record(classic, {m.member_id: m.assignment
                                                               for m in classic.all_member_metadata()}))
            for m in classic.all_member_metadata():
                self.classic.complete_and_schedule_next_heartbeat_expiration(classic, m)
            self.classic.prepare_rebalance(classic, f"Downgrade group {group.group_id} from consumer to classic "
                                                    f"for member leaving.")
        finally:
            classic.lock.release()
        _log.info("consumer_group_converted_to_classic_group", group_id=group.group_id, members=classic.size())
        return True

    def replace_empty_consumer_group(self, group: ConsumerGroup) -> None:
        """A JoinGroup to an empty consumer group: it gives way to a classic group (Kafka's
        ``maybeDeleteEmptyConsumerGroup``), created by the join; the tombstones are written."""
        records = Records()
        records.extend(group.tombstone_records())
        classic = self.classic.group_manager.new_group(group.group_id)
        self._replace(group, classic)
        classic.lock.release()
        self.consumer.write(group, records, lambda error: None)
        _log.info("empty_consumer_group_converted", group_id=group.group_id)

    # ================================================================== JoinGroup
    def join(self, group: ConsumerGroup, member_id: str, instance_id: str | None, require_known_member_id: bool,
             client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
             protocol_type: str, protocols: list[tuple[str, bytes]], callback: Callable[[JoinGroupResult], None]) -> None:
        """A classic member's JoinGroup to a non-empty consumer group (Kafka's
        ``classicGroupJoinToConsumerGroup``)."""
        consumer = self.consumer
        gid = group.group_id
        unknown = member_id == UNKNOWN_MEMBER_ID
        if unknown:
            member_id = random_member_id()
        try:
            consumer.throw_if_group_is_full(group, member_id)
            if not group.supports_classic_protocols(protocol_type, {name for name, _ in protocols}):
                raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
            if require_known_member_id and unknown:
                _log.info("classic_member_needs_member_id", group_id=gid, member_id=member_id)
                result = JoinGroupResult.error_result(member_id, Errors.MEMBER_ID_REQUIRED)
                group.lock.defer(lambda: callback(result))
                return
            records = Records()
            if instance_id is None:
                member = group.members.get(member_id) or ConsumerGroupMember(member_id)
            else:
                member = consumer.static_member(group, member_id, -1, instance_id, (), unknown, True, records)
            subscription = read_consumer_subscription(protocols[0][1])
            if subscription is None:
                raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL, "Malformed embedded consumer protocol in subscription.")
            updated = dataclasses.replace(
                member, instance_id=instance_id if instance_id is not None else member.instance_id,
                rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
                rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
                subscribed_topic_names=frozenset(subscription.topics), client_id=client_id, client_host=client_host,
                classic_member_metadata=ClassicMemberMetadata(session_timeout_ms, tuple(protocols)))
            bump = consumer.has_member_subscription_changed(gid, member, updated, records)
            target_epoch, target = consumer.update_group_and_target(group, member, updated, bump, records)
            updated = consumer.maybe_reconcile(group, updated, target_epoch, target,
                                               self._to_ids(subscription.owned_partitions).items(), records)
            final = updated
            result = JoinGroupResult([], final.member_id, final.member_epoch, CONSUMER_PROTOCOL_TYPE, protocols[0][0],
                                     "", False, Errors.NONE)

            def done(error: int | None) -> None:
                if error is None:
                    consumer.timer.cancel(join_key(gid, final.member_id))
                    consumer.schedule_session_timeout(gid, final.member_id, session_timeout_ms)
                    self._schedule_sync_timeout(gid, final.member_id, rebalance_timeout_ms)
                    callback(result)
                else:
                    callback(JoinGroupResult.error_result(final.member_id, error))

            consumer.write(group, records, done)
        except KafkaError as e:
            failed = JoinGroupResult.error_result(member_id if e.code != Errors.GROUP_MAX_SIZE_REACHED else "", e.code)
            group.lock.defer(lambda: callback(failed))

    def _schedule_sync_timeout(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self.consumer.timer.schedule(sync_key(group_id, member_id), timeout_ms, lambda: self.consumer.fence_member_operation(
            group_id, member_id, "the member failed to sync within timeout"))

    def _schedule_join_timeout_if_absent(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self.consumer.timer.schedule_if_absent(join_key(group_id, member_id), timeout_ms, lambda: (
            self.consumer.fence_member_operation(
                group_id, member_id, "the classic member failed to join within the rebalance timeout")))

    def _validate_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's ``validateConsumerGroupMember`` and ``throwIfMemberDoesNotUseClassicProtocol``."""
        if instance_id is None:
            member = group.member(member_id)
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a member "
                                                           f"of group {group.group_id}.")
            self.consumer.throw_if_instance_id_is_fenced(member, group.group_id, member_id, instance_id)
        if not member.use_classic_protocol():
            raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
        return member

    @staticmethod
    def _check_generation(member: ConsumerGroupMember, generation_id: int) -> None:
        if member.member_epoch != generation_id:
            raise KafkaError(Errors.ILLEGAL_GENERATION, f"The request generation id {generation_id} is not equal to "
                                                        f"the member epoch {member.member_epoch} of member "
                                                        f"{member.member_id}.")

    # ================================================================== SyncGroup
    def sync(self, group: ConsumerGroup, generation: int, member_id: str, protocol_type: str | None,
             protocol_name: str | None, instance_id: str | None) -> SyncGroupResult:
        """Kafka's ``classicGroupSyncToConsumerGroup``: the member's current assignment."""
        try:
            member = self._validate_member(group, member_id, instance_id)
            self._check_generation(member, generation)
            name = member.supported_classic_protocols()[0][0]
            if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL)
            if protocol_name is not None and protocol_name != name:
                raise KafkaError(Errors.INCONSISTENT_GROUP_PROTOCOL)
            if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
                self._schedule_join_timeout_if_absent(group.group_id, member.member_id, member.rebalance_timeout_ms)
                raise KafkaError(Errors.REBALANCE_IN_PROGRESS)
        except KafkaError as e:
            return SyncGroupResult(error=e.code)
        gid = group.group_id
        self.consumer.timer.cancel(sync_key(gid, member.member_id))
        assert member.classic_member_metadata is not None
        self.consumer.schedule_session_timeout(gid, member.member_id, member.classic_member_metadata.session_timeout_ms)
        return SyncGroupResult(protocol_type, protocol_name,
                               self._assignment_bytes(member.assigned_partitions, member.supported_classic_protocols()),
                               Errors.NONE)

    # ================================================================== Heartbeat
    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int) -> int:
        """Kafka's ``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS while the member
        has something to reconcile (it then rejoins)."""
        try:
            member = self._validate_member(group, member_id, instance_id)
            self._check_generation(member, generation_id)
        except KafkaError as e:
            return e.code
        gid = group.group_id
        assert member.classic_member_metadata is not None
        self.consumer.schedule_session_timeout(gid, member.member_id, member.classic_member_metadata.session_timeout_ms)
        if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            self._schedule_join_timeout_if_absent(gid, member.member_id, member.rebalance_timeout_ms)
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    # ================================================================== LeaveGroup
    def leave(self, group: ConsumerGroup, members: list[tuple[str, str | None, str | None]],
              callback: Callable[[LeaveGroupResult], None]) -> None:
        """Kafka's ``classicGroupLeaveToConsumerGroup``: the members named are fenced together."""
        responses, leaving = [], []
        for member_id, instance_id, reason in members:
            try:
                if instance_id is None:
                    member = group.member(member_id)
                else:
                    member = group.static_member(instance_id)
                    if member is None:
                        raise KafkaError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    if member_id != UNKNOWN_MEMBER_ID:
                        self.consumer.throw_if_instance_id_is_fenced(member, group.group_id, member_id, instance_id)
                _log.info("member_left_consumer_group_through_leave_group", group_id=group.group_id,
                          member_id=member_id, instance_id=instance_id, reason=reason or "not provided")
                responses.append(LeaveMemberResponse(member_id, instance_id, Errors.NONE))
                if member not in leaving:
                    leaving.append(member)
            except KafkaError as e:
                responses.append(LeaveMemberResponse(member_id, instance_id, e.code))
        records = Records()
        self.consumer.fence_members(group, leaving, records)
        result = LeaveGroupResult(Errors.NONE, responses)
        self.consumer.write(group, records, lambda error: callback(
            result if error is None else LeaveGroupResult(error, [])))

