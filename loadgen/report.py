"""The report folder of a load run: summary.json, summary.md, report.html, samples.parquet and charts.

The JSON is the machine-readable result (tests and CI read it); the Markdown is the short human
version printed at the end of ``kafka-emu load``; report.html shows the same summary with the
charts, for a browser; the Parquet keeps every raw sample so a question the summary does not
answer can still be asked later with Spark or pandas.

The Markdown and the HTML are two renderings of one list of blocks (``summary_blocks``), so
they cannot disagree.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_emu.loadgen import aggregate, charts

SAMPLES_FILE = "samples.parquet"
LATENCY_DEFINITIONS = (
    "produce: delivery latency, from send() to the broker's acknowledgement as the client measures it",
    "consume: end to end, from the record's CreateTime (set by the producer) to the moment a consumer read it; "
    "it includes producer batching, replication and any time a partition had no owner during a rebalance",
    "commit: offset commit request to its callback",
    "rebalance: a member's revoke (or its join) to its next assignment",
    "admin:*: the admin request's future, send to result",
)
# Operations that are not requests of their own (a member's start, its revoke callback).
_NOT_REQUESTS = ("task_end", "revoke", "join")


def save_samples(samples: pa.Table, out_dir: Path) -> Path:
    """Write the raw samples as one Parquet file (readable with pandas, pyarrow or Spark)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SAMPLES_FILE
    pq.write_table(samples, path)
    return path


def phases(run_info: dict[str, Any], samples: pd.DataFrame, span: tuple[float, float]) -> dict[str, float]:
    """Seconds spent in each phase of the run that the samples and the driver's clocks can tell.

    ``stage_start``: the barrier stage's submission to the first sample (scheduling, Python
    workers starting and importing the clients, the agreed start lead); ``load``: first sample
    to the last produce outcome (producers' end, flush included); ``drain``: from there to the
    last sample (readers catching up, members closing); ``stage_end``: the last sample to the
    samples being on the driver.
    """
    start, end = span
    produce_ts = samples.loc[samples["op"] == "produce", "ts"]
    produce_end = float(produce_ts.max()) if len(produce_ts) else start
    out = {"spark_start": run_info.get("spark_start_s"), "load": round(produce_end - start, 2),
           "drain": round(end - produce_end, 2)}
    if run_info.get("stage_submit_ts") is not None and run_info.get("stage_done_ts") is not None:
        out["stage_start"] = round(max(0.0, start - run_info["stage_submit_ts"]), 2)
        out["stage_end"] = round(max(0.0, run_info["stage_done_ts"] - end), 2)
    return {k: v for k, v in out.items() if v is not None}


def _with_protocols(rebalances: dict[str, Any], run_info: dict[str, Any]) -> dict[str, Any]:
    """Each group's assignment times labelled with its rebalance protocol (classic or consumer)."""
    groups = (run_info.get("spec") or {}).get("groups") or ()
    protocols = {g["group_id"]: g.get("group_protocol", "classic") for g in groups}
    for group_id, stats in rebalances.get("by_group", {}).items():
        stats["protocol"] = protocols.get(group_id, "classic")
    return rebalances


