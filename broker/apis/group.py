"""Classic group APIs → ``GroupCoordinator``: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups and OffsetDelete (which also
reach consumer groups: their classic members, their offsets, their listing).

These are Kafka's ``KafkaApis.handleJoinGroupRequest`` & co.: unpack the versioned kio request
into the coordinator's plain arguments, and map its result (``coordinator.group.results``) back onto
the versioned kio response in the callback. JoinGroup and SyncGroup callbacks may fire later
on another thread (a DelayedJoin completing, a follower's sync released by the leader's); the
handler thread returns at once, as in Kafka.

Version rules carried over from Kafka: JoinGroup v0 has no rebalance timeout (the session
timeout is used); v4+ without a group instance id requires a known member id (KIP-394);
JoinGroup/SyncGroup protocol name and type are nullable only from v7/v5; LeaveGroup v0-v2 names
one member and answers with only the top-level error; OffsetFetch v8+ batches groups; v1 has
no top-level error, so it goes into every partition; OffsetCommit older than v5 carries a
retention time that Kafka ignores since 2.1, as we do. OffsetDelete answers
UNKNOWN_TOPIC_OR_PARTITION itself for partitions the metadata does not know (without asking the
coordinator), and a group-level error with no topics. OffsetCommit v9 and OffsetFetch v9 carry
a consumer group member's epoch (STALE_MEMBER_EPOCH when it is not the member's); DescribeGroups
v6 answers GROUP_ID_NOT_FOUND for a group that is not a classic group here (KIP-1043; earlier
versions: state Dead, no error). As Kafka 3.9 (``emulator.kafka.version=3.9``):
OffsetCommit v1 sets each partition's commit timestamp (-1: now), and OffsetCommit v0 and
OffsetFetch v0, which Kafka 3.9 served from ZooKeeper only, get the UNSUPPORTED_VERSION answers
of a KRaft 3.9 broker.
"""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable

from kafka_emu.broker.apis._common import AUTHORIZED_OPS_OMITTED, ZERO_THROTTLE, duration_ms, respond, respond_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import (
    CLUSTER, GROUP, TOPIC, Op, authorize, authorized_operations, deny, filter_authorized,
)
from kafka_emu.broker.apis.share_group_offsets import share_admin
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.broker.security.acl import AclOperation
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.results import (
    DEAD_SUMMARY,
    JoinGroupResult,
    LeaveGroupResult,
    OffsetAndMetadata,
    OffsetFetchPartitionData,
    SyncGroupResult,
)

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.coordinator.group.group_coordinator import GroupCoordinator

PartitionOffsets = dict[str, list[tuple[int, "OffsetFetchPartitionData | None"]]]   # topic -> [(partition, data)]

DEFAULT_TIMESTAMP = -1   # OffsetCommitRequest.DEFAULT_TIMESTAMP: "commit now"
GROUP_NOT_FOUND_VERSION = 6   # DescribeGroups answers GROUP_ID_NOT_FOUND from v6 (KIP-1043)


def _ms(value: timedelta | None) -> int:
    """kio carries timeouts as ``timedelta``; the coordinator speaks milliseconds."""
    return -1 if value is None else duration_ms(value)


def _coordinator(apis: KafkaApis, request: Request) -> GroupCoordinator | None:
    gc = apis.group_coordinator
    if gc is None:
        respond_error(apis, request, Errors.COORDINATOR_NOT_AVAILABLE)
    return gc


def _group_coordinator(apis: KafkaApis, request: Request, operation: AclOperation = Op.READ
                       ) -> GroupCoordinator | None:
    """The coordinator, once ``operation`` on the request's group is authorized (Kafka checks
    first: GROUP_AUTHORIZATION_FAILED everywhere otherwise)."""
    if deny(apis, request, operation, GROUP, request.body.group_id, Errors.GROUP_AUTHORIZATION_FAILED):
        return None
    return _coordinator(apis, request)


# --- JoinGroup ---------------------------------------------------------------------------------

