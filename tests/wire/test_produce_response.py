"""What a Produce response reports beyond the offset: ``log_append_time_ms`` (the batch's append
time on a ``message.timestamp.type=LogAppendTime`` topic, else -1) and, for records the
LogValidator refuses, ``record_errors`` with Kafka's ``error_message``; with a real client
(confluent-kafka's delivery reports carry the append time) and at request level, through the
network (the fast codec) and in process (kio entities)."""
from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer

from kafka_emu.broker.cluster.inprocess_client import produce_request, send
from kafka_emu.broker.storage.record_batch import build_batch, parse_batches

from wire_helpers import RawClient, unique

pytestmark = [pytest.mark.timeout(60), pytest.mark.kafka_cluster(brokers=1)]

KEY_ERROR = "Compacted topic cannot accept message without key in topic partition {}-0."


def _create(cluster: Any, **configs: str) -> str:
    name = unique("produce-resp")
    cluster.create_topic(name, 1, 1, configs=configs)
    return name


def _raw_produce(cluster: Any, topic: str, records: bytes, version: int) -> Any:
    client = RawClient(cluster.broker(cluster.leader_of(topic, 0)).bootstrap_server)
    try:
        resp = client.send(produce_request(topic, 0, records, acks=1, version=version))
        return resp.responses[0].partition_responses[0]
    finally:
        client.close()


def _in_process_produce(cluster: Any, topic: str, records: bytes, version: int) -> Any:
    """The same request through the leader's request channel: answered with a kio entity."""
    resp = send(cluster.broker(cluster.leader_of(topic, 0)).request_channel, 0, version,
                produce_request(topic, 0, records, acks=1, version=version), timeout_s=10)
    return resp.body.responses[0].partition_responses[0]


def _stored_max_timestamp(cluster: Any, topic: str, offset: int) -> int:
    log = cluster.logs[cluster.leader_of(topic, 0)][(topic, 0)]
    with log.lock:
        batches = [b for base, b in log.batches_from(offset) if base == offset]
    return parse_batches(batches[0])[0].max_timestamp


def _ms(dt: Any) -> int:
    return -1 if dt is None else round(dt.timestamp() * 1000)


@pytest.mark.parametrize("send", [_raw_produce, _in_process_produce], ids=["network", "in-process"])
@pytest.mark.parametrize("version", [3, 7, 9, 12])
def test_log_append_time_in_response(kafka_cluster: Any, send: Any, version: int) -> None:
    """KafkaApis/ReplicaManager: ``log_append_time`` is the time the broker stamped on the batch
    for LogAppendTime topics (the same value a consumer reads), -1 (None) for CreateTime."""
    appended = _create(kafka_cluster, **{"message.timestamp.type": "LogAppendTime"})
    part = send(kafka_cluster, appended, build_batch([(b"k", b"v")], timestamp_ms=1000), version)
    assert part.error_code.value == 0
    assert _ms(part.log_append_time) == _stored_max_timestamp(kafka_cluster, appended, part.base_offset)
    assert _ms(part.log_append_time) > 1_600_000_000_000

    created = _create(kafka_cluster)
    part = send(kafka_cluster, created, build_batch([(b"k", b"v")], timestamp_ms=1000), version)
    assert part.error_code.value == 0 and part.log_append_time is None


@pytest.mark.parametrize("send", [_raw_produce, _in_process_produce], ids=["network", "in-process"])
@pytest.mark.parametrize("version", [7, 8, 9, 12])
def test_keyless_records_on_compacted_topic_get_record_errors(kafka_cluster: Any, send: Any, version: int) -> None:
    """LogValidatorTest.testCompactedTopicWithoutKey / ProduceRequestTest: every keyless record
    is a RecordError (its index in the batch), the partition error is INVALID_RECORD with
    ``processRecordErrors``' message, the log start offset is reported (Kafka's
    ``processFailedRecord``), and nothing is appended."""
    topic = _create(kafka_cluster, **{"cleanup.policy": "compact"})
    records = build_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4"), (None, b"5"), (None, b"6")])
    part = send(kafka_cluster, topic, records, version)
    assert part.error_code.value == 87 and part.base_offset == -1 and part.log_start_offset == 0
    message = KEY_ERROR.format(topic)
    if version >= 8:
        assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == \
            [(1, message), (3, message), (4, message), (5, message)]
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{message}')" for i in (1, 3, 4))
        assert part.error_message == ("One or more records have been rejected due to 4 record errors in total, "
                                      f"and only showing the first three errors at most: [{shown}]")
    assert kafka_cluster.logs[kafka_cluster.leader_of(topic, 0)][(topic, 0)].log_end_offset == 0


def test_duplicate_batch_answers_with_the_original_append_time(kafka_cluster: Any) -> None:
    """UnifiedLog.append: a duplicate gets the offsets and the timestamp of the batch it
    repeats (``BatchMetadata.timestamp``), not a new append time."""
    topic = _create(kafka_cluster, **{"message.timestamp.type": "LogAppendTime"})
    records = build_batch([(b"k", b"v")], producer_id=77, producer_epoch=0, base_sequence=0)
    first = _raw_produce(kafka_cluster, topic, records, 9)
    time.sleep(0.005)   # a later clock millisecond: a re-stamped duplicate would show
    again = _raw_produce(kafka_cluster, topic, records, 9)
    assert (again.error_code.value, again.base_offset) == (0, first.base_offset)
    assert again.log_append_time == first.log_append_time is not None


def test_confluent_delivery_reports_carry_the_append_time(kafka_cluster: Any) -> None:
    """librdkafka takes a delivered message's timestamp from the response's ``log_append_time``
    (type LogAppendTime) when the broker sends one; a consumer then reads the same value."""
    bs = kafka_cluster.bootstrap_servers
    appended = _create(kafka_cluster, **{"message.timestamp.type": "LogAppendTime"})
    created = _create(kafka_cluster)
    reports: dict[str, tuple[int, int]] = {}
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for topic in (appended, created):
        p.produce(topic, b"v", key=b"k", timestamp=1000,
                  on_delivery=lambda err, msg: reports.__setitem__(msg.topic(), (err, msg.timestamp())))
    assert p.flush(10) == 0
    assert reports[created] == (None, (TIMESTAMP_CREATE_TIME, 1000))
    err, (ts_type, ts) = reports[appended]
    assert err is None and ts_type == TIMESTAMP_LOG_APPEND_TIME and ts > 1_600_000_000_000

    c = Consumer({"bootstrap.servers": bs, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    c.subscribe([appended])
    try:
        msg = None
        for _ in range(100):
            msg = c.poll(0.2)
            if msg is not None:
                break
        assert msg is not None and msg.error() is None
        assert msg.timestamp() == (TIMESTAMP_LOG_APPEND_TIME, ts)
    finally:
        c.close()