def build_report(samples: pa.Table | pd.DataFrame, out_dir: Path, run_info: dict[str, Any],
                 audiences: dict[str, list[str]]) -> dict[str, Any]:
    """Aggregate ``samples`` into the summary and draw the charts; ``write_summary`` writes the text files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = samples.to_pandas() if isinstance(samples, pa.Table) else samples
    ops, errors, (start, end) = aggregate.op_summary(frame)
    per_second = aggregate.per_second(frame, start)
    hist = aggregate.latency_histogram(frame)
    events = aggregate.member_events(frame, start)
    churn = aggregate.churn_events(events)
    share_limits = {g["group_id"]: g.get("delivery_count_limit", 5)
                    for g in (run_info.get("spec") or {}).get("share_groups") or ()}
    delivery = aggregate.delivery_check(frame, audiences, share_limits)

    throughput: dict[str, Any] = {}
    for op in aggregate.LATENCY_OPS:
        sub = per_second[per_second["op"] == op]
        if len(sub):
            active = max(1, int(sub["second"].max()) - int(sub["second"].min()) + 1)
            throughput[op] = {"messages_per_s_avg": round(float(sub["messages"].sum()) / active, 1),
                              "messages_per_s_peak": int(sub["messages"].max()),
                              "mb_per_s_avg": round(float(sub["bytes"].sum()) / active / 1e6, 3),
                              "active_seconds": active}
    produce = ops.get("produce", {"count": 0, "ok": 0, "errors": 0, "bytes": 0})
    serializers = {p["name"]: p.get("serializer", "bytes") for p in run_info.get("spec", {}).get("producers", ())}
    producers = {name: {"serializer": serializers.get(name, "bytes"), **entry}
                 for name, entry in aggregate.producer_summary(frame).items()}
    summary: dict[str, Any] = {
        "run": {**run_info, "samples": int(len(frame)), "start_ts": start, "end_ts": end,
                "elapsed_s": round(end - start, 3)},
        "phases_s": phases(run_info, frame, (start, end)),
        "latency_definitions": list(LATENCY_DEFINITIONS),
        "produced": {"attempted": produce["count"], "acked": produce["ok"], "failed": produce["errors"],
                     "bytes": produce["bytes"]},
        "producers": producers,
        "consumed": delivery,
        "throughput": throughput,
        "operations": ops,
        "errors": errors,
        "rebalances": _with_protocols(aggregate.rebalance_summary(events), run_info),
        "churn": [{"t_s": round(float(r["t"]), 2), "op": r["op"], "group": r["group_id"], "member": r["member"]}
                  for _, r in churn.iterrows()],
        "task_errors": [e for e in errors if e["op"] == "task_error"],
    }
    files = [SAMPLES_FILE]
    if len(per_second):
        files.append(charts.throughput_chart(per_second, churn, out_dir / "throughput.png"))
        files.append(charts.latency_chart(per_second, churn, out_dir / "latency_over_time.png"))
    if len(hist):
        files.append(charts.histogram_chart(hist, out_dir / "latency_histogram.png"))
    if len(events):
        files.append(charts.rebalance_chart(events, end - start, out_dir / "rebalance_timeline.png"))
    per_second.to_csv(out_dir / "per_second.csv", index=False)
    files.append("per_second.csv")
    summary["files"] = files + ["summary.json", "summary.md", "report.html"]
    return summary


def write_summary(summary: dict[str, Any], out_dir: Path) -> None:
    """summary.json, summary.md and report.html (the charts are already in ``out_dir``)."""
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    blocks = summary_blocks(summary)
    (out_dir / "summary.md").write_text(render_markdown(blocks))
    (out_dir / "report.html").write_text(render_html(blocks, summary))


@dataclass
class Block:
    """A paragraph (``text``) or a table (``header`` and ``rows``, first column left-aligned)."""

    text: str = ""
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    heading: int = 0


def _ms(entry: dict[str, Any], key: str) -> str:
    value = entry.get("latency_ms", {}).get(key)
    return "-" if value is None else f"{value:.1f}"


def _phase_line(ph: dict[str, Any], run: dict[str, Any]) -> str:
    names = (("spark_start", "Spark start"), ("stage_start", "stage start"), ("load", "load"), ("drain", "drain"),
             ("stage_end", "stage end"), ("report", "report"), ("spark_stop", "Spark stop"))
    parts = [f"{label} {ph[k]:.1f} s" for k, label in names if ph.get(k) is not None]
    total = f" (wall {run['wall_s']:.1f} s)" if run.get("wall_s") is not None else ""
    return "Time: " + " · ".join(parts) + total + "."


def _registry_line(s: dict[str, Any]) -> str | None:
    """The schema registry's part in the run, from the cluster's /metrics scraped at the end
    (``cluster_metrics``; the embedded cluster's, or ``--metrics-url``), when it has the series."""
    metrics = s.get("cluster_metrics") or {}
    counters, gauges = metrics.get("counters", {}), metrics.get("gauges", {})
    requests = counters.get("kafka_emu_schema_registry_requests")
    if requests is None:
        return None
    seconds = counters.get("kafka_emu_schema_registry_request_seconds", 0.0)
    held = "".join(f", {name} {int(gauges[f'kafka_emu_schema_registry_{name}']['sum'])}"
                   for name in ("subjects", "versions", "schemas") if f"kafka_emu_schema_registry_{name}" in gauges)
    mean = f" (mean {seconds / requests * 1000:.1f} ms)" if requests else ""
    url = s["run"].get("spec", {}).get("schema_registry_url")
    return f"Schema registry{f' {url}' if url else ''}: {int(requests)} requests answered{mean}{held}."


def summary_blocks(s: dict[str, Any]) -> list[Block]:
    run = s["run"]
    where = [f"Target: {run.get('target')}", f"master {run.get('master')}"]
    if run.get("tasks") is not None:
        where.append(f"{run['tasks']} client tasks on {run.get('partitions')} Spark partitions")
    where.append(f"{run.get('samples')} samples over {run['elapsed_s']:.1f} s")
    blocks = [Block(text=f"Load run {run.get('run_id', '')}", heading=1), Block(text=" · ".join(where))]
    if s.get("phases_s"):
        blocks.append(Block(text=_phase_line(s["phases_s"], run)))
    p = s["produced"]
    blocks.append(Block(text=f"Produced: {p['acked']} acked of {p['attempted']} attempted ({p['failed']} failed), "
                             f"{p['bytes'] / 1e6:.2f} MB."))
    if s.get("producers"):
        blocks.append(Block(header=["producer", "serializer", "acked", "failed", "MB", "p50 ms", "p99 ms"],
                            rows=[[name, e["serializer"], str(e["acked"]), str(e["failed"]), f"{e['bytes'] / 1e6:.2f}",
                                   _ms(e, "p50"), _ms(e, "p99")] for name, e in s["producers"].items()]))
    registry = _registry_line(s)
    if registry:
        blocks.append(Block(text=registry))
    if s["throughput"]:
        blocks.append(Block(header=["throughput", "avg msgs/s", "peak msgs/s", "avg MB/s"],
                            rows=[[op, str(t["messages_per_s_avg"]), str(t["messages_per_s_peak"]),
                                   str(t["mb_per_s_avg"])] for op, t in s["throughput"].items()]))
    blocks.append(Block(header=["operation", "count", "errors", "p50 ms", "p99 ms", "p99.9 ms", "max ms"],
                        rows=[[op, str(e["count"]), str(e["errors"]), _ms(e, "p50"), _ms(e, "p99"), _ms(e, "p99.9"),
                               _ms(e, "max")] for op, e in s["operations"].items() if op not in _NOT_REQUESTS]))
    blocks.append(Block(text="What the latencies measure:", items=list(s.get("latency_definitions", ()))))
    if s["consumed"]:
        blocks.append(Block(header=["reader", "records", "unique", "duplicates", "missing (acked, unread)"],
                            rows=[[who, str(c["records"]), str(c["unique"]), str(c["duplicates"]), str(c["missing"])]
                                  for who, c in s["consumed"].items()]))
        shares = [f"{who}: {c['records']} accepted (each record once per ACCEPT), {c['released']} released, "
                  f"{c['rejected']} rejected, {c['archived']} archived at the delivery limit"
                  for who, c in s["consumed"].items() if "released" in c]
        if shares:
            blocks.append(Block(text="Share groups (KIP-932):", items=shares))
    r = s["rebalances"]
    if r["count"]:
        blocks.append(Block(text=f"Rebalances: {r['count']} member assignments (p50 {r.get('p50_ms', 0):.0f} ms, max "
                                 f"{r.get('max_ms', 0):.0f} ms); joins {r['joins']}, planned leaves {r['leaves']}, "
                                 f"crashes {r['crashes']}, members closed at the end {r.get('closes_at_end', 0)}."))
        if r.get("by_group"):
            blocks.append(Block(header=["group", "protocol", "assignments", "p50 ms", "max ms"],
                                rows=[[g, str(b.get("protocol", "classic")), str(b["count"]), f"{b['p50_ms']:.0f}",
                                       f"{b['max_ms']:.0f}"] for g, b in r["by_group"].items()]))
    if s.get("churn"):
        blocks.append(Block(text="Churn: " + ", ".join(f"{c['op']} {c['member']} at {c['t_s']:.1f} s"
                                                      for c in s["churn"]) + "."))
    if s["errors"]:
        top = ", ".join(f"{e['op']} {e['error']} x{e['count']}" for e in s["errors"][:6])
        blocks.append(Block(text=f"Errors: {top}."))
    blocks.append(Block(text="Files: " + ", ".join(s["files"])))
    return blocks


def render_markdown(blocks: list[Block]) -> str:
    lines: list[str] = []
    for b in blocks:
        if b.header:
            lines += ["| " + " | ".join(b.header) + " |", "|---|" + "---:|" * (len(b.header) - 1)]
            lines += ["| " + " | ".join(row) + " |" for row in b.rows]
        elif b.heading:
            lines.append("#" * b.heading + " " + b.text)
        else:
            lines.append(b.text)
            lines += [f"- {item}" for item in b.items]
        lines.append("")
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px}
td:not(:first-child){text-align:right}th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee;margin:.5em 0}"""


def render_html(blocks: list[Block], summary: dict[str, Any]) -> str:
    e = html.escape
    body: list[str] = []
    for b in blocks:
        if b.header:
            body.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in b.header) + "</tr>"
                        + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in b.rows)
                        + "</table>")
        elif b.heading:
            body.append(f"<h{b.heading}>{e(b.text)}</h{b.heading}>")
        else:
            body.append(f"<p>{e(b.text)}</p>" + ("<ul>" + "".join(f"<li>{e(i)}</li>" for i in b.items) + "</ul>"
                                                 if b.items else ""))
    for name in summary["files"]:
        if name.endswith(".png"):
            title = name.removesuffix(".png").replace("_", " ").capitalize()
            body.append(f'<h2>{e(title)}</h2><img src="{e(name)}" alt="{e(title)}">')
    title = e(f"kafka-emu load {summary['run'].get('run_id', '')}")
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title><style>{_CSS}</style>"
            f"</head><body>\n" + "\n".join(body) + "\n</body></html>\n")
