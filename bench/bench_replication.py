"""``kafka-emu bench replication``: in-process 3-broker produce throughput and latency.

Three brokers, one topic of ``--partitions`` partitions with replication factor 3, 1 KiB batches
(one record each) sent as kio ProduceRequests straight into the leaders' request channels (the
full broker path: channel → handler → ReplicaManager → Produce purgatory → follower fetches
served on the fetcher threads → HW → response), ``--in-flight`` requests outstanding at a time.
Runs acks=all (-1) and acks=1 in the same process, one after the other, and reports batches/s,
MB/s, latency p50/p99 and the process's CPU time per batch (every broker thread's, and the
driver's) per mode. ``--json`` prints exactly one JSON object on stdout.

Defaults chosen for a 2-core machine: ``num.io.threads`` 4 per broker (Kafka 8: more threads
only add GIL contention here) and a 1 ms GIL switch interval (Python's default is 5 ms, which
delays every thread hand-off of the replication round trip when another thread is busy).
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import Any

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.cluster.inprocess_client import produce_request, send_async
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.compiled import compiled_modules
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.metrics.progress import progress_enabled, wait_with_progress


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import non_negative_float, positive_float, positive_int

    parser.add_argument("--seconds", type=positive_float, default=5.0, help="measured seconds per acks mode")
    parser.add_argument("--warmup", type=non_negative_float, default=1.0, help="unmeasured seconds per mode")
    parser.add_argument("--in-flight", type=positive_int, default=32, help="outstanding produce requests")
    parser.add_argument("--partitions", type=positive_int, default=6, help="partitions of the produced topic")
    parser.add_argument("--brokers", type=positive_int, default=3,
                        help="brokers of the in-process cluster (replication factor: at most 3)")
    parser.add_argument("--batch-bytes", type=positive_int, default=1024, help="size of each produced batch")
    parser.add_argument("--io-threads", type=positive_int, default=4, help="num.io.threads per broker")
    parser.add_argument("--switch-interval-ms", type=non_negative_float, default=1.0,
                        help="sys.setswitchinterval for this process (Python's is 5 ms); 0 keeps Python's")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    idx = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[idx]


class _Driver:
    """Keeps ``in_flight`` produce requests outstanding, resubmitting from the response callback."""

    def __init__(self, cluster: EmbeddedCluster, topic: str, partitions: int, acks: int, payload: bytes,
                 in_flight: int) -> None:
        self.cluster = cluster
        self.acks = acks
        self.in_flight = in_flight
        self.bodies = [produce_request(topic, p, build_batch([(None, payload)]), acks, 30000, 9)
                       for p in range(partitions)]
        self.channels = [cluster.broker(cluster.leader_of(topic, p)).request_channel for p in range(partitions)]
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors = 0
        self.sent = 0
        self.measuring = False
        self.stopping = False
        self.outstanding = 0
        self.idle = threading.Event()
        self.batch_size = len(self.bodies[0].topic_data[0].partition_data[0].records)

    def _submit(self) -> None:
        with self.lock:
            if self.stopping:
                if self.outstanding == 0:
                    self.idle.set()
                return
            i = self.sent % len(self.bodies)
            self.sent += 1
            self.outstanding += 1
        t0 = time.perf_counter()
        measuring = self.measuring

        def done(resp: Any) -> None:
            t1 = time.perf_counter()
            ok = resp.body is not None and \
                resp.body.responses[0].partition_responses[0].error_code == Errors.NONE
            with self.lock:
                self.outstanding -= 1
                if measuring and self.measuring:
                    self.latencies.append(t1 - t0)
                    if not ok:
                        self.errors += 1
            self._submit()

        if not send_async(self.channels[i], ApiKeys.PRODUCE, 9, self.bodies[i], done, client_id="bench"):
            with self.lock:
                self.outstanding -= 1
                self.errors += 1

    def run(self, warmup_s: float, seconds: float, label: str, show: bool) -> dict[str, Any]:
        for _ in range(self.in_flight):
            self._submit()
        wait_with_progress(warmup_s, f"{label} warmup", show)
        with self.lock:
            self.measuring = True
        t0, cpu0 = time.perf_counter(), time.process_time()
        wait_with_progress(seconds, label, show)
        with self.lock:
            self.measuring = False
            lat = sorted(self.latencies)
            errs = self.errors
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        with self.lock:
            self.stopping = True
            if self.outstanding == 0:
                self.idle.set()
        self.idle.wait(30)
        n = len(lat)
        return {
            "acks": self.acks,
            "batches": n,
            "errors": errs,
            "seconds": round(elapsed, 3),
            "batches_per_s": round(n / elapsed, 1),
            "mb_per_s": round(n * self.batch_size / elapsed / 1e6, 3),
            "latency_ms_p50": round(_percentile(lat, 0.50) * 1000, 3),
            "latency_ms_p99": round(_percentile(lat, 0.99) * 1000, 3),
            "latency_ms_max": round((lat[-1] if lat else float("nan")) * 1000, 3),
            "cpu_us_per_batch": round(cpu * 1e6 / max(n, 1)),
        }


def run(args: argparse.Namespace) -> int:
    if args.switch_interval_ms > 0:
        # The GIL hand-off interval bounds how fast a woken thread runs while another is busy;
        # the benchmark owns its process, so it uses a shorter one (reported in the output).
        sys.setswitchinterval(args.switch_interval_ms / 1000.0)
    payload = b"x" * max(1, args.batch_bytes - 70)  # the whole v2 batch is ~batch-bytes
    config = {"num.io.threads": args.io_threads, "listeners": ""}  # in-process only: no sockets
    results: dict[str, Any] = {"brokers": args.brokers, "replication_factor": min(3, args.brokers),
                               "partitions": args.partitions, "in_flight": args.in_flight,
                               "batch_bytes": None, "io_threads": args.io_threads,
                               "switch_interval_ms": sys.getswitchinterval() * 1000 if args.switch_interval_ms > 0
                               else None, "modes": {}}
    with EmbeddedCluster(brokers=args.brokers, config=config, offsets_topic=False,
                         enable_coordinator=False) as cluster:
        for acks, name in ((-1, "acks_all"), (1, "acks_1")):
            topic = f"bench-{name}"
            cluster.create_topic(topic, args.partitions, min(3, args.brokers))
            driver = _Driver(cluster, topic, args.partitions, acks, payload, args.in_flight)
            results["batch_bytes"] = driver.batch_size
            results["modes"][name] = driver.run(args.warmup, args.seconds, name, progress_enabled(args))
        results["compiled_modules"] = len(compiled_modules())
    a, o = results["modes"]["acks_all"], results["modes"]["acks_1"]
    results["target"] = {"acks_all_batches_per_s": 5000, "acks_all_p99_ms": 20,
                         "met": a["batches_per_s"] >= 5000 and a["latency_ms_p99"] < 20}
    if args.json:
        print(json.dumps(results))
    else:
        for name, r in results["modes"].items():
            print(f"{name:9s} {r['batches_per_s']:9.1f} batches/s {r['mb_per_s']:7.2f} MB/s "
                  f"p50 {r['latency_ms_p50']:6.2f} ms  p99 {r['latency_ms_p99']:6.2f} ms  "
                  f"{r['cpu_us_per_batch']:5d} µs CPU/batch  errors {r['errors']}")
        print(f"target (5000 acks=all/s, p99 < 20 ms): {'met' if results['target']['met'] else 'NOT met'}; "
              f"{results['compiled_modules']} modules compiled (kafka_emu.compiled)")
    return 0

