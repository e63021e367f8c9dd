"""``kafka-emu stress overload``: the broker's memory under load it cannot keep up with (issue 29).

Two phases against an in-process 3-broker cluster, every client in its own process
(``loadgen.overload_child``), so the resident set measured is the brokers':

1. **Retention.** ``--producers`` confluent-kafka producers write ``--value-bytes`` values as fast
   as they are acknowledged (acks=all) to a topic with replication factor 3 and
   ``retention.bytes`` = ``segment.bytes`` = ``--retention-bytes``, for ``--duration`` seconds.
   Each second prints the process's RSS against the bytes all logs hold (every replica, the
   internal topics included); the check is RSS <= retained + ``--overhead-mib`` at every sample.
2. **Flood** (unless ``--flood-seconds 0``). ``--flood-connections`` sockets send Produce requests
   of about ``--flood-request-mib`` MiB (one ~1 MiB batch per partition their broker leads) as
   fast as they are answered, while a canary producer sends small acks=all messages. The
   brokers run with ``queued.max.request.bytes`` = ``--queued-max-request-mib`` (0: unbounded,
   to see the difference) and ``socket.request.max.bytes`` just above the request size. Each
   second prints RSS against retained + every broker's pool + the overhead; the checks are that
   bound and the canary: every message acknowledged, none later than request.timeout.ms.

Exit code 0 when every check passed, 1 otherwise (the verdict table, or one JSON object with
``--json``; the per-second lines then go to stderr).
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import threading
import time
from typing import Any, TextIO

from kafka_emu.loadgen.embedded import close_cluster, start_cluster
from kafka_emu.loadgen.errors import LoadgenError, UsageError
from kafka_emu.loadgen.verdict import Verdict

MIB = 1 << 20
TOPIC, FLOOD_TOPIC, CANARY_TOPIC = "overload", "overload-flood", "overload-canary"
BROKERS = 3
FLOOD_BATCH_KIB = 1000   # a batch under the default max.message.bytes (1 MiB + 12)
CANARY_MAX_LATENCY_S = 30.0   # request.timeout.ms


def rss_bytes() -> int:
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Child:
    """A client process and its per-second JSON lines."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "kafka_emu.loadgen.overload_child", json.dumps(job)],
                                     stdout=subprocess.PIPE, text=True)
        self.lines: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, name=f"stress-overload-{job['role']}", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.append(json.loads(line))
            except ValueError:
                continue

    @property
    def last(self) -> dict[str, Any]:
        return self.lines[-1] if self.lines else {}

    def wait(self, timeout_s: float) -> None:
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(5)


def _retained(cluster: Any) -> int:
    return sum(log.size_bytes for logs in cluster.logs.values() for log in list(logs.values()))


def _create_topic(cluster: Any, name: str, partitions: int, configs: dict[str, Any],
                  replication_factor: int = BROKERS) -> None:
    cluster.create_topic(name, partitions, replication_factor, configs=configs)


def _leaders(cluster: Any, topic: str, partitions: int) -> dict[str, list[int]]:
    """Broker address -> the partitions of ``topic`` it leads."""
    out: dict[str, list[int]] = {}
    for p in range(partitions):
        leader = cluster.metadata.partition_state(topic, p).leader
        out.setdefault(cluster.servers[leader].bootstrap_server, []).append(p)
    return out


def _sample(cluster: Any, t0: float, pool_bytes: int, overhead: int, out: TextIO,
            samples: list[dict[str, Any]], clients: list[Child]) -> None:
    rss, retained = rss_bytes(), _retained(cluster)
    bound = retained + pool_bytes + overhead
    acked = sum(c.last.get("acked", 0) for c in clients)
    sample = {"t": round(time.monotonic() - t0, 1), "rss_mib": round(rss / MIB, 1),
              "retained_mib": round(retained / MIB, 1), "bound_mib": round(bound / MIB, 1), "acked": acked}
    samples.append(sample)
    print(f"t={sample['t']:5.1f}s rss={sample['rss_mib']:8.1f} MiB retained={sample['retained_mib']:8.1f} MiB "
          f"bound={sample['bound_mib']:8.1f} MiB acked={acked}{'' if rss <= bound else '  OVER THE BOUND'}",
          file=out, flush=True)


