"""DescribeCluster (key 60): the cluster id, the controller and the brokers (``AdminClient.describe_cluster``).

Only broker endpoints are emulated: a request for controller endpoints (``endpoint_type`` 2)
gets UNSUPPORTED_ENDPOINT_TYPE. From v2, ``include_fenced_brokers`` lists stopped brokers as fenced.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import AUTHORIZED_OPS_OMITTED, ZERO_THROTTLE, broker_endpoint, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.security.acl import CLUSTER_NAME
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, authorized_operations, deny
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_describe_cluster(apis: KafkaApis, request: Request) -> None:
    if deny(apis, request, Op.DESCRIBE, CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED):
        return
    cls = response_schema(ApiKeys.DESCRIBE_CLUSTER, request.api_version)
    broker_cls = item_cls(cls, "brokers")
    md = apis.metadata
    brokers = []
    listed = md.live_brokers()
    if getattr(request.body, "include_fenced_brokers", False):   # v2: stopped brokers, fenced
        listed = sorted(md.brokers.values(), key=lambda b: b.broker_id)
    for b in listed:
        host, port = broker_endpoint(b, request.listener)
        brokers.append(build(broker_cls, broker_id=b.broker_id, host=host, port=port, rack=b.rack,
                             is_fenced=not b.live))
    endpoint_type = int(getattr(request.body, "endpoint_type", 1))
    if endpoint_type != 1:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE,
                                     error_code=Errors.UNSUPPORTED_ENDPOINT_TYPE,
                                     error_message="only broker endpoints are emulated",
                                     endpoint_type=endpoint_type, cluster_id=md.cluster_id,
                                     controller_id=-1, brokers=()))
        return
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE,
                                 error_message=None, endpoint_type=1, cluster_id=md.cluster_id,
                                 controller_id=md.controller_id, brokers=tuple(brokers),
                                 cluster_authorized_operations=authorized_operations(apis, request, CLUSTER)
                                 if getattr(request.body, "include_cluster_authorized_operations", False)
                                 else AUTHORIZED_OPS_OMITTED))


APIS = (ApiSpec(ApiKeys.DESCRIBE_CLUSTER, 0, 2, handle_describe_cluster),)
