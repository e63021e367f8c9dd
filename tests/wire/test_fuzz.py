"""Hostile bytes from many connections while a well-behaved client keeps working.

Random and truncated frames, huge length prefixes, unknown API keys and versions, unknown tagged
fields and bit-flipped valid requests go to every broker from many threads at once. Throughout,
a kafka-python producer/consumer pair keeps round-tripping records; afterwards every network and
handler thread is alive and has logged no loop error, and connection state is released.
"""
from __future__ import annotations

import random
import socket
import struct
import threading
import time
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kio.index import load_request_schema, load_response_schema

from kafka_emu.broker.protocol.codec import decode_response, encode_request
from kafka_emu.common.api_keys import ApiKeys
from wire_helpers import unique, wait_until, wire_threads

pytestmark = pytest.mark.timeout(90)

FUZZ_SECONDS = 3.0
FUZZ_THREADS = 12


def valid_frames() -> list[bytes]:
    """Well-formed requests the fuzzer mutates (none of them can create or delete anything)."""
    frames = []
    av = load_request_schema(ApiKeys.API_VERSIONS, 3)(client_software_name="fuzz", client_software_version="1")
    frames.append(encode_request(av, 1))
    frames.append(encode_request(load_request_schema(ApiKeys.API_VERSIONS, 0)(), 2))
    md = load_request_schema(ApiKeys.METADATA, 12)(topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)
    frames.append(encode_request(md, 3))
    hb = load_request_schema(ApiKeys.HEARTBEAT, 4)(group_id="fuzz-group", generation_id=1, member_id="m",
                                    group_instance_id=None)
    frames.append(encode_request(hb, 4))
    fc = load_request_schema(ApiKeys.FIND_COORDINATOR, 4)(key_type=0, coordinator_keys=("fuzz-group",))
    frames.append(encode_request(fc, 5))
    lg = load_request_schema(ApiKeys.LIST_GROUPS, 4)(states_filter=())
    frames.append(encode_request(lg, 6))
    dc = load_request_schema(ApiKeys.DESCRIBE_CLUSTER, 1)(include_cluster_authorized_operations=False, endpoint_type=1)
    frames.append(encode_request(dc, 7))
    dg = load_request_schema(ApiKeys.DESCRIBE_GROUPS, 5)(groups=("fuzz-group",), include_authorized_operations=False)
    frames.append(encode_request(dg, 8))
    return frames


def with_unknown_tags(frame: bytes, rng: random.Random) -> bytes:
    """Replace the empty top-level tag section of a flexible request with unknown tags."""
    raw = bytearray(frame)
    assert raw[-1] == 0
    tags = bytearray()
    n = rng.randint(1, 3)
    used = sorted(rng.sample(range(20, 120), n))
    tags.append(n)
    for tag in used:
        data = rng.randbytes(rng.randint(0, 10))
        tags += bytes([tag, len(data)]) + data
    raw[-1:] = tags
    struct.pack_into(">i", raw, 0, len(raw) - 4)
    return bytes(raw)


def hostile_payload(rng: random.Random, frames: list[bytes]) -> bytes:
    kind = rng.randrange(8)
    base = rng.choice(frames)
    if kind == 0:      # random garbage
        return rng.randbytes(rng.randint(1, 300))
    if kind == 1:      # truncated valid frame (prefix promises more than is sent)
        return base[:rng.randint(1, len(base) - 1)]
    if kind == 2:      # huge or negative length prefix
        return struct.pack(">i", rng.choice([0x7FFFFFFF, 200 * 1024 * 1024, -1, -(1 << 31)])) + rng.randbytes(8)
    if kind == 3:      # unknown api key
        body = struct.pack(">hhih", rng.choice([77, 999, 32000, -5]), 0, 1, -1) + rng.randbytes(6)
        return struct.pack(">i", len(body)) + body
    if kind == 4:      # known key, unknown version
        body = struct.pack(">hhih", rng.choice([0, 1, 3, 11, 18]), rng.choice([50, 200, -1]), 1, -1)
        return struct.pack(">i", len(body)) + body + rng.randbytes(4)
    if kind == 5:      # bit flips in a valid request body (the size prefix stays right)
        raw = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(8, len(raw))
            raw[i] ^= 1 << rng.randrange(8)
        return bytes(raw)
    if kind == 6:      # a size prefix that cuts the body short (declared size < real body)
        raw = bytearray(base)
        cut = rng.randint(9, len(raw) - 1)
        struct.pack_into(">i", raw, 0, cut - 4)
        return bytes(raw[:cut])
    return with_unknown_tags(frames[0], rng)   # unknown tags: must be answered, not closed


