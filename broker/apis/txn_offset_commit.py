"""TxnOffsetCommit (key 28), v0-v4: a transactional producer commits a group's offsets inside its
transaction (``send_offsets_to_transaction``).

Kafka's ``handleTxnOffsetCommitRequest``: unknown topics or partitions get
UNKNOWN_TOPIC_OR_PARTITION; the others go to the group coordinator's
``handle_txn_commit_offsets``, which writes them as the producer's transactional batch to the
group's ``__consumer_offsets`` partition; they are the group's committed offsets only once the
transaction's COMMIT marker lands there, and are dropped by an ABORT marker. First the partition
is verified with the transaction coordinator (KIP-890 part 1: it must be in the producer's
transaction, added by AddOffsetsToTxn): not in it ⇒ TRANSACTION_ABORTABLE (v4) or
INVALID_TXN_STATE (older), a fenced producer ⇒ INVALID_PRODUCER_EPOCH, a coordinator not ready ⇒
COORDINATOR_NOT_AVAILABLE (retried). v0-v1 answer COORDINATOR_LOAD_IN_PROGRESS as
COORDINATOR_NOT_AVAILABLE.

The answer is checked up front (so the error is the one of the request's version), then again by
the partition leader as the batch is appended under its verification guard, as Kafka does.
v5 (transaction version 2: implicit adding of the partition) is not served.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.apis.find_coordinator import partition_for
from kafka_emu.broker.metadata import OFFSETS_TOPIC
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.coordinator.errors import Errors
from kafka_emu.coordinator.results import OffsetAndMetadata

if TYPE_CHECKING:
    from kafka_emu.broker.kafka_apis import KafkaApis
    from kafka_emu.broker.request_channel import Request

API_KEY = 28
_RETRIABLE_VERIFICATION = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
                                     Errors.NOT_COORDINATOR, Errors.CONCURRENT_TRANSACTIONS})


def verification_error(code: int, version: int) -> int:
    """The transaction coordinator's verification answer as a TxnOffsetCommit client gets it."""
    if code == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    if code == Errors.TRANSACTION_ABORTABLE and version < 4:
        return Errors.INVALID_TXN_STATE
    if code in _RETRIABLE_VERIFICATION:
        return Errors.COORDINATOR_NOT_AVAILABLE
    return code


def handle_txn_offset_commit(apis: KafkaApis, request: Request) -> None:
    body = request.body
    version = request.api_version
    cls = response_schema(API_KEY, version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    now_ms = apis.time.milliseconds()
    md = apis.metadata
    order: list[tuple[str, int]] = []
    early: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    for t in body.topics:
        info = md.topic(t.name)
        for p in t.partitions:
            tp = (t.name, int(p.partition_index))
            order.append(tp)
            if info is None or tp[1] not in info.partitions:
                early[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            epoch = int(getattr(p, "committed_leader_epoch", -1))
            offsets[tp] = OffsetAndMetadata(offset=int(p.committed_offset),
                                            leader_epoch=epoch if epoch >= 0 else None,
                                            metadata=p.committed_metadata or "", commit_timestamp=now_ms)

    def callback(result: dict[tuple[str, int], int]) -> None:
        merged = {**early, **result}
        by_topic: dict[str, list[object]] = {}
        for tp in order:
            code = merged.get(tp, Errors.NONE)
            if code == Errors.COORDINATOR_LOAD_IN_PROGRESS and version < 2:
                code = Errors.COORDINATOR_NOT_AVAILABLE
            by_topic.setdefault(tp[0], []).append(build(part_cls, partition_index=tp[1], error_code=code))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(
            build(topic_cls, name=name, partitions=tuple(parts)) for name, parts in by_topic.items())))

    gc = apis.group_coordinator
    if gc is None:
        callback({tp: Errors.COORDINATOR_NOT_AVAILABLE for tp in offsets})
        return
    if not offsets:
        callback({})
        return
    producer_id, producer_epoch = int(body.producer_id), int(body.producer_epoch)
    code = apis.replica_manager.verify_transaction(
        body.transactional_id, producer_id, producer_epoch, (OFFSETS_TOPIC, partition_for(apis, body.group_id)))
    if code != Errors.NONE:
        error = verification_error(code, version)
        callback({tp: error for tp in offsets})
        return
    gc.handle_txn_commit_offsets(body.group_id, body.transactional_id, producer_id, producer_epoch,
                                 getattr(body, "member_id", "") or "", getattr(body, "group_instance_id", None),
                                 int(getattr(body, "generation_id", -1)), offsets, callback)


APIS = (ApiSpec(API_KEY, "TxnOffsetCommit", 0, 4, handle_txn_offset_commit),)
