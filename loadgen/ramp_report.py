"""The report folder of a ramp: summary.json, summary.md, report.html and ramp.png.

One row per step: what was offered, what was acknowledged and consumed, the produce latency,
the lag trend and the cluster's own metrics at the end of the step; the rendering shares
``report.Block`` with the load report.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafka_emu.loadgen.charts import plt, save_figure
from kafka_emu.loadgen.report import Block, render_html, render_markdown


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _purgatory(cluster: dict[str, Any]) -> str:
    sizes = cluster.get("purgatory_size") or {}
    return " ".join(f"{op}={int(n)}" for op, n in sorted(sizes.items())) or "-"


def ramp_blocks(s: dict[str, Any]) -> list[Block]:
    run, ramp = s["run"], s["ramp"]
    limits = ", ".join(f"{k} {v:g}" for k, v in ramp["limits"].items() if v is not None)
    best = ramp["highest_sustained_rate"]
    blocks = [Block(text=f"Ramp {run.get('run_id', '')}", heading=1),
              Block(text=f"Target: {run.get('target')} · master {run.get('master')} · limits: {limits}; a step is "
                         f"sustained when it crosses none and at least {ramp['sustained_fraction']:.0%} of the offered "
                         f"messages were acknowledged within it."),
              Block(text=f"Highest sustained produce rate: {_fmt(best, 0)} messages/s. "
                         f"Stopped by: {'; '.join(ramp['stopped_by'])}."),
              Block(header=["step", "offered/s", "acked/s", "consumed/s", "p50 ms", "p99 ms", "errors", "lag growth s",
                            "handler idle", "network idle", "purgatory", "URP", "crossed"],
                    rows=[[str(st["step"]), _fmt(st["offered_rate"], 0), _fmt(st["acked_rate"], 0),
                           _fmt(st["consumed_rate"], 0), _fmt(st["produce_p50_ms"]), _fmt(st["produce_p99_ms"]),
                           str(st["failed"]), _fmt(max(st["lag_growth_s"].values(), default=None)),
                           _fmt(st["cluster"].get("request_handler_idle"), 2),
                           _fmt(st["cluster"].get("network_processor_idle"), 2), _purgatory(st["cluster"]),
                           _fmt(st["cluster"].get("under_replicated_partitions"), 0), "; ".join(st["crossed"]) or "-"]
                          for st in ramp["steps"]]),
              Block(text="produce latency: delivery (send() to acknowledgement); handler/network idle: fraction of "
                         "time the brokers' request handler and network threads waited for work, averaged over "
                         "brokers, since the previous scrape; purgatory: operations watched per purgatory; URP: "
                         "under-replicated partitions at the end of the step."),
              Block(text="Files: " + ", ".join(s["files"]))]
    return blocks


def ramp_chart(steps: list[dict[str, Any]], path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 4))
    offered = [st["offered_rate"] for st in steps]
    ax.plot(offered, offered, color="lightgray", linestyle=":", label="offered = acknowledged")
    ax.plot(offered, [st["acked_rate"] for st in steps], marker="o", color="tab:blue", label="acknowledged messages/s")
    if any(st["consumed_rate"] for st in steps):
        ax.plot(offered, [st["consumed_rate"] for st in steps], marker="s", color="tab:green",
                label="consumed records/s")
    ax.set_xlabel("offered produce rate (messages/s)")
    ax.set_ylabel("messages per second")
    lat = ax.twinx()
    lat.plot(offered, [st["produce_p99_ms"] for st in steps], marker="^", color="tab:red", linestyle="--",
             label="produce p99 (ms)")
    lat.set_ylabel("produce delivery p99 (ms)")
    lat.set_yscale("log")
    for st in steps:
        if st["crossed"]:
            ax.axvline(st["offered_rate"], color="tab:red", alpha=0.4)
    handles = ax.get_legend_handles_labels()[0] + lat.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], fontsize=8, loc="upper left")
    ax.set_title("Ramp: offered vs acknowledged rate, produce p99 (red line: step over a limit)")
    ax.grid(alpha=0.3)
    return save_figure(fig, path, left=0.1, right=0.9)


def write_ramp_report(summary: dict[str, Any], out_dir: Path) -> None:
    files = [ramp_chart(summary["ramp"]["steps"], out_dir / "ramp.png")] if summary["ramp"]["steps"] else []
    summary["files"] = files + ["summary.json", "summary.md", "report.html"]
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    blocks = ramp_blocks(summary)
    (out_dir / "summary.md").write_text(render_markdown(blocks))
    (out_dir / "report.html").write_text(render_html(blocks, summary))
