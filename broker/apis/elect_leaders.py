"""ElectLeaders (key 43): preferred and unclean leader elections (``kafka-leader-election.sh``).

Kafka forwards ElectLeaders to the active controller; here the in-process controller
(``MetadataStore.elect_leaders``) runs the election synchronously and pushes the new leaders to
the brokers before the answer, so ``timeout`` never expires. Versions 0–2: v0 has no election
type (PREFERRED) and no top-level error code. An election type other than PREFERRED (0) or
UNCLEAN (1) answers INVALID_REQUEST for the request and every listed partition. A null partition
list means every partition, and then the partitions whose answer is ELECTION_NOT_NEEDED are left
out of the response, as Kafka's ``ElectLeadersRequest`` handling does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.partition_state import ELECTION_PREFERRED, ELECTION_UNCLEAN
from kafka_emu.broker.security.acl import CLUSTER_NAME
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, deny
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_elect_leaders(apis: KafkaApis, request: Request) -> None:
    if deny(apis, request, Op.ALTER, CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED):
        return
    body = request.body
    cls = response_schema(ApiKeys.ELECT_LEADERS, request.api_version)
    result_cls = item_cls(cls, "replica_election_results")
    part_cls = item_cls(result_cls, "partition_result")
    election_type = int(getattr(body, "election_type", ELECTION_PREFERRED))
    requested = None if body.topic_partitions is None else \
        [(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]
    top_error = Errors.NONE
    if election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
        top_error = Errors.INVALID_REQUEST
        message = f"Unknown election type {election_type}"
        results = {tp: (Errors.INVALID_REQUEST, message) for tp in requested or ()}
    else:
        results = apis.metadata.elect_leaders(election_type, requested)
        if requested is None:
            results = {tp: r for tp, r in results.items() if r[0] != Errors.ELECTION_NOT_NEEDED}
    by_topic: dict[str, list[object]] = {}
    for (topic, partition), (error, message) in results.items():
        by_topic.setdefault(topic, []).append(build(part_cls, partition_id=partition, error_code=error,
                                                    error_message=message))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=top_error,
                                 replica_election_results=tuple(
                                     build(result_cls, topic=topic, partition_result=tuple(parts))
                                     for topic, parts in by_topic.items())))


APIS = (ApiSpec(ApiKeys.ELECT_LEADERS, 0, 2, handle_elect_leaders),)
