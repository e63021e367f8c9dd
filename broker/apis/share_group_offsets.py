"""The share-group offset admin APIs (KIP-932) → the group coordinator and the share coordinators:
DescribeShareGroupOffsets (90, v0-1; v1 adds each partition's lag), AlterShareGroupOffsets (91) and
DeleteShareGroupOffsets (92), Kafka's ``KafkaApis.handleDescribeShareGroupOffsetsRequest`` and
friends, sent to the group's coordinator.

A share group's "offset" in a partition is its share-partition start offset, kept by the share
coordinators (``broker.server.share.share_admin.ShareStateAdmin`` reaches them in process).
Describe answers -1 for a partition without state, every partition with state when the request
names no topics, and the lag as the partition leader's high watermark minus the start offset (a
difference on purpose: Kafka's lag also leaves out the records acknowledged above the start
offset, KIP-1226's delivery-complete count, which the emulator does not track). Alter and Delete need an empty group (NON_EMPTY_GROUP,
"The group is not empty."); a group of another type is GROUP_ID_NOT_FOUND ("Group <id> is not a
share group."); an unknown topic UNKNOWN_TOPIC_OR_PARTITION. Alter writes each new start offset
with a new state epoch (InitializeShareGroupState), so a share-partition leader's cached state is
fenced; both drop the leaders' cached share partitions. Authorization as Kafka's: Describe needs
DESCRIBE on the group and leaves out (all partitions asked) or refuses (named) the topics the
principal may not DESCRIBE; Alter needs READ and Delete DELETE on the group (else
GROUP_AUTHORIZATION_FAILED), and both READ on each topic (else TOPIC_AUTHORIZATION_FAILED for
it). UNSUPPORTED_VERSION while share groups are
off; served from Kafka 4.1 (``emulator.kafka.version``: Describe v0 as 4.1, v0-1 as 4.2).
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.apis.share_group import share_groups_enabled
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.security.acl import AclOperation
from kafka_emu.broker.server.auth_helper import GROUP, TOPIC, Op, authorize, filter_authorized
from kafka_emu.broker.server.share.share_admin import ShareStateAdmin
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis

NON_EMPTY_MESSAGE = "The group is not empty."
TOPIC_AUTHORIZATION_MESSAGE = "Topic authorization failed."


def share_admin(apis: KafkaApis) -> ShareStateAdmin:
    return ShareStateAdmin(apis.metadata, int(apis.config["share.coordinator.state.topic.num.partitions"]))


def _group_error(apis: KafkaApis, request: Request, group_id: str, operation: AclOperation,
                 need_empty: bool) -> tuple[int, str | None]:
    """Kafka's order: share groups on, ``operation`` allowed on the group, then the group itself."""
    gc = apis.group_coordinator
    if gc is None or not share_groups_enabled(apis):
        return (Errors.UNSUPPORTED_VERSION if gc is not None else Errors.COORDINATOR_NOT_AVAILABLE), None
    if not authorize(apis, request, operation, GROUP, group_id):
        return Errors.GROUP_AUTHORIZATION_FAILED, None
    error = gc.share_group_exists(group_id)
    if error == Errors.GROUP_ID_NOT_FOUND:
        if gc.group_manager.get_group(group_id) is not None:
            return error, f"Group {group_id} is not a share group."
        return (Errors.NONE, None) if need_empty else (error, f"Group {group_id} not found.")
    if error != Errors.NONE:
        return error, None
    if need_empty and not gc.share_group_is_empty(group_id):
        return Errors.NON_EMPTY_GROUP, NON_EMPTY_MESSAGE
    return Errors.NONE, None


def _refused_group(apis: KafkaApis, request: Request, cls: type, operation: AclOperation) -> bool:
    """Alter and Delete: answer the group's error (it must be an empty share group); True if so."""
    error, message = _group_error(apis, request, request.body.group_id, operation, need_empty=True)
    if error == Errors.NONE:
        return False
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=error, error_message=message,
                                 responses=()))
    return True


def _lag(apis: KafkaApis, topic: str, partition: int, start_offset: int) -> int:
    """The partition leader's high watermark minus the start offset (read in process)."""
    st = apis.metadata.partition_state(topic, partition)
    info = apis.metadata.broker(st.leader) if st is not None and st.leader >= 0 else None
    manager = info.share_partition_manager if info is not None else None
    p = manager.replica_manager.get_partition((topic, partition)) if manager is not None else None
    if start_offset < 0 or p is None or not p.is_leader:
        return -1
    return max(p.log.high_watermark - start_offset, 0)


