"""Saturation ramps: step the offered produce rate up until the cluster (or the generator) gives.

Each step is its own barrier stage of the workload's clients (``driver.run_stage``) with the
producers' rates scaled so that together they offer the step's rate, and optionally more
members in every group. While a step runs, the driver samples every group's lag (committed
offsets against high watermarks, as ``kafka-consumer-groups --describe`` computes it) once a
second; when it ends, the driver scrapes the cluster's /metrics (request handler and network
idle, purgatory sizes, under-replicated partitions) and judges the step from its samples:

* ``p99_ms``: the produce delivery p99 over the step (after its first ``WARMUP_S``) is above the limit;
* ``error_rate``: failed / attempted produces is above the limit;
* ``lag_growth_s``: some group's lag grew in that many consecutive one-second samples;
* always: fewer than ``SUSTAINED_FRACTION`` of the offered messages were acknowledged within
  the step (the offered rate was not sustained: the cluster or the generator fell behind).

The ramp stops at the first step over a limit; the highest sustained rate is the highest
offered rate of a step that crossed none. The same spec runs against the embedded cluster and
against any Kafka given with --bootstrap-servers (metrics from --metrics-url, if any), so both
can be compared; against a sink that accepts everything (the emulator with acks=0) the ramp
measures the generator's own ceiling.
"""
from __future__ import annotations

import dataclasses
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pandas as pd
import structlog

from kafka_emu.loadgen.driver import plan, run_stage
from kafka_emu.loadgen.live_progress import LiveProgress
from kafka_emu.loadgen.live_stats import StatsReceiver
from kafka_emu.loadgen.spec import RampSpec, TopicSpec, WorkloadSpec
from kafka_emu.loadgen.target import QUIET, create_topics, delete_topic, set_group_configs

SUSTAINED_FRACTION = 0.95
WARMUP_S = 1.0      # the start of a step (connections, metadata, group joins) is not judged for latency
LAG_SAMPLE_S = 1.0
# The cluster metrics reported per step: (summary key, metric family, how brokers combine).
STEP_METRICS = (
    ("request_handler_idle", "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", "mean"),
    ("network_processor_idle", "kafka_network_socketserver_networkprocessoravgidlepercent", "mean"),
    ("purgatory_size", "kafka_server_delayedoperationpurgatory_purgatorysize", "by_operation"),
    ("under_replicated_partitions", "kafka_server_replicamanager_underreplicatedpartitions", "sum"),
    ("request_queue_size", "kafka_network_requestchannel_requestqueuesize", "sum"),
)

_log = structlog.get_logger("loadgen.ramp")


def step_rates(ramp: RampSpec) -> list[float]:
    rates, rate = [], ramp.start_rate
    while rate <= ramp.max_rate + 1e-9:
        rates.append(round(rate, 3))
        rate += ramp.step_rate
    return rates


def step_spec(spec: WorkloadSpec, rate: float, step: int) -> WorkloadSpec:
    """The workload of one step: producers share ``rate`` by their ``rate x instances`` weights."""
    assert spec.ramp is not None
    weight = sum(p.rate * p.instances for p in spec.producers)
    producers = tuple(dataclasses.replace(p, rate=rate * p.rate / weight) for p in spec.producers)
    groups = tuple(dataclasses.replace(g, members=g.members + step * spec.ramp.consumers_step) for g in spec.groups)
    return dataclasses.replace(spec, duration_s=spec.ramp.step_s, drain_s=0.0, producers=producers, groups=groups,
                               seed=spec.seed + step, ramp=None)


