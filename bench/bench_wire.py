"""``kafka-emu bench wire``: request rate and client throughput over loopback.

(a) Request rate with one request in flight per connection: a small acks=1 Produce (one
100-byte record) on 1 and on 16 connections, against a 1-broker and a 3-broker in-process
cluster, each connection producing to its own partition on that partition's leader. Topics are
created with the cluster's default replication factor (1, Kafka's ``default.replication.factor``);
on the 3-broker cluster the same load is repeated on replication factor 3 (``ours_rf3``), where
every append also feeds two followers' fetches in the same interpreter.
``network_layer_only`` answers Produce with a canned response from a handler thread: the
ceiling of processors + codec + one hand-off each way. The same load is run against a naive
comparator — a thread-per-connection blocking server that decodes with kio, checks the CRC,
appends under one lock and encodes the response, its threads on the same CPU as the broker's —
and the ratio is printed.

(c) ``bench_wire_fetch``: confluent-kafka's produce-and-flush loop on one broker (one record,
acks=1, round trip after round trip), end-to-end latency on replication factor 3 against 1, the
``--partitions`` scaling curve, and the peers (``bench_wire_peers``: librdkafka's mock cluster
and noida-db) measured with the same load generator, each ratio printed. Every target is printed
as met or unmet.

(d) Security: the same request-rate load on one broker with two listeners, PLAINTEXT and
SASL_SSL (TLS with a throwaway certificate, SASL/PLAIN), in the same run; the ratio SASL_SSL /
PLAINTEXT is what TLS costs (target: at least ``TARGET_SASL_SSL_RATIO``). Also the start of a
3-broker SASL_SSL ``EmbeddedCluster``, certificates and SCRAM credentials included (target:
under ``TARGET_SECURED_START_MS``).

(b) ``--messages`` (default 1,000,000) messages of 100 B produced by confluent-kafka with
acks=all to the 3-broker cluster (replication factor 3), then consumed back: messages/s and MB/s
each way.

Load generators run in separate processes (``spawn``), so they do not compete with the broker
for its interpreter lock; the broker runs in this process, as an embedded cluster does, with
its threads on the CPU ``emulator.cpu.affinity`` chose (reported as ``broker_cpus``; the load
generators are not pinned). ``--json`` prints exactly one JSON object on stdout; progress goes
to stderr.
"""
from __future__ import annotations

import argparse
import json
import selectors
import socket
import ssl
import struct
import sys
import threading
import time
from datetime import timedelta
from typing import Any, Callable, TypeVar

from kafka_emu.bench import bench_wire_fetch
from kafka_emu.bench.bench_util import CpuTicks, child_result, cpu_line, cpu_per_request, thread_cpu_ticks
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.metrics.progress import progress, progress_enabled

TARGET_RATE_1 = 5000
TARGET_RATE_16 = 15000
# replication factor 3 on 3 brokers: every append also feeds two followers in the same interpreter
TARGET_REPLICATED_RATE_1 = 4000
TARGET_REPLICATED_RATE_16 = 10000
TARGET_PRODUCE_MSGS = 300_000
TARGET_SASL_SSL_RATIO = 0.7
TARGET_SECURED_START_MS = 300
RECORD = b"x" * 100
T = TypeVar("T")


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import int_list, non_negative_int, positive_float, positive_int

    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--messages", type=non_negative_int, default=1_000_000,
                        help="messages for the confluent-kafka throughput run (0 skips it)")
    parser.add_argument("--duration", type=positive_float, default=2.0, help="seconds per request-rate measurement")
    parser.add_argument("--connections", type=int_list(positive_int), default="1,16",
                        help="connection counts for the request rate")
    parser.add_argument("--brokers", type=int_list(positive_int), default="1,3",
                        help="cluster sizes for the request rate")
    parser.add_argument("--no-naive", action="store_true", help="skip the naive comparator")
    bench_wire_fetch.configure(parser)


# --- the load generator (runs in a child process) ----------------------------------------------

