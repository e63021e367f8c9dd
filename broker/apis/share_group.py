"""The share group protocol's membership APIs (KIP-932) → ``GroupCoordinator``:
ShareGroupHeartbeat (76) and ShareGroupDescribe (77), v1 as Kafka 4.1+ serves them (v0 was Kafka
4.0's early access, removed in 4.1; Kafka 3.9 and 4.0 listed neither, so as those releases
(``emulator.kafka.version``) they are not served). Kafka's ``handleShareGroupHeartbeat`` and
``handleShareGroupDescribe``.

While share groups are off (``emulator.share.version=0``, as ``share.version=0`` in Kafka) both
are still listed in ApiVersions and answer UNSUPPORTED_VERSION in the body (Kafka's
``isShareGroupProtocolEnabled`` check); ShareGroupDescribe's error goes on every group, as
Kafka's ``getErrorResponse``.

Authorization as Kafka's: a heartbeat needs READ on the group (else GROUP_AUTHORIZATION_FAILED)
and DESCRIBE on every subscribed topic (else TOPIC_AUTHORIZATION_FAILED, the member is not
heartbeated); a describe needs DESCRIBE on each group, and a described group whose members are
assigned a topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED without
its members.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import AUTHORIZED_OPS_OMITTED, ZERO_THROTTLE, respond, respond_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import GROUP, TOPIC, Op, authorized_operations, filter_authorized
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.broker.apis.consumer_group import heartbeat_refused, heartbeat_responder, refuse_group_describe
from kafka_emu.coordinator.group.results import ShareGroupHeartbeatRequest
from kafka_emu.coordinator.share.config import SHARE_VERSION

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis


HIDDEN_TOPICS_MESSAGE = "The group has described topic(s) that the client is not authorized to describe."


def share_groups_enabled(apis: KafkaApis) -> bool:
    """Kafka's ``isShareGroupProtocolEnabled``: ``share.version`` finalized at 1 or more."""
    return int(apis.config[SHARE_VERSION]) >= 1   # type: ignore[arg-type]


def handle_share_group_heartbeat(apis: KafkaApis, request: Request) -> None:
    gc = apis.group_coordinator
    if gc is None or not share_groups_enabled(apis):
        respond_error(apis, request, Errors.UNSUPPORTED_VERSION if gc is not None else Errors.COORDINATOR_NOT_AVAILABLE)
        return
    body = request.body
    if heartbeat_refused(apis, request):
        return
    req = ShareGroupHeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=int(body.member_epoch),
        rack_id=body.rack_id,
        subscribed_topic_names=(tuple(body.subscribed_topic_names) if body.subscribed_topic_names is not None
                                else None),
        client_id=request.client_id or "", client_host=request.client_host or "")

    gc.handle_share_group_heartbeat(req, heartbeat_responder(apis, request))


def handle_share_group_describe(apis: KafkaApis, request: Request) -> None:
    gc = apis.group_coordinator
    cls = response_schema(ApiKeys.SHARE_GROUP_DESCRIBE, request.api_version)
    group_cls = item_cls(cls, "groups")
    if gc is None or not share_groups_enabled(apis):
        refuse_group_describe(apis, request, Errors.UNSUPPORTED_VERSION if gc is not None
                              else Errors.COORDINATOR_NOT_AVAILABLE)
        return
    member_cls = item_cls(group_cls, "members")
    assignment_cls = item_cls(member_cls, "assignment")
    partitions_cls = item_cls(assignment_cls, "topic_partitions")
    include_ops = bool(request.body.include_authorized_operations)
    names = list(request.body.group_ids)
    allowed = filter_authorized(apis, request, Op.DESCRIBE, GROUP, names)
    groups = [build(group_cls, error_code=Errors.GROUP_AUTHORIZATION_FAILED, error_message=None, group_id=g,
                    group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=(),
                    authorized_operations=AUTHORIZED_OPS_OMITTED) for g in names if g not in allowed]
    described = gc.handle_share_group_describe([g for g in names if g in allowed])
    assigned = {name for d in described for m in d.members for _id, name, _ps in m.assignment}
    visible = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, assigned)
    for d in described:
        if any(name not in visible for m in d.members for _id, name, _ps in m.assignment):
            groups.append(build(group_cls, error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                                error_message=HIDDEN_TOPICS_MESSAGE, group_id=d.group_id, group_state="",
                                group_epoch=0, assignment_epoch=0, assignor_name="", members=(),
                                authorized_operations=AUTHORIZED_OPS_OMITTED))
            continue
        members = tuple(build(
            member_cls, member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
            assignment=build(assignment_cls, topic_partitions=tuple(
                build(partitions_cls, topic_id=topic_id, topic_name=name, partitions=partitions)
                for topic_id, name, partitions in m.assignment))) for m in d.members)
        groups.append(build(group_cls, error_code=d.error, error_message=d.error_message, group_id=d.group_id,
                            group_state=d.state, group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                            assignor_name=d.assignor_name, members=members,
                            authorized_operations=authorized_operations(apis, request, GROUP, d.group_id)
                            if include_ops and d.error == Errors.NONE else AUTHORIZED_OPS_OMITTED))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, groups=tuple(groups)))


APIS = (
    ApiSpec(ApiKeys.SHARE_GROUP_HEARTBEAT, 1, 1, handle_share_group_heartbeat),
    ApiSpec(ApiKeys.SHARE_GROUP_DESCRIBE, 1, 1, handle_share_group_describe),
)
