"""The log layer with real clients: codecs, validation errors, topic configs, retention and
OFFSET_OUT_OF_RANGE, log start offset on followers, topic deletion dropping committed offsets."""
from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_emu.broker.storage import compression
from kafka_emu.broker.cluster.inprocess_client import produce_request
from kafka_emu.broker.storage.record_batch import iter_records, parse_batches
from kafka_emu.common.api_keys import ApiKeys

from wire_helpers import RawClient, unique, wait_until

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "broker"))
from log_batches import compressed_batch, make_batch  # noqa: E402

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.kafka_cluster(brokers=3, config={"log.retention.check.interval.ms": 50,
                                                           "log.initial.task.delay.ms": 0,
                                                           "log.cleaner.backoff.ms": 50})]
CODECS = ["gzip", "snappy", "lz4", "zstd"]


@pytest.fixture
def admin(kafka_cluster: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})


def make_topic(admin: AdminClient, partitions: int = 1, rf: int = 3, **config: str) -> str:
    name = unique("log")
    for f in admin.create_topics([NewTopic(name, partitions, rf, config=config)], operation_timeout=5).values():
        f.result(timeout=10)
    return name


def consumer(bs: str, group: str, **kw: Any) -> Consumer:
    conf = {"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "session.timeout.ms": 1500, "heartbeat.interval.ms": 100,
            "fetch.wait.max.ms": 50, "topic.metadata.refresh.interval.ms": 500}
    conf.update(kw)
    return Consumer(conf)


def consume(c: Consumer, count: int, timeout_s: float = 20.0) -> list[Any]:
    got: list[Any] = []

    def enough() -> bool:
        for m in c.consume(num_messages=500, timeout=0.1):
            assert m.error() is None, m.error()
            got.append(m)
        return len(got) >= count

    wait_until(enough, timeout_s)
    return got


def confluent_produce(bs: str, topic: str, values: list[bytes], **conf: Any) -> None:
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, **conf})
    errs: list[Any] = []
    for v in values:
        p.produce(topic, v, key=b"k" + v[:8], on_delivery=lambda err, msg: errs.append(err) if err else None)
    assert p.flush(20) == 0
    assert not errs, errs


def leader_log(cluster: Any, topic: str, partition: int = 0) -> Any:
    return cluster.logs[cluster.leader_of(topic, partition)][(topic, partition)]


def stored_codecs(cluster: Any, topic: str) -> set[int]:
    log = leader_log(cluster, topic)
    with log.lock:
        return {parse_batches(b)[0].attributes & compression.CODEC_MASK for _, b in log.batches_from(0)}


def raw_produce(cluster: Any, topic: str, records: bytes, version: int = 9) -> Any:
    leader = cluster.leader_of(topic, 0)
    client = RawClient(cluster.broker(leader).bootstrap_server)
    try:
        return client.send(produce_request(topic, 0, records, acks=-1, version=version)).responses[0].partition_responses[0]
    finally:
        client.close()


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_codecs_round_trip_and_stored_as_sent(kafka_cluster: Any, admin: AdminClient, codec: str) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin)
    values = [f"value-{i}".encode() * 20 for i in range(300)]
    confluent_produce(bs, topic, values, **{"compression.type": codec})
    assert stored_codecs(kafka_cluster, topic) == {compression.BY_TOPIC_CONFIG[codec]}
    c = consumer(bs, unique("g"))
    c.subscribe([topic])
    try:
        assert [m.value() for m in consume(c, len(values))] == values
    finally:
        c.close()


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_codecs_round_trip(kafka_cluster: Any, admin: AdminClient, codec: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin)
    values = [f"kp-{i}".encode() * 10 for i in range(200)]
    p = KafkaProducer(bootstrap_servers=bs, acks="all", compression_type=codec, linger_ms=5)
    for v in values:
        p.send(topic, v)
    p.flush(20)
    p.close()
    assert stored_codecs(kafka_cluster, topic) == {compression.BY_TOPIC_CONFIG[codec]}
    c = KafkaConsumer(topic, bootstrap_servers=bs, auto_offset_reset="earliest", consumer_timeout_ms=10000,
                      enable_auto_commit=False)
    try:
        got = []
        for m in c:
            got.append(m.value)
            if len(got) == len(values):
                break
        assert got == values
    finally:
        c.close()


def test_corrupt_compressed_batch_is_corrupt_message(kafka_cluster: Any, admin: AdminClient) -> None:
    """The issue's case: gzip flag, 200 random bytes, valid CRC -> CORRUPT_MESSAGE, nothing stored."""
    topic = make_topic(admin)
    p = raw_produce(kafka_cluster, topic, make_batch(os.urandom(200), 3, codec=compression.GZIP))
    assert p.error_code.value == 2 and "gzip" in p.error_message
    assert leader_log(kafka_cluster, topic).log_end_offset == 0