def produce_frame(topic: str, partition: int, correlation_id: int = 0) -> bytes:
    from kio.schema.produce.v9 import request as pr

    from kafka_emu.broker.protocol.codec import encode_request
    from kafka_emu.broker.storage.record_batch import build_batch

    batch = build_batch([(None, RECORD)])
    req = pr.ProduceRequest(transactional_id=None, acks=1, timeout=timedelta(seconds=30),
                            topic_data=(pr.TopicProduceData(name=topic, partition_data=(
                                pr.PartitionProduceData(index=partition, records=batch),)),))
    return encode_request(req, correlation_id, "bench-wire")


def _secure(sock: socket.socket, login: tuple[str, str, str]) -> socket.socket:
    """TLS (trusting ``cafile``) and a SASL/PLAIN login on a connected socket, blocking."""
    import ssl

    from kio.index import load_request_schema

    from kafka_emu.broker.protocol.codec import encode_request

    cafile, user, password = login
    tls = ssl.create_default_context(cafile=cafile).wrap_socket(sock, server_hostname="127.0.0.1")
    for correlation_id, body in enumerate((load_request_schema(17, 1)(mechanism="PLAIN"),
                                           load_request_schema(36, 2)(auth_bytes=f"\0{user}\0{password}".encode()))):
        tls.sendall(encode_request(body, correlation_id))
        size = struct.unpack(">i", _exact(tls, 4))[0]
        answer = _exact(tls, size)
        if struct.unpack_from(">h", answer, 4 + (1 if correlation_id else 0))[0] != 0:
            raise RuntimeError(f"SASL login failed: {answer!r}")
    return tls


