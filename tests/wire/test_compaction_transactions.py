"""Transaction-aware compaction with real clients: a compacted topic written by a confluent-kafka
transactional producer (commits and aborts) is cleaned by the brokers' log cleaners, then read by
a read_committed and a read_uncommitted consumer (Kafka's LogCleaner with transactions, as
TransactionsTest's compacted-topic cases and LogCleanerParameterizedIntegrationTest combine them)."""
from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafka_emu.broker.storage.record_batch import iter_records

from wire_helpers import unique, wait_until

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.kafka_cluster(brokers=3, config={"default.replication.factor": 3,
                                                           "transaction.state.log.num.partitions": 5,
                                                           "log.cleaner.backoff.ms": 50})]

KEYS = 10
ROUNDS = 6


def read_latest(kafka_cluster: Any, topic: str, isolation: str, end_offset: int) -> tuple[dict, list[int]]:
    """(key -> latest value, offsets in the order read) of everything below ``end_offset``."""
    c = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": unique("rd"),
                  "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    c.subscribe([topic])
    latest: dict[bytes, bytes] = {}
    offsets: list[int] = []
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and (not offsets or offsets[-1] < end_offset - 1):
            m = c.poll(0.2)
            if m is not None and not m.error():
                latest[m.key()] = m.value()
                offsets.append(m.offset())
    finally:
        c.close()
    return latest, offsets


def test_compacted_topic_with_aborted_transactions_reads_latest_committed(kafka_cluster: Any) -> None:
    """Rounds of a committed transaction then an aborted one over the same keys; once the cleaners
    ran, no replica holds an aborted record below its active segment, and both a read_committed
    and a read_uncommitted consumer get exactly the latest committed value of every key."""
    topic = unique("ctxn")
    kafka_cluster.create_topic(topic, 1, 3, configs={"cleanup.policy": "compact", "segment.bytes": "2000",
                                                    "min.cleanable.dirty.ratio": "0.01"})
    p = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "transactional.id": unique("tx"),
                  "transaction.timeout.ms": 30000, "linger.ms": 5, "batch.size": 800})
    p.init_transactions(30)
    expected: dict[bytes, bytes] = {}
    for r in range(ROUNDS):
        p.begin_transaction()
        for k in range(KEYS):
            p.produce(topic, key=b"k%d" % k, value=b"committed-%d-%d" % (r, k))
            expected[b"k%d" % k] = b"committed-%d-%d" % (r, k)
        p.commit_transaction(30)
        p.begin_transaction()
        for k in range(KEYS):
            p.produce(topic, key=b"k%d" % k, value=b"aborted-%d-%d" % (r, k) + b"x" * 100)
        p.flush(30)
        p.abort_transaction(30)
    # a last committed transaction of other keys, so every aborted record lies below the active segment
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, key=b"filler-%d" % i, value=b"f" * 100)
        expected[b"filler-%d" % i] = b"f" * 100
    p.commit_transaction(30)

    logs = [kafka_cluster.logs[b][(topic, 0)] for b in kafka_cluster.logs if (topic, 0) in kafka_cluster.logs[b]]
    assert len(logs) == 3

    def stored_below_active(log: Any) -> list[bytes]:
        with log.lock:
            active = log.active_segment.base_offset
            return [v for _, data in log.batches_from(0) for o, _, v in iter_records(data) if o < active]

    def cleaned() -> bool:
        return all(log.high_watermark == log.log_end_offset for log in logs) and all(
            not any(v.startswith(b"aborted") for v in stored_below_active(log)) for log in logs)

    wait_until(cleaned, 30, what="the cleaners remove the aborted records")
    leo = logs[0].log_end_offset
    assert not [v for log in logs for _, data in log.batches_from(0) for _, _, v in iter_records(data)
                if v.startswith(b"aborted")]
    for isolation in ("read_committed", "read_uncommitted"):
        latest, offsets = read_latest(kafka_cluster, topic, isolation, leo - 1)
        assert latest == expected, isolation
        assert offsets == sorted(set(offsets)) and offsets[0] > 0
