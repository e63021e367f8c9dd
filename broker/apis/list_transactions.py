"""ListTransactions (key 66), v0-v2: the transactional ids this broker coordinates (admin
clients ask every broker and merge).

Kafka's ``TransactionStateManager.listTransactionStates``: any ``__transaction_state`` partition
still loading ⇒ COORDINATOR_LOAD_IN_PROGRESS; Dead ids are never listed; a non-empty producer id
filter or state filter must match, unknown state names are echoed in
``unknown_state_filters``; v1's ``duration_filter`` (≥ 0) keeps transactions running longer than
it; v2's ``transactional_id_pattern`` (KIP-1152; null or empty: no filter) keeps the ids it matches
whole, and one RE2 (Kafka's regex engine) refuses is INVALID_REGULAR_EXPRESSION. No authorisation
(no ACLs).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TRANSACTIONAL_ID, Op, filter_authorized
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_list_transactions(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.LIST_TRANSACTIONS, request.api_version)
    state_cls = item_cls(cls, "transaction_states")
    coordinator = apis.transaction_coordinator
    if coordinator is None:
        error, unknown, listed = Errors.COORDINATOR_NOT_AVAILABLE, [], []
    else:
        error, unknown, listed = coordinator.handle_list_transactions(
            {int(p) for p in body.producer_id_filters}, set(body.state_filters),
            int(getattr(body, "duration_filter", -1)), getattr(body, "transactional_id_pattern", None))
    # Kafka lists only the transactional ids the principal may describe
    allowed = filter_authorized(apis, request, Op.DESCRIBE, TRANSACTIONAL_ID, (t.transactional_id for t in listed))
    listed = [t for t in listed if t.transactional_id in allowed]
    respond(apis, request, build(
        cls, throttle_time=ZERO_THROTTLE, error_code=error, unknown_state_filters=tuple(unknown),
        transaction_states=tuple(build(state_cls, transactional_id=t.transactional_id, producer_id=t.producer_id,
                                       transaction_state=t.state) for t in listed)))


APIS = (ApiSpec(ApiKeys.LIST_TRANSACTIONS, 0, 2, handle_list_transactions),)
