"""The fetch-side cases of ``kafka-emu bench wire``: end-to-end latency and partition scaling.

End to end (``measure_end_to_end``): a confluent-kafka producer sends at a fixed rate (default
2,000 msg/s, acks=all, each value carrying its send time), a confluent-kafka consumer reads along
from the end of the partition, and the latency is consume time minus send time. A record becomes
visible to a consumer only once the high watermark passes it, so with replication factor 3 every
record waits for both followers' fetches and then for the consumer's parked fetch to be
completed; the same run on replication factor 1 is the comparator (the ratio is printed).

Partition scaling (``measure_partition_scaling``), for each N of ``--partitions``: a 3-broker
RF 3 cluster holding N idle partitions (one topic) — its CPU use over a quiet second
(process CPU time / wall time, all of the cluster's threads: replica fetchers, handlers,
purgatory reapers); the time to answer a Metadata request for every topic over a socket;
confluent-kafka producing ``--scaling-messages`` × 100 B spread over the N partitions.

Clients run in ``spawn`` child processes so they do not compete with the brokers for the
interpreter lock; the brokers run in this process.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

from kafka_emu.bench.bench_util import percentile

TARGET_E2E_P99_MS = 10.0
TARGET_IDLE_CPU_PCT = 5.0
TARGET_METADATA_MS = 30.0
TARGET_SPREAD_PRODUCE_RATIO = 0.5


# --- end to end latency (child processes) ----------------------------------------------------------

def _e2e_consumer(bootstrap: str, topic: str, seconds: float, ready: Any, out: Any) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"e2e-{time.time_ns()}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 500, "fetch.min.bytes": 1})
    c.assign([TopicPartition(topic, 0, 0)])
    # the first poll opens the connection and sends the first fetch; then the producer may start
    c.poll(0.5)
    ready.set()
    lat: list[float] = []
    deadline = time.time() + seconds + 10
    while time.time() < deadline:
        m = c.poll(0.2)
        if m is None or m.error() is not None:
            continue
        now = time.time()
        value = m.value()
        if value == b"end":
            break
        lat.append((now - float(value[:20])) * 1000.0)
    c.close()
    out.put(lat)


def _e2e_producer(bootstrap: str, topic: str, rate: int, seconds: float, out: Any) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    n = int(rate * seconds)
    start = time.perf_counter()
    pad = b"x" * 80
    for i in range(n):
        due = start + i / rate
        while True:
            wait = due - time.perf_counter()
            if wait <= 0:
                break
            p.poll(min(wait, 0.005))
        p.produce(topic, b"%20.6f" % time.time() + pad, partition=0)
        p.poll(0)
    p.produce(topic, b"end", partition=0)
    out.put(p.flush(30))


def measure_end_to_end(cluster: Any, replication_factor: int, rate: int, seconds: float) -> dict[str, Any]:
    """Latency percentiles (ms) of one producer at ``rate`` msg/s with a consumer reading along."""
    topic = f"bench-wire-e2e-rf{replication_factor}-{time.time_ns()}"
    cluster.create_topic(topic, 1, replication_factor)
    ctx = mp.get_context("spawn")
    q, ready, done = ctx.Queue(), ctx.Event(), ctx.Queue()
    c = ctx.Process(target=_e2e_consumer, args=(cluster.bootstrap_servers, topic, seconds, ready, q),
                    name="bench-wire-e2e-consumer")
    c.start()
    ready.wait(60)
    p = ctx.Process(target=_e2e_producer, args=(cluster.bootstrap_servers, topic, rate, seconds, done),
                    name="bench-wire-e2e-producer")
    p.start()
    done.get(timeout=seconds + 60)
    lat = sorted(q.get(timeout=seconds + 60))
    p.join(10)
    c.join(10)
    return {"replication_factor": replication_factor, "rate": rate, "seconds": seconds,
            "records": len(lat),
            "p50_ms": round(percentile(lat, 50), 2), "p99_ms": round(percentile(lat, 99), 2),
            "max_ms": round(lat[-1], 2) if lat else None}
