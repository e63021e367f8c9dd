"""Shared fixtures of the load tests: one Spark session for the whole run (it takes 5-15 s to start),
and a small table of samples whose report is known."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pyarrow as pa
import pytest

from kafka_emu.loadgen.samples import SampleSink


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kafka_emu.loadgen.spark_session import start_session

    session = start_session("local[2]", app_name="kafka-emu-tests")
    try:
        yield session
    finally:
        session.stop()


def messages_in_log(bootstrap: str, topic: str, partitions: int) -> int:
    """Sum of the topic's high watermarks: what the brokers hold."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "loadgen-test-check"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                   for p in range(partitions))
    finally:
        c.close()


@pytest.fixture
def in_log() -> Callable[[str, str, int], int]:
    return messages_in_log


@pytest.fixture
def known_samples() -> pa.Table:
    """Producer acks offsets 0..99 on t-0; group g reads 0..97 plus 10..19 again; consumer c reads all.

    Member g-m0 is there from the start, g-m1 joins at +1.5 s and leaves (planned) at +2.0 s, g-m0
    crashes at +2.5 s, consumer c closes at the end (not a group leave)."""
    prod = SampleSink("producer:p:0", "confluent")
    for i in range(100):
        prod.add("produce", float(i + 1), topic="t", partition=0, offset=i, nbytes=10, ts=1000.0 + i / 50)
    prod.add("produce", None, error="REQUEST_TIMED_OUT", topic="t", ts=1001.0)
    g = SampleSink("member:g-m0", "confluent", "g", "g-m0")
    g.add("join", ts=1000.0)
    g.add("rebalance", 250.0, detail="assigned=1", ts=1000.3)
    g.add("revoke", ts=1001.5)
    g.add("rebalance", 2.0, detail="assigned=1", ts=1001.502)
    for i in list(range(98)) + list(range(10, 20)):
        g.add("consume", 5.0, topic="t", partition=0, offset=i, nbytes=10, ts=1000.5 + i / 50)
    g.add("crash", ts=1002.5)
    g1 = SampleSink("member:g-m1", "confluent", "g", "g-m1")
    g1.add("join", ts=1001.5)
    g1.add("rebalance", 3.0, detail="assigned=0", ts=1001.503)
    g1.add("leave", 4.0, detail="leave", ts=1002.0)
    c = SampleSink("consumer:c", "kafka-python")
    for i in range(100):
        c.add("consume", 7.0, topic="t", partition=0, offset=i, nbytes=10, ts=1000.5 + i / 50)
    c.add("close", None, detail="drained", ts=1002.6)
    return pa.Table.from_batches([s.to_arrow() for s in (prod, g, g1, c)])