def test_zstd_needs_produce_v7(kafka_cluster: Any, admin: AdminClient) -> None:
    """ProduceRequest.validateRecords: zstd below v7 is UNSUPPORTED_COMPRESSION_TYPE."""
    topic = make_topic(admin)
    batch = compressed_batch(compression.ZSTD, [(b"k", b"v")], [0])
    assert raw_produce(kafka_cluster, topic, batch, version=3).error_code.value == 76
    assert raw_produce(kafka_cluster, topic, batch, version=7).error_code.value == 0


def test_produce_to_internal_topic_is_invalid_topic_exception(kafka_cluster: Any) -> None:
    kafka_cluster.ensure_offsets_topic()
    p = raw_produce(kafka_cluster, "__consumer_offsets", compressed_batch(0, [(b"k", b"v")], [0]))
    assert p.error_code.value == 17 and p.error_message == "Cannot append to internal topic __consumer_offsets"


def test_topic_max_message_bytes_admits_5_mib(kafka_cluster: Any, admin: AdminClient) -> None:
    """max.message.bytes on the topic wins over the broker's message.max.bytes (1 MiB)."""
    bs = kafka_cluster.bootstrap_servers
    big = make_topic(admin, **{"max.message.bytes": "10485760"})
    small = make_topic(admin)
    value = os.urandom(5 * 1024 * 1024)
    confluent_produce(bs, big, [value], **{"message.max.bytes": 20_000_000})
    p = Producer({"bootstrap.servers": bs, "message.max.bytes": 20_000_000, "acks": "all"})
    errs: list[Any] = []
    p.produce(small, value, on_delivery=lambda err, msg: errs.append(err))
    p.flush(20)
    assert errs and errs[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    c = consumer(bs, unique("g"), **{"fetch.message.max.bytes": 20_000_000})
    c.subscribe([big])
    try:
        assert consume(c, 1)[0].value() == value
    finally:
        c.close()


def test_topic_compression_type_recompresses(kafka_cluster: Any, admin: AdminClient) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, **{"compression.type": "gzip"})
    values = [b"plain-%d" % i for i in range(50)]
    confluent_produce(bs, topic, values, **{"compression.type": "none"})
    assert stored_codecs(kafka_cluster, topic) == {compression.GZIP}
    c = consumer(bs, unique("g"))
    c.subscribe([topic])
    try:
        assert [m.value() for m in consume(c, len(values))] == values
    finally:
        c.close()


def test_log_append_time_topic(kafka_cluster: Any, admin: AdminClient) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, **{"message.timestamp.type": "LogAppendTime"})
    p = Producer({"bootstrap.servers": bs})
    p.produce(topic, b"v", timestamp=1000)
    p.flush(10)
    c = consumer(bs, unique("g"))
    c.subscribe([topic])
    try:
        ts_type, ts = consume(c, 1)[0].timestamp()
        assert ts_type == 2 and ts > 1_600_000_000_000    # TIMESTAMP_LOG_APPEND_TIME, broker time
    finally:
        c.close()


def test_retention_out_of_range_reset_and_follower_log_start(kafka_cluster: Any, admin: AdminClient) -> None:
    """A consumer behind retention gets OFFSET_OUT_OF_RANGE and resets (auto.offset.reset);
    the followers take the leader's log start offset through Fetch and drop their segments too."""
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, **{"segment.bytes": "4000", "retention.bytes": "8000"})
    confluent_produce(bs, topic, [b"%05d" % i + b"x" * 200 for i in range(200)], **{"batch.size": 1500})
    leader = leader_log(kafka_cluster, topic)
    wait_until(lambda: leader.log_start_offset > 0, 10)
    replicas = kafka_cluster.partition_state(topic, 0).replicas
    logs = [kafka_cluster.logs[b][(topic, 0)] for b in replicas]
    wait_until(lambda: all(lg.log_start_offset > 0 and lg.size_bytes <= 12000 for lg in logs), 10,
               what="followers take the leader's log start offset and delete their segments")
    start = leader.log_start_offset
    assert kafka_cluster.fetch(topic, 0, 0).error_code.value == 1       # OFFSET_OUT_OF_RANGE
    c = consumer(bs, unique("g"))                 # auto.offset.reset=earliest: to the log start
    c.assign([TopicPartition(topic, 0, 0)])
    try:
        first = consume(c, 1)[0]
        assert first.offset() >= start and first.value().startswith(b"%05d" % first.offset())
    finally:
        c.close()
    c = consumer(bs, unique("g"), **{"auto.offset.reset": "error"})   # no reset: the error surfaces
    c.assign([TopicPartition(topic, 0, 0)])
    seen: list[Any] = []
    try:
        wait_until(lambda: bool(seen.extend(m for m in c.consume(num_messages=10, timeout=0.1)
                                            if m.error() is not None) or seen), 10)
        assert seen[0].error().code() == KafkaError._AUTO_OFFSET_RESET
    finally:
        c.close()