def handle_join_group(apis: KafkaApis, request: Request) -> None:
    gc = _group_coordinator(apis, request)
    if gc is None:
        return
    body = request.body
    version = request.api_version
    cls = response_schema(ApiKeys.JOIN_GROUP, version)
    member_cls = item_cls(cls, "members")
    instance_id = getattr(body, "group_instance_id", None)
    session_ms = _ms(body.session_timeout)
    rebalance_ms = _ms(getattr(body, "rebalance_timeout", None)) if version >= 1 else session_ms
    nullable_names = version >= 7

    def callback(result: JoinGroupResult) -> None:
        members = tuple(build(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
                              metadata=m.metadata) for m in result.members)
        protocol_name = result.protocol_name
        if protocol_name is None and not nullable_names:
            protocol_name = ""
        respond(apis, request, build(
            cls, throttle_time=ZERO_THROTTLE, error_code=result.error,
            generation_id=result.generation_id, protocol_type=result.protocol_type,
            protocol_name=protocol_name, leader=result.leader_id or "",
            skip_assignment=bool(result.skip_assignment), member_id=result.member_id or "",
            members=members))

    gc.handle_join_group(
        group_id=body.group_id, member_id=body.member_id or "", group_instance_id=instance_id,
        require_known_member_id=version >= 4 and instance_id is None,
        client_id=request.client_id or "", client_host=request.client_host or "",
        rebalance_timeout_ms=rebalance_ms, session_timeout_ms=session_ms,
        protocol_type=body.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in body.protocols],
        callback=callback, reason=getattr(body, "reason", None),
        supports_skipping_assignment=version >= 9)


# --- SyncGroup ---------------------------------------------------------------------------------

def handle_sync_group(apis: KafkaApis, request: Request) -> None:
    gc = _group_coordinator(apis, request)
    if gc is None:
        return
    body = request.body
    cls = response_schema(ApiKeys.SYNC_GROUP, request.api_version)

    def callback(result: SyncGroupResult) -> None:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=result.error,
                                     protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                                     assignment=bytes(result.member_assignment or b"")))

    gc.handle_sync_group(
        group_id=body.group_id, generation=int(body.generation_id), member_id=body.member_id,
        protocol_type=getattr(body, "protocol_type", None), protocol_name=getattr(body, "protocol_name", None),
        group_instance_id=getattr(body, "group_instance_id", None),
        group_assignment={a.member_id: bytes(a.assignment) for a in body.assignments},
        callback=callback)


# --- Heartbeat ---------------------------------------------------------------------------------

def handle_heartbeat(apis: KafkaApis, request: Request) -> None:
    gc = _group_coordinator(apis, request)
    if gc is None:
        return
    body = request.body
    cls = response_schema(ApiKeys.HEARTBEAT, request.api_version)

    def callback(error: int) -> None:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=error))

    gc.handle_heartbeat(body.group_id, body.member_id, getattr(body, "group_instance_id", None),
                        int(body.generation_id), callback)


# --- LeaveGroup --------------------------------------------------------------------------------

def handle_leave_group(apis: KafkaApis, request: Request) -> None:
    gc = _group_coordinator(apis, request)
    if gc is None:
        return
    body = request.body
    version = request.api_version
    cls = response_schema(ApiKeys.LEAVE_GROUP, version)
    if version >= 3:
        members = [(m.member_id, m.group_instance_id, getattr(m, "reason", None)) for m in body.members]
    else:
        members = [(body.member_id, None, None)]

    def callback(result: LeaveGroupResult) -> None:
        if version >= 3:
            member_cls = item_cls(cls, "members")
            out = tuple(build(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
                              error_code=m.error) for m in result.member_responses)
            respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE,
                                         error_code=result.top_level_error, members=out))
            return
        error = result.top_level_error
        if not error and result.member_responses:
            error = result.member_responses[0].error
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=error))

    gc.handle_leave_group(body.group_id, members, callback)


# --- OffsetCommit ------------------------------------------------------------------------------