def _exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _rate_client(targets: list[tuple[str, int, str, int]], warmup: float, duration: float,
                 login: tuple[str, str, str] | None, out: Any) -> None:
    """One request in flight per connection; counts answered requests in the measured window.
    ``login`` (CA file, user, password): connect over TLS and log in with SASL/PLAIN first.

    The loop is kept lean (one ``send`` and one ``recv`` per request, no per-request selector
    registration or blocking-mode switches) so that the load generator, which shares the
    machine with the broker, is not what is measured. A request frame of ~200 bytes always
    fits in an empty socket buffer, so a non-blocking ``send`` never writes short here.
    """
    sel = selectors.DefaultSelector()
    conns = []
    for host, port, topic, partition in targets:
        s = socket.create_connection((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if login is not None:
            s = _secure(s, login)
        frame = bytearray(produce_frame(topic, partition))
        conns.append([s, frame, bytearray(), 0])
    counted = answered = errors = 0   # answered: the warm-up's too (the CPU samples span it)
    ok = True
    start = time.perf_counter()
    measure_from = start + warmup
    end = measure_from + duration
    pack_into = struct.Struct(">i").pack_into
    if len(conns) == 1:
        s, frame, buf, corr = conns[0]
        recv = s.recv
        while True:
            corr += 1
            pack_into(frame, 8, corr)
            s.sendall(frame)
            data = recv(65536)
            while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data, 0)[0]:
                more = recv(65536)
                if not more:
                    ok = False
                    break
                data += more
            if not ok:
                errors += 1
                break
            answered += 1
            now = time.perf_counter()
            if now >= measure_from:
                if now >= end:
                    break
                counted += 1
    else:
        for st in conns:
            st[0].setblocking(False)
            sel.register(st[0], selectors.EVENT_READ, st)
            st[3] += 1
            pack_into(st[1], 8, st[3])
            st[0].send(st[1])
        now = time.perf_counter()
        while now < end:
            for key, _ in sel.select(0.5):
                st = key.data
                s = st[0]
                try:
                    data = s.recv(65536)
                    while login is not None and s.pending():   # TLS records already decrypted
                        data += s.recv(65536)
                except (BlockingIOError, ssl.SSLWantReadError):
                    continue
                if not data:
                    ok = False
                    errors += 1
                    sel.unregister(s)
                    continue
                buf = st[2]
                buf += data
                while len(buf) >= 4:
                    size = struct.unpack_from(">i", buf, 0)[0]
                    if len(buf) < 4 + size:
                        break
                    del buf[:4 + size]
                    answered += 1
                    if now >= measure_from:
                        counted += 1
                    st[3] += 1
                    pack_into(st[1], 8, st[3])
                    s.send(st[1])
            now = time.perf_counter()
    for st in conns:
        st[0].close()
    out.put({"requests": counted, "seconds": duration, "answered": answered, "errors": errors, "ok": ok})


def _run_rate_client(targets: list[tuple[str, int, str, int]], warmup: float, duration: float,
                     login: tuple[str, str, str] | None) -> dict[str, Any]:
    return child_result(_rate_client, (targets, warmup, duration, login), "bench-wire-client", warmup + duration + 60)


def measure_rate(targets: list[tuple[str, int, str, int]], warmup: float, duration: float,
                 login: tuple[str, str, str] | None = None) -> float:
    res = _run_rate_client(targets, warmup, duration, login)
    return res["requests"] / res["seconds"]


def measure_rate_cpu(targets: list[tuple[str, int, str, int]], warmup: float, duration: float,
                     cpu_ticks: Callable[[], CpuTicks]) -> tuple[float, dict[str, float]]:
    """``measure_rate`` and the server's CPU µs per request (``cpu_ticks`` sampled around the
    load generator's whole run, divided by every request it had answered)."""
    before = cpu_ticks()
    res = _run_rate_client(targets, warmup, duration, None)
    return res["requests"] / res["seconds"], cpu_per_request(before, cpu_ticks(), res["answered"])


def broker_thread_role(name: str) -> str:
    """The role of an emulator thread for the CPU split: Kafka's thread names say it."""
    if name.startswith("data-plane-kafka-network-thread"):
        return "processor"
    if name.startswith("data-plane-kafka-request-handler"):
        return "handler"
    return "other"


def measure_security(conn_counts: list[int], warmup: float, duration: float) -> dict[str, Any]:
    """(d): PLAINTEXT and SASL_SSL request rates of one broker in the same run, and the start of a
    3-broker SASL_SSL cluster (certificates included)."""
    from kafka_emu.broker.cluster.cluster_security import ClusterSecurity
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    security = ClusterSecurity("SASL_SSL", mechanisms=("PLAIN",))
    config = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", "offsets.topic.replication.factor": 1}
    out: dict[str, Any] = {"plaintext": {}, "sasl_ssl": {}, "ratio": {}}
    with EmbeddedCluster(brokers=1, security=security, config=config) as cluster:
        endpoints = cluster.metadata.broker(0).endpoints
        login = (str(security.ca_path), "alice", security.users["alice"])
        for conns in conn_counts:
            topic = f"bench-wire-security-{conns}"
            cluster.metadata.create_topic(topic, conns, 1)
            for listener, key in (("PLAINTEXT", "plaintext"), ("SASL_SSL", "sasl_ssl")):
                host, port = endpoints[listener]
                targets = [(host, port, topic, p) for p in range(conns)]
                out[key][str(conns)] = round(measure_rate(targets, warmup, duration,
                                                          login if listener == "SASL_SSL" else None))
            out["ratio"][str(conns)] = round(out["sasl_ssl"][str(conns)] / out["plaintext"][str(conns)], 2)
    starts = []
    for _ in range(3):
        t0 = time.perf_counter()
        cluster = EmbeddedCluster(brokers=3, security="SASL_SSL")
        starts.append((time.perf_counter() - t0) * 1000)
        cluster.close()
    out["secured_3_broker_start_ms"] = round(min(starts), 1)
    return out


# --- naive comparator ----------------------------------------------------------------------------

class NaiveServer:
    """Thread-per-connection blocking Produce server: the baseline the SocketServer is compared to.

    Everything a broker must do for a Produce is here (framing, kio decode, CRC check, append under
    a lock, kio encode), with none of the structure (no processors, no request channel, no
    purgatory). ``_lock`` guards ``_log``.
    """

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._lock = threading.Lock()
        self._log: list[bytes] = []
        self._stop = False
        self._threads: list[threading.Thread] = []
        t = threading.Thread(target=self._accept, name="naive-acceptor", daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            t = threading.Thread(target=self._serve, args=(conn,), name="naive-connection", daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        from crc32c import crc32c
        from kio.index import load_request_schema, load_response_schema
        from kio.schema.errors import ErrorCode
        from kio.schema.request_header.v2.header import RequestHeader
        from kio.serial import entity_reader, entity_writer
        import io

        read_header = entity_reader(RequestHeader)

        def exact(n: int) -> bytes:
            out = bytearray()
            while len(out) < n:
                chunk = conn.recv(n - len(out))
                if not chunk:
                    raise ConnectionError
                out += chunk
            return bytes(out)

        try:
            while not self._stop:
                size = struct.unpack(">i", exact(4))[0]
                frame = exact(size)
                header, hsize = read_header(frame, 0)
                req_cls = load_request_schema(header.request_api_key, header.request_api_version)
                body, _ = entity_reader(req_cls)(frame, hsize)
                resp_cls = load_response_schema(ApiKeys.PRODUCE, header.request_api_version)
                mod = sys.modules[resp_cls.__module__]
                topics = []
                for t in body.topic_data:
                    parts = []
                    for p in t.partition_data:
                        data = p.records or b""
                        ok = crc32c(data[21:]) == struct.unpack_from(">I", data, 17)[0]
                        with self._lock:
                            base = len(self._log)
                            self._log.append(data)
                        parts.append(mod.PartitionProduceResponse(
                            index=p.index, error_code=ErrorCode.none if ok else ErrorCode.corrupt_message,
                            base_offset=base,
                            log_append_time=None, log_start_offset=0, record_errors=(), error_message=None))
                    topics.append(mod.TopicProduceResponse(name=t.name, partition_responses=tuple(parts)))
                resp = resp_cls(responses=tuple(topics), throttle_time=timedelta(0))
                buf = io.BytesIO()
                buf.write(struct.pack(">i", header.correlation_id))
                if resp_cls.__header_schema__.__flexible__:
                    buf.write(b"\0")
                entity_writer(resp_cls)(buf, resp)
                payload = buf.getvalue()
                conn.sendall(struct.pack(">i", len(payload)) + payload)
        except (ConnectionError, OSError, struct.error):
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


class CannedChannel:
    """A request channel whose handler threads answer every Produce with a prebuilt response.

    Measures the network layer alone (processors, framing, codec, one handoff to a handler thread
    and back), i.e. the ceiling the broker core's Produce path is added to. ``_queue`` is a
    thread-safe ``queue.Queue``; the handler threads are daemons named ``canned-handler-<n>``.
    """

    def __init__(self, threads: int = 2) -> None:
        import queue

        self.closed = False
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._responses: dict[int, Any] = {}
        for i in range(threads):
            threading.Thread(target=self._run, name=f"canned-handler-{i}", daemon=True).start()

    def add_processor(self, processor_id: int, processor: object) -> None:
        """The socket server registers its processors (throttling needs them; not used here)."""

    def send_request(self, request: Any, timeout_s: float | None = None) -> bool:
        self._queue.put(request)
        return True

    def _run(self) -> None:
        from kafka_emu.broker.protocol.error_response import build_error_response
        from kafka_emu.broker.network.request_channel import Response

        while True:
            request = self._queue.get()
            if request is None:
                return
            body = self._responses.get(request.api_version)
            if body is None:
                body = self._responses[request.api_version] = build_error_response(
                    request.api_key, request.api_version, request.body, 0)
            request.respond(Response(request, body))

    def close(self) -> None:
        self.closed = True
        for _ in range(8):
            self._queue.put(None)


def measure_network_only(conn_counts: list[int], warmup: float, duration: float) -> dict[str, int]:
    from kafka_emu.broker.server import cpu_affinity
    from kafka_emu.broker.apis.api_versions import DefaultApiVersionManager
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.network.socket_server import SocketServer

    cpus = cpu_affinity.resolve(cpu_affinity.DEFAULT)   # the placement a cluster would get
    with cpu_affinity.pinned(cpus):
        channel = CannedChannel()
        server = SocketServer(KafkaConfig({"broker.id": 0}), channel, api_versions=DefaultApiVersionManager())
        server.startup()
    try:
        return {str(c): round(measure_rate([("127.0.0.1", server.bound_port, "t", p) for p in range(c)],
                                           warmup, duration)) for c in conn_counts}
    finally:
        server.shutdown()
        channel.close()


# --- confluent-kafka throughput (child processes) --------------------------------------------------

def _confluent_produce(bootstrap: str, topic: str, n: int, out: Any) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "queue.buffering.max.messages": max(n + 10, 100000),
                  "queue.buffering.max.kbytes": 2 * 1024 * 1024, "batch.size": 1000000})
    failed = [0]

    def cb(err: Any, _msg: Any) -> None:
        if err is not None:
            failed[0] += 1

    start = time.perf_counter()
    produce = p.produce
    for _ in range(n):
        while True:
            try:
                produce(topic, RECORD, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        # serve delivery callbacks now and then without stalling the loop
    remaining = p.flush(120)
    elapsed = time.perf_counter() - start
    out.put({"seconds": elapsed, "failed": failed[0], "undelivered": remaining})


def _confluent_consume(bootstrap: str, topic: str, n: int, out: Any) -> None:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time_ns()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760,
                  "session.timeout.ms": 6000})
    c.subscribe([topic])
    got = 0
    start = None
    deadline = time.monotonic() + 300
    while got < n and time.monotonic() < deadline:
        msgs = c.consume(num_messages=10000, timeout=1.0)
        for m in msgs:
            if m.error() is None:
                if start is None:
                    start = time.perf_counter()
                got += 1
    elapsed = time.perf_counter() - (start or time.perf_counter())
    c.close()
    out.put({"seconds": elapsed, "messages": got})