def test_deleted_topic_loses_committed_offsets(kafka_cluster: Any, admin: AdminClient) -> None:
    """The issue's case: offset 50 committed, topic deleted and re-created, 60 records produced:
    the group starts from the beginning (auto.offset.reset), not at 50."""
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin)
    group = unique("g")
    confluent_produce(bs, topic, [b"old-%d" % i for i in range(100)])
    c = consumer(bs, group)
    c.subscribe([topic])
    consume(c, 50)
    c.commit(offsets=[TopicPartition(topic, 0, 50)], asynchronous=False)
    assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 50
    c.close()
    for f in admin.delete_topics([topic], operation_timeout=5).values():
        f.result(timeout=10)
    wait_until(lambda: kafka_cluster.metadata.topic(topic) is None, 10)
    for f in admin.create_topics([NewTopic(topic, 1, 3)], operation_timeout=5).values():
        f.result(timeout=10)
    confluent_produce(bs, topic, [b"new-%d" % i for i in range(60)])
    c = consumer(bs, group)
    c.subscribe([topic])
    try:
        got = consume(c, 60)
        assert got[0].offset() == 0 and [m.value() for m in got[:60]] == [b"new-%d" % i for i in range(60)]
    finally:
        c.close()


def test_compacted_topic_read_back_holds_latest_value_per_key(kafka_cluster: Any, admin: AdminClient) -> None:
    """cleanup.policy=compact: after the cleaner ran, a consumer reading from the start sees every
    key's latest value, and below the active segment one record per key."""
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(admin, **{"cleanup.policy": "compact", "segment.bytes": "3000",
                                 "min.cleanable.dirty.ratio": "0.01"})
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 0, "batch.size": 500})
    latest: dict[bytes, bytes] = {}
    for i in range(300):
        key, value = b"key-%d" % (i % 10), b"value-%d" % i
        p.produce(topic, value, key=key)
        latest[key] = value
        p.poll(0)
    assert p.flush(20) == 0
    leader = leader_log(kafka_cluster, topic)

    def compacted() -> bool:
        with leader.lock:
            active = leader.active_segment.base_offset
            offsets = [o for _, b in leader.batches_from(0) for o, _, _ in iter_records(b) if o < active]
        return 0 < len(offsets) <= 10 * (leader.num_segments())

    wait_until(compacted, 20, what="the cleaner compacts the topic")
    c = consumer(bs, unique("g"))
    c.subscribe([topic])
    try:
        seen: dict[bytes, bytes] = {}
        got = consume(c, 1)
        wait_until(lambda: bool(got.extend(m for m in c.consume(num_messages=500, timeout=0.1)
                                           if m.error() is None)) or got[-1].offset() >= 299, 20)
        for m in got:
            seen[m.key()] = m.value()
        assert seen == latest
        assert got[0].offset() > 0 and len(got) < 300
    finally:
        c.close()


def _fetch(version: int, topic: str) -> Any:
    """A FetchRequest of any version from 4, with only the fields that version has."""
    import dataclasses
    from datetime import timedelta

    from kio.index import load_request_schema

    cls = load_request_schema(ApiKeys.FETCH, version)
    mod = __import__(cls.__module__, fromlist=["FetchTopic"])

    def make(kind: Any, **values: Any) -> Any:
        names = {f.name for f in dataclasses.fields(kind)}
        return kind(**{k: v for k, v in values.items() if k in names})

    part = make(mod.FetchPartition, partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                partition_max_bytes=1 << 20, last_fetched_epoch=-1)
    return make(cls, replica_id=-1, max_wait=timedelta(0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                session_id=0, session_epoch=-1, topics=(make(mod.FetchTopic, topic=topic, partitions=(part,)),),
                forgotten_topics_data=(), rack_id="")


def test_zstd_batches_not_served_below_fetch_v10(kafka_cluster: Any, admin: AdminClient) -> None:
    """KIP-110: a fetch below v10 that would return zstd gets UNSUPPORTED_COMPRESSION_TYPE."""
    topic = make_topic(admin)
    now = int(time.time() * 1000)   # (a 1970 timestamp would be past retention.ms at once)
    assert raw_produce(kafka_cluster, topic, compressed_batch(compression.ZSTD, [(b"k", b"v")], [now]),
                       version=7).error_code.value == 0
    wait_until(lambda: leader_log(kafka_cluster, topic).high_watermark == 1, 10)
    client = RawClient(kafka_cluster.broker(kafka_cluster.leader_of(topic, 0)).bootstrap_server)
    try:
        for version, code in ((4, 76), (9, 76), (10, 0), (12, 0)):
            part = client.send(_fetch(version, topic)).responses[0].partitions[0]
            assert part.error_code.value == code, version
            assert bool(part.records) == (code == 0)
    finally:
        client.close()