class OffsetCommitParts:
    """An OffsetCommit or TxnOffsetCommit request's offsets (same topic/partition shape): what
    goes to the coordinator, what is answered without it (unknown partitions), and the answer."""

    def __init__(self, apis: KafkaApis, request: Request, api_key: int) -> None:
        self.apis = apis
        self.request = request
        self.cls = response_schema(api_key, request.api_version)
        now_ms = apis.time.milliseconds()
        md = apis.metadata
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        self.early: dict[tuple[str, int], int] = {}
        self.order: list[tuple[str, int]] = []
        authorized = filter_authorized(apis, request, Op.READ, TOPIC, (t.name for t in request.body.topics))
        for t in request.body.topics:
            info = md.topic(t.name)
            for p in t.partitions:
                tp = (t.name, int(p.partition_index))
                self.order.append(tp)
                if t.name not in authorized:
                    self.early[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
                    continue
                if info is None or tp[1] not in info.partitions:
                    self.early[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                epoch = int(getattr(p, "committed_leader_epoch", -1))
                commit_ms = int(getattr(p, "commit_timestamp", DEFAULT_TIMESTAMP))   # OffsetCommit v1 only
                self.offsets[tp] = OffsetAndMetadata(offset=int(p.committed_offset),
                                                     leader_epoch=epoch if epoch >= 0 else None,
                                                     metadata=p.committed_metadata or "",
                                                     commit_timestamp=now_ms if commit_ms == DEFAULT_TIMESTAMP
                                                     else commit_ms)

    def respond(self, result: dict[tuple[str, int], int],
                translate: Callable[[int], int] = lambda code: code) -> None:
        """Answer every requested partition: ``result`` (the coordinator's) over the early errors."""
        topic_cls = item_cls(self.cls, "topics")
        part_cls = item_cls(topic_cls, "partitions")
        merged = {**self.early, **result}
        by_topic: dict[str, list[object]] = {}
        for tp in self.order:
            by_topic.setdefault(tp[0], []).append(
                build(part_cls, partition_index=tp[1], error_code=translate(merged.get(tp, Errors.NONE))))
        respond(self.apis, self.request, build(self.cls, throttle_time=ZERO_THROTTLE, topics=tuple(
            build(topic_cls, name=name, partitions=tuple(parts)) for name, parts in by_topic.items())))


def handle_offset_commit(apis: KafkaApis, request: Request) -> None:
    body = request.body
    gc = _group_coordinator(apis, request)
    if gc is None:
        return
    parts = OffsetCommitParts(apis, request, ApiKeys.OFFSET_COMMIT)
    offsets, callback = parts.offsets, parts.respond

    if request.api_version == 0 and offsets:
        # Kafka 3.9 kept v0 commits in ZooKeeper; a KRaft broker refuses them (requireZkOrThrow:
        # UnsupportedVersionException), and the error response names every requested partition
        callback({tp: Errors.UNSUPPORTED_VERSION for tp in parts.order})
        return
    if not offsets:
        callback({})
        return
    generation = int(getattr(body, "generation_id_or_member_epoch", getattr(body, "generation_id", -1)))
    gc.handle_commit_offsets(body.group_id, body.member_id or "", getattr(body, "group_instance_id", None),
                             generation, offsets, callback, api_version=request.api_version)


# --- OffsetFetch -------------------------------------------------------------------------------

_UNAUTHORIZED = OffsetFetchPartitionData(-1, None, "", Errors.TOPIC_AUTHORIZATION_FAILED)


def _fetch_group(apis: KafkaApis, request: Request, gc: GroupCoordinator, group_id: str, topics: Any,
                 require_stable: bool, member_id: str | None = None, member_epoch: int = -1
                 ) -> tuple[int, PartitionOffsets]:
    """(top-level error, {topic: [(partition, data)]}) in request order (or sorted for 'all').
    DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; named topics without DESCRIBE get
    TOPIC_AUTHORIZATION_FAILED, and 'all' leaves them out (Kafka's ``handleOffsetFetchRequest``)."""
    if not authorize(apis, request, Op.DESCRIBE, GROUP, group_id):
        return Errors.GROUP_AUTHORIZATION_FAILED, {}
    partitions = None
    allowed: set[str] | None = None
    if topics is not None:
        allowed = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, (t.name for t in topics))
        partitions = [(t.name, int(p)) for t in topics for p in t.partition_indexes if t.name in allowed]
    error, data = gc.handle_fetch_offsets(group_id, require_stable, partitions, member_id, member_epoch)
    out: PartitionOffsets = {}
    if topics is not None:
        for t in topics:
            for p in t.partition_indexes:
                d = data.get((t.name, int(p))) if t.name in allowed else _UNAUTHORIZED
                out.setdefault(t.name, []).append((int(p), d))
    else:
        described = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, (topic for topic, _ in data))
        for (topic, p), d in sorted(data.items()):
            if topic in described:
                out.setdefault(topic, []).append((p, d))
    return error, out


def _fetch_topics(topic_cls: type, part_cls: type, grouped: PartitionOffsets,
                  partition_error: int) -> tuple[object, ...]:
    topics = []
    for name, parts in grouped.items():
        entries = []
        for p, d in parts:
            if d is None:
                offset, epoch, meta, err = -1, -1, "", partition_error
            else:
                offset = d.offset
                epoch = d.leader_epoch if d.leader_epoch is not None else -1
                meta = d.metadata or ""
                err = d.error or partition_error
            entries.append(build(part_cls, partition_index=p, committed_offset=offset,
                                 committed_leader_epoch=epoch, metadata=meta, error_code=err))
        topics.append(build(topic_cls, name=name, partitions=tuple(entries)))
    return tuple(topics)


