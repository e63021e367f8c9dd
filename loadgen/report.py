"""The report folder of a load run: summary.json, summary.md, samples.parquet/ and charts.

The JSON is the machine-readable result (tests and CI read it); the Markdown is the short
human version printed at the end of ``kafka-emu load``; the Parquet keeps every raw sample so a
question the summary does not answer can still be asked later with Spark or pandas.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from kafka_emu.loadgen import aggregate, charts


def save_samples(samples: DataFrame, out_dir: Path) -> DataFrame:
    """Write the raw samples as Parquet and return them read back from it.

    Aggregating the re-read copy keeps the barrier stage that produced the samples out of every
    later query plan: nothing can ask Spark to recompute (re-run) the load.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    path = str(out_dir / "samples.parquet")
    samples.write.mode("overwrite").parquet(path)
    return samples.sparkSession.read.parquet(path)


def build_report(samples: DataFrame, out_dir: Path, run_info: dict[str, Any],
                 audiences: dict[str, list[str]]) -> dict[str, Any]:
    """Aggregate ``samples`` (already saved by ``save_samples``) into the report files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ops, errors, (start, end) = aggregate.op_summary(samples)
    per_second = aggregate.per_second(samples, start)
    hist = aggregate.latency_histogram(samples)
    events = aggregate.member_events(samples, start)
    delivery = aggregate.delivery_check(samples, audiences)

    throughput: dict[str, Any] = {}
    for op in ("produce", "consume"):
        frame = per_second[per_second["op"] == op]
        if len(frame):
            active = max(1, int(frame["second"].max()) - int(frame["second"].min()) + 1)
            throughput[op] = {"messages_per_s_avg": round(float(frame["messages"].sum()) / active, 1),
                              "messages_per_s_peak": int(frame["messages"].max()),
                              "mb_per_s_avg": round(float(frame["bytes"].sum()) / active / 1e6, 3),
                              "active_seconds": active}
    produce = ops.get("produce", {"count": 0, "ok": 0, "errors": 0, "bytes": 0})
    summary: dict[str, Any] = {
        "run": {**run_info, "start_ts": start, "end_ts": end, "elapsed_s": round(end - start, 3)},
        "produced": {"attempted": produce["count"], "acked": produce["ok"], "failed": produce["errors"],
                     "bytes": produce["bytes"]},
        "consumed": delivery,
        "throughput": throughput,
        "operations": ops,
        "errors": errors,
        "rebalances": aggregate.rebalance_summary(events),
        "task_errors": [e for e in errors if e["op"] == "task_error"],
    }
    files = ["samples.parquet/"]
    if len(per_second):
        files.append(charts.throughput_chart(per_second, out_dir / "throughput.png"))
        files.append(charts.latency_chart(per_second, out_dir / "latency_over_time.png"))
    if len(hist):
        files.append(charts.histogram_chart(hist, out_dir / "latency_histogram.png"))
    if len(events):
        files.append(charts.rebalance_chart(events, end - start, out_dir / "rebalance_timeline.png"))
    per_second.to_csv(out_dir / "per_second.csv", index=False)
    files.append("per_second.csv")
    summary["files"] = files + ["summary.json", "summary.md"]
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out_dir / "summary.md").write_text(render_markdown(summary))
    return summary


def _ms(entry: dict[str, Any], key: str) -> str:
    value = entry.get("latency_ms", {}).get(key)
    return "-" if value is None else f"{value:.1f}"


def render_markdown(s: dict[str, Any]) -> str:
    run = s["run"]
    lines = [f"# Load run {run.get('run_id', '')}", "",
             f"Target: {run.get('target')} · master {run.get('master')} · {run.get('tasks')} client tasks on "
             f"{run.get('partitions')} Spark partitions · elapsed {run['elapsed_s']:.1f} s", ""]
    p = s["produced"]
    lines += [f"Produced: {p['acked']} acked of {p['attempted']} attempted ({p['failed']} failed), "
              f"{p['bytes'] / 1e6:.2f} MB.", ""]
    if s["throughput"]:
        lines += ["| throughput | avg msgs/s | peak msgs/s | avg MB/s |", "|---|---:|---:|---:|"]
        for op, t in s["throughput"].items():
            lines.append(f"| {op} | {t['messages_per_s_avg']} | {t['messages_per_s_peak']} | {t['mb_per_s_avg']} |")
        lines.append("")
    lines += ["| operation | count | errors | p50 ms | p99 ms | p99.9 ms | max ms |", "|---|---:|---:|---:|---:|---:|---:|"]
    for op, e in s["operations"].items():
        if op in ("task_end", "revoke", "join"):
            continue
        lines.append(f"| {op} | {e['count']} | {e['errors']} | {_ms(e, 'p50')} | {_ms(e, 'p99')} | "
                     f"{_ms(e, 'p99.9')} | {_ms(e, 'max')} |")
    lines.append("")
    if s["consumed"]:
        lines += ["| reader | records | unique | duplicates | missing (acked, unread) |", "|---|---:|---:|---:|---:|"]
        for who, c in s["consumed"].items():
            lines.append(f"| {who} | {c['records']} | {c['unique']} | {c['duplicates']} | {c['missing']} |")
        lines.append("")
    r = s["rebalances"]
    if r["count"]:
        lines += [f"Rebalances: {r['count']} member assignments (p50 {r.get('p50_ms', 0):.0f} ms, max "
                  f"{r.get('max_ms', 0):.0f} ms); joins {r['joins']}, leaves {r['leaves']}, crashes {r['crashes']}.", ""]
    if s["errors"]:
        top = ", ".join(f"{e['op']} {e['error']} x{e['count']}" for e in s["errors"][:6])
        lines += [f"Errors: {top}.", ""]
    lines += ["Files: " + ", ".join(s["files"]), ""]
    return "\n".join(lines)