class LagWatcher(threading.Thread):
    """Samples each group's total lag once a second (committed offset against high watermark).

    Locking: ``samples`` is appended by this thread only and read after ``stop()`` joined it.
    """

    def __init__(self, bootstrap: str, groups: dict[str, list[str]]) -> None:
        super().__init__(name="loadgen-lag-watcher", daemon=True)
        self._servers = bootstrap
        self._groups = groups
        self._stop_event = threading.Event()
        self.samples: list[tuple[float, str, int]] = []

    def run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        reason = "stopped"
        consumers = {g: Consumer({"bootstrap.servers": self._servers, "group.id": g, **QUIET})
                     for g in self._groups}
        try:
            while not self._stop_event.wait(LAG_SAMPLE_S):
                for group, topics in self._groups.items():
                    c = consumers[group]
                    try:
                        md = c.list_topics(timeout=2)
                        tps = [TopicPartition(t, p) for t in topics if t in md.topics for p in md.topics[t].partitions]
                        lag = 0
                        for tp in c.committed(tps, timeout=2):
                            high = c.get_watermark_offsets(tp, timeout=2, cached=False)[1]
                            lag += max(0, high - max(tp.offset, 0))
                        self.samples.append((time.time(), group, lag))
                    except Exception as exc:   # a leader moving: skip this sample
                        _log.debug("lag_sample_failed", group=group, error=repr(exc))
        except Exception as exc:
            reason = f"error: {exc!r}"
        finally:
            for c in consumers.values():
                c.close()
            _log.info("thread_stopped", thread=self.name, reason=reason)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)


def longest_growth_s(series: list[int]) -> int:
    """The longest run of consecutive samples in which the value grew (samples are one second apart)."""
    best = run = 0
    for before, after in zip(series, series[1:]):
        run = run + 1 if after > before else 0
        best = max(best, run)
    return best


def scrape_step_metrics(url: str | None) -> dict[str, Any]:
    """The STEP_METRICS from one /metrics scrape (empty when there is no endpoint)."""
    if not url:
        return {}
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    except Exception as exc:
        return {"error": f"scrape failed: {exc}"}
    values: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values.setdefault(sample.name, []).append((sample.labels, sample.value))
    out: dict[str, Any] = {}
    for key, name, how in STEP_METRICS:
        found = values.get(name)
        if not found:
            continue
        if how == "mean":
            out[key] = round(sum(v for _, v in found) / len(found), 3)
        elif how == "sum":
            out[key] = sum(v for _, v in found)
        else:
            by: dict[str, float] = {}
            for labels, v in found:
                op = labels.get("delayedOperation", "?")
                by[op] = by.get(op, 0.0) + v
            out[key] = by
    return out


def judge_step(samples: pd.DataFrame, rate: float, step_s: float, lag: dict[str, list[int]],
               ramp: RampSpec) -> dict[str, Any]:
    """The step's measurements and which limits it crossed.

    Counts and rates cover the whole step; latency percentiles leave out its first ``WARMUP_S``
    (new connections and the groups' joins are not the steady state being measured)."""
    produce = samples[samples["op"] == "produce"]
    ok = produce[produce["error"] == ""]
    failed = int(len(produce) - len(ok))
    steady = ok[ok["ts"] >= samples["ts"].min() + WARMUP_S] if "ts" in ok and len(ok) else ok
    p99 = float(steady["latency_ms"].dropna().quantile(0.99)) if len(steady) else None
    consumed = int(((samples["op"] == "consume") & (samples["error"] == "")).sum())
    growth = {g: longest_growth_s(series) for g, series in lag.items()}
    out: dict[str, Any] = {
        "offered_rate": rate, "acked_rate": round(len(ok) / step_s, 1), "consumed_rate": round(consumed / step_s, 1),
        "attempted": int(len(produce)), "acked": int(len(ok)), "failed": failed,
        "error_rate": round(failed / len(produce), 5) if len(produce) else 0.0,
        "produce_p50_ms": round(float(steady["latency_ms"].dropna().quantile(0.5)), 2) if len(steady) else None,
        "produce_p99_ms": round(p99, 2) if p99 is not None else None,
        "lag_end": {g: series[-1] for g, series in lag.items() if series},
        "lag_growth_s": growth,
    }
    crossed = []
    limits = ramp.limits
    if limits.p99_ms is not None and (p99 is None or p99 > limits.p99_ms):
        crossed.append(f"produce p99 {p99 if p99 is None else round(p99, 1)} ms > {limits.p99_ms:g} ms")
    if limits.error_rate is not None and out["error_rate"] > limits.error_rate:
        crossed.append(f"error rate {out['error_rate']:.4f} > {limits.error_rate:g}")
    if limits.lag_growth_s is not None:
        crossed += [f"{g} lag grew for {n} s" for g, n in growth.items() if n >= limits.lag_growth_s]
    if len(ok) < SUSTAINED_FRACTION * rate * step_s:
        crossed.append(f"acked {out['acked_rate']:g}/s < {SUSTAINED_FRACTION:.0%} of offered {rate:g}/s")
    out["crossed"] = crossed
    return out