def _run_phase(cluster: Any, clients: list[Child], seconds: float, pool_bytes: int, overhead: int,
               out: TextIO) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = []
    t0 = next_sample = time.monotonic()
    while time.monotonic() < t0 + seconds:
        next_sample += 1.0
        time.sleep(max(0.0, next_sample - time.monotonic()))
        _sample(cluster, t0, pool_bytes, overhead, out, samples, clients)
    return samples


def run_stress(args: argparse.Namespace, out: TextIO) -> Verdict:
    import confluent_kafka  # noqa: F401 - the client processes need it: a missing [load] extra is one line here

    overhead = args.overhead_mib * MIB
    pool = args.queued_max_request_mib * MIB
    request_mib = args.flood_request_mib
    per_request = math.ceil(request_mib * 1024 / FLOOD_BATCH_KIB)   # partitions per broker's request
    config: dict[str, Any] = {"min.insync.replicas": 2, "queued.max.request.bytes": pool or -1,
                              "socket.request.max.bytes": max(request_mib + 1, 2) * MIB}
    if pool and pool < config["socket.request.max.bytes"]:
        raise UsageError(f"--queued-max-request-mib must be at least {request_mib + 1} "
                         f"(socket.request.max.bytes here), or 0")
    cluster = start_cluster(BROKERS, config)
    verdict = Verdict("stress overload")
    try:
        bootstrap = cluster.bootstrap_servers
        retention = {"retention.bytes": args.retention_bytes, "segment.bytes": args.retention_bytes}
        _create_topic(cluster, TOPIC, args.partitions, retention)
        baseline = rss_bytes()
        print(f"phase 1: {args.producers} producers flat out, acks=all, RF 3, {args.partitions} partitions, "
              f"retention.bytes {args.retention_bytes}; bound = retained + {args.overhead_mib} MiB "
              f"(RSS before load {baseline / MIB:.1f} MiB)", file=out, flush=True)
        producers = [Child({"role": "producer", "bootstrap": bootstrap, "topic": TOPIC, "seconds": args.duration,
                            "value_bytes": args.value_bytes}) for _ in range(args.producers)]
        samples = _run_phase(cluster, producers, args.duration, 0, overhead, out)
        for c in producers:
            c.wait(60)
        acked = sum(c.last.get("acked", 0) for c in producers)
        over = [s for s in samples if s["rss_mib"] > s["bound_mib"]]
        peak = max(samples, key=lambda s: s["rss_mib"] - s["retained_mib"])
        verdict.check("phase 1 seconds with RSS over retained + overhead", len(over), "0", not over)
        verdict.check("phase 1 records acknowledged", acked, "> 0", acked > 0)
        verdict.stats.update({
            "rss_before_load_mib": round(baseline / MIB, 1),
            "phase1_records_per_s": round(acked / args.duration),
            "phase1_rss_max_mib": max(s["rss_mib"] for s in samples),
            "phase1_retained_max_mib": max(s["retained_mib"] for s in samples),
            "phase1_rss_minus_retained_max_mib": round(peak["rss_mib"] - peak["retained_mib"], 1)})
        if args.flood_seconds > 0:
            _flood(cluster, args, verdict, per_request, pool, overhead, out)
    finally:
        close_cluster(cluster)
    return verdict


