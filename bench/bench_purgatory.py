"""``kafka-emu bench purgatory``: a port of Kafka's TestPurgatoryPerformance.

Like Kafka's tool it measures how fast requests can be *enqueued* into a purgatory at a target
rate: one generator thread issues fake requests with exponentially distributed inter-arrival
times (Poisson arrivals) and log-normally distributed completion latencies; requests whose
latency is below the timeout are completed by a separate thread fed by a delay queue, the rest
expire in the purgatory. Every request watches the same ``--keys`` keys drawn once from the key
space. Reported, as in Kafka: elapsed time, target rate, actual (enqueue) rate and process CPU
time; Python has no per-collector GC figures worth printing, so memory is reported instead
(RSS sampled every tenth of the run, watched and delayed counts, peak RSS).

The same invocation runs the pre-2015 design (``timer.naive_purgatory``) on identical samples,
unless ``--no-naive``, and prints the ratio.

Pacing: Python's ``sleep`` cannot wait for the ~40 us between arrivals at 25,000/s, so the
generator sleeps only while the next arrival is more than 2 ms away, otherwise yields, and on
each wake-up issues every request that has fallen due (a batch), keeping the schedule exact on
average.
"""
from __future__ import annotations

import argparse
import gc
import heapq
import itertools
import math
import threading
import sys
import time
from typing import Any, Callable, Hashable

import numpy as np

from kafka_emu.metrics.progress import progress, progress_enabled
from kafka_emu.bench.bench_util import emit, mib, peak_rss_bytes, percentile, rss_bytes
from kafka_emu.timer.delayed_operation import DelayedOperation
from kafka_emu.bench.naive_purgatory import NaivePurgatory
from kafka_emu.timer.purgatory import DelayedOperationPurgatory

_monotonic = time.monotonic
_Z75 = 0.674490  # the standard normal's 75th percentile
_SAMPLES = 1_000_000  # as in Kafka: samples are drawn once and reused cyclically


class _Latch:
    """Counts completions down; ``next`` on ``itertools.count`` is atomic under the GIL."""

    def __init__(self, count: int) -> None:
        self._count = count
        self._done = itertools.count(1)
        self.event = threading.Event()
        if count == 0:
            self.event.set()

    def count_down(self) -> None:
        if next(self._done) == self._count:
            self.event.set()


class FakeOperation(DelayedOperation):
    """Completes once its latency has passed; does no work."""

    __slots__ = ("completes_at", "latch")

    def __init__(self, delay_ms: int, latency_ms: int, latch: _Latch) -> None:
        super().__init__(delay_ms)
        self.completes_at = _monotonic() + latency_ms / 1000.0
        self.latch = latch

    def try_complete(self) -> bool:
        if _monotonic() >= self.completes_at:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.latch.count_down()

    def on_expiration(self) -> None:
        pass


