"""AddOffsetsToTxn (key 25): a transactional producer adds a group's offsets to its transaction.

Kafka's ``handleAddOffsetsToTxnRequest``: the partition added is ``__consumer_offsets-<partition
of the group>``, so the transaction's COMMIT/ABORT marker also lands there and completes the
offsets the producer commits with TxnOffsetCommit. v0-v1 answer PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH. v4 is served as v3 (it only adds TRANSACTION_ABORTABLE, which the
coordinator answers to nobody here).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import error_code_answer
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import GROUP, TRANSACTIONAL_ID, Op, authorize
from kafka_emu.broker.apis.find_coordinator import partition_for
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_add_offsets_to_txn(apis: KafkaApis, request: Request) -> None:
    body = request.body
    answer = error_code_answer(apis, request, ApiKeys.ADD_OFFSETS_TO_TXN)
    # Kafka's handleAddOffsetsToTxnRequest: WRITE on the transactional id, READ on the group
    if not authorize(apis, request, Op.WRITE, TRANSACTIONAL_ID, body.transactional_id):
        answer(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return
    if not authorize(apis, request, Op.READ, GROUP, body.group_id):
        answer(Errors.GROUP_AUTHORIZATION_FAILED)
        return
    coordinator = apis.transaction_coordinator
    if coordinator is None:
        answer(Errors.COORDINATOR_NOT_AVAILABLE)
        return
    if not apis.metadata.ensure_offsets_topic(apis.config["offsets.topic.num.partitions"],
                                              apis.config["offsets.topic.replication.factor"]):
        answer(Errors.COORDINATOR_NOT_AVAILABLE)
        return
    tp = (OFFSETS_TOPIC, partition_for(apis, body.group_id))
    coordinator.handle_add_partitions_to_transaction(body.transactional_id, int(body.producer_id),
                                                     int(body.producer_epoch), {tp}, answer)


APIS = (ApiSpec(ApiKeys.ADD_OFFSETS_TO_TXN, 0, 4, handle_add_offsets_to_txn),)