def measure_confluent(cluster: Any, n: int) -> dict[str, Any]:
    topic = f"bench-wire-clients-{time.time_ns()}"
    brokers = len(cluster.metadata.live_broker_ids())
    cluster.metadata.create_topic(topic, brokers, brokers)
    prod = child_result(_confluent_produce, (cluster.bootstrap_servers, topic, n), "bench-wire-producer", 600)
    cons = child_result(_confluent_consume, (cluster.bootstrap_servers, topic, n), "bench-wire-consumer", 600)
    mb = n * len(RECORD) / 1e6
    return {
        "messages": n, "message_bytes": len(RECORD), "acks": "all", "replication_factor": brokers,
        "produce_seconds": round(prod["seconds"], 3),
        "produce_msgs_per_s": round(n / prod["seconds"]),
        "produce_mb_per_s": round(mb / prod["seconds"], 2),
        "produce_failed": prod["failed"] + prod["undelivered"],
        "consumed": cons["messages"],
        "consume_seconds": round(cons["seconds"], 3),
        "consume_msgs_per_s": round(cons["messages"] / cons["seconds"]) if cons["seconds"] > 0 else None,
        "consume_mb_per_s": round(cons["messages"] * len(RECORD) / 1e6 / cons["seconds"], 2)
        if cons["seconds"] > 0 else None,
    }


