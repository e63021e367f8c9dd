"""The share coordinator's APIs (KIP-932) → ``ShareCoordinator``: InitializeShareGroupState (83),
ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86) and
ReadShareGroupStateSummary (87), Kafka's ``KafkaApis.handle*ShareGroupState*``.

Share-partition leaders reach them in process (``broker.server.share.persister``: one request
into the coordinating broker's request channel, as the transaction coordinator's markers travel)
and any client over the wire (Kafka lists them on the broker listener too). One group per request;
each partition is answered on its own, with the coordinator's error (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH ...). Writes are answered
once the ``__share_group_state`` record is replicated. Kafka 4.2's ranges: Write v1 and
ReadSummary v1 add ``DeliveryCompleteCount`` (KIP-1226), which the emulator does not track: it
is ignored on writes and answered -1 (unknown). Served from Kafka 4.1 (``emulator.kafka.version``;
3.9 and 4.0 did not list them). They need CLUSTER_ACTION on the cluster (else
CLUSTER_AUTHORIZATION_FAILED on every partition) and are answered whatever ``share.version``, as
Kafka's are (its ShareFetch and ShareAcknowledge checks keep requests from reaching them).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from kafka_emu.broker.apis._common import respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, authorize
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.share.share_coordinator import ReadStateResult, ShareCoordinator
from kafka_emu.coordinator.share.share_coordinator_records import ShareStateKey, StateBatch

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis

UNKNOWN_DELIVERY_COMPLETE_COUNT = -1


def _coordinator(apis: KafkaApis, request: Request) -> tuple[ShareCoordinator | None, int]:
    """The share coordinator, or the error every partition gets (Kafka's ``toGlobalErrorResponse``
    of CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION on the cluster)."""
    if not authorize(apis, request, Op.CLUSTER_ACTION, CLUSTER):
        return None, Errors.CLUSTER_AUTHORIZATION_FAILED
    coordinator = apis.share_coordinator
    if coordinator is None:
        return None, Errors.COORDINATOR_NOT_AVAILABLE
    return coordinator, Errors.NONE


def _partitions(request: Request) -> list[tuple[ShareStateKey, Any]]:
    body = request.body
    return [(ShareStateKey(body.group_id, t.topic_id, int(p.partition)), p) for t in body.topics for p in t.partitions]


def _answer_writes(apis: KafkaApis, request: Request, api_key: int,
                   operation: Callable[[ShareCoordinator, ShareStateKey, Any, Callable[[int, str | None], None]], None]
                   ) -> None:
    """Initialize, Write and Delete: one error per partition, answered once all are known."""
    cls = response_schema(api_key, request.api_version)
    result_cls = item_cls(cls, "results")
    partition_cls = item_cls(result_cls, "partitions")
    coordinator, error = _coordinator(apis, request)
    parts = _partitions(request)
    errors: dict[ShareStateKey, tuple[int, str | None]] = {}
    lock = threading.Lock()

    def answer() -> None:
        by_topic: dict[Any, list[Any]] = {}
        for key, _ in parts:
            code, message = errors[key]
            by_topic.setdefault(key.topic_id, []).append(
                build(partition_cls, partition=key.partition, error_code=code, error_message=message))
        respond(apis, request, build(cls, results=tuple(
            build(result_cls, topic_id=topic_id, partitions=tuple(ps)) for topic_id, ps in by_topic.items())))

    def done(key: ShareStateKey, code: int, message: str | None) -> None:
        with lock:
            errors[key] = (code, message)
            complete = len(errors) == len(parts)
        if complete:
            answer()

    if not parts:
        answer()
        return
    for key, data in parts:
        if coordinator is None:
            done(key, error, None)
        else:
            operation(coordinator, key, data, lambda code, message, key=key: done(key, code, message))


def handle_initialize(apis: KafkaApis, request: Request) -> None:
    _answer_writes(apis, request, ApiKeys.INITIALIZE_SHARE_GROUP_STATE, lambda c, key, p, cb: c.initialize_state(
        key, int(p.state_epoch), int(p.start_offset), cb))


def handle_write(apis: KafkaApis, request: Request) -> None:
    _answer_writes(apis, request, ApiKeys.WRITE_SHARE_GROUP_STATE, lambda c, key, p, cb: c.write_state(
        key, int(p.state_epoch), int(p.leader_epoch), int(p.start_offset),
        [StateBatch(int(b.first_offset), int(b.last_offset), int(b.delivery_state), int(b.delivery_count))
         for b in p.state_batches], cb))


def handle_delete(apis: KafkaApis, request: Request) -> None:
    _answer_writes(apis, request, ApiKeys.DELETE_SHARE_GROUP_STATE, lambda c, key, p, cb: c.delete_state(key, cb))


def _answer_reads(apis: KafkaApis, request: Request, api_key: int,
                  fields: Callable[[ReadStateResult, Any], dict[str, object]]) -> None:
    cls = response_schema(api_key, request.api_version)
    result_cls = item_cls(cls, "results")
    partition_cls = item_cls(result_cls, "partitions")
    coordinator, error = _coordinator(apis, request)
    by_topic: dict[Any, list[Any]] = {}
    for key, p in _partitions(request):
        result = coordinator.read_state(key, int(p.leader_epoch)) if coordinator is not None \
            else ReadStateResult(error)
        by_topic.setdefault(key.topic_id, []).append(build(
            partition_cls, partition=key.partition, error_code=result.error, error_message=result.error_message,
            **fields(result, partition_cls)))
    respond(apis, request, build(cls, results=tuple(
        build(result_cls, topic_id=topic_id, partitions=tuple(ps)) for topic_id, ps in by_topic.items())))


def handle_read(apis: KafkaApis, request: Request) -> None:
    def fields(r: ReadStateResult, partition_cls: type) -> dict[str, object]:
        batch_cls = item_cls(partition_cls, "state_batches")
        return {"state_epoch": r.state_epoch, "start_offset": r.start_offset, "state_batches": tuple(
            build(batch_cls, first_offset=b.first_offset, last_offset=b.last_offset, delivery_state=b.delivery_state,
                  delivery_count=b.delivery_count) for b in r.state_batches)}
    _answer_reads(apis, request, ApiKeys.READ_SHARE_GROUP_STATE, fields)


def handle_read_summary(apis: KafkaApis, request: Request) -> None:
    _answer_reads(apis, request, ApiKeys.READ_SHARE_GROUP_STATE_SUMMARY, lambda r, _cls: {
        "state_epoch": r.state_epoch, "leader_epoch": r.leader_epoch, "start_offset": r.start_offset,
        "delivery_complete_count": UNKNOWN_DELIVERY_COMPLETE_COUNT})


APIS = (
    ApiSpec(ApiKeys.INITIALIZE_SHARE_GROUP_STATE, 0, 0, handle_initialize),
    ApiSpec(ApiKeys.READ_SHARE_GROUP_STATE, 0, 0, handle_read),
    ApiSpec(ApiKeys.WRITE_SHARE_GROUP_STATE, 0, 1, handle_write),
    ApiSpec(ApiKeys.DELETE_SHARE_GROUP_STATE, 0, 0, handle_delete),
    ApiSpec(ApiKeys.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1, handle_read_summary),
)
