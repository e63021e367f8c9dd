"""PNG charts of a load run, drawn with matplotlib's Agg backend (no display needed).

The time charts share one x axis (seconds since the first sample) and mark the group churn
(late joins, planned leaves, crashes) as vertical lines, so a latency spike can be read against
the membership change that caused it. The membership timeline draws every assignment with a
minimum visible width: most rebalances take milliseconds, far less than a pixel of a 40 s axis.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_COLORS = {"produce": "tab:blue", "consume": "tab:green"}
_CHURN_STYLE = {"join": ("tab:purple", ":"), "leave": ("tab:gray", "--"), "crash": ("tab:red", "-")}
MIN_MARK_FRACTION = 0.004   # of the time axis: about 3 pixels of a 900-pixel-wide chart
LATENCY_MEANING = {"produce": "delivery (send to ack)", "consume": "end to end (CreateTime to read)"}


def save_figure(fig: Any, path: Path, left: float = 0.08, right: float = 0.98) -> str:
    """Fixed margins: ``tight_layout`` would draw the whole figure once more just to measure it."""
    fig.subplots_adjust(left=left, right=right, top=0.9, bottom=0.13)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path.name


def _short(member: Any) -> str:
    text = str(member)
    return text.rsplit("-", 1)[-1] if "-" in text else text


def mark_churn(ax: Any, churn: Any) -> None:
    """Vertical lines at each churn event, labelled at the top of the axes."""
    if churn is None or not len(churn):
        return
    top = ax.get_xaxis_transform()
    for _, ev in churn.iterrows():
        color, style = _CHURN_STYLE[ev["op"]]
        ax.axvline(ev["t"], color=color, linestyle=style, linewidth=1.2, alpha=0.8)
        ax.text(ev["t"], 0.98, f" {ev['op']} {_short(ev['member'])}", transform=top, rotation=90, va="top",
                ha="left", fontsize=7, color=color)


def throughput_chart(per_second: Any, churn: Any, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 4))
    for op, frame in per_second.groupby("op"):
        what = "messages acknowledged" if op == "produce" else "records read (all readers)"
        ax.plot(frame["second"], frame["messages"], label=f"{op}: {what} per s", color=_COLORS.get(op))
    mark_churn(ax, churn)
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("messages per second")
    ax.set_title("Throughput (vertical lines: group joins, leaves, crashes)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower center")
    return save_figure(fig, path)


def latency_chart(per_second: Any, churn: Any, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 4))
    for op, frame in per_second.groupby("op"):
        what = LATENCY_MEANING.get(op, op)
        ax.plot(frame["second"], frame["p50_ms"], label=f"{op} {what} p50", color=_COLORS.get(op))
        ax.plot(frame["second"], frame["p99_ms"], label=f"{op} {what} p99", color=_COLORS.get(op), linestyle="--")
    mark_churn(ax, churn)
    ax.set_yscale("log")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("latency (ms), per second")
    ax.set_title("Latency over time (vertical lines: group joins, leaves, crashes)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower center")
    return save_figure(fig, path)


def histogram_chart(hist: Any, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(9, 4))
    for op, frame in hist.groupby("op"):
        lower = frame["lower_ms"].to_numpy()
        what = "messages acknowledged" if op == "produce" else "records read"
        ax.bar(lower, frame["count"], width=lower * (10 ** 0.1 - 1), align="edge", alpha=0.55,
               label=f"{op}: {what}, {LATENCY_MEANING.get(op, op)}", color=_COLORS.get(op))
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms), 10 buckets per decade")
    ax.set_ylabel("messages / records per bucket")
    ax.set_title("Latency histogram")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def rebalance_chart(events: Any, end_t: float, path: Path) -> str:
    """One line per member from join to leave/crash; each assignment (revoke or join to assign)
    is a bar at least ``MIN_MARK_FRACTION`` of the axis wide with a tick where it ended."""
    members = sorted(events["member"].dropna().unique())
    fig, ax = plt.subplots(figsize=(9, max(2.5, 0.35 * max(1, len(members)) + 1.5)))
    min_width = MIN_MARK_FRACTION * max(end_t, 1.0)
    for y, member in enumerate(members):
        ev = events[events["member"] == member]
        joins = ev[ev["op"] == "join"]["t"]
        ends = ev[ev["op"].isin(["leave", "crash"])]
        begin = float(joins.min()) if len(joins) else 0.0
        finish = float(ends["t"].max()) if len(ends) else end_t
        ax.hlines(y, begin, finish, color="lightgray", linewidth=6)
        for t in joins:
            ax.plot(t, y, marker=">", color="tab:purple", markersize=7)
        for _, r in ev[ev["op"] == "rebalance"].iterrows():
            took = (r["latency_ms"] if r["latency_ms"] == r["latency_ms"] and r["latency_ms"] else 0.0) / 1000.0
            width = max(took, min_width)
            ax.barh(y, width, left=r["t"] - width, height=0.5, color="tab:orange")
            ax.vlines(r["t"], y - 0.35, y + 0.35, color="black", linewidth=1)
        for _, r in ends.iterrows():
            crash = r["op"] == "crash"
            ax.plot(r["t"], y, marker="x" if crash else "o", color="tab:red" if crash else "tab:gray", markersize=8)
    ax.set_yticks(range(len(members)), members, fontsize=8)
    ax.set_ylim(-0.7, len(members) - 0.3)
    ax.set_xlabel("seconds since start")
    ax.set_title("Group membership: join (>), assignment (orange, ends at the tick), leave/close (o), crash (x)",
                 fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return save_figure(fig, path, left=0.16)
