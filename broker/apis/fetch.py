"""Fetch, from consumers and from follower replicas.

Topics are named from v4 and identified by topic id from v13 (UNKNOWN_TOPIC_ID for unknown
ids). The replica id is a top-level field before v15 and ``replica_state.replica_id`` from v15.
A consumer's fetch is a full fetch: ``session_id`` 0 in the answer (KIP-227 sessions are kept
for the in-process followers only, ``broker.server.fetch_session``).
``last_stable_offset`` is the partition's LSO; read_committed fetches (isolation level 1) read
up to it and get ``aborted_transactions`` (producer id, first offset) of the aborted
transactions overlapping the records returned, read_uncommitted ones read up to the HW and get
null. Control batches (transaction markers) are returned with the data, as Kafka does: clients
skip them. A
consumer fetch below v10 that would return a zstd batch gets UNSUPPORTED_COMPRESSION_TYPE.
v0-v3 (served as Kafka 3.9 only (``emulator.kafka.version=3.9``)) read message formats v0 (v0-v1)
and v1 (v2-v3): the records are down-converted as Kafka 3.9 does (``_down_converted``), and
before v3 the max bytes are a hard limit (no oversized first batch).
v4-v18 requests off the wire are decoded, and answered, by ``broker.protocol.fast_fetch`` (the
bytes kio reads and writes, without kio's per-field cost) unless that codec leaves a frame to
kio; v0-v3, and kio entities sent in process (tests, benchmarks), get a kio response entity.
In-process replica fetchers send a ``ReplicaFetchRequestData`` and get ``fetch_messages``'s
results back as they are (``broker.server.replica_fetcher`` says why), inside a
``SessionFetchResponse`` when the request carries session fields.

Quotas (consumers only; a follower's fetch is exempt): the fetch's max bytes are capped to what
the client's ``consumer_byte_rate`` lets through in one quota window; the response's size is
recorded against that quota and the handler time against ``request_percentage``; over either,
the answer is empty (no topics) with the throttle time, and the connection is muted for it.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kafka_emu.broker.storage import compression
from kafka_emu.broker.storage.legacy_records import MAGIC_V0, MAGIC_V1, down_convert
from kafka_emu.broker.storage.log_segment import iter_headers
from kafka_emu.broker.server.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID
from kafka_emu.broker.apis._common import ZERO_THROTTLE, TopicKey, duration_ms, topic_key_and_name
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import CLUSTER, TOPIC, Op, authorize, authorizer_for, filter_authorized
from kafka_emu.broker.server.partition import LogReadResult
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.protocol.codec import EncodedResponse, encode_response
from kafka_emu.broker.protocol.fast_fetch import (
    FIRST_FLEXIBLE,
    FetchRequestData,
    TopicResults,
    encode_fetch_body,
    error_counts,
    fetch_replica_id,
)
from kafka_emu.broker.server.replica_fetcher import ReplicaFetchRequestData
from kafka_emu.broker.server.fetch_params import FetchParams, PartitionFetchInfo, isolation_for
from kafka_emu.broker.server.request_handler_helper import client_id_of, quota_user
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.broker.network.request_channel import Request

TopicPartition = tuple[str, int]
TopicOrder = list[tuple[TopicKey, "str | None", list[int]]]   # (key as sent, name, partitions)
FetchInfos = list[tuple[TopicPartition, PartitionFetchInfo]]


def replica_id_of(body: Any, version: int) -> int:
    """The fetching replica's id, -1 for a consumer (Kafka's ``FetchRequest.replicaId``)."""
    if isinstance(body, ReplicaFetchRequestData):
        return body.params.replica_id
    return fetch_replica_id(body, version)


def parse_fetch_request(body: Any, version: int, metadata: MetadataStore
                        ) -> tuple[FetchParams, FetchInfos, TopicOrder, dict[tuple[TopicKey, int], int]]:
    """(params, fetch infos, response order, pre-set errors) of a kio FetchRequest or a
    ``fast_fetch.FetchRequestData`` (same field names)."""
    replica_id = replica_id_of(body, version)
    replica_epoch = int(body.replica_state.replica_epoch) if version >= 15 else -1
    # v0-v2 have no max_bytes (no limit) and v0-v3 no isolation level (read uncommitted)
    params = FetchParams(replica_id=replica_id, max_wait_ms=duration_ms(body.max_wait), min_bytes=int(body.min_bytes),
                         max_bytes=int(getattr(body, "max_bytes", FetchParams.max_bytes)),
                         isolation=isolation_for(replica_id, int(getattr(body, "isolation_level", 0))),
                         replica_epoch=replica_epoch, hard_max_bytes_limit=version <= LAST_HARD_LIMIT_VERSION)
    by_id = version >= 13
    infos: FetchInfos = []
    order: TopicOrder = []
    pre: dict[tuple[TopicKey, int], int] = {}
    for t in body.topics:
        key, name = topic_key_and_name(t, by_id, metadata, "topic")
        parts = []
        for p in t.partitions:
            idx = int(p.partition)
            parts.append(idx)
            if name is None:
                pre[(key, idx)] = Errors.UNKNOWN_TOPIC_ID
                continue
            info = PartitionFetchInfo(
                fetch_offset=int(p.fetch_offset), max_bytes=int(p.partition_max_bytes),
                log_start_offset=int(getattr(p, "log_start_offset", -1)),
                current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
                last_fetched_epoch=int(getattr(p, "last_fetched_epoch", -1)))
            infos.append(((name, idx), info))
        order.append((key, name, parts))
    return params, infos, order, pre


def handle_fetch(apis: KafkaApis, request: Request) -> None:
    version = request.api_version
    body = request.body
    if isinstance(body, ReplicaFetchRequestData):   # an in-process follower fetch
        def answer(response: object) -> None:
            apis.request_channel.send_response(request, response)

        if body.session_id == INVALID_SESSION_ID and body.session_epoch == FINAL_EPOCH:
            apis.replica_manager.fetch_messages(body.params, body.fetch_infos, answer)
        else:
            apis.replica_manager.fetch_in_session(body.params, body.session_id, body.session_epoch,
                                                  body.fetch_infos, body.removed, answer)
        return
    params, infos, order, pre = parse_fetch_request(body, version, apis.metadata)
    if authorizer_for(apis, request) is not None:
        infos = _authorized_infos(apis, request, params, infos, order, pre)
    from_follower = params.is_follower
    if not from_follower and apis.request_helper.applies_to(request):
        params = _within_quota_window(apis, request, params)

    def on_done(results: list[tuple[TopicPartition, LogReadResult]]) -> None:
        by_tp = dict(results)
        if version <= LAST_V1_FORMAT_VERSION:
            by_tp = _down_converted(apis, version, infos, by_tp)
        response = _response(version, body, order, by_tp, pre)
        if from_follower:   # replication is exempt from client quotas
            apis.request_helper.send_response_exempt_throttle(request, response)
            return
        throttle_ms = _record_quotas(apis, request, response)
        if throttle_ms > 0:   # Kafka's getThrottledResponse: nothing but the throttle time
            response = _response(version, body, [], {}, {}, throttle_ms)
        apis.request_channel.send_response(request, response)

    apis.replica_manager.fetch_messages(params, infos, on_done)


def _response(version: int, body: Any, order: TopicOrder, results: dict[TopicPartition, LogReadResult],
              pre: dict[tuple[TopicKey, int], int], throttle_ms: int = 0) -> object:
    """The answer: written by the fast codec for a request it decoded (v4+), else a kio entity."""
    if version > LAST_V1_FORMAT_VERSION and isinstance(body, FetchRequestData):
        topics = partition_responses(version, order, results, pre)
        data = encode_fetch_body(version, topics, throttle_time_ms=throttle_ms)
        if data is not None:
            return EncodedResponse(data, version >= FIRST_FLEXIBLE, error_counts(version, topics))
    return build_response(version, order, results, pre, throttle_ms=throttle_ms)


def _within_quota_window(apis: KafkaApis, request: Request, params: FetchParams) -> FetchParams:
    """A consumer may not fetch more than its ``consumer_byte_rate`` lets through in one quota
    window without certain throttling (Kafka's ``maxQuotaWindowBytes``)."""
    assert apis.quotas is not None
    limit = apis.quotas.fetch.get_max_value_in_quota_window(quota_user(request), client_id_of(request))
    if limit >= params.max_bytes:
        return params
    max_bytes = int(limit)
    return dataclasses.replace(params, max_bytes=max_bytes, min_bytes=min(params.min_bytes, max_bytes))


def _record_quotas(apis: KafkaApis, request: Request, response: object) -> int:
    """Kafka's ``handleFetchRequest`` quotas for a consumer: its handler time against
    ``request_percentage`` and the response's size against ``consumer_byte_rate``; throttled,
    the size is taken back (the records are not sent) and the connection muted."""
    helper = apis.request_helper
    if not helper.applies_to(request):
        return 0
    quotas = apis.quotas
    assert quotas is not None
    user, client_id, now = quota_user(request), client_id_of(request), apis.time.milliseconds()
    request_ms = helper.maybe_record_and_get_throttle_time_ms(request)
    size = _response_size(response) if quotas.fetch.quotas_enabled else 0
    bandwidth_ms = quotas.fetch.maybe_record_and_get_throttle_time_ms(user, client_id, size, now)
    throttle_ms = max(bandwidth_ms, request_ms)
    if throttle_ms > 0:
        if quotas.fetch.quotas_enabled:
            quotas.fetch.unrecord_quota_sensor(user, client_id, size, now)
        helper.throttle(quotas.fetch if bandwidth_ms > request_ms else quotas.request, request, throttle_ms)
    return throttle_ms


def _response_size(response: object) -> int:
    if isinstance(response, EncodedResponse):
        return len(response.data)
    return len(encode_response(0, response))


ZSTD_MIN_FETCH_VERSION = 10   # KIP-110: older fetchers cannot read zstd batches
LAST_HARD_LIMIT_VERSION = 2   # KIP-74 (v3) made max bytes a soft limit
LAST_V0_FORMAT_VERSION, LAST_V1_FORMAT_VERSION = 1, 3   # newest versions reading message format v0, v1


def _down_converted(apis: KafkaApis, version: int, infos: FetchInfos,
                    results: dict[TopicPartition, LogReadResult]) -> dict[TopicPartition, LogReadResult]:
    """Kafka 3.9's ``KafkaApis.maybeConvertFetchedData`` for Fetch v0-v3: every partition this
    broker hosts a log of (errors included) gets its records down-converted to the format the
    version reads (``broker.storage.legacy_records.down_convert``). A zstd topic, or a first batch in
    zstd, gets UNSUPPORTED_COMPRESSION_TYPE."""
    to_magic = MAGIC_V0 if version <= LAST_V0_FORMAT_VERSION else MAGIC_V1
    out = dict(results)
    for tp, info in infos:
        r = results.get(tp)
        partition = apis.replica_manager.get_partition(tp)
        if r is None or partition is None or partition.log is None:
            continue
        try:
            if partition.log.config.compression_type == "zstd":
                raise KafkaError(Errors.UNSUPPORTED_COMPRESSION_TYPE)
            out[tp] = r._replace(records=down_convert(r.records, to_magic, info.fetch_offset))
        except KafkaError as exc:   # FetchResponse.partitionResponse(tp, error): nothing but the error
            out[tp] = _ERROR_RESULT._replace(error=exc.code)
    return out


def _holds_zstd(records: bytes) -> bool:
    """Whether any batch of a fetch answer is zstd-compressed (Kafka answers such a fetch below
    v10 with UNSUPPORTED_COMPRESSION_TYPE rather than send what the client cannot decode)."""
    return any(records[h.position + 22] & compression.CODEC_MASK == compression.ZSTD
               for h in iter_headers(records))


_ERROR_RESULT = LogReadResult(b"", Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, -1)


def _authorized_infos(apis: KafkaApis, request: Request, params: FetchParams, infos: FetchInfos, order: TopicOrder,
                      pre: dict[tuple[TopicKey, int], int]) -> FetchInfos:
    """Kafka's handleFetchRequest: a follower needs CLUSTER_ACTION, a consumer READ on each topic;
    the partitions of a topic refused get TOPIC_AUTHORIZATION_FAILED in ``pre`` and are not read."""
    if params.replica_id >= 0:
        readable = {name for _, name, _ in order if name} if authorize(apis, request, Op.CLUSTER_ACTION,
                                                                       CLUSTER) else set()
    else:
        readable = filter_authorized(apis, request, Op.READ, TOPIC, (name for _, name, _ in order if name))
    if all(name in readable for _, name, _ in order if name):
        return infos
    for key, name, parts in order:
        if name and name not in readable:
            pre.update({(key, idx): Errors.TOPIC_AUTHORIZATION_FAILED for idx in parts})
    return [(tp, info) for tp, info in infos if tp[0] in readable]


def partition_responses(version: int, order: TopicOrder, results: dict[TopicPartition, LogReadResult],
                        pre: dict[tuple[TopicKey, int], int]) -> list[TopicResults]:
    """What each partition of the request is answered with, in request order: its read result,
    a pre-set error (unknown topic id) or UNKNOWN_TOPIC_OR_PARTITION; zstd data for a version
    below v10 becomes UNSUPPORTED_COMPRESSION_TYPE. Each comes with whether the leader hint
    (``current_leader``, v12+) is sent: with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH and
    a known epoch only (Kafka's ``KafkaApis.handleFetchRequest``)."""
    topics: list[TopicResults] = []
    for key, name, parts in order:
        answered = []
        for idx in parts:
            if name is None or pre and (key, idx) in pre:   # pre: empty on the usual path
                r = _ERROR_RESULT._replace(error=pre.get((key, idx), Errors.UNKNOWN_TOPIC_ID))
            else:
                r = results.get((name, idx), _ERROR_RESULT)
                if LAST_V1_FORMAT_VERSION < version < ZSTD_MIN_FETCH_VERSION and r.records and _holds_zstd(r.records):
                    r = r._replace(records=b"", error=Errors.UNSUPPORTED_COMPRESSION_TYPE)
            answered.append((idx, r, r.error in _LEADER_HINT_ERRORS and r.leader_epoch >= 0))
        topics.append((key, name, answered))
    return topics


_LEADER_HINT_ERRORS = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH)