def run_ramp(spark: Any, spec: WorkloadSpec, bootstrap: str, report_dir: Path, run_info: dict[str, Any],
             metrics_url: str | None, show_progress: bool = True) -> dict[str, Any]:
    """Run the ramp's steps until one crosses a limit; write the ramp report; return its summary."""
    from kafka_emu.loadgen.driver import driver_host
    from kafka_emu.loadgen.ramp_report import write_ramp_report

    assert spec.ramp is not None
    report_dir.mkdir(parents=True, exist_ok=True)
    steps: list[dict[str, Any]] = []
    run_began = time.time()
    groups = {g.group_id: list(g.topics) for g in spec.groups}
    set_group_configs(bootstrap, spec.groups)
    for k, rate in enumerate(step_rates(spec.ramp)):
        sspec = step_spec(spec, rate, k)
        control = f"_loadgen-done-{run_info.get('run_id') or int(run_began)}-{k}"
        create_topics(bootstrap, (TopicSpec(control, 1, 1),), 1)
        tasks, partitions = plan(spark, sspec, control)
        stats = StatsReceiver(driver_host(spark))
        watcher = LiveProgress(stats, sspec.duration_s, show_progress, label=f"step {k + 1} {rate:g}/s")
        lag = LagWatcher(bootstrap, groups)
        scrape_step_metrics(metrics_url)   # the idle gauges average since the previous scrape: start the step's window
        watcher.start()
        lag.start()
        began = time.time()
        try:
            table = run_stage(spark, tasks, partitions, bootstrap, stats)
        finally:
            lag.stop()
            watcher.stop()
            stats.close()
            delete_topic(bootstrap, control)
        frame = table.to_pandas()
        start = float(frame["ts"].min()) if len(frame) else began
        series = {g: [n for ts, grp, n in lag.samples if grp == g and start <= ts <= start + sspec.duration_s]
                  for g in groups}
        result = {"step": k + 1, "members_per_group": {g.group_id: g.members for g in sspec.groups},
                  **judge_step(frame, rate, sspec.duration_s, series, spec.ramp),
                  "cluster": scrape_step_metrics(metrics_url), "stage_wall_s": round(time.time() - began, 2)}
        steps.append(result)
        _log.info("ramp_step", step=k + 1, rate=rate, acked_rate=result["acked_rate"],
                  p99_ms=result["produce_p99_ms"], crossed=result["crossed"])
        if result["crossed"]:
            break
    sustained = [s for s in steps if not s["crossed"]]
    summary = {
        "run": {**run_info, "kind": "ramp", "steps_s": round(time.time() - run_began, 2), "spec": spec.to_dict()},
        "ramp": {"limits": dataclasses.asdict(spec.ramp.limits), "sustained_fraction": SUSTAINED_FRACTION,
                 "highest_sustained_rate": max((s["offered_rate"] for s in sustained), default=None),
                 "at_highest": sustained[-1] if sustained else None,
                 "stopped_by": steps[-1]["crossed"] if steps and steps[-1]["crossed"] else ["max_rate reached"],
                 "steps": steps},
    }
    write_ramp_report(summary, report_dir)
    return summary
