"""InitProducerId: producer ids for idempotent and transactional producers.

Without a transactional id: a fresh id, unique across the in-process cluster
(``MetadataStore.next_producer_id``, the emulator's controller; Kafka hands out blocks of ids
from the controller the same way). KIP-360: a request carrying the producer's current id and
epoch (v3+) bumps the epoch of the same id, which resets sequence numbers on every partition (the
log accepts sequence 0 at a newer epoch); at epoch 32767 a fresh id is issued.

With a transactional id: the transaction coordinator's ``handle_init_producer_id`` (epoch bump,
fencing of the previous producer, abort of its ongoing transaction first). Kafka's request
checks: producer id and epoch both -1 (no expectation) or both set, else INVALID_REQUEST; v < 4
answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import duration_ms, error_code_answer
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.broker.server.auth_helper import (
    CLUSTER, TOPIC, TRANSACTIONAL_ID, Op, authorize, authorize_by_resource_type,
)
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction import InitProducerIdResult

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

MAX_EPOCH = 32767


def handle_init_producer_id(apis: KafkaApis, request: Request) -> None:
    body = request.body
    answer = error_code_answer(apis, request, ApiKeys.INIT_PRODUCER_ID, fenced_since=4)

    pid = int(getattr(body, "producer_id", -1))
    epoch = int(getattr(body, "producer_epoch", -1))
    transactional_id = body.transactional_id
    # Kafka's handleInitProducerIdRequest: WRITE on the transactional id; without one,
    # IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    if transactional_id is not None and not authorize(apis, request, Op.WRITE, TRANSACTIONAL_ID, transactional_id):
        answer(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return
    if transactional_id is None and not authorize(apis, request, Op.IDEMPOTENT_WRITE, CLUSTER) and \
            not authorize_by_resource_type(apis, request, Op.WRITE, TOPIC):
        answer(Errors.CLUSTER_AUTHORIZATION_FAILED)
        return
    if transactional_id is not None:
        coordinator = apis.transaction_coordinator
        if coordinator is None:
            answer(Errors.COORDINATOR_NOT_AVAILABLE)
            return
        if (pid == -1) != (epoch == -1):
            answer(Errors.INVALID_REQUEST)
            return

        def on_result(result: InitProducerIdResult) -> None:
            answer(result.error, producer_id=result.producer_id, producer_epoch=result.producer_epoch)

        coordinator.handle_init_producer_id(transactional_id, duration_ms(body.transaction_timeout),
                                            (pid, epoch) if pid != -1 else None, on_result)
        return
    if pid >= 0 and epoch >= 0 and epoch < MAX_EPOCH:
        answer(Errors.NONE, producer_id=pid, producer_epoch=epoch + 1)
    else:
        answer(Errors.NONE, producer_id=apis.metadata.next_producer_id(), producer_epoch=0)


APIS = (ApiSpec(ApiKeys.INIT_PRODUCER_ID, 0, 5, handle_init_producer_id),)   # v6 is KIP-939 two-phase commit
