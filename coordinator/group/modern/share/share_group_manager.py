"""ShareGroupManager: the share group protocol of KIP-932 (the ``shareGroup*`` half of Kafka's
``GroupMetadataManager``): ShareGroupHeartbeat, ShareGroupDescribe and the session timeouts.

A heartbeat, in Kafka's order (``shareGroupHeartbeat``):
1. the request is checked (``validate_request``: INVALID_REQUEST with Kafka's messages);
2. the group is found, or created by a member joining with epoch 0; a group of another type is
   GROUP_ID_NOT_FOUND ("Group <id> is not a share group."); the member is found (its epoch
   checked as ``throwIfShareGroupMemberEpochIsInvalid`` does: FENCED_MEMBER_EPOCH) or created,
   and updated from the request's non-null fields; a member id the group does not know with an
   epoch other than 0 is UNKNOWN_MEMBER_ID; past ``group.share.max.size`` members a new one gets
   GROUP_MAX_SIZE_REACHED;
3. a changed subscription, or a changed metadata hash of the subscribed topics (a topic created,
   deleted or grown), bumps the group epoch; a group epoch ahead of the target assignment's runs
   the ``simple`` assignor through the shared ``TargetAssignmentBuilder``;
4. the member takes its target assignment at the target epoch at once (a share member has nothing
   to revoke: Kafka's ``ShareGroupAssignmentBuilder``), its session timeout is re-armed
   (``share.session.timeout.ms`` of the group, else ``group.share.session.timeout.ms``), and the
   answer carries the assignment when the member joined, its assignment changed, or the request
   was full (subscribed topics given).
Epoch -1 leaves: the member goes, the group epoch is bumped, the answer has epoch -1. A member
whose session timer (``session-timeout-<group>-<member>`` on the shared ``CoordinatorTimer``)
fires is removed the same way.

Locking: each group's lock guards the group from lookup to the answer; callbacks run after it is
released (``GroupLock.defer``); ``_create_lock`` serialises the creation of groups.

Differences from Kafka on purpose (see also ``ShareGroup``): nothing is written to
``__consumer_offsets`` (membership is in memory, so a heartbeat is answered at once), and the
broker initializes a share partition's state the first time it is fetched, instead of the
coordinator sending InitializeShareGroupState when it first assigns the partition
(``broker.server.share.share_partition``).
"""
from __future__ import annotations

import dataclasses
import threading
import uuid
from typing import Callable, Mapping

import structlog

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.group.assignor import SHARE_GROUP_ASSIGNORS, PartitionAssignorError
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.coordinator.group.coordinator_timer import CoordinatorTimer
from kafka_emu.coordinator.group.group import Group
from kafka_emu.coordinator.group.group_config import SHARE_HEARTBEAT_INTERVAL_MS, SHARE_SESSION_TIMEOUT_MS
from kafka_emu.coordinator.group.group_metadata_manager import GroupMetadataManager
from kafka_emu.coordinator.group.modern.consumer.consumer_group_records import (
    compute_metadata_hash, session_timeout_key,
)
from kafka_emu.coordinator.group.modern.modern_group_member import EMPTY_ASSIGNMENT, Assignment
from kafka_emu.coordinator.group.modern.share.share_group import ShareGroup
from kafka_emu.coordinator.group.modern.share.share_group_member import LEAVE_GROUP_MEMBER_EPOCH, ShareGroupMember
from kafka_emu.coordinator.group.modern.target_assignment_builder import TargetAssignmentBuilder
from kafka_emu.coordinator.group.results import (
    ShareGroupDescription, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResult, ShareGroupMemberDescription,
)
from kafka_emu.coordinator.metadata_image import MetadataImage

_log = structlog.get_logger("coordinator.share_group_manager")

Callback = Callable[[ShareGroupHeartbeatResult], None]