def _flood(cluster: Any, args: argparse.Namespace, verdict: Verdict, per_request: int, pool: int,
           overhead: int, out: TextIO) -> None:
    partitions = per_request * BROKERS
    # one replica per partition: what the brokers hold is the requests, not their replication
    flood_segment = FLOOD_BATCH_KIB * 1024 + 64 * 1024   # one batch per segment
    _create_topic(cluster, FLOOD_TOPIC, partitions, {"retention.bytes": flood_segment,
                                                    "segment.bytes": flood_segment}, replication_factor=1)
    _create_topic(cluster, CANARY_TOPIC, 1, {})
    pools = pool * BROKERS
    print(f"phase 2: {args.flood_connections} connections sending ~{args.flood_request_mib} MiB produce requests, "
          f"queued.max.request.bytes {pool or 'unbounded'} per broker, a canary producer; bound = retained + "
          f"{pools / MIB:.0f} MiB of pools + {args.overhead_mib} MiB", file=out, flush=True)
    flood = Child({"role": "flood", "leaders": _leaders(cluster, FLOOD_TOPIC, partitions), "topic": FLOOD_TOPIC,
                   "connections": args.flood_connections, "batch_kib": FLOOD_BATCH_KIB,
                   "seconds": args.flood_seconds})
    canary = Child({"role": "canary", "bootstrap": cluster.bootstrap_servers, "topic": CANARY_TOPIC,
                    "seconds": args.flood_seconds, "rate": 20})
    samples = _run_phase(cluster, [flood], args.flood_seconds, pools, overhead, out)
    flood.wait(90)
    canary.wait(90)
    over = [s for s in samples if s["rss_mib"] > s["bound_mib"]]
    verdict.check("phase 2 seconds with RSS over retained + pools + overhead", len(over), "0", not over)
    verdict.check("phase 2 flood requests answered", flood.last.get("acked", 0), "> 0",
                  flood.last.get("acked", 0) > 0)
    final = canary.last
    latency = max((line.get("max_latency_s", 0) for line in canary.lines), default=0)
    verdict.check("canary messages not acknowledged", final.get("errors", 0) + final.get("unflushed", 0), "0",
                  final.get("done") and final.get("errors", 0) + final.get("unflushed", 0) == 0)
    # the canary's requests queue for the same memory as the flood's (Kafka's pool is first
    # come, first served): slow, but never refused or timed out
    verdict.check("canary slowest acknowledgement (s)", latency, f"<= {CANARY_MAX_LATENCY_S}",
                  latency <= CANARY_MAX_LATENCY_S)
    verdict.stats.update({
        "phase2_request_bytes": flood.last.get("request_bytes"),
        "phase2_flood_requests_answered": flood.last.get("acked", 0),
        "phase2_rss_max_mib": max((s["rss_mib"] for s in samples), default=0),
        "phase2_rss_minus_retained_max_mib": max((round(s["rss_mib"] - s["retained_mib"], 1) for s in samples),
                                                 default=0),
        "phase2_canary_acked": final.get("acked", 0)})


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import non_negative_float, non_negative_int, positive_float, positive_int

    parser.add_argument("--duration", type=positive_float, default=60.0, help="seconds of phase 1")
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    parser.add_argument("--producers", type=positive_int, default=2, help="producer processes in phase 1")
    parser.add_argument("--partitions", type=positive_int, default=6, help="partitions of the phase 1 topic")
    parser.add_argument("--value-bytes", type=positive_int, default=1024, help="bytes per record value")
    parser.add_argument("--retention-bytes", type=positive_int, default=MIB,
                        help="retention.bytes and segment.bytes of the phase 1 topic")
    parser.add_argument("--overhead-mib", type=positive_int, default=256,
                        help="the stated fixed overhead: RSS may exceed what the logs hold by this much")
    parser.add_argument("--flood-seconds", type=non_negative_float, default=20.0,
                        help="length of phase 2 (0: no flood)")
    parser.add_argument("--flood-connections", type=positive_int, default=50, help="flooding connections")
    parser.add_argument("--flood-request-mib", type=positive_int, default=10, help="size of each flood request")
    parser.add_argument("--queued-max-request-mib", type=non_negative_int, default=32,
                        help="queued.max.request.bytes of each broker (0: unbounded)")


def run(args: argparse.Namespace) -> int:
    out = sys.stderr if args.json else sys.stdout
    try:
        verdict = run_stress(args, out)
    except LoadgenError as exc:
        print(f"kafka-emu stress overload: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return verdict.emit(args.json)
