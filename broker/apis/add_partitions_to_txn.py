"""AddPartitionsToTxn (key 24), v0-v3: a transactional producer adds partitions to its transaction.

Kafka's ``handleAddPartitionsToTxnRequest`` for the client form: unknown topics or partitions
get UNKNOWN_TOPIC_OR_PARTITION and every other partition OPERATION_NOT_ATTEMPTED (nothing is
added); otherwise the transaction coordinator's answer goes to every partition. v0-v1 answer
PRODUCER_FENCED as INVALID_PRODUCER_EPOCH.

v4+ (batched, ``VerifyOnly``, broker to broker) is not served: the emulator's brokers verify,
and under transaction version 2 add, in-process (``broker.server.transaction_verification``),
and no client sends it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, fenced_error_for, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, TRANSACTIONAL_ID, Op, authorize, filter_authorized
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_add_partitions_to_txn(apis: KafkaApis, request: Request) -> None:
    body = request.body
    version = request.api_version
    cls = response_schema(ApiKeys.ADD_PARTITIONS_TO_TXN, version)
    topic_cls = item_cls(cls, "results_by_topic_v3_and_below")
    part_cls = item_cls(topic_cls, "results_by_partition")
    requested = [(t.name, int(p)) for t in body.v3_and_below_topics for p in t.partitions]

    def answer(errors: dict[tuple[str, int], int]) -> None:
        by_topic: dict[str, list[object]] = {}
        for tp in requested:
            by_topic.setdefault(tp[0], []).append(
                build(part_cls, partition_index=tp[1], partition_error_code=errors[tp]))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results_by_topic_v3_and_below=tuple(
            build(topic_cls, name=name, results_by_partition=tuple(parts)) for name, parts in by_topic.items())))

    # Kafka's handleAddPartitionsToTxnRequest (v3 and below): WRITE on the transactional id, then
    # on each topic (the other partitions: OPERATION_NOT_ATTEMPTED)
    if not authorize(apis, request, Op.WRITE, TRANSACTIONAL_ID, body.v3_and_below_transactional_id):
        answer({tp: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in requested})
        return
    writable = filter_authorized(apis, request, Op.WRITE, TOPIC, (t for t, _ in requested))
    if any(t not in writable for t, _ in requested):
        answer({tp: Errors.TOPIC_AUTHORIZATION_FAILED if tp[0] not in writable else Errors.OPERATION_NOT_ATTEMPTED
                for tp in requested})
        return
    coordinator = apis.transaction_coordinator
    if coordinator is None:
        answer({tp: Errors.COORDINATOR_NOT_AVAILABLE for tp in requested})
        return
    md = apis.metadata
    unknown = {tp for tp in requested
               if md.topic(tp[0]) is None or tp[1] not in md.topic(tp[0]).partitions}
    if unknown:
        answer({tp: Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else Errors.OPERATION_NOT_ATTEMPTED
                for tp in requested})
        return

    def on_result(error: int) -> None:
        code = fenced_error_for(version, 2, error)
        answer({tp: code for tp in requested})

    coordinator.handle_add_partitions_to_transaction(body.v3_and_below_transactional_id,
                                                     int(body.v3_and_below_producer_id),
                                                     int(body.v3_and_below_producer_epoch), set(requested), on_result)


APIS = (ApiSpec(ApiKeys.ADD_PARTITIONS_TO_TXN, 0, 3, handle_add_partitions_to_txn),)