class ShareGroupManager:
    """See the module docstring."""

    def __init__(self, config: GroupCoordinatorConfig, group_manager: GroupMetadataManager, timer: CoordinatorTimer,
                 image: MetadataImage, group_config: Callable[[str], Mapping[str, object]],
                 on_rebalance: Callable[[], None] = lambda: None,
                 on_session_expired: Callable[[], None] = lambda: None) -> None:
        self.config = config
        self.group_manager = group_manager
        self.timer = timer
        self.image = image
        self.group_config = group_config
        self._on_rebalance = on_rebalance
        self._on_session_expired = on_session_expired
        self.assignor = SHARE_GROUP_ASSIGNORS["simple"]
        self._create_lock = threading.Lock()

    # ================================================================== configs
    def session_timeout_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id).get(SHARE_SESSION_TIMEOUT_MS,   # type: ignore[call-overload]
                                                   self.config.share_group_session_timeout_ms))

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id).get(SHARE_HEARTBEAT_INTERVAL_MS,   # type: ignore[call-overload]
                                                   self.config.share_group_heartbeat_interval_ms))

    # ================================================================== lookup
    def _acquire(self, group_id: str, create: bool) -> Group | None:
        """The group now in the cache with its lock held; a new share group if ``create``."""
        while True:
            group = self.group_manager.get_group(group_id)
            if group is None:
                if not create:
                    return None
                with self._create_lock:
                    if self.group_manager.get_group(group_id) is None:
                        self.group_manager.add_group(ShareGroup(group_id))
                continue
            group.lock.acquire()
            if self.group_manager.get_group(group_id) is group:
                return group
            group.lock.release()

    # ================================================================== ShareGroupHeartbeat
    @staticmethod
    def validate_request(req: ShareGroupHeartbeatRequest) -> None:
        """Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid`` (v1: the client names itself)."""
        if req.group_id == "":
            raise KafkaError(Errors.INVALID_REQUEST, "GroupId can't be empty.")
        if req.rack_id == "":
            raise KafkaError(Errors.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_id == "":
            raise KafkaError(Errors.INVALID_REQUEST, "MemberId can't be empty.")
        if req.member_epoch == 0:
            if not req.subscribed_topic_names:
                raise KafkaError(Errors.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise KafkaError(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")

    def heartbeat(self, req: ShareGroupHeartbeatRequest, callback: Callback) -> None:
        """ShareGroupHeartbeat (request and coordinator status already checked by the caller);
        ``callback`` runs once, on this thread, after the group lock is released."""
        group = self._acquire(req.group_id, create=req.member_epoch == 0)
        if group is None:
            # the group is not here (a moved coordinator loses share groups, see ShareGroup)
            callback(ShareGroupHeartbeatResult(Errors.UNKNOWN_MEMBER_ID,
                                               f"Member {req.member_id} is not a member of group {req.group_id}."))
            return
        try:
            if not isinstance(group, ShareGroup):
                raise KafkaError(Errors.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a share group.")
            if group.is_dead():
                raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE)
            if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                result = self._leave(group, req)
            else:
                result = self._heartbeat(group, req)
        except KafkaError as e:
            if isinstance(group, ShareGroup):
                self._drop_if_unused(group)
            result = ShareGroupHeartbeatResult(e.code, e.message or None)
        except PartitionAssignorError as e:
            _log.error("target_assignment_failed", group_id=req.group_id, error=str(e))
            result = ShareGroupHeartbeatResult(Errors.UNKNOWN_SERVER_ERROR,
                                               f"Failed to compute a new target assignment: {e}")
        finally:
            group.lock.release()
        callback(result)

    def _drop_if_unused(self, group: ShareGroup) -> None:
        """A group created for a request that failed goes again (lock held)."""
        if group.group_epoch == 0 and not group.members:
            group.mark_dead("created by a failed request")
            self.group_manager.remove_group_if_same(group)

    def _heartbeat(self, group: ShareGroup, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResult:
        group_id = group.group_id
        member = group.members.get(req.member_id)
        if member is None:
            if req.member_epoch != 0:
                raise KafkaError(Errors.UNKNOWN_MEMBER_ID,
                                 f"Member {req.member_id} is not a member of group {group_id}.")
            if len(group.members) >= self.config.share_group_max_size:
                raise KafkaError(Errors.GROUP_MAX_SIZE_REACHED,
                                 f"The share group has reached its maximum capacity of "
                                 f"{self.config.share_group_max_size} members.")
            _log.info("member_joins_share_group", group_id=group_id, member_id=req.member_id)
            member = ShareGroupMember(req.member_id)
        elif req.member_epoch != 0:
            self.throw_if_member_epoch_is_invalid(member, req.member_epoch)
        updated = dataclasses.replace(
            member,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            subscribed_topic_names=(frozenset(req.subscribed_topic_names) if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            client_id=req.client_id, client_host=req.client_host)
        bump = group.group_epoch == 0 or updated.subscribed_topic_names != member.subscribed_topic_names \
            or member.member_id not in group.members
        topics = group.compute_subscribed_topic_names(group.members.get(member.member_id), updated)
        if bump or group.metadata_version != self.image.topics_version:
            metadata_hash = compute_metadata_hash(topics, self.image)
            group.metadata_version = self.image.topics_version
            if bump or metadata_hash != group.metadata_hash:
                group.metadata_hash = metadata_hash
                group.set_group_epoch(group.group_epoch + 1)
                _log.info("group_epoch_bumped", group_id=group_id, epoch=group.group_epoch)
                self._on_rebalance()
        if group.group_epoch > group.target_assignment_epoch:
            self._update_target_assignment(group, updated)
        target = group.target_assignment.get(updated.member_id, EMPTY_ASSIGNMENT)
        reconciled = dataclasses.replace(
            updated, previous_member_epoch=member.member_epoch, member_epoch=group.target_assignment_epoch,
            assigned_partitions=target) if updated.member_epoch != group.target_assignment_epoch \
            or updated.assigned_partitions != target else updated
        group.update_member(reconciled)
        self.schedule_session_timeout(group_id, reconciled.member_id)
        assignment = None
        if req.member_epoch == 0 or req.subscribed_topic_names is not None \
                or dict(reconciled.assigned_partitions) != dict(member.assigned_partitions):
            assignment = dict(reconciled.assigned_partitions)
        return ShareGroupHeartbeatResult(Errors.NONE, None, reconciled.member_id, reconciled.member_epoch,
                                         self.heartbeat_interval_ms(group_id), assignment)

    @staticmethod
    def throw_if_member_epoch_is_invalid(member: ShareGroupMember, received: int) -> None:
        """Kafka's ``throwIfShareGroupMemberEpochIsInvalid``: an epoch ahead of the member's, or
        behind it other than the previous epoch (an answer that was lost), is fenced."""
        if received > member.member_epoch:
            raise KafkaError(Errors.FENCED_MEMBER_EPOCH,
                             f"The share group member has a greater member epoch ({received}) than the one known "
                             f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                             f"partitions and rejoin.")
        if received < member.member_epoch and received != member.previous_member_epoch:
            raise KafkaError(Errors.FENCED_MEMBER_EPOCH,
                             f"The share group member has a smaller member epoch ({received}) than the one known "
                             f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                             f"partitions and rejoin.")

    def _subscribed_topic_ids(self, member: ShareGroupMember) -> frozenset[uuid.UUID]:
        topics = self.image.topics
        return frozenset(topics[name].topic_id for name in member.subscribed_topic_names if name in topics)

    def _update_target_assignment(self, group: ShareGroup, updated: ShareGroupMember | None) -> None:
        """Run the assignor for the group epoch (with ``updated`` in place of the member it
        updates) and apply the new targets and the target epoch to the group."""
        builder: TargetAssignmentBuilder[ShareGroupMember, tuple[str, Assignment] | int] = TargetAssignmentBuilder(
            group.group_epoch, self.assignor, self.image, self._subscribed_topic_ids,
            lambda member_id, assignment: (member_id, assignment), lambda epoch: epoch,
        ).with_group(group.members, group.static_members, group.subscription_type, group.target_assignment,
                     group.inverted_target_assignment)
        if updated is not None:
            builder.add_or_update_member(updated.member_id, updated)
        result = builder.build()
        for record in result.records:
            if isinstance(record, tuple):
                group.update_target_assignment(*record)
            else:
                group.set_target_assignment_epoch(record)
        _log.info("target_assignment_computed", group_id=group.group_id, epoch=group.group_epoch,
                  assignor=self.assignor.name, members=len(result.target_assignment))

    def _leave(self, group: ShareGroup, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResult:
        member = group.member(req.member_id)
        _log.info("member_left_share_group", group_id=group.group_id, member_id=member.member_id)
        self.remove_member(group, member.member_id)
        return ShareGroupHeartbeatResult(Errors.NONE, None, req.member_id, LEAVE_GROUP_MEMBER_EPOCH)

    def remove_member(self, group: ShareGroup, member_id: str) -> None:
        """Remove a member and bump the group epoch (Kafka's ``shareGroupFenceMember``): the others
        get the new target assignment on their next heartbeat (lock held)."""
        self.timer.cancel(session_timeout_key(group.group_id, member_id))
        group.remove_member(member_id)
        group.remove_target_assignment(member_id)
        group.set_group_epoch(group.group_epoch + 1)
        self._on_rebalance()
        if group.members:
            self._update_target_assignment(group, None)
        else:
            group.set_target_assignment_epoch(group.group_epoch)

    # ================================================================== timers
    def schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.timer.schedule(session_timeout_key(group_id, member_id), self.session_timeout_ms(group_id),
                            lambda: self._session_expired(group_id, member_id))

    def _session_expired(self, group_id: str, member_id: str) -> None:
        group = self._acquire(group_id, create=False)
        if group is None:
            return
        try:
            if not isinstance(group, ShareGroup) or group.is_dead() or member_id not in group.members:
                return
            _log.info("member_fenced", group_id=group_id, member_id=member_id, reason="the member session expired")
            self.remove_member(group, member_id)
        finally:
            group.lock.release()
        self._on_session_expired()

    def on_group_unloaded(self, group: ShareGroup) -> None:
        with group.lock:
            for member_id in list(group.members):
                self.timer.cancel(session_timeout_key(group.group_id, member_id))
            group.mark_dead("partition unloaded")

    # ================================================================== ShareGroupDescribe
    def describe(self, group_id: str) -> ShareGroupDescription:
        """ShareGroupDescribe of one group this coordinator owns (Kafka's ``asDescribedGroup``)."""
        group = self.group_manager.get_group(group_id)
        if group is None:
            return ShareGroupDescription(group_id, Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if not isinstance(group, ShareGroup):
            return ShareGroupDescription(group_id, Errors.GROUP_ID_NOT_FOUND,
                                         f"Group {group_id} is not a share group.")
        with group.lock:
            if group.is_dead():
                return ShareGroupDescription(group_id, Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            members = [ShareGroupMemberDescription(
                m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                tuple(sorted(m.subscribed_topic_names)), self.describe_assignment(m.assigned_partitions))
                for m in group.members.values()]
            return ShareGroupDescription(group_id, Errors.NONE, None, group.state.value, group.group_epoch,
                                         group.target_assignment_epoch, self.assignor.name, members)

    def describe_assignment(self, assignment: Assignment) -> list[tuple[uuid.UUID, str, tuple[int, ...]]]:
        out = []
        for topic_id, partitions in assignment.items():
            name = self.image.topics_by_id.get(topic_id)
            if name is not None:
                out.append((topic_id, name, tuple(sorted(partitions))))
        return out
