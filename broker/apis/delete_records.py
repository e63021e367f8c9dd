"""DeleteRecords (key 21): move partitions' log start offsets forward (``AdminClient.delete_records``).

Kafka's ``KafkaApis.handleDeleteRecordsRequest``: a topic the broker does not know answers
UNKNOWN_TOPIC_OR_PARTITION; the rest go to ``ReplicaManager.delete_records`` (internal topics:
INVALID_TOPIC_EXCEPTION; not the leader: NOT_LEADER_OR_FOLLOWER; a ``cleanup.policy`` without
``delete``: POLICY_VIOLATION; an offset above the HW or negative other than -1:
OFFSET_OUT_OF_RANGE; -1 means the HW). The answer waits in the ``DeleteRecords`` purgatory
until every live follower dropped the records too, or ``timeout`` expires (REQUEST_TIMED_OUT,
with the low watermark reached so far). ``low_watermark`` is the smallest log start offset
over the leader and its live followers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, duration_ms, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, Op, authorize
from kafka_emu.broker.server.delayed_delete_records import DeleteRecordsPartitionStatus
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

TP = tuple[str, int]


def handle_delete_records(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.DELETE_RECORDS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    order: list[TP] = []
    unknown: dict[TP, DeleteRecordsPartitionStatus] = {}
    offsets: dict[TP, int] = {}
    for t in body.topics:
        for p in t.partitions:
            tp = (t.name, int(p.partition_index))
            order.append(tp)
            if not authorize(apis, request, Op.DELETE, TOPIC, t.name):   # Kafka: DELETE on the topic
                unknown[tp] = DeleteRecordsPartitionStatus(-1, -1, Errors.TOPIC_AUTHORIZATION_FAILED)
            elif apis.metadata.partition_state(*tp) is None:
                unknown[tp] = DeleteRecordsPartitionStatus(-1, -1, Errors.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                offsets[tp] = int(p.offset)

    def send_response(statuses: dict[TP, DeleteRecordsPartitionStatus]) -> None:
        merged = {**unknown, **statuses}
        topics: dict[str, list[object]] = {}
        for tp in dict.fromkeys(order):
            status = merged[tp]
            topics.setdefault(tp[0], []).append(build(
                part_cls, partition_index=tp[1], low_watermark=status.low_watermark,
                error_code=status.error))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(
            build(topic_cls, name=name, partitions=tuple(parts)) for name, parts in topics.items())))

    if offsets:
        apis.replica_manager.delete_records(duration_ms(body.timeout), offsets, send_response)
    else:
        send_response({})


APIS = (ApiSpec(ApiKeys.DELETE_RECORDS, 0, 2, handle_delete_records),)
