"""The consumer group protocol's APIs (KIP-848) → ``GroupCoordinator``: ConsumerGroupHeartbeat
and ConsumerGroupDescribe (Kafka's ``KafkaApis.handleConsumerGroupHeartbeat`` and
``handleConsumerGroupDescribe``).

Both are listed in ApiVersions whatever the configuration, as Kafka lists them; while the
consumer protocol is off (``group.coordinator.rebalance.protocols`` without ``consumer``, the
default as Kafka 3.9, ``emulator.kafka.version=3.9``) they answer UNSUPPORTED_VERSION in the
response body (Kafka's ``isConsumerGroupProtocolEnabled``). Version 0 of ConsumerGroupHeartbeat
lets the coordinator generate the member id; v1 (KIP-1082) requires the client's and adds
``SubscribedTopicRegex``. ConsumerGroupDescribe v1 adds each member's type (0 consumer, 1 classic).
"""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Callable

from kafka_emu.broker.apis._common import AUTHORIZED_OPS_OMITTED, ZERO_THROTTLE, duration_ms, respond, respond_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import GROUP, TOPIC, Op, authorized_operations, deny, filter_authorized
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.config import CONSUMER, REBALANCE_PROTOCOLS
from kafka_emu.coordinator.group.results import (
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResult,
)

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis


def consumer_protocol_enabled(apis: KafkaApis) -> bool:
    return CONSUMER in apis.config[REBALANCE_PROTOCOLS]   # type: ignore[operator]


def handle_consumer_group_heartbeat(apis: KafkaApis, request: Request) -> None:
    gc = apis.group_coordinator
    if gc is None or not consumer_protocol_enabled(apis):
        respond_error(apis, request, Errors.UNSUPPORTED_VERSION if gc is not None else Errors.COORDINATOR_NOT_AVAILABLE)
        return
    body = request.body
    if heartbeat_refused(apis, request):
        return
    owned = body.topic_partitions
    rebalance_timeout = body.rebalance_timeout
    req = ConsumerGroupHeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=int(body.member_epoch),
        instance_id=body.instance_id, rack_id=body.rack_id,
        rebalance_timeout_ms=duration_ms(rebalance_timeout) if rebalance_timeout is not None else -1,
        subscribed_topic_names=(tuple(body.subscribed_topic_names) if body.subscribed_topic_names is not None
                                else None),
        subscribed_topic_regex=getattr(body, "subscribed_topic_regex", None),
        server_assignor=body.server_assignor,
        topic_partitions=(None if owned is None
                          else tuple((tp.topic_id, tuple(int(p) for p in tp.partitions)) for tp in owned)),
        client_id=request.client_id or "", client_host=request.client_host or "",
        api_version=request.api_version)

    gc.handle_consumer_group_heartbeat(req, heartbeat_responder(apis, request))


def heartbeat_refused(apis: KafkaApis, request: Request) -> bool:
    """Kafka's handleConsumerGroupHeartbeat and handleShareGroupHeartbeat: READ on the group (else
    GROUP_AUTHORIZATION_FAILED), DESCRIBE on each subscribed topic (else TOPIC_AUTHORIZATION_FAILED).
    True when the heartbeat was answered with the refusal."""
    body = request.body
    if deny(apis, request, Op.READ, GROUP, body.group_id, Errors.GROUP_AUTHORIZATION_FAILED):
        return True
    names = body.subscribed_topic_names or ()
    if len(filter_authorized(apis, request, Op.DESCRIBE, TOPIC, names)) < len(set(names)):
        respond_error(apis, request, Errors.TOPIC_AUTHORIZATION_FAILED)
        return True
    return False


