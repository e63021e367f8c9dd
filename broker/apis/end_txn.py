"""EndTxn (key 26), v0-v4: a transactional producer commits or aborts its transaction.

The transaction coordinator answers once PrepareCommit/PrepareAbort is in
``__transaction_state``; the markers follow in the background. v0-v1 answer PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH.

v5 (transaction version 2: an epoch bump per EndTxn, the new producer id and epoch in the
answer) is not served: the broker reports no ``transaction.version`` 2, and a v5 request would
otherwise be half served.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis.add_partitions_to_txn import error_code_answer
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.coordinator.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.kafka_apis import KafkaApis
    from kafka_emu.broker.request_channel import Request

API_KEY = 26


def handle_end_txn(apis: KafkaApis, request: Request) -> None:
    body = request.body
    answer = error_code_answer(apis, request, API_KEY)
    coordinator = apis.transaction_coordinator
    if coordinator is None:
        answer(Errors.COORDINATOR_NOT_AVAILABLE)
        return
    coordinator.handle_end_transaction(body.transactional_id, int(body.producer_id), int(body.producer_epoch),
                                       bool(body.committed), answer)


APIS = (ApiSpec(API_KEY, "EndTxn", 0, 4, handle_end_txn),)
