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
    cpu0 = time.process_time()
    p.start()
    done.get(timeout=seconds + 60)
    lat = sorted(q.get(timeout=seconds + 60))
    cpu = time.process_time() - cpu0
    p.join(10)
    c.join(10)
    return {"replication_factor": replication_factor, "rate": rate, "seconds": seconds,
            "records": len(lat), "load_average": round(os.getloadavg()[0], 2),
            "broker_cpu_us_per_record": round(cpu * 1e6 / max(len(lat), 1)),
            "p50_ms": round(percentile(lat, 50), 2), "p99_ms": round(percentile(lat, 99), 2),
            "max_ms": round(lat[-1], 2) if lat else None}


# --- partition scaling -------------------------------------------------------------------------------

def _metadata_ms(host: str, port: int, repeats: int = 5) -> float:
    """Median wall time of a Metadata (v12, all topics) request/response over one socket."""
    import socket
    import struct

    from kio.schema.metadata.v12 import request as mr

    from kafka_emu.broker.protocol.codec import encode_request

    frame = encode_request(mr.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False), 1, "bench-wire")
    times = []
    with socket.create_connection((host, port)) as s:
        for _ in range(repeats):
            t0 = time.perf_counter()
            s.sendall(frame)
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data, 0)[0]:
                chunk = s.recv(1 << 20)
                if not chunk:
                    raise ConnectionError("broker closed the connection")
                data += chunk
            times.append((time.perf_counter() - t0) * 1000.0)
    return sorted(times)[len(times) // 2]


def idle_cpu_pct(seconds: float) -> float:
    """CPU time of this process (every broker thread) over ``seconds`` of wall time, in %."""
    t0, c0 = time.perf_counter(), time.process_time()
    time.sleep(seconds)
    return 100.0 * (time.process_time() - c0) / (time.perf_counter() - t0)


def _spread_produce(bootstrap: str, topic: str, n: int, out: Any) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "queue.buffering.max.messages": max(n + 10, 100000),
                  "queue.buffering.max.kbytes": 2 * 1024 * 1024, "batch.size": 1000000})
    value = b"x" * 100
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.01)
    out.put((time.perf_counter() - start, p.flush(300)))


def measure_spread_produce(cluster: Any, topic: str, n: int) -> float:
    """confluent-kafka (sticky partitioner, acks=all) producing ``n`` × 100 B to ``topic``: msg/s."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_spread_produce, args=(cluster.bootstrap_servers, topic, n, q),
                    name="bench-wire-spread-producer")
    p.start()
    seconds, undelivered = q.get(timeout=900)
    p.join(10)
    return round((n - undelivered) / seconds)


def measure_partition_scaling(counts: list[int], messages: int, idle_seconds: float) -> list[dict[str, Any]]:
    """One fresh 3-broker RF 3 cluster per partition count (see the module docstring)."""
    from kafka_emu.broker.cluster import EmbeddedCluster

    rows = []
    for n in counts:
        with EmbeddedCluster(brokers=3, config={"offsets.topic.replication.factor": 3}) as cluster:
            topic = f"bench-wire-scale-{n}"
            cluster.create_topic(topic, n, 3)
            time.sleep(1.0)   # followers' first full fetches, ISR settled
            row: dict[str, Any] = {"partitions": n, "load_average": round(os.getloadavg()[0], 2)}
            row["idle_cpu_pct"] = round(idle_cpu_pct(idle_seconds), 1)
            b = cluster.metadata.broker(cluster.live_brokers()[0])
            row["metadata_ms"] = round(_metadata_ms(b.host, b.port), 2)
            if messages:
                row["produce_msgs_per_s"] = measure_spread_produce(cluster, topic, messages)
            rows.append(row)
    return rows