def handle_describe(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, request.api_version)
    group_cls = item_cls(cls, "groups")
    topic_cls = item_cls(group_cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    admin = share_admin(apis)
    md = apis.metadata
    groups = []
    for g in request.body.groups:
        error, message = _group_error(apis, request, g.group_id, Op.DESCRIBE, need_empty=False)
        if error != Errors.NONE:
            groups.append(build(group_cls, group_id=g.group_id, topics=(), error_code=error, error_message=message))
            continue
        wanted: dict[str, list[int]] = {}
        if g.topics is None:
            for topic_id, partition in admin.group_partitions(g.group_id):
                name = md.topic_name(topic_id)
                if name is not None:
                    wanted.setdefault(name, []).append(partition)
        else:
            for t in g.topics:
                wanted.setdefault(t.topic_name, []).extend(int(p) for p in t.partitions)
        # Kafka: the offsets of topics the principal may not DESCRIBE are left out of an
        # all-partitions answer, and answered TOPIC_AUTHORIZATION_FAILED when named
        visible = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, wanted)
        hidden = [] if g.topics is None else [
            build(topic_cls, topic_name=name, topic_id=uuid.UUID(int=0), partitions=tuple(
                build(part_cls, partition_index=p, start_offset=-1, leader_epoch=-1, lag=-1,
                      error_code=Errors.TOPIC_AUTHORIZATION_FAILED, error_message=TOPIC_AUTHORIZATION_MESSAGE)
                for p in partitions)) for name, partitions in wanted.items() if name not in visible]
        topics = []
        for name, partitions in ((n, ps) for n, ps in wanted.items() if n in visible):
            topic_id = md.topic_id(name)
            parts = []
            for partition in partitions:
                if topic_id is None or md.partition_state(name, partition) is None:
                    parts.append(build(part_cls, partition_index=partition, start_offset=-1, leader_epoch=-1, lag=-1,
                                       error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, error_message=None))
                    continue
                r = admin.read(g.group_id, (topic_id, partition))
                parts.append(build(part_cls, partition_index=partition, start_offset=r.start_offset,
                                   leader_epoch=r.leader_epoch, lag=_lag(apis, name, partition, r.start_offset),
                                   error_code=r.error, error_message=r.error_message))
            topics.append(build(topic_cls, topic_name=name, topic_id=topic_id or uuid.UUID(int=0),
                                partitions=tuple(parts)))
        groups.append(build(group_cls, group_id=g.group_id, topics=tuple(topics + hidden), error_code=Errors.NONE,
                            error_message=None))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, groups=tuple(groups)))


def handle_alter(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.ALTER_SHARE_GROUP_OFFSETS, request.api_version)
    topic_cls = item_cls(cls, "responses")
    part_cls = item_cls(topic_cls, "partitions")
    body = request.body
    if _refused_group(apis, request, cls, Op.READ):
        return
    md = apis.metadata
    requested: list[tuple[str, int, int]] = [(t.topic_name, int(p.partition_index), int(p.start_offset))
                                             for t in body.topics for p in t.partitions]
    readable = filter_authorized(apis, request, Op.READ, TOPIC, [name for name, _p, _s in requested])
    offsets = {(md.topic_id(name), p): start for name, p, start in requested
               if name in readable and md.topic_id(name) is not None and md.partition_state(name, p) is not None}

    def done(results: dict[Any, int]) -> None:
        by_topic: dict[str, list[Any]] = {}
        for name, p, _start in requested:
            tid = md.topic_id(name)
            code = results.get((tid, p), Errors.UNKNOWN_TOPIC_OR_PARTITION) if name in readable \
                else Errors.TOPIC_AUTHORIZATION_FAILED
            by_topic.setdefault(name, []).append(build(part_cls, partition_index=p, error_code=code,
                                                       error_message=None))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, error_message=None,
                                     responses=tuple(build(topic_cls, topic_name=name,
                                                           topic_id=md.topic_id(name) or uuid.UUID(int=0),
                                                           partitions=tuple(ps)) for name, ps in by_topic.items())))

    share_admin(apis).alter(body.group_id, offsets, done)


def handle_delete(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.DELETE_SHARE_GROUP_OFFSETS, request.api_version)
    topic_cls = item_cls(cls, "responses")
    body = request.body
    if _refused_group(apis, request, cls, Op.DELETE):
        return
    md = apis.metadata
    admin = share_admin(apis)
    names = [t.topic_name for t in body.topics]
    readable = filter_authorized(apis, request, Op.READ, TOPIC, names)
    ids = {name: md.topic_id(name) for name in names}
    with_state = admin.group_partitions(body.group_id)
    partitions = [tp for tp in with_state if tp[0] in {ids[n] for n in readable}]

    def done(results: dict[Any, int]) -> None:
        topics = []
        for name in names:
            tid = ids[name]
            codes = [code for (t, _p), code in results.items() if t == tid]
            if name not in readable:
                topics.append(build(topic_cls, topic_name=name, topic_id=uuid.UUID(int=0),
                                    error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                                    error_message=TOPIC_AUTHORIZATION_MESSAGE))
                continue
            code = Errors.UNKNOWN_TOPIC_OR_PARTITION if tid is None else next(
                (c for c in codes if c != Errors.NONE), Errors.NONE)
            topics.append(build(topic_cls, topic_name=name, topic_id=tid or uuid.UUID(int=0), error_code=code,
                                error_message=None))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, error_message=None,
                                     responses=tuple(topics)))

    admin.delete(body.group_id, partitions, done)


APIS = (
    ApiSpec(ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, handle_describe),
    ApiSpec(ApiKeys.ALTER_SHARE_GROUP_OFFSETS, 0, 0, handle_alter),
    ApiSpec(ApiKeys.DELETE_SHARE_GROUP_OFFSETS, 0, 0, handle_delete),
)
