"""aiokafka 0.14 against a 3-broker cluster (replication factor 3)."""
from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from wire_helpers import unique

pytestmark = pytest.mark.timeout(60)

CONSUMER_OPTS: dict[str, Any] = dict(
    auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=1500,
    heartbeat_interval_ms=100, max_poll_interval_ms=10000, request_timeout_ms=5000,
    fetch_max_wait_ms=50, metadata_max_age_ms=1000, retry_backoff_ms=20)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 45))


async def make_topic(bs: str, partitions: int = 4) -> str:
    name = unique("ak")
    admin = AIOKafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=5000)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 3)])
    finally:
        await admin.close()
    return name


async def produce(bs: str, topic: str, values: list[bytes]) -> None:
    """acks=all; aiokafka's default is no idempotence."""
    p = AIOKafkaProducer(bootstrap_servers=bs, acks="all", request_timeout_ms=5000, retry_backoff_ms=20)
    await p.start()
    try:
        futs = [await p.send(topic, v) for v in values]
        await asyncio.gather(*futs)
    finally:
        await p.stop()


async def consume(c: Any, count: int, timeout_s: float = 15.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} records"
        for records in (await c.getmany(timeout_ms=100)).values():
            got.extend(r.value for r in records)
    return got


async def until(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_produce_consume_commit_and_resume(kafka_cluster: Any) -> None:
    bs = kafka_cluster.bootstrap_servers

    async def scenario() -> None:
        topic = await make_topic(bs)
        group = unique("ak-group")
        first = [f"a{i}".encode() for i in range(40)]
        await produce(bs, topic, first)
        c1 = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group, **CONSUMER_OPTS)
        await c1.start()
        try:
            assert sorted(await consume(c1, 40)) == sorted(first)
            await c1.commit()
        finally:
            await c1.stop()
        second = [f"b{i}".encode() for i in range(20)]
        await produce(bs, topic, second)
        c2 = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group, **CONSUMER_OPTS)
        await c2.start()
        try:
            got = await consume(c2, 20)
            assert sorted(got) == sorted(second), "restart must resume from the committed offsets"
        finally:
            await c2.stop()

    run(scenario())


def test_second_consumer_triggers_rebalance(kafka_cluster: Any) -> None:
    bs = kafka_cluster.bootstrap_servers

    async def scenario() -> None:
        topic = await make_topic(bs, partitions=4)
        group = unique("ak-rebalance")
        a = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group, **CONSUMER_OPTS)
        b = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group, **CONSUMER_OPTS)
        await a.start()
        try:
            await until(lambda: len(a.assignment()) == 4, 15, "first consumer owns 4 partitions")
            await b.start()
            try:
                await until(lambda: [len(a.assignment()), len(b.assignment())] == [2, 2], 20,
                            "partitions split 2/2")
                assert not set(a.assignment()) & set(b.assignment())
            finally:
                await b.stop()
        finally:
            await a.stop()

    run(scenario())


def test_admin_topics_and_groups(kafka_cluster: Any) -> None:
    bs = kafka_cluster.bootstrap_servers

    async def scenario() -> None:
        topic = await make_topic(bs, partitions=2)
        group = unique("ak-describe")
        await produce(bs, topic, [b"x"])
        c = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group, **CONSUMER_OPTS)
        await c.start()
        admin = AIOKafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=5000)
        await admin.start()
        try:
            await consume(c, 1)
            assert topic in await admin.list_topics()
            described = await admin.describe_consumer_groups([group])
            text = repr(described)
            assert group in text and "Stable" in text, text
            listed = await admin.list_consumer_groups()
            assert any(g[0] == group for g in listed), listed
            await c.stop()
            await admin.delete_topics([topic])
            deadline = time.monotonic() + 5
            while topic in await admin.list_topics():
                assert time.monotonic() < deadline, "topic not deleted"
                await asyncio.sleep(0.02)
        finally:
            await admin.close()

    run(scenario())