def handle_offset_fetch(apis: KafkaApis, request: Request) -> None:
    body = request.body
    version = request.api_version
    cls = response_schema(ApiKeys.OFFSET_FETCH, version)
    if version == 0:
        # Kafka 3.9 read v0 offsets from ZooKeeper; a KRaft broker answers every requested
        # partition with UNSUPPORTED_VERSION (requireZkOrThrow), offset -1, no metadata
        topic_cls = item_cls(cls, "topics")
        grouped: PartitionOffsets = {}
        for t in body.topics:
            grouped.setdefault(t.name, []).extend((int(p), None) for p in t.partition_indexes)
        respond(apis, request, build(cls, topics=_fetch_topics(topic_cls, item_cls(topic_cls, "partitions"),
                                                               grouped, Errors.UNSUPPORTED_VERSION)))
        return
    gc = _coordinator(apis, request)
    if gc is None:
        return
    require_stable = bool(getattr(body, "require_stable", False))
    if version >= 8:
        group_cls = item_cls(cls, "groups")
        topic_cls = item_cls(group_cls, "topics")
        part_cls = item_cls(topic_cls, "partitions")
        groups = []
        for g in body.groups:
            error, grouped = _fetch_group(apis, request, gc, g.group_id, g.topics, require_stable,
                                          getattr(g, "member_id", None), int(getattr(g, "member_epoch", -1)))
            topics = _fetch_topics(topic_cls, part_cls, grouped if not error else {}, 0)
            groups.append(build(group_cls, group_id=g.group_id, topics=topics, error_code=error))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, groups=tuple(groups)))
        return
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    error, grouped = _fetch_group(apis, request, gc, body.group_id, body.topics, require_stable)
    if version < 2:
        # no top-level error field: Kafka reports it on every requested partition
        if error and body.topics is not None:
            grouped = {t.name: [(int(p), None) for p in t.partition_indexes] for t in body.topics}
        topics = _fetch_topics(topic_cls, part_cls, grouped, error)
    else:
        topics = _fetch_topics(topic_cls, part_cls, grouped if not error else {}, 0)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=topics, error_code=error))


# --- DescribeGroups / ListGroups / DeleteGroups --------------------------------------------------

def handle_describe_groups(apis: KafkaApis, request: Request) -> None:
    gc = _coordinator(apis, request)
    if gc is None:
        return
    cls = response_schema(ApiKeys.DESCRIBE_GROUPS, request.api_version)
    group_cls = item_cls(cls, "groups")
    member_cls = item_cls(group_cls, "members")
    include_ops = bool(getattr(request.body, "include_authorized_operations", False))
    groups = []
    names = list(request.body.groups)
    allowed = filter_authorized(apis, request, Op.DESCRIBE, GROUP, names)
    described = {g: (e, s) for g, e, s in gc.handle_describe_groups([n for n in names if n in allowed])}
    for group_id in names:
        if group_id not in allowed:
            groups.append(build(group_cls, error_code=Errors.GROUP_AUTHORIZATION_FAILED, group_id=group_id,
                                group_state="", protocol_type="", protocol_data="", members=(),
                                authorized_operations=AUTHORIZED_OPS_OMITTED))
            continue
        error, summary = described[group_id]
        message = None
        if summary is DEAD_SUMMARY and request.api_version >= GROUP_NOT_FOUND_VERSION:
            # KIP-1043: v6 names a group that is not (or not a classic) group here
            error, message = Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
        members = tuple(build(member_cls, member_id=m.member_id, group_instance_id=m.group_instance_id,
                              client_id=m.client_id, client_host=m.client_host,
                              member_metadata=bytes(m.metadata or b""),
                              member_assignment=bytes(m.assignment or b""))
                        for m in summary.members)
        groups.append(build(group_cls, error_code=error, error_message=message, group_id=group_id,
                            group_state=summary.state, protocol_type=summary.protocol_type,
                            protocol_data=summary.protocol, members=members,
                            authorized_operations=authorized_operations(apis, request, GROUP, group_id)
                            if include_ops else AUTHORIZED_OPS_OMITTED))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, groups=tuple(groups)))


