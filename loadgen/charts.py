"""PNG charts of a load run, drawn with matplotlib's Agg backend (no display needed)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_COLORS = {"produce": "tab:blue", "consume": "tab:green"}


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


def throughput_chart(per_second: Any, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 4))
    for op, frame in per_second.groupby("op"):
        ax.plot(frame["second"], frame["messages"], label=f"{op} (msgs/s)", color=_COLORS.get(op))
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("messages per second")
    ax.set_title("Throughput")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def latency_chart(per_second: Any, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 4))
    for op, frame in per_second.groupby("op"):
        what = "delivery" if op == "produce" else "end-to-end"
        ax.plot(frame["second"], frame["p50_ms"], label=f"{op} {what} p50", color=_COLORS.get(op))
        ax.plot(frame["second"], frame["p99_ms"], label=f"{op} {what} p99", color=_COLORS.get(op), linestyle="--")
    ax.set_yscale("log")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("latency (ms)")
    ax.set_title("Latency over time")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, path)


def histogram_chart(hist: Any, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 4))
    for op, frame in hist.groupby("op"):
        lower = frame["lower_ms"].to_numpy()
        ax.bar(lower, frame["count"], width=lower * (10 ** 0.1 - 1), align="edge", alpha=0.55,
               label=op, color=_COLORS.get(op))
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms), 10 buckets per decade")
    ax.set_ylabel("requests")
    ax.set_title("Latency histogram (produce: delivery; consume: end-to-end)")
    ax.legend()
    return _save(fig, path)


def rebalance_chart(events: Any, end_t: float, path: Path) -> str:
    """One line per member from join to leave/crash, with its rebalances (revoke to assign) as bars."""
    fig, ax = plt.subplots(figsize=(9, max(2.5, 0.35 * max(1, events["member"].nunique()) + 1.5)))
    members = sorted(events["member"].dropna().unique())
    for y, member in enumerate(members):
        ev = events[events["member"] == member]
        joins = ev[ev["op"] == "join"]["t"]
        ends = ev[ev["op"].isin(["leave", "crash"])]
        begin = float(joins.min()) if len(joins) else 0.0
        finish = float(ends["t"].max()) if len(ends) else end_t
        ax.hlines(y, begin, finish, color="lightgray", linewidth=6)
        for _, r in ev[ev["op"] == "rebalance"].iterrows():
            width = (r["latency_ms"] or 0.0) / 1000.0
            ax.barh(y, width, left=r["t"] - width, height=0.5, color="tab:orange")
        for _, r in ends.iterrows():
            ax.plot(r["t"], y, marker="x" if r["op"] == "crash" else "o",
                    color="tab:red" if r["op"] == "crash" else "tab:gray", markersize=8)
    ax.set_yticks(range(len(members)), members, fontsize=8)
    ax.set_xlabel("seconds since start")
    ax.set_title("Group membership: rebalances (orange), leave (o), crash (x)")
    ax.grid(axis="x", alpha=0.3)
    return _save(fig, path)