class CompletionQueue:
    """Kafka's DelayQueue-fed completion thread: force-completes each op at its time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, FakeOperation]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="completion-queue", daemon=True)
        self._thread.start()

    def add(self, op: FakeOperation) -> None:
        with self._cond:
            heapq.heappush(self._heap, (op.completes_at, next(self._seq), op))
            if self._heap[0][2] is op:
                self._cond.notify()

    def _loop(self) -> None:
        cond = self._cond
        heap = self._heap
        with cond:
            while not self._closed:
                if not heap:
                    cond.wait(0.1)
                    continue
                delay = heap[0][0] - _monotonic()
                if delay > 0:
                    cond.wait(min(delay, 0.1))
                    continue
                due = []
                now = _monotonic()
                while heap and heap[0][0] <= now:
                    due.append(heapq.heappop(heap)[2])
                cond.release()
                try:
                    for op in due:
                        op.force_complete()
                finally:
                    cond.acquire()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(5.0)


def _samples(args: argparse.Namespace) -> tuple[list[int], list[float]]:
    """Log-normal latencies (ms) and exponential inter-arrival offsets (s, cumulative)."""
    rng = np.random.default_rng(args.seed)
    n = min(args.num, _SAMPLES)
    mu = math.log(args.pct50)
    sigma = (math.log(args.pct75) - mu) / _Z75
    latencies = rng.lognormal(mu, sigma, n).astype(np.int64).tolist()
    intervals_ms = rng.exponential(1000.0 / args.rate, args.num)
    arrivals = (np.cumsum(intervals_ms) / 1000.0).tolist()
    return latencies, arrivals


def _run_one(impl: str, args: argparse.Namespace, latencies: list[int],
             arrivals: list[float], show: bool) -> dict[str, Any]:
    num = args.num
    timeout = args.timeout
    keys: list[Hashable] = [f"fakeKey{k}" for k in
                            np.random.default_rng(args.seed + 1).choice(args.key_space_size, args.keys,
                                                                        replace=False).tolist()]
    purgatory: Any
    if impl == "wheel":
        purgatory = DelayedOperationPurgatory("fake purgatory")
    else:
        purgatory = NaivePurgatory("fake purgatory")
    completion = CompletionQueue()
    latch = _Latch(num)
    samples: list[dict[str, Any]] = []
    sample_every = max(num // 10, 1)
    n_lat = len(latencies)
    bar = progress(num, f"purgatory {impl}", enabled=show, unit="req")
    gc.collect()
    rss_start = rss_bytes()
    cpu_start = time.process_time()
    watch: Callable[[DelayedOperation, list], bool] = purgatory.try_complete_else_watch

    def generate() -> None:
        perf = time.perf_counter
        sleep = time.sleep
        start = perf()
        i = 0
        next_sample = sample_every
        while i < num:
            now = perf() - start
            due = arrivals[i]
            if due > now:
                ahead = due - now
                sleep(ahead - 0.001 if ahead > 0.002 else 0)
                continue
            batch_start = i
            while i < num and arrivals[i] <= now:
                latency = latencies[i % n_lat]
                op = FakeOperation(timeout, latency, latch)
                if latency < timeout:
                    completion.add(op)
                watch(op, keys)
                i += 1
            bar.update(i - batch_start)
            if i >= next_sample:
                next_sample += sample_every
                samples.append({"requests": i, "rss_mib": mib(rss_bytes()),
                                "watched": purgatory.watched(),
                                "delayed": purgatory.num_delayed()})
        result["generator_end"] = perf()
        result["start"] = start

    result: dict[str, float] = {}
    generator = threading.Thread(target=generate, name="generator")
    generator.start()
    generator.join()
    finished = latch.event.wait(timeout / 1000.0 + 60.0)
    end = time.perf_counter()
    cpu_ms = (time.process_time() - cpu_start) * 1000.0
    bar.close()
    rss_end = rss_bytes()
    completion.close()
    expired = purgatory.expiration_count
    purgatory.shutdown()

    start = result["start"]
    target_rate = num / arrivals[-1] if arrivals[-1] > 0 else float("inf")
    actual_rate = num / (result["generator_end"] - start)
    tail = [s["rss_mib"] for s in samples[len(samples) // 5:]]
    return {
        "impl": impl,
        "elapsed_ms": round((end - start) * 1000.0),
        "target_rate": round(target_rate),
        "actual_rate": round(actual_rate),
        "actual_over_target": round(actual_rate / target_rate, 3),
        "cpu_ms": round(cpu_ms),
        "all_completed": finished,
        "expired": expired,
        "rss_start_mib": mib(rss_start),
        "rss_end_mib": mib(rss_end),
        "rss_growth_after_warmup_mib": round(max(tail) - min(tail), 1) if tail else 0.0,
        "memory_samples": samples,
    }


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import non_negative_int, positive_float, positive_int

    parser.add_argument("--num", type=positive_int, default=1_000_000, help="number of requests")
    parser.add_argument("--rate", type=positive_float, default=25_000, help="target request rate per second")
    parser.add_argument("--keys", type=positive_int, default=3, help="keys per request")
    parser.add_argument("--key-space-size", type=positive_int, default=100, help="size of the key space")
    parser.add_argument("--timeout", type=positive_int, default=200, help="request timeout (ms)")
    parser.add_argument("--pct75", type=positive_float, default=60.0,
                        help="75th percentile of the completion latency (ms)")
    parser.add_argument("--pct50", type=positive_float, default=20.0,
                        help="50th percentile of the completion latency (ms)")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed of the latency and arrival samples")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-naive", action="store_true",
                       help="skip the pre-2015 comparator (by default both run)")
    which.add_argument("--naive-only", action="store_true", help="run only the comparator")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    for refused, message in ((args.pct75 < args.pct50, "--pct75 must not be below --pct50"),
                             (args.keys > args.key_space_size, "--keys must not exceed --key-space-size")):
        if refused:
            print(f"kafka-emu bench purgatory: {message}", file=sys.stderr)
            return 2
    show = progress_enabled(args)
    latencies, arrivals = _samples(args)
    lat_sorted = sorted(latencies)
    intervals = np.diff(np.asarray([0.0] + arrivals[: min(len(arrivals), _SAMPLES)])) * 1000.0
    result: dict[str, Any] = {
        "bench": "purgatory",
        "options": {k: getattr(args, k) for k in
                    ("num", "rate", "keys", "key_space_size", "timeout", "pct75", "pct50")},
        "latency_samples_ms": {"pct75": percentile(lat_sorted, 75), "pct50": percentile(lat_sorted, 50),
                               "min": lat_sorted[0], "max": lat_sorted[-1]},
        "interval_samples": {"rate": round(1000.0 / float(intervals.mean()), 1),
                             "min_ms": round(float(intervals.min()), 4),
                             "max_ms": round(float(intervals.max()), 3)},
    }
    impls = ["naive"] if args.naive_only else (["wheel"] if args.no_naive else ["wheel", "naive"])
    for impl in impls:
        result[impl] = _run_one(impl, args, latencies, arrivals, show)
    if "wheel" in result:
        w = result["wheel"]
        result["sustained"] = w["all_completed"] and w["actual_over_target"] >= 0.95
    if "wheel" in result and "naive" in result:
        result["actual_rate_ratio"] = round(result["wheel"]["actual_rate"] / result["naive"]["actual_rate"], 2)
        result["cpu_ratio"] = round(result["naive"]["cpu_ms"] / max(result["wheel"]["cpu_ms"], 1), 2)
    peak = peak_rss_bytes()
    result["peak_rss_mib"] = mib(peak)

    ls, iv = result["latency_samples_ms"], result["interval_samples"]
    table: list[tuple[str, ...]] = [
        (f"# latency samples: pct75 = {ls['pct75']}, pct50 = {ls['pct50']}, min = {ls['min']}, max = {ls['max']}",),
        (f"# interval samples: rate = {iv['rate']}, min = {iv['min_ms']}, max = {iv['max_ms']}",),
        (f"# enqueue rate ({args.num} requests):",),
        ("# impl", "elapsed ms", "target rate", "actual rate", "cpu ms", "actual/target",
         "expired", "RSS growth MiB", "RSS end MiB"),
    ]
    for impl in impls:
        r = result[impl]
        table.append((impl, str(r["elapsed_ms"]), str(r["target_rate"]), str(r["actual_rate"]),
                      str(r["cpu_ms"]), str(r["actual_over_target"]), str(r["expired"]),
                      str(r["rss_growth_after_warmup_mib"]), str(r["rss_end_mib"])))
    if "actual_rate_ratio" in result:
        table.append((f"# wheel/naive actual rate {result['actual_rate_ratio']}x, "
                      f"naive/wheel CPU {result['cpu_ratio']}x",))
    if "sustained" in result:
        table.append((f"# sustained (actual >= 95% of target, all completed): {result['sustained']}",))
    emit(result, args.json, table)
    return 0