def handle_list_groups(apis: KafkaApis, request: Request) -> None:
    gc = _coordinator(apis, request)
    if gc is None:
        return
    cls = response_schema(ApiKeys.LIST_GROUPS, request.api_version)
    group_cls = item_cls(cls, "groups")
    states = getattr(request.body, "states_filter", None) or None
    types = getattr(request.body, "types_filter", None) or None
    error, overviews = gc.handle_list_groups(states, types)
    if not authorize(apis, request, Op.DESCRIBE, CLUSTER):   # else only the groups it may describe
        allowed = filter_authorized(apis, request, Op.DESCRIBE, GROUP, (o.group_id for o in overviews))
        overviews = [o for o in overviews if o.group_id in allowed]
    groups = tuple(build(group_cls, group_id=o.group_id, protocol_type=o.protocol_type,
                         group_state=o.state, group_type=o.group_type) for o in overviews)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=error, groups=groups))


def handle_delete_groups(apis: KafkaApis, request: Request) -> None:
    gc = _coordinator(apis, request)
    if gc is None:
        return
    cls = response_schema(ApiKeys.DELETE_GROUPS, request.api_version)
    result_cls = item_cls(cls, "results")
    names = list(request.body.groups_names)
    allowed = filter_authorized(apis, request, Op.DELETE, GROUP, names)
    share_groups = [g for g in allowed if gc.share_group_exists(g) == Errors.NONE]
    result = gc.handle_delete_groups([n for n in names if n in allowed])
    result.update({n: Errors.GROUP_AUTHORIZATION_FAILED for n in names if n not in allowed})
    deleted_share_groups = [g for g in share_groups if result.get(g) == Errors.NONE]
    if deleted_share_groups:
        # a deleted share group's share-partition state goes too (Kafka's DeleteShareGroupState)
        admin = share_admin(apis)
        for g in deleted_share_groups:
            admin.delete(g, admin.group_partitions(g), lambda results: None)
    results = tuple(build(result_cls, group_id=g, error_code=result.get(g, 0)) for g in names)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=results))


def handle_offset_delete(apis: KafkaApis, request: Request) -> None:
    """Kafka's ``handleOffsetDeleteRequest``: delete committed offsets of partitions the group
    does not consume (``GroupCoordinator.handle_delete_offsets`` has the group rules); DELETE on
    the group, READ on each topic."""
    gc = _group_coordinator(apis, request, Op.DELETE)
    if gc is None:
        return
    body = request.body
    cls = response_schema(ApiKeys.OFFSET_DELETE, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    requested = [(t.name, int(p.partition_index)) for t in body.topics for p in t.partitions]
    readable = filter_authorized(apis, request, Op.READ, TOPIC, (t for t, _ in requested))
    errors = {tp: Errors.TOPIC_AUTHORIZATION_FAILED if tp[0] not in readable else Errors.UNKNOWN_TOPIC_OR_PARTITION
              for tp in requested if tp[0] not in readable or apis.metadata.partition_state(*tp) is None}
    group_error, results = gc.handle_delete_offsets(body.group_id, [tp for tp in requested if tp not in errors])
    if group_error:
        respond(apis, request, build(cls, error_code=group_error, throttle_time=ZERO_THROTTLE, topics=()))
        return
    errors.update(results)
    by_topic: dict[str, list[Any]] = {}
    for tp in dict.fromkeys(requested):
        by_topic.setdefault(tp[0], []).append(build(part_cls, partition_index=tp[1], error_code=errors[tp]))
    respond(apis, request, build(cls, error_code=Errors.NONE, throttle_time=ZERO_THROTTLE, topics=tuple(
        build(topic_cls, name=name, partitions=tuple(parts)) for name, parts in by_topic.items())))


APIS = (   # OffsetCommit and OffsetFetch v10 name topics by id
    ApiSpec(ApiKeys.OFFSET_COMMIT, 0, 9, handle_offset_commit),
    ApiSpec(ApiKeys.OFFSET_FETCH, 0, 9, handle_offset_fetch),
    ApiSpec(ApiKeys.JOIN_GROUP, 0, 9, handle_join_group),
    ApiSpec(ApiKeys.HEARTBEAT, 0, 4, handle_heartbeat),
    ApiSpec(ApiKeys.LEAVE_GROUP, 0, 5, handle_leave_group),
    ApiSpec(ApiKeys.SYNC_GROUP, 0, 5, handle_sync_group),
    ApiSpec(ApiKeys.DESCRIBE_GROUPS, 0, 6, handle_describe_groups),
    ApiSpec(ApiKeys.LIST_GROUPS, 0, 5, handle_list_groups),
    ApiSpec(ApiKeys.DELETE_GROUPS, 0, 2, handle_delete_groups),
    ApiSpec(ApiKeys.OFFSET_DELETE, 0, 0, handle_offset_delete),
)
