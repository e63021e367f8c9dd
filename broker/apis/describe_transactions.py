"""DescribeTransactions (key 65), v0: the state of transactional ids this broker coordinates.

Per id (Kafka's ``TransactionCoordinator.handleDescribeTransactions``): empty id ⇒
INVALID_REQUEST, partition loading ⇒ COORDINATOR_LOAD_IN_PROGRESS, not coordinated here ⇒
NOT_COORDINATOR, unknown or Dead ⇒ TRANSACTIONAL_ID_NOT_FOUND; otherwise the state name, timeout,
start time (-1 when no transaction started), producer id and epoch and the partitions by topic.
No authorisation (the emulator has no ACLs).
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, TRANSACTIONAL_ID, Op, authorize, filter_authorized
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction import TransactionDescription

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_describe_transactions(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.DESCRIBE_TRANSACTIONS, request.api_version)
    state_cls = item_cls(cls, "transaction_states")
    topic_cls = item_cls(state_cls, "topics")
    coordinator = apis.transaction_coordinator
    states = []
    for tid in request.body.transactional_ids:
        if not authorize(apis, request, Op.DESCRIBE, TRANSACTIONAL_ID, tid):   # Kafka: DESCRIBE on the id
            d = TransactionDescription(tid, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        else:
            d = (coordinator.handle_describe_transactions(tid) if coordinator is not None
                 else TransactionDescription(tid, Errors.COORDINATOR_NOT_AVAILABLE))
        # Kafka leaves out the partitions of topics the principal may not describe
        described = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, (t for t, _ in d.topic_partitions))
        by_topic: dict[str, list[int]] = {}
        for topic, partition in d.topic_partitions:
            if topic not in described:
                continue
            by_topic.setdefault(topic, []).append(partition)
        states.append(build(
            state_cls, error_code=d.error, transactional_id=tid, transaction_state=d.state,
            transaction_timeout=timedelta(milliseconds=d.timeout_ms),
            transaction_start_time=datetime.fromtimestamp(d.start_time_ms / 1000, timezone.utc),
            producer_id=d.producer_id, producer_epoch=d.producer_epoch,
            topics=tuple(build(topic_cls, topic=t, partitions=tuple(ps)) for t, ps in by_topic.items())))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, transaction_states=tuple(states)))


APIS = (ApiSpec(ApiKeys.DESCRIBE_TRANSACTIONS, 0, 0, handle_describe_transactions),)
