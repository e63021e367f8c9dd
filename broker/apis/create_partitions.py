"""CreatePartitions (key 37): grow topics, after Kafka's ``ControllerApis.createPartitions`` and
``ReplicationControlManager.createPartitions``.

A topic named twice gets INVALID_REQUEST ("Duplicate topic name.") and is not processed; every
other topic is handled on its own by the metadata store (``MetadataStore.create_partitions``):
UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS for an equal or smaller count,
INVALID_REPLICA_ASSIGNMENT for manual assignments Kafka refuses, INVALID_REPLICATION_FACTOR when
too few brokers are live. The new partitions reach the brokers through the store's usual
partition-state push, and clients see them in their next Metadata response: producers spread
over them, consumer groups rebalance (the consumers notice the partition count change).
``validate_only`` answers the same without changing anything. Kafka's controller, like this one,
allows growing internal topics (``__consumer_offsets`` included).

Timeout semantics: the emulator's controller applies the change before answering, so a positive
``timeout_ms`` never expires; a zero or negative one has already passed when Kafka's controller
would run the request (its event queue fails events whose deadline has passed), so every topic
gets REQUEST_TIMED_OUT, as from Kafka.

Controller mutation quota (KIP-599): the partitions a topic would gain are taken from the
client's ``controller_mutation_rate`` quota once the request is valid; from v3 a topic the
exhausted quota refuses gets THROTTLING_QUOTA_EXCEEDED.

Differences from Kafka on purpose: any broker applies the request (Kafka forwards it to the
controller); placement is the store's round robin, not Kafka's rack-aware striping.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, controller_mutation_quota, duration_ms
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, Op, authorize
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

STRICT_SINCE_VERSION = 3   # KIP-599: THROTTLING_QUOTA_EXCEEDED from v3, a permissive quota before


def handle_create_partitions(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.CREATE_PARTITIONS, request.api_version)
    result_cls = item_cls(cls, "results")
    mutation_quota = controller_mutation_quota(apis, request, STRICT_SINCE_VERSION)
    names = [t.name for t in body.topics]
    duplicates = {n for n in names if names.count(n) > 1}
    timed_out = duration_ms(body.timeout) <= 0 and len(duplicates) < len(set(names))
    results = []
    answered: set[str] = set()
    for t in body.topics:
        if t.name in answered:
            continue
        answered.add(t.name)
        if timed_out:
            err, msg = Errors.REQUEST_TIMED_OUT, None   # Kafka's message-less TimeoutException
        elif t.name in duplicates:
            err, msg = Errors.INVALID_REQUEST, "Duplicate topic name."
        elif not authorize(apis, request, Op.ALTER, TOPIC, t.name):   # Kafka: ALTER on the topic
            err, msg = Errors.TOPIC_AUTHORIZATION_FAILED, None
        else:
            assignments = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
            try:
                apis.metadata.create_partitions(t.name, int(t.count), assignments, bool(body.validate_only),
                                                mutation_quota.record)
                err, msg = Errors.NONE, None
            except KafkaError as exc:
                err, msg = exc.code, exc.message or None
        results.append(build(result_cls, name=t.name, error_code=err, error_message=msg))
    apis.request_helper.send_response_maybe_throttle_with_controller_quota(
        mutation_quota, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(results)))


APIS = (ApiSpec(ApiKeys.CREATE_PARTITIONS, 0, 3, handle_create_partitions),)