# --- driver ----------------------------------------------------------------------------------------

def _rate_targets(cluster: Any, topic: str, conns: int) -> list[tuple[str, int, str, int]]:
    md = cluster.metadata
    out = []
    for p in range(conns):
        st = md.partition_state(topic, p)
        b = md.broker(st.leader)
        out.append((b.host, b.port, topic, p))
    return out


def run(args: argparse.Namespace) -> int:
    from kafka_emu.broker.server import cpu_affinity
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    from kafka_emu.compiled import compiled_modules

    if args.messages:
        import confluent_kafka  # noqa: F401 - needed at the end: refuse now if the extra is missing

    conn_counts, broker_counts = args.connections, args.brokers
    warmup = min(0.5, args.duration / 2)
    bar = progress(sum(len(conn_counts) * (1 + (nb > 1) + (not args.no_naive)) for nb in broker_counts)
                   + (args.messages > 0) + 2, "bench wire", progress_enabled(args), unit="run")

    def measured(what: str, measure: Callable[[], T]) -> T:
        bar.set_description_str(what)
        value = measure()
        bar.update(1)
        return value

    result: dict[str, Any] = {"request_rate": {}, "targets": {
        "rate_1_connection": TARGET_RATE_1, "rate_16_connections": TARGET_RATE_16,
        "replicated_rate_1_connection": TARGET_REPLICATED_RATE_1,
        "replicated_rate_16_connections": TARGET_REPLICATED_RATE_16,
        "produce_msgs_per_s": TARGET_PRODUCE_MSGS}}
    for nb in broker_counts:
        entry: dict[str, Any] = {"ours": {}, "naive": {}, "ratio": {}, "replication_factor": 1}
        with EmbeddedCluster(brokers=nb, config={"offsets.topic.replication.factor": nb}) as cluster:
            result["broker_cpus"] = sorted(cluster.cpus) if cluster.cpus else None
            if nb == 1:
                entry["cpu_us_per_request"] = {}
            for conns in conn_counts:
                topic = f"bench-wire-rate-{nb}-{conns}"
                cluster.metadata.create_topic(topic, conns, 1)
                rate, cpu = measured(
                    f"request rate: {nb} broker(s), {conns} connection(s)",
                    lambda: measure_rate_cpu(_rate_targets(cluster, topic, conns), warmup, args.duration,
                                             lambda: thread_cpu_ticks(broker_thread_role)))
                entry["ours"][str(conns)] = round(rate)
                if nb == 1:   # the broker alone in this process: its threads' CPU is the request's
                    entry["cpu_us_per_request"][str(conns)] = cpu
            if nb > 1:
                # the same load with replication: every append also drives two follower fetches
                entry[f"ours_rf{nb}"] = {}
                for conns in conn_counts:
                    topic = f"bench-wire-rate-{nb}-{conns}-rf{nb}"
                    cluster.metadata.create_topic(topic, conns, nb)
                    entry[f"ours_rf{nb}"][str(conns)] = round(measured(
                        f"request rate: {nb} broker(s), {conns} connection(s), replication factor {nb}",
                        lambda: measure_rate(_rate_targets(cluster, topic, conns), warmup, args.duration)))
            if nb == max(broker_counts) and args.messages > 0:
                result["confluent_kafka"] = measured(
                    f"confluent-kafka: {args.messages} messages, acks=all, {nb} broker(s)",
                    lambda: measure_confluent(cluster, args.messages))
        if not args.no_naive:
            # on the cluster's CPUs too: a comparator placed by the OS would pay cross-CPU wake-ups
            with cpu_affinity.pinned(cpu_affinity.resolve(cpu_affinity.DEFAULT)):
                naive = NaiveServer()
            try:
                for conns in conn_counts:
                    targets = [("127.0.0.1", naive.port, "naive", p) for p in range(conns)]
                    entry["naive"][str(conns)] = round(measured(
                        f"naive comparator: {conns} connection(s)",
                        lambda: measure_rate(targets, warmup, args.duration)))
            finally:
                naive.close()
            for k, v in entry["ours"].items():
                if entry["naive"].get(k):
                    entry["ratio"][k] = round(v / entry["naive"][k], 2)
        result["request_rate"][f"{nb}_broker"] = entry
    result["compiled_modules"] = len(compiled_modules())   # every broker module is imported by now
    result["network_layer_only"] = measured("network layer alone (canned Produce responses)",
                                            lambda: measure_network_only(conn_counts, warmup, args.duration))
    result["security"] = measured("PLAINTEXT and SASL_SSL listeners of one broker",
                                  lambda: measure_security(conn_counts, warmup, args.duration))
    bar.close()
    fetch_side, fetch_checks, fetch_lines = bench_wire_fetch.run(
        args, result["request_rate"].get("1_broker", {}), measure_rate_cpu, warmup)
    result.update(fetch_side)
    checks = {}
    for key, entry in result["request_rate"].items():
        for series in [k for k in entry if k.startswith("ours")]:
            suffix = "" if series == "ours" else "_" + series[len("ours_"):]
            target_1, target_16 = (TARGET_RATE_1, TARGET_RATE_16) if series == "ours" else \
                (TARGET_REPLICATED_RATE_1, TARGET_REPLICATED_RATE_16)
            if "1" in entry[series]:
                checks[f"{key}{suffix}_rate_1_connection"] = entry[series]["1"] >= target_1
            if "16" in entry[series]:
                checks[f"{key}{suffix}_rate_16_connections"] = entry[series]["16"] >= target_16
    if "confluent_kafka" in result:
        checks["produce_msgs_per_s"] = result["confluent_kafka"]["produce_msgs_per_s"] >= TARGET_PRODUCE_MSGS
    checks.update(fetch_checks)
    for conns, ratio in result["security"]["ratio"].items():
        checks[f"sasl_ssl_ratio_{conns}_connection{'s' if conns != '1' else ''}"] = ratio >= TARGET_SASL_SSL_RATIO
    checks["secured_3_broker_start_ms"] = result["security"]["secured_3_broker_start_ms"] < TARGET_SECURED_START_MS
    result["meets_targets"] = checks
    if args.json:
        print(json.dumps(result))
    else:
        for key, entry in result["request_rate"].items():
            for conns, rate in entry["ours"].items():
                naive_rate = entry["naive"].get(conns)
                extra = f"  naive {naive_rate} req/s  ratio {entry['ratio'].get(conns)}" if naive_rate else ""
                for series in [k for k in entry if k.startswith("ours_rf")]:
                    rate_rf = entry[series].get(conns)
                    extra += f"  (replication factor {series[7:]}: {rate_rf} req/s)" if rate_rf else ""
                print(f"{key:9s} {conns:>3s} conn: {rate:>8} req/s{extra}")
        for conns, cpu in result["request_rate"].get("1_broker", {}).get("cpu_us_per_request", {}).items():
            print(f"1_broker  {conns:>3s} conn: {cpu_line(cpu)}")
        print(f"network layer alone: {result['network_layer_only']} req/s; broker threads on CPUs "
              f"{result.get('broker_cpus') or 'chosen by the OS'}; {result.get('compiled_modules')} modules "
              f"compiled (kafka_emu.compiled)")
        if "confluent_kafka" in result:
            c = result["confluent_kafka"]
            print(f"confluent-kafka acks=all {c['messages']} x 100 B: produce {c['produce_msgs_per_s']} msg/s "
                  f"({c['produce_mb_per_s']} MB/s), consume {c['consume_msgs_per_s']} msg/s "
                  f"({c['consume_mb_per_s']} MB/s)")
        sec = result["security"]
        for conns, ratio in sec["ratio"].items():
            print(f"1_broker  {conns:>3s} conn: PLAINTEXT {sec['plaintext'][conns]} req/s, SASL_SSL "
                  f"{sec['sasl_ssl'][conns]} req/s, ratio {ratio}")
        print(f"3-broker SASL_SSL cluster start, certificates included: {sec['secured_3_broker_start_ms']} ms")
        for line in fetch_lines:
            print(line)
        for name, met in checks.items():
            print(f"target {name}: {'met' if met else 'unmet'}")
    return 0
