"""EndTxn (key 26), v0-v5: a transactional producer commits or aborts its transaction.

The transaction coordinator answers once PrepareCommit/PrepareAbort is in
``__transaction_state``; the markers follow in the background. v0-v1 answer PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH.

v5 is transaction version 2 (KIP-890 part 2; Kafka's
``TransactionVersion.transactionVersionForEndTxn``): the coordinator bumps the epoch on every
EndTxn and the answer carries the producer id and epoch the producer continues with. As in Kafka,
the request version decides, not the finalized ``transaction.version`` (which only tells clients
which version to send): a v5 EndTxn takes the transaction version 2 path at any level.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import error_code_answer
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.broker.server.auth_helper import TRANSACTIONAL_ID, Op, authorize
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.transaction_coordinator import TV_2

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

FIRST_TV2_VERSION = 5


def handle_end_txn(apis: KafkaApis, request: Request) -> None:
    body = request.body
    answer = error_code_answer(apis, request, ApiKeys.END_TXN)
    if not authorize(apis, request, Op.WRITE, TRANSACTIONAL_ID, body.transactional_id):   # Kafka's handleEndTxnRequest
        answer(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return
    coordinator = apis.transaction_coordinator
    if coordinator is None:
        answer(Errors.COORDINATOR_NOT_AVAILABLE)
        return

    def on_end(error: int, producer_id: int, producer_epoch: int) -> None:
        answer(error, producer_id=producer_id, producer_epoch=producer_epoch)

    coordinator.handle_end_transaction(body.transactional_id, int(body.producer_id), int(body.producer_epoch),
                                       bool(body.committed), on_end,
                                       TV_2 if request.api_version >= FIRST_TV2_VERSION else 0)


APIS = (ApiSpec(ApiKeys.END_TXN, 0, 5, handle_end_txn),)