def heartbeat_responder(apis: KafkaApis, request: Request
                        ) -> Callable[[ConsumerGroupHeartbeatResult], None]:
    """How a ConsumerGroupHeartbeat or ShareGroupHeartbeat is answered: the member's id and epoch,
    the heartbeat interval, and its assignment (topic id -> partitions) when the result has one."""
    cls = response_schema(request.api_key, request.api_version)
    assignment_cls = item_cls(cls, "assignment")
    partitions_cls = item_cls(assignment_cls, "topic_partitions")

    def answer(result: ConsumerGroupHeartbeatResult) -> None:
        assignment = None
        if result.assignment is not None:
            assignment = build(assignment_cls, topic_partitions=tuple(
                build(partitions_cls, topic_id=topic_id, partitions=tuple(sorted(ps)))
                for topic_id, ps in result.assignment.items()))
        respond(apis, request, build(
            cls, throttle_time=ZERO_THROTTLE, error_code=result.error, error_message=result.error_message,
            member_id=result.member_id, member_epoch=result.member_epoch,
            heartbeat_interval=timedelta(milliseconds=result.heartbeat_interval_ms), assignment=assignment))
    return answer


def refuse_group_describe(apis: KafkaApis, request: Request, error: int) -> None:
    """A ConsumerGroupDescribe or ShareGroupDescribe answered with ``error`` on every group (Kafka's
    ``getErrorResponse`` of both): the group type is off, or no coordinator runs here."""
    cls = response_schema(request.api_key, request.api_version)
    group_cls = item_cls(cls, "groups")
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, groups=tuple(
        build(group_cls, error_code=error, error_message=None, group_id=group_id, group_state="", group_epoch=0,
              assignment_epoch=0, assignor_name="", members=(), authorized_operations=AUTHORIZED_OPS_OMITTED)
        for group_id in request.body.group_ids)))


def handle_consumer_group_describe(apis: KafkaApis, request: Request) -> None:
    gc = apis.group_coordinator
    cls = response_schema(ApiKeys.CONSUMER_GROUP_DESCRIBE, request.api_version)
    group_cls = item_cls(cls, "groups")
    if gc is None or not consumer_protocol_enabled(apis):
        refuse_group_describe(apis, request, Errors.UNSUPPORTED_VERSION if gc is not None
                              else Errors.COORDINATOR_NOT_AVAILABLE)
        return
    member_cls = item_cls(group_cls, "members")
    assignment_cls = item_cls(member_cls, "assignment")
    partitions_cls = item_cls(assignment_cls, "topic_partitions")
    include_ops = bool(request.body.include_authorized_operations)

    def assignment(parts: list) -> object:
        return build(assignment_cls, topic_partitions=tuple(
            build(partitions_cls, topic_id=topic_id, topic_name=name, partitions=partitions)
            for topic_id, name, partitions in parts))

    groups = []
    names = list(request.body.group_ids)
    allowed = filter_authorized(apis, request, Op.DESCRIBE, GROUP, names)   # Kafka: DESCRIBE on each group
    groups.extend(build(group_cls, error_code=Errors.GROUP_AUTHORIZATION_FAILED, error_message=None, group_id=g,
                        group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=(),
                        authorized_operations=AUTHORIZED_OPS_OMITTED) for g in names if g not in allowed)
    for d in gc.handle_consumer_group_describe([g for g in names if g in allowed]):
        members = tuple(build(
            member_cls, member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
            member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=m.subscribed_topic_names, subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=assignment(m.assignment), target_assignment=assignment(m.target_assignment),
            member_type=m.member_type) for m in d.members)
        groups.append(build(group_cls, error_code=d.error, error_message=d.error_message, group_id=d.group_id,
                            group_state=d.state, group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                            assignor_name=d.assignor_name, members=members,
                            authorized_operations=authorized_operations(apis, request, GROUP, d.group_id)
                            if include_ops and d.error == Errors.NONE else AUTHORIZED_OPS_OMITTED))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, groups=tuple(groups)))


APIS = (
    ApiSpec(ApiKeys.CONSUMER_GROUP_HEARTBEAT, 0, 1, handle_consumer_group_heartbeat),
    ApiSpec(ApiKeys.CONSUMER_GROUP_DESCRIBE, 0, 1, handle_consumer_group_describe),
)
