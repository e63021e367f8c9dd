"""The driver's Spark aggregations over the raw samples of a run.

Everything here is a Spark query over the samples DataFrame; only small results (one row per
second, per operation, per error code, per rebalance event) come back to the driver, so the
same code serves a 30-second local run and a long run on a cluster.

"Audiences" are the independent readers of the data: each consumer group and each standalone
consumer. For each, consumed records are compared with the acknowledged produce offsets of the
topics it reads: ``missing`` (acked, never consumed), ``duplicates`` (consumed more than once,
e.g. re-delivered after a crash before the offsets were committed).
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PERCENTILES = (0.5, 0.9, 0.99, 0.999)
MEMBER_EVENTS = ("join", "revoke", "rebalance", "leave", "crash")


def _pct(col: str) -> Any:
    return F.percentile(F.col(col), list(PERCENTILES))


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    return value


def op_summary(samples: DataFrame) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], tuple[float, float]]:
    """One Spark job for: per-operation counts, bytes and latency percentiles (successes only),
    errors by operation and code (most frequent first), and the time span of the samples."""
    rows = (samples.groupBy("op", "error").agg(
        F.count("*").alias("count"),
        F.sum("bytes").alias("bytes"),
        F.percentile(F.col("latency_ms"), list(PERCENTILES)).alias("pct"),
        F.avg("latency_ms").alias("mean"),
        F.max("latency_ms").alias("max"),
        F.min("ts").alias("first"),
        F.max("ts").alias("last"),
    ).collect())
    ops: dict[str, dict[str, Any]] = {}
    errors: list[dict[str, Any]] = []
    for r in rows:
        entry = ops.setdefault(r["op"], {"count": 0, "ok": 0, "errors": 0, "bytes": 0})
        entry["count"] += r["count"]
        if r["error"]:
            entry["errors"] += r["count"]
            errors.append({"op": r["op"], "error": r["error"], "count": r["count"]})
            continue
        entry["ok"] += r["count"]
        entry["bytes"] += int(r["bytes"] or 0)
        if r["pct"] is not None:
            entry["latency_ms"] = {**{f"p{str(p * 100).rstrip('0').rstrip('.')}": _clean(v)
                                      for p, v in zip(PERCENTILES, r["pct"])},
                                   "mean": _clean(r["mean"]), "max": _clean(r["max"])}
    errors.sort(key=lambda e: (-e["count"], e["op"], e["error"]))
    first = min((r["first"] for r in rows if r["first"] is not None), default=0.0)
    last = max((r["last"] for r in rows if r["last"] is not None), default=0.0)
    return dict(sorted(ops.items())), errors, (float(first), float(last))


def per_second(samples: DataFrame, start: float) -> Any:
    """Pandas frame: second, op, messages, bytes, p50 and p99 latency (ok produce/consume only)."""
    return (samples.where((F.col("error") == "") & F.col("op").isin("produce", "consume"))
            .withColumn("second", F.floor(F.col("ts") - F.lit(start)).cast("int"))
            .groupBy("second", "op").agg(
                F.count("*").alias("messages"), F.sum("bytes").alias("bytes"),
                F.percentile(F.col("latency_ms"), [0.5, 0.99]).alias("pct"))
            .select("second", "op", "messages", "bytes", F.col("pct")[0].alias("p50_ms"),
                    F.col("pct")[1].alias("p99_ms"))
            .orderBy("second", "op").toPandas())


def latency_histogram(samples: DataFrame) -> Any:
    """Pandas frame: op, bucket lower bound (ms, 10 log buckets per decade), count."""
    bucket = F.floor(F.log10(F.greatest(F.col("latency_ms"), F.lit(0.01))) * 10)
    return (samples.where((F.col("error") == "") & F.col("op").isin("produce", "consume")
                          & F.col("latency_ms").isNotNull())
            .groupBy("op", bucket.alias("bucket")).count()
            .withColumn("lower_ms", F.pow(F.lit(10.0), F.col("bucket") / 10))
            .orderBy("op", "bucket").toPandas())


def member_events(samples: DataFrame, start: float) -> Any:
    """Pandas frame of group membership events (join, revoke, rebalance, leave, crash)."""
    return (samples.where(F.col("op").isin(*MEMBER_EVENTS) & F.col("group_id").isNotNull())
            .select((F.col("ts") - F.lit(start)).alias("t"), "group_id", "member", "op", "latency_ms", "detail",
                    "error")
            .orderBy("t").toPandas())


def rebalance_summary(events: Any) -> dict[str, Any]:
    reb = events[events["op"] == "rebalance"]["latency_ms"].dropna()
    out: dict[str, Any] = {"count": int(len(reb))}
    if len(reb):
        out.update({"p50_ms": _clean(float(reb.quantile(0.5))), "p99_ms": _clean(float(reb.quantile(0.99))),
                    "max_ms": _clean(float(reb.max()))})
    for op, key in (("join", "joins"), ("leave", "leaves"), ("crash", "crashes")):
        out[key] = int((events["op"] == op).sum())
    return out


def delivery_check(samples: DataFrame, audiences: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """Per audience: records read, distinct offsets, duplicates, acked-but-missing, read-but-never-acked.

    One Spark job: acknowledged offsets (fanned out to each audience reading their topic) and
    consumed offsets are unioned and grouped by (audience, offset), then counted per audience.
    """
    spark = samples.sparkSession
    keys = ["audience", "topic", "partition", "offset"]
    wanted = spark.createDataFrame([(a, t) for a, topics in audiences.items() for t in topics] or [("", "")],
                                   "audience string, topic string")
    produced = (samples.where((F.col("op") == "produce") & (F.col("error") == ""))
                .select("topic", "partition", "offset").distinct()
                .join(F.broadcast(wanted), "topic")
                .select(*keys, F.lit(1).alias("acked"), F.lit(0).alias("reads")))
    consumed = (samples.where((F.col("op") == "consume") & (F.col("error") == ""))
                .select(F.coalesce(F.col("group_id"), F.col("task")).alias("audience"), "topic", "partition", "offset",
                        F.lit(0).alias("acked"), F.lit(1).alias("reads")))
    per_offset = produced.unionByName(consumed).groupBy(*keys).agg(F.max("acked").alias("acked"),
                                                                   F.sum("reads").alias("reads"))
    rows = per_offset.groupBy("audience").agg(
        F.sum("reads").alias("records"),
        F.sum(F.when(F.col("reads") > 0, 1).otherwise(0)).alias("unique"),
        F.sum("acked").alias("expected"),
        F.sum(F.when((F.col("acked") == 1) & (F.col("reads") == 0), 1).otherwise(0)).alias("missing"),
        F.sum(F.when((F.col("acked") == 0) & (F.col("reads") > 0), 1).otherwise(0)).alias("unexpected"),
    ).collect()
    found = {r["audience"]: r for r in rows}
    out: dict[str, dict[str, int]] = {}
    for audience in sorted(audiences):
        r = found.get(audience)
        values = {k: int(r[k] or 0) if r is not None else 0
                  for k in ("records", "unique", "expected", "missing", "unexpected")}
        out[audience] = {"records": values["records"], "unique": values["unique"],
                         "duplicates": values["records"] - values["unique"], "expected": values["expected"],
                         "missing": values["missing"], "unexpected": values["unexpected"]}
    return out
