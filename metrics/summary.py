"""One scrape of ``/metrics`` turned into numbers a report can show (a load run's summary.json).

Each family is reduced by its type, never by adding up unrelated samples:

* counters: the total over every label set (all brokers, topics, requests), ``_created``
  timestamps dropped; a Fetch, which Kafka also records as FetchConsumer or FetchFollower,
  counts once;
* gauges: ``sum``, ``min`` and ``max`` over the label sets (a sum is right for partition counts,
  min/max for idle fractions; the reader picks);
* histograms: per ``request`` label (buckets of all brokers added per bound), ``count``,
  ``mean`` and the quantiles ``p50``/``p95``/``p99``/``p999``, estimated within a bucket by
  linear interpolation as PromQL's ``histogram_quantile`` does;
* summaries: ``count``, ``sum`` and ``mean``.
"""
from __future__ import annotations

import math
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99, "p999": 0.999}
# Request labels that repeat a Fetch already counted as ``Fetch`` (see request_metric_names).
_FETCH_SPLIT = frozenset({"FetchConsumer", "FetchFollower"})


def histogram_quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """PromQL's estimate of quantile ``q`` from cumulative (upper bound, count) buckets sorted by
    bound, the last one +Inf; None without observations. A quantile in the +Inf bucket is the
    highest finite bound, as in PromQL."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def summarize_exposition(text: str, prefixes: tuple[str, ...] = ("kafka_",)) -> dict[str, dict[str, Any]]:
    """``{"counters": ..., "gauges": ..., "histograms": ..., "summaries": ...}`` of one scrape
    (Prometheus text format), for the families whose name starts with one of ``prefixes``."""
    counters: dict[str, float] = {}
    gauges: dict[str, dict[str, float]] = {}
    histograms: dict[str, dict[str, dict[str, float | None]]] = {}
    summaries: dict[str, dict[str, float | None]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(prefixes):
            continue
        if family.type == "counter":
            counters[family.name] = sum(s.value for s in family.samples if s.name.endswith("_total")
                                        and s.labels.get("request") not in _FETCH_SPLIT)
        elif family.type == "gauge":
            values = [s.value for s in family.samples]
            if values:
                gauges[family.name] = {"sum": sum(values), "min": min(values), "max": max(values)}
        elif family.type == "histogram":
            histograms[family.name] = _histogram(family.samples)
        elif family.type == "summary":
            count = sum(s.value for s in family.samples if s.name.endswith("_count"))
            total = sum(s.value for s in family.samples if s.name.endswith("_sum"))
            summaries[family.name] = {"count": count, "sum": total, "mean": total / count if count else None}
    return {"counters": counters, "gauges": gauges, "histograms": histograms, "summaries": summaries}


def _histogram(samples: list[Any]) -> dict[str, dict[str, float | None]]:
    """Per ``request`` label: count, mean and quantiles over all brokers."""
    buckets: dict[str, dict[float, float]] = {}
    sums: dict[str, float] = {}
    for s in samples:
        request = s.labels.get("request", "")
        if s.name.endswith("_bucket"):
            by_bound = buckets.setdefault(request, {})
            bound = float(s.labels["le"])
            by_bound[bound] = by_bound.get(bound, 0.0) + s.value
        elif s.name.endswith("_sum"):
            sums[request] = sums.get(request, 0.0) + s.value
    out: dict[str, dict[str, float | None]] = {}
    for request, by_bound in sorted(buckets.items()):
        cumulative = sorted(by_bound.items())
        count = cumulative[-1][1] if cumulative else 0.0
        row: dict[str, float | None] = {"count": count,
                                        "mean": sums.get(request, 0.0) / count if count else None}
        for label, q in QUANTILES.items():
            row[label] = histogram_quantile(q, cumulative)
        out[request] = row
    return out