def fuzz_worker(seed: int, ports: list[int], frames: list[bytes], stop: threading.Event,
                stats: dict[str, int], lock: threading.Lock) -> None:
    rng = random.Random(seed)
    while not stop.is_set():
        port = rng.choice(ports)
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            continue
        try:
            s.settimeout(0.3)
            for _ in range(rng.randint(1, 4)):
                s.sendall(hostile_payload(rng, frames))
            try:
                s.recv(65536)
            except (socket.timeout, OSError):
                pass
        except OSError:
            pass
        finally:
            s.close()
            with lock:
                stats["connections"] += 1


def test_unknown_tagged_fields_are_answered(kafka_cluster: Any) -> None:
    rng = random.Random(5)
    host, port = kafka_cluster.bootstrap_servers.split(",")[0].split(":")
    s = socket.create_connection((host, int(port)), timeout=5)
    frames = valid_frames()
    for frame, (key, version) in ((frames[0], (18, 3)), (frames[2], (3, 12)), (frames[4], (10, 4))):
        s.sendall(with_unknown_tags(frame, rng))
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        data = s.recv(size, socket.MSG_WAITALL)
        _corr, resp = decode_response(data, load_response_schema(key, version))
        assert getattr(resp, "error_code", 0) == 0
    s.close()


def test_fuzz_keeps_cluster_serving(kafka_cluster: Any) -> None:
    import resource

    bs = kafka_cluster.bootstrap_servers
    ports = [int(hp.split(":")[1]) for hp in bs.split(",")]
    topic = unique("fuzz")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    threads_before = {t.name for t in wire_threads()}
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    producer = KafkaProducer(bootstrap_servers=bs, acks="all", linger_ms=0, request_timeout_ms=5000)
    consumer = KafkaConsumer(topic, bootstrap_servers=bs, auto_offset_reset="earliest", group_id=None,
                             fetch_max_wait_ms=50, request_timeout_ms=5000)
    frames = valid_frames()
    stop = threading.Event()
    stats = {"connections": 0}
    lock = threading.Lock()
    workers = [threading.Thread(target=fuzz_worker, args=(i, ports, frames, stop, stats, lock),
                                name=f"fuzz-{i}", daemon=True) for i in range(FUZZ_THREADS)]
    for w in workers:
        w.start()
    sent = 0
    received: list[bytes] = []
    try:
        deadline = time.monotonic() + FUZZ_SECONDS
        while time.monotonic() < deadline:
            value = f"ok-{sent}".encode()
            producer.send(topic, value).get(timeout=5)   # acks=all round trip during the fuzzing
            sent += 1
            for recs in consumer.poll(timeout_ms=20).values():
                received.extend(r.value for r in recs)
    finally:
        stop.set()
        for w in workers:
            w.join(5)

    def caught_up() -> bool:
        for recs in consumer.poll(timeout_ms=50).values():
            received.extend(r.value for r in recs)
        return len(received) >= sent

    wait_until(caught_up, 10, interval_s=0, what="consumer to read every record")
    producer.close(timeout=5)
    consumer.close()
    assert received == [f"ok-{i}".encode() for i in range(sent)]
    assert sent > 10 and stats["connections"] > 100, (sent, stats)

    # no network or handler thread died or hit a loop error
    alive = {t.name for t in wire_threads()}
    assert threads_before <= alive
    for server in kafka_cluster.servers.values():
        if server.stopped:
            continue
        ss = server.socket_server
        for t in ss.threads():
            assert t.is_alive() and t.error_count == 0, t.name
        assert sum(p.malformed_frames for p in ss.processors) > 0
        for h in server.handler_pool.handlers:
            assert h.is_alive(), h.name

    # connections from the fuzzers are all released, with their buffers
    def released() -> bool:
        return all(sum(p.channel_count() for p in s.socket_server.processors) <= 2
                   for s in kafka_cluster.servers.values() if not s.stopped)

    wait_until(released, 10, what="fuzz connections to be closed")
    rss_growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert rss_growth_mb < 200, f"memory grew by {rss_growth_mb:.0f} MB"
