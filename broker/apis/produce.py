"""Produce (key 0), versions 3..13: validate, append through the ReplicaManager, answer.

acks=0 sends no response (a failed acks=0 produce closes the connection, as Kafka does, so
the client notices); acks=1 answers after the leader append; acks=-1 answers from the
DelayedProduce. v13 names topics by id (UNKNOWN_TOPIC_ID when the id is not known).
Transactional produce: the emulator has no transaction coordinator; the transactional id is
ignored and batches are appended like idempotent ones.
"""
from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from kafka_emu.broker import errors
from kafka_emu.broker.apis.kio_shapes import duration_ms, error_code, make, nested, response_class, topic_key_and_name
from kafka_emu.broker.protocol.codec import EncodedResponse
from kafka_emu.broker.protocol.fast_produce import PartitionResult, ProduceRequestData, encode_produce_body

API_KEY = 0
MIN_VERSION = 3
MAX_VERSION = 13
ZERO = timedelta(0)


def register(apis: Any) -> None:
    apis.register(API_KEY, handle_produce)


def handle_produce(apis: Any, request: Any) -> None:
    body = request.body
    version = request.api_version
    by_id = version >= 13
    metadata = apis.metadata
    acks = int(body.acks)
    entries: dict[tuple[str, int], bytes] = {}
    order: list[tuple[Any, str | None, list[int]]] = []  # (topic key as sent, name, partitions)
    pre: dict[tuple[str, int], tuple[int, str | None]] = {}
    for td in body.topic_data:
        key, name = topic_key_and_name(td, by_id, metadata, "name")
        parts = []
        for pd in td.partition_data:
            idx = int(pd.index)
            parts.append(idx)
            tp = (name if name is not None else f"<unknown {key}>", idx)
            if name is None:
                pre[tp] = (errors.UNKNOWN_TOPIC_ID, "unknown topic id")
            elif not pd.records:
                pre[tp] = (errors.INVALID_RECORD, "no records")
            elif metadata is not None and metadata.topic(name) is None:
                pre[tp] = (errors.UNKNOWN_TOPIC_OR_PARTITION, None)
            else:
                entries[tp] = bytes(pd.records)
        order.append((key, name, parts))

    def on_done(statuses: dict) -> None:
        channel = apis.request_channel
        if acks == 0:
            failed = bool(pre) or any(s.error != errors.NONE for s in statuses.values())
            channel.send_response(request, None, close_connection=failed)
            return
        if isinstance(body, ProduceRequestData):   # decoded by the fast codec: answer in kind
            results = partition_results(order, statuses, pre)
            data = encode_produce_body(version, results)
            if data is not None:
                counts = Counter(code for _, parts in results for _, code, _, _, _ in parts)
                channel.send_response(request, EncodedResponse(data, version >= 9, counts))
                return
        channel.send_response(request, build_response(version, order, statuses, pre))

    apis.replica_manager.append_records(duration_ms(body.timeout), acks, entries, on_done)


def partition_results(order: list, statuses: dict, pre: dict) -> list[tuple[Any, list[PartitionResult]]]:
    """(topic key as sent, [(index, error, base offset, log start offset, message)]) in request order."""
    topics = []
    for key, name, parts in order:
        results: list[PartitionResult] = []
        for idx in parts:
            tp = (name if name is not None else f"<unknown {key}>", idx)
            st = statuses.get(tp)
            if st is not None:
                code, base, lso, msg = st.error, st.base_offset, st.log_start_offset, st.error_message
            else:
                code, msg = pre.get(tp, (errors.UNKNOWN_SERVER_ERROR, None))
                base, lso = -1, -1
            if code == errors.NONE:
                msg = None
            else:
                base = -1
            results.append((idx, code, base, lso, msg))
        topics.append((key, results))
    return topics


def build_response(version: int, order: list, statuses: dict, pre: dict) -> Any:
    """The response as a kio entity (in-process requests, and bodies kio decoded)."""
    cls = response_class(API_KEY, version)
    topic_cls = nested(cls, "TopicProduceResponse")
    part_cls = nested(cls, "PartitionProduceResponse")
    topics = []
    for key, results in partition_results(order, statuses, pre):
        presp = tuple(make(part_cls, {
            "index": idx, "error_code": error_code(code), "base_offset": base,
            "log_append_time": None, "log_start_offset": lso, "record_errors": (),
            "error_message": msg}) for idx, code, base, lso, msg in results)
        name = key if isinstance(key, str) else ""
        topics.append(make(topic_cls, {"name": name, "topic_id": key, "partition_responses": presp}))
    return make(cls, {"responses": tuple(topics), "throttle_time": ZERO})
