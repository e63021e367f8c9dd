"""The driver's aggregations over the raw samples of a run, on one pandas frame.

The samples come back from the barrier stage once, as Arrow (``DataFrame.toArrow``), and every
number of the report is a pandas group-by over that frame. A run's samples are small for the
driver (about 100 bytes each: a million samples is ~100 MB), and aggregating them in-process
takes a fraction of a second where a chain of Spark jobs took ~10 s of scheduling on a small
machine. Percentiles interpolate linearly between ranks, as Spark's ``percentile`` does.

"Audiences" are the independent readers of the data: each consumer group and each standalone
consumer. For each, consumed records are compared with the acknowledged produce offsets of the
topics it reads: ``missing`` (acked, never consumed), ``duplicates`` (consumed more than once,
e.g. re-delivered after a crash before the offsets were committed).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

PERCENTILES = (0.5, 0.9, 0.99, 0.999)
MEMBER_EVENTS = ("join", "revoke", "rebalance", "leave", "crash")
LATENCY_OPS = ("produce", "consume")


def _label(p: float) -> str:
    return f"p{str(round(p * 100, 1)).rstrip('0').rstrip('.')}"


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    return value


def ok_rows(samples: pd.DataFrame, *ops: str) -> pd.DataFrame:
    return samples[(samples["error"] == "") & samples["op"].isin(ops)]


def op_summary(samples: pd.DataFrame) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], tuple[float, float]]:
    """Per-operation counts, bytes and latency percentiles (successes only), errors by operation
    and code (most frequent first), and the time span of the samples."""
    ops: dict[str, dict[str, Any]] = {}
    errors: list[dict[str, Any]] = []
    counts = samples.groupby(["op", "error"], sort=True).size()
    for (op, error), count in counts.items():
        entry = ops.setdefault(op, {"count": 0, "ok": 0, "errors": 0, "bytes": 0})
        entry["count"] += int(count)
        if error:
            entry["errors"] += int(count)
            errors.append({"op": op, "error": error, "count": int(count)})
        else:
            entry["ok"] += int(count)
    ok = samples[samples["error"] == ""]
    for op, frame in ok.groupby("op"):
        ops[op]["bytes"] = int(frame["bytes"].fillna(0).sum())
        lat = frame["latency_ms"].dropna()
        if len(lat):
            q = lat.quantile(list(PERCENTILES))
            ops[op]["latency_ms"] = {**{_label(p): _clean(float(q[p])) for p in PERCENTILES},
                                     "mean": _clean(float(lat.mean())), "max": _clean(float(lat.max()))}
    errors.sort(key=lambda e: (-e["count"], e["op"], e["error"]))
    span = (float(samples["ts"].min()), float(samples["ts"].max())) if len(samples) else (0.0, 0.0)
    return dict(sorted(ops.items())), errors, span


def producer_summary(samples: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per producer of the spec (its instances together, from the ``producer:<name>:<i>`` task ids):
    attempted, acked and failed records, acked bytes, delivery p50/p99 of the acked."""
    produce = samples[(samples["op"] == "produce") & samples["task"].str.startswith("producer:")]
    names = produce["task"].str.replace(r"^producer:(.*):\d+$", r"\1", regex=True)
    out: dict[str, dict[str, Any]] = {}
    for name, frame in produce.groupby(names, sort=True):
        ok = frame[frame["error"] == ""]
        entry: dict[str, Any] = {"attempted": int(len(frame)), "acked": int(len(ok)),
                                 "failed": int(len(frame) - len(ok)), "bytes": int(ok["bytes"].fillna(0).sum())}
        lat = ok["latency_ms"].dropna()
        if len(lat):
            entry["latency_ms"] = {"p50": _clean(float(lat.quantile(0.5))), "p99": _clean(float(lat.quantile(0.99)))}
        out[str(name)] = entry
    return out


def per_second(samples: pd.DataFrame, start: float) -> pd.DataFrame:
    """second, op, messages, bytes, p50 and p99 latency (successful produce/consume only)."""
    ok = ok_rows(samples, *LATENCY_OPS).assign(second=lambda f: (f["ts"] - start).floordiv(1).astype("int64"))
    if not len(ok):
        return pd.DataFrame(columns=["second", "op", "messages", "bytes", "p50_ms", "p99_ms"])
    groups = ok.groupby(["second", "op"])
    out = groups.agg(messages=("ts", "size"), bytes=("bytes", "sum"))
    q = groups["latency_ms"].quantile([0.5, 0.99]).unstack()
    out["p50_ms"], out["p99_ms"] = q[0.5], q[0.99]
    return out.reset_index().sort_values(["second", "op"]).reset_index(drop=True)


def latency_histogram(samples: pd.DataFrame) -> pd.DataFrame:
    """op, bucket (10 log buckets per decade), its lower bound in ms, count."""
    import numpy as np

    ok = ok_rows(samples, *LATENCY_OPS).dropna(subset=["latency_ms"])
    bucket = np.floor(np.log10(ok["latency_ms"].clip(lower=0.01)) * 10).astype("int64")
    out = ok.assign(bucket=bucket).groupby(["op", "bucket"]).size().rename("count").reset_index()
    out["lower_ms"] = 10.0 ** (out["bucket"] / 10)
    return out.sort_values(["op", "bucket"]).reset_index(drop=True)


