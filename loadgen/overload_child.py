"""The client processes of ``kafka-emu stress overload``: ``python -m kafka_emu.loadgen.overload_child <json>``.

Each runs one role until its deadline and prints one JSON line per second (``{"t": seconds,
"acked": n, "errors": n, ...}``) and a last line with ``"done": true``; the stress command reads
them. Clients live in their own processes so that their work is not counted in the broker's
resident memory and does not compete with it for the interpreter lock.

* ``producer``: a confluent-kafka producer writing ``value_bytes`` values as fast as the
  cluster acknowledges them (acks=all).
* ``flood``: ``connections`` blocking sockets spread over the brokers (``leaders``: address ->
  the partitions it leads), each sending the same pre-built Produce request (one batch of
  ``batch_kib`` KiB for each partition its broker leads) again as soon as the previous one is
  answered, so the brokers always have that many large requests arriving.
* ``canary``: a small acks=all producer at ``rate`` messages per second whose latencies show
  that other clients keep working while the flood runs.
"""
from __future__ import annotations

import json
import socket
import struct
import sys
import threading
import time
from datetime import timedelta
from typing import Any


def _emit(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


def run_producer(job: dict[str, Any]) -> None:
    from confluent_kafka import Producer

    counts = {"acked": 0, "errors": 0}

    def on_delivery(err: Any, _msg: Any) -> None:
        counts["errors" if err is not None else "acked"] += 1

    producer = Producer({"bootstrap.servers": job["bootstrap"], "acks": "all", "linger.ms": 5, "log_level": 0,
                         "queue.buffering.max.messages": 200_000})
    value = b"x" * job["value_bytes"]
    t0 = time.monotonic()
    deadline = t0 + job["seconds"]
    next_report = t0 + 1.0
    i = 0
    while time.monotonic() < deadline:
        try:
            producer.produce(job["topic"], value=value, key=b"%d" % (i % 97), on_delivery=on_delivery)
            i += 1
        except BufferError:
            producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
        if time.monotonic() >= next_report:
            _emit({"t": round(time.monotonic() - t0, 1), **counts})
            next_report += 1.0
    producer.flush(30)
    _emit({"t": round(time.monotonic() - t0, 1), **counts, "done": True})


def _produce_frame(topic: str, partitions: list[int], batch_kib: int) -> bytes:
    """One Produce v9 request (acks=-1) with one batch of ``batch_kib`` records of 1 KiB for
    each of ``partitions`` (Kafka takes exactly one batch per partition)."""
    from kio.index import load_request_schema

    from kafka_emu.broker.protocol.adapter import build, item_cls
    from kafka_emu.broker.protocol.codec import encode_request
    from kafka_emu.broker.storage.record_batch import build_batch

    batch = build_batch([(None, b"f" * 1024)] * batch_kib, timestamp_ms=int(time.time() * 1000))
    cls = load_request_schema(0, 9)
    topic_cls = item_cls(cls, "topic_data")
    part_cls = item_cls(topic_cls, "partition_data")
    parts = tuple(build(part_cls, index=p, records=batch) for p in partitions)
    body = build(cls, transactional_id=None, acks=-1, timeout=timedelta(seconds=30),
                 topic_data=(build(topic_cls, name=topic, partition_data=parts),))
    return encode_request(body, 1, client_id="overload-flood")


def run_flood(job: dict[str, Any]) -> None:
    # one frame per broker, holding the partitions it leads
    targets = [(address, _produce_frame(job["topic"], partitions, job["batch_kib"]))
               for address, partitions in sorted(job["leaders"].items())]
    counts = {"acked": 0, "errors": 0, "request_bytes": len(targets[0][1])}
    lock = threading.Lock()
    deadline = time.monotonic() + job["seconds"]

    def connection(n: int) -> None:
        address, frame = targets[n % len(targets)]
        host, port = address.rsplit(":", 1)
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((host, int(port)), timeout=job["seconds"] + 30) as sock:
                    while time.monotonic() < deadline:
                        sock.sendall(frame)
                        size = struct.unpack(">i", _exact(sock, 4))[0]
                        _exact(sock, size)
                        with lock:
                            counts["acked"] += 1
            except OSError:
                with lock:
                    counts["errors"] += 1
                time.sleep(0.1)

    threads = [threading.Thread(target=connection, args=(n,), name=f"overload-flood-{n}", daemon=True)
               for n in range(job["connections"])]
    t0 = next_report = time.monotonic()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        next_report += 1.0
        time.sleep(max(0.0, next_report - time.monotonic()))
        with lock:
            _emit({"t": round(time.monotonic() - t0, 1), **counts})
    with lock:
        _emit({"t": round(time.monotonic() - t0, 1), **counts, "done": True})


def _exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("closed by the broker")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def run_canary(job: dict[str, Any]) -> None:
    from confluent_kafka import Producer

    latencies: list[float] = []
    counts = {"acked": 0, "errors": 0}

    def on_delivery(err: Any, _msg: Any, sent: float) -> None:
        if err is None:
            counts["acked"] += 1
            latencies.append(time.monotonic() - sent)
        else:
            counts["errors"] += 1

    # idempotent, as a careful application's producer is: at most 5 requests in flight, so while
    # the broker makes it wait, its messages gather into the next request
    producer = Producer({"bootstrap.servers": job["bootstrap"], "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "log_level": 0, "message.timeout.ms": 120_000})
    t0 = time.monotonic()
    deadline = t0 + job["seconds"]
    interval = 1.0 / job["rate"]
    next_send = next_report = t0
    while time.monotonic() < deadline:
        now = time.monotonic()
        if now >= next_send:
            producer.produce(job["topic"], value=b"canary",
                             on_delivery=lambda err, msg, sent=now: on_delivery(err, msg, sent))
            next_send += interval
        producer.poll(min(0.01, max(0.0, next_send - time.monotonic())))
        if now >= next_report:
            _emit({"t": round(now - t0, 1), **counts, "max_latency_s": round(max(latencies, default=0.0), 3)})
            latencies.clear()
            next_report += 1.0
    left = producer.flush(60)
    _emit({"t": round(time.monotonic() - t0, 1), **counts, "unflushed": left, "done": True,
           "max_latency_s": round(max(latencies, default=0.0), 3)})


ROLES = {"producer": run_producer, "flood": run_flood, "canary": run_canary}


def main() -> int:
    job = json.loads(sys.argv[1])
    ROLES[job["role"]](job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
