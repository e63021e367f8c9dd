"""Produce: validate, append through the ReplicaManager, answer.

acks=0 sends no response (a failed acks=0 produce closes the connection, as Kafka does, so
the client notices); acks=1 answers after the leader append; acks=-1 answers from the
DelayedProduce. Quotas are recorded when the answer is ready: the request's size against the
client's ``producer_byte_rate``, its handler time against ``request_percentage`` (not for
acks=0); the response carries the larger throttle time and the connection is muted for it.
v13 names topics by id (UNKNOWN_TOPIC_ID when the id is not known).
ProduceRequest's own check (``validateRecords``): zstd before v7 is UNSUPPORTED_COMPRESSION_TYPE.
v0-v2 (served as Kafka 3.9 only (``emulator.kafka.version=3.9``)) may carry message format v0/v1:
it is converted to a v2 batch first, as Kafka 3.x does (``broker.storage.legacy_records.up_convert``).
Transactional batches need the request's ``transactional_id`` (Kafka answers their absence as
an authorization failure, TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition); the replica
manager verifies them with the transaction coordinator (``ReplicaManager.verify_transaction``);
from v12 (transaction version 2, Kafka's ``produceRequestVersionToTransactionSupportedOperation``
ADD_PARTITION) it adds a partition not yet in the transaction (``add_to_transaction``), whatever
``transaction.version`` is finalized, as Kafka does.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING

from kafka_emu.broker.storage import compression
from kafka_emu.broker.apis._common import ZERO_THROTTLE, TopicKey, duration_ms, topic_key_and_name
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, TRANSACTIONAL_ID, Op, authorize, authorizer_for, filter_authorized
from kafka_emu.broker.server.delayed_produce import ProducePartitionStatus
from kafka_emu.broker.server.request_handler_helper import client_id_of, quota_user
from kafka_emu.broker.storage.log_validator import TRANSACTIONAL_BIT
from kafka_emu.broker.storage.legacy_records import up_convert
from kafka_emu.broker.protocol.adapter import constructor, has_field, item_cls, response_schema
from kafka_emu.broker.protocol.codec import EncodedResponse
from kafka_emu.broker.protocol.fast_produce import PartitionResult, ProduceRequestData, encode_produce_body
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

FIRST_ADD_PARTITION_VERSION = 12   # transaction version 2: the partition is added implicitly
FIRST_V2_ONLY_VERSION = 3   # ProduceRequest.validateRecords: from v3 only v2 batches; v0-v2 may carry v0/v1 message sets
TopicOrder = list[tuple[TopicKey, "str | None", list[int]]]   # (key as sent, name, partitions)
TopicPartition = tuple[str, int]
_NONE = Errors.NONE   # read once per process: an Enum member read costs about a function call (3.11)


def handle_produce(apis: KafkaApis, request: Request) -> None:
    body = request.body
    version = request.api_version
    by_id = version >= 13
    metadata = apis.metadata
    acks = int(body.acks)
    entries: dict[tuple[str, int], bytes] = {}
    order: TopicOrder = []
    pre: dict[TopicPartition, tuple[int, str | None]] = {}
    transactional = False
    # Kafka's handleProduceRequest: WRITE on each topic (None: every topic may be written)
    writable = None if authorizer_for(apis, request) is None else filter_authorized(apis, request, Op.WRITE, TOPIC, (
        name for name in (topic_key_and_name(td, by_id, metadata, "name")[1] for td in body.topic_data) if name))
    for td in body.topic_data:
        key, name = topic_key_and_name(td, by_id, metadata, "name")
        parts = []
        for pd in td.partition_data:
            idx = int(pd.index)
            parts.append(idx)
            tp = (name if name is not None else f"<unknown {key}>", idx)
            if name is None:
                pre[tp] = (Errors.UNKNOWN_TOPIC_ID, "unknown topic id")
            elif writable is not None and name not in writable:
                pre[tp] = (Errors.TOPIC_AUTHORIZATION_FAILED, None)
            elif not pd.records:
                pre[tp] = (Errors.INVALID_RECORD, "no records")
            elif FIRST_V2_ONLY_VERSION <= version < 7 and _first_batch_codec(pd.records) == compression.ZSTD:
                pre[tp] = (Errors.UNSUPPORTED_COMPRESSION_TYPE,
                           "Produce requests with ZStandard compression need version 7 or later")
            elif metadata.topic(name) is None:
                pre[tp] = (Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif version < FIRST_V2_ONLY_VERSION:
                try:
                    entries[tp] = up_convert(bytes(pd.records), _max_message_bytes(apis, tp))
                except KafkaError as exc:
                    pre[tp] = (exc.code, exc.message)
            else:
                records = entries[tp] = bytes(pd.records)
                if len(records) > 22 and records[22] & TRANSACTIONAL_BIT:
                    transactional = True
        order.append((key, name, parts))
    transactional_id = body.transactional_id if version >= FIRST_V2_ONLY_VERSION else None   # a v3 field
    if transactional and (transactional_id is None or
                          not authorize(apis, request, Op.WRITE, TRANSACTIONAL_ID, transactional_id)):
        # Kafka's handleProduceRequest: transactional records need WRITE on their transactional id
        entries = {}
        pre = {(name if name is not None else f"<unknown {key}>", idx):
               (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional records need an authorized transactional id")
               for key, name, parts in order for idx in parts}

    def on_done(statuses: dict[TopicPartition, ProducePartitionStatus]) -> None:
        channel = apis.request_channel
        throttle_ms = _record_quotas(apis, request, acks)
        if acks == 0:
            failed = bool(pre) or any(s.error != Errors.NONE for s in statuses.values())
            if failed:
                channel.send_response(request, None, close_connection=True)
            else:   # exempt from the request quota; the byte quota may still have muted the channel
                apis.request_helper.send_response_exempt_throttle(request, None)
            return
        if isinstance(body, ProduceRequestData):   # decoded by the fast codec: answer in kind
            results = partition_results(order, statuses, pre)
            data = encode_produce_body(version, results, throttle_ms)
            if data is not None:
                channel.send_response(request, EncodedResponse(data, version >= 9, error_counts(results)))
                return
        channel.send_response(request, build_response(version, order, statuses, pre, throttle_ms))

    apis.replica_manager.append_records(duration_ms(body.timeout), acks, entries, on_done,
                                        transactional_id=transactional_id if transactional else None,
                                        transaction_abortable_supported=version >= 11,
                                        add_partition=version >= FIRST_ADD_PARTITION_VERSION)


def _record_quotas(apis: KafkaApis, request: Request, acks: int) -> int:
    """Kafka's ``handleProduceRequest`` quotas: the request's bytes against the client's
    ``producer_byte_rate`` and (unless acks=0) its handler time against ``request_percentage``;
    the connection is muted for the larger throttle time, which the response carries."""
    helper = apis.request_helper
    if not helper.applies_to(request):
        return 0
    quotas = apis.quotas
    assert quotas is not None
    bandwidth_ms = quotas.produce.maybe_record_and_get_throttle_time_ms(
        quota_user(request), client_id_of(request), request.size_in_bytes, apis.time.milliseconds())
    request_ms = 0 if acks == 0 else helper.maybe_record_and_get_throttle_time_ms(request)
    throttle_ms = max(bandwidth_ms, request_ms)
    if throttle_ms > 0:
        helper.throttle(quotas.produce if bandwidth_ms > request_ms else quotas.request, request, throttle_ms)
    return throttle_ms


def _max_message_bytes(apis: KafkaApis, tp: TopicPartition) -> int:
    """The partition's ``max.message.bytes`` (the broker's default where it has no replica: the
    append then fails with NOT_LEADER_OR_FOLLOWER anyway)."""
    partition = apis.replica_manager.get_partition(tp)
    if partition is None or partition.log is None:
        return int(apis.config["message.max.bytes"])
    return partition.log.config.max_message_bytes


def _first_batch_codec(records: bytes) -> int:
    """The compression codec of the first batch (attributes at bytes 21..22), -1 if too short
    (the log then refuses the batch)."""
    return records[22] & compression.CODEC_MASK if len(records) > 22 else -1


def error_counts(results: list[tuple[TopicKey, list[PartitionResult]]]) -> dict[int, int]:
    """How many partitions got each error code (the error-count metrics read it)."""
    counts: dict[int, int] = {}
    for _, parts in results:
        for part in parts:
            code = part[1]
            counts[code] = counts.get(code, 0) + 1
    return counts


def partition_results(order: TopicOrder, statuses: dict[TopicPartition, ProducePartitionStatus],
                      pre: dict[TopicPartition, tuple[int, str | None]]
                      ) -> list[tuple[TopicKey, list[PartitionResult]]]:
    """(topic key as sent, [``PartitionResult``]) in request order."""
    topics = []
    for key, name, parts in order:
        results: list[PartitionResult] = []
        for idx in parts:
            tp = (name if name is not None else f"<unknown {key}>", idx)
            st = statuses.get(tp)
            if st is None:
                code, msg = pre.get(tp, (Errors.UNKNOWN_SERVER_ERROR, None))
                results.append((idx, code, -1, -1, -1, msg, ()))
            elif st.error == _NONE:
                results.append((idx, _NONE, st.base_offset, st.log_append_time, st.log_start_offset, None, ()))
            else:
                results.append((idx, st.error, -1, -1, st.log_start_offset, st.error_message, st.record_errors))
        topics.append((key, results))
    return topics


def build_response(version: int, order: TopicOrder, statuses: dict[TopicPartition, ProducePartitionStatus],
                   pre: dict[TopicPartition, tuple[int, str | None]], throttle_ms: int = 0) -> object:
    """The response as a kio entity (in-process requests, and bodies kio decoded)."""
    make_response, make_topic, make_partition, make_error = _response_constructors(version)
    topics = []
    for key, results in partition_results(order, statuses, pre):
        partitions = []
        for idx, code, base, append_ms, lso, msg, errors in results:
            partitions.append(make_partition(
                idx, code, base, None if append_ms < 0 else datetime.fromtimestamp(append_ms / 1000, UTC), lso, msg,
                tuple(make_error(i, m) for i, m in errors) if errors and make_error is not None else ()))
        topics.append(make_topic(key if isinstance(key, str) else "", key, tuple(partitions)))
    return make_response(tuple(topics), timedelta(milliseconds=throttle_ms) if throttle_ms else ZERO_THROTTLE)


@lru_cache(maxsize=None)
def _response_constructors(version: int) -> tuple[Callable[..., object], Callable[..., object],
                                                  Callable[..., object], Callable[..., object] | None]:
    """Constructors of the response's entities at ``version`` (response, topic, partition,
    record error: None before v8), made once per version instead of sorting out each field of
    each entity of each response (``adapter.constructor``)."""
    cls = response_schema(ApiKeys.PRODUCE, version)
    topic_cls = item_cls(cls, "responses")
    part_cls = item_cls(topic_cls, "partition_responses")
    error_cls = item_cls(part_cls, "record_errors") if has_field(part_cls, "record_errors") else None
    return (constructor(cls, ("responses", "throttle_time")),
            constructor(topic_cls, ("name", "topic_id", "partition_responses")),
            constructor(part_cls, ("index", "error_code", "base_offset", "log_append_time", "log_start_offset",
                                   "error_message", "record_errors")),
            constructor(error_cls, ("batch_index", "batch_index_error_message")) if error_cls is not None else None)


APIS = (ApiSpec(ApiKeys.PRODUCE, 0, 13, handle_produce),)