def build_response(version: int, order: TopicOrder, results: dict[TopicPartition, LogReadResult],
                   pre: dict[tuple[TopicKey, int], int], error: int = Errors.NONE, throttle_ms: int = 0) -> object:
    """The kio FetchResponse entity: the answer to v0-v3 and to requests kio decoded, and the
    reference ``fast_fetch.encode_fetch_body`` is tested against."""
    cls = response_schema(ApiKeys.FETCH, version)
    topic_cls = item_cls(cls, "responses")
    part_cls = item_cls(topic_cls, "partitions")
    epoch_cls = item_cls(part_cls, "diverging_epoch") if version >= 12 else None
    leader_cls = item_cls(part_cls, "current_leader") if version >= 12 else None
    aborted_cls = item_cls(part_cls, "aborted_transactions") if version >= 4 else None   # a v4 field
    topics = []
    for key, name, parts in partition_responses(version, order, results, pre):
        presp = []
        for idx, r, leader_hint in parts:
            kw = {"partition_index": idx, "error_code": r.error, "high_watermark": r.high_watermark,
                  "last_stable_offset": r.last_stable_offset, "log_start_offset": r.log_start_offset,
                  "preferred_read_replica": -1, "records": r.records,
                  "aborted_transactions": None if r.aborted_transactions is None else tuple(
                      aborted_cls(producer_id=t.producer_id, first_offset=t.first_offset)
                      for t in r.aborted_transactions) if aborted_cls is not None else None}
            if epoch_cls is not None:
                if r.diverging_epoch is not None:
                    kw["diverging_epoch"] = epoch_cls(epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])
                if leader_hint:
                    kw["current_leader"] = leader_cls(leader_id=r.leader_id, leader_epoch=r.leader_epoch)
            presp.append(build(part_cls, **kw))
        topics.append(build(topic_cls, topic=name or "", topic_id=key, partitions=tuple(presp)))
    return build(cls, throttle_time=timedelta(milliseconds=throttle_ms) if throttle_ms else ZERO_THROTTLE,
                 error_code=error, session_id=0, responses=tuple(topics))


APIS = (ApiSpec(ApiKeys.FETCH, 0, 18, handle_fetch),)