def member_events(samples: pd.DataFrame, start: float) -> pd.DataFrame:
    """Group membership events (join, revoke, rebalance, leave, crash), t in seconds from start."""
    ev = samples[samples["op"].isin(MEMBER_EVENTS) & samples["group_id"].notna()]
    ev = ev.assign(t=ev["ts"] - start)[["t", "group_id", "member", "op", "latency_ms", "detail", "error"]]
    return ev.sort_values("t").reset_index(drop=True)


def churn_events(events: pd.DataFrame) -> pd.DataFrame:
    """The membership changes a reader wants marked on the time charts: joins after a group's
    initial members, planned leaves (not members closing at the end of the run) and crashes."""
    if not len(events):
        return events
    joins = events[events["op"] == "join"]
    first = joins.groupby("group_id")["t"].transform("min")
    late_join = joins[joins["t"] > first + 1.0]
    planned = events[((events["op"] == "leave") & (events["detail"] == "leave")) | (events["op"] == "crash")]
    return pd.concat([late_join, planned]).sort_values("t").reset_index(drop=True)


def rebalance_summary(events: pd.DataFrame) -> dict[str, Any]:
    """Member assignments (revoke/first join to assign) and the membership changes behind them;
    ``by_group`` has each group's assignment times.

    ``leaves`` counts planned leaves (LeaveGroup mid-run); ``closes_at_end`` the members that
    stayed until the group had consumed everything and then closed (also a LeaveGroup).
    """
    reb = events[events["op"] == "rebalance"]["latency_ms"].dropna() if len(events) else pd.Series(dtype=float)
    out: dict[str, Any] = {"count": int(len(reb))}
    if len(reb):
        out.update({"p50_ms": _clean(float(reb.quantile(0.5))), "p99_ms": _clean(float(reb.quantile(0.99))),
                    "max_ms": _clean(float(reb.max()))})
    by_group: dict[str, Any] = {}
    if len(events):
        rows = events[(events["op"] == "rebalance") & events["latency_ms"].notna()]
        for group_id, frame in rows.groupby("group_id"):
            lat = frame["latency_ms"]
            by_group[str(group_id)] = {"count": int(len(lat)), "p50_ms": _clean(float(lat.quantile(0.5))),
                                       "max_ms": _clean(float(lat.max()))}
    out["by_group"] = by_group
    if not len(events):
        return {**out, "joins": 0, "leaves": 0, "closes_at_end": 0, "crashes": 0}
    leaves = events[events["op"] == "leave"]
    out["joins"] = int((events["op"] == "join").sum())
    out["leaves"] = int((leaves["detail"] == "leave").sum())
    out["closes_at_end"] = int((leaves["detail"] != "leave").sum())
    out["crashes"] = int((events["op"] == "crash").sum())
    return out


def delivery_check(samples: pd.DataFrame, audiences: dict[str, list[str]],
                   share_limits: dict[str, int] | None = None) -> dict[str, dict[str, int]]:
    """Per audience: records read, distinct offsets, duplicates, acked-but-missing, read-but-never-acked.

    A share group (``share_limits``: group id -> delivery count limit) reads a record when a
    member ACCEPTs it (``consume`` samples): duplicates are records accepted twice; the records
    it REJECTed, or RELEASEd as many times as the delivery limit, are archived by the broker and
    not expected (counted as ``rejected`` and ``archived``)."""
    keys = ["topic", "partition", "offset"]
    acked = ok_rows(samples, "produce")[keys].drop_duplicates()
    consumed = ok_rows(samples, "consume")
    reader = consumed["group_id"].fillna(consumed["task"])
    out: dict[str, dict[str, int]] = {}
    for audience in sorted(audiences):
        expected = acked[acked["topic"].isin(audiences[audience])]
        reads = consumed[reader == audience].groupby(keys).size().rename("reads").reset_index()
        both = expected.merge(reads, on=keys, how="outer", indicator=True)
        extra: dict[str, int] = {}
        if share_limits is not None and audience in share_limits:
            mine = samples[(samples["group_id"] == audience) & (samples["error"] == "")]
            rejected = mine[mine["op"] == "share_reject"][keys].drop_duplicates()
            releases = mine[mine["op"] == "share_release"].groupby(keys).size().rename("n").reset_index()
            archived = releases[releases["n"] >= share_limits[audience]][keys]
            gone = pd.concat([rejected, archived]).drop_duplicates()
            expected = expected.merge(gone, on=keys, how="left", indicator=True)
            expected = expected[expected["_merge"] == "left_only"][keys]
            both = expected.merge(reads, on=keys, how="outer", indicator=True)
            extra = {"rejected": int(len(rejected)), "archived": int(len(archived)),
                     "released": int(releases["n"].sum()) if len(releases) else 0}
        records = int(reads["reads"].sum())
        out[audience] = {"records": records, "unique": int(len(reads)), "duplicates": records - int(len(reads)),
                         "expected": int(len(expected)), "missing": int((both["_merge"] == "left_only").sum()),
                         "unexpected": int((both["_merge"] == "right_only").sum()), **extra}
    return out
