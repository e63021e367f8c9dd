"""DeleteTopics (key 20): delete topics by name or, from v6, by topic id (``AdminClient.delete_topics``).

Internal topics are refused with INVALID_REQUEST. Difference from Kafka on purpose: any broker
accepts DeleteTopics (Kafka forwards it to the controller); the in-process controller applies it
synchronously, so ``timeout`` never expires.

Controller mutation quota (KIP-599): a topic's partitions are taken from the client's
``controller_mutation_rate`` quota before it is deleted; from v5 a topic the exhausted quota
refuses gets THROTTLING_QUOTA_EXCEEDED and stays.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, controller_mutation_quota
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, Op, authorize
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

STRICT_SINCE_VERSION = 5   # KIP-599: THROTTLING_QUOTA_EXCEEDED from v5, a permissive quota before


def handle_delete_topics(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.DELETE_TOPICS, request.api_version)
    result_cls = item_cls(cls, "responses")
    md = apis.metadata
    mutation_quota = controller_mutation_quota(apis, request, STRICT_SINCE_VERSION)
    if request.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    results = []
    for name, topic_id in wanted:
        err = Errors.NONE
        msg = None
        if name is None and topic_id is not None:
            name = md.topic_name(topic_id)
            if name is None:
                err = Errors.UNKNOWN_TOPIC_ID
        if err == Errors.NONE and not authorize(apis, request, Op.DELETE, TOPIC, name or ""):
            err = Errors.TOPIC_AUTHORIZATION_FAILED   # Kafka: DELETE on the topic
        elif err == Errors.NONE:
            info = md.topic(name) if name else None
            if info is None:
                err = Errors.UNKNOWN_TOPIC_OR_PARTITION
            elif info.internal or name == OFFSETS_TOPIC:
                err, msg = Errors.INVALID_REQUEST, "internal topics cannot be deleted"
            else:
                topic_id = info.topic_id
                try:
                    mutation_quota.record(len(info.partitions))
                except KafkaError as exc:
                    err, msg = exc.code, exc.message
                else:
                    if not md.delete_topic(name):
                        err = Errors.UNKNOWN_TOPIC_OR_PARTITION
        results.append(build(result_cls, name=name, topic_id=topic_id, error_code=err, error_message=msg))
    apis.request_helper.send_response_maybe_throttle_with_controller_quota(
        mutation_quota, request, build(cls, throttle_time=ZERO_THROTTLE, responses=tuple(results)))


APIS = (ApiSpec(ApiKeys.DELETE_TOPICS, 0, 6, handle_delete_topics),)
