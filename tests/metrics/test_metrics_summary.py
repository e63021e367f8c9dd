"""A load run's summary.json ``cluster_metrics``: counters as counters, histograms as quantiles.

Before, every sample of a family was added up, ``_bucket`` and ``_created`` lines included
(``...totaltimems_created = 75407894109.0``). These tests feed known requests through a real
registry and check the reduced numbers exactly.
"""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from kafka_emu.metrics import ClusterMetrics, summarize_exposition
from kafka_emu.metrics.summary import histogram_quantile

from metrics_support import FakeBroker, FakeRequest, coordinator_snapshot

pytestmark = pytest.mark.timeout(30)

MS = 1_000_000


def request(api_name: str, total_ms: int) -> FakeRequest:
    return FakeRequest(api_name, 9, start_time_ns=MS, dequeue_time_ns=MS,
                       response_complete_time_ns=MS + total_ms * MS)


def test_counters_histograms_and_gauges_are_reduced_by_type() -> None:
    brokers = [FakeBroker(0, partition_counts=(3, 1, 0, 0),
                          coordinator=coordinator_snapshot(rebalances_completed=2, rebalance_time_ms_total=300)),
               FakeBroker(1, partition_counts=(5, 2, 0, 0))]
    brokers[0].stats.record_bytes_in("a", 10, 100)
    brokers[1].stats.record_bytes_in("b", 4, 40)
    with ClusterMetrics() as metrics:
        for b in brokers:
            metrics.register_broker(b)
        for ms in (1, 2, 3, 4, 40):        # broker 0: 5 produces
            brokers[0].complete(request("Produce", ms))
        for ms in (2, 4, 8, 16, 32):       # broker 1: 5 produces, 1 metadata
            brokers[1].complete(request("Produce", ms))
        brokers[1].complete(request("Metadata", 0))
        brokers[1].complete(request("Fetch", 3))   # recorded as FetchConsumer and as Fetch
        summary = summarize_exposition(metrics.exposition())

    assert set(summary) == {"counters", "gauges", "histograms", "summaries"}
    counters = summary["counters"]
    assert counters["kafka_network_requestmetrics_requestspersec"] == 12   # the Fetch once
    assert counters["kafka_server_brokertopicmetrics_messagesinpersec"] == 14
    assert not any(name.endswith("_created") for name in counters)
    assert summary["gauges"]["kafka_server_replicamanager_partitioncount"] == {"sum": 8, "min": 3, "max": 5}

    produce = summary["histograms"]["kafka_network_requestmetrics_totaltimems"]["Produce"]
    assert produce["count"] == 10 and produce["mean"] == pytest.approx(112 / 10)
    # 5 of 10 at or below 4 ms (bucket 2.5..5 holds 2, 4, 3, 4): p50 interpolates inside it.
    assert 2.5 <= produce["p50"] <= 5.0
    assert 25.0 <= produce["p95"] <= 50.0 and produce["p95"] <= produce["p99"] <= produce["p999"] <= 50.0
    assert summary["histograms"]["kafka_network_requestmetrics_totaltimems"]["Metadata"]["count"] == 1
    assert summary["summaries"]["kafka_emu_coordinator_rebalance_time_ms"] == {"count": 2, "sum": 300, "mean": 150}


def test_quantile_matches_promql_histogram_quantile() -> None:
    buckets = [(1.0, 2.0), (2.0, 6.0), (4.0, 10.0), (float("inf"), 10.0)]
    assert histogram_quantile(0.5, buckets) == 1.0 + (5.0 - 2.0) / 4.0   # rank 5 inside (1, 2]
    assert histogram_quantile(0.1, buckets) == 0.5                        # rank 1 in the first bucket
    assert histogram_quantile(1.0, buckets) == 4.0
    assert histogram_quantile(0.99, [(1.0, 0.0), (float("inf"), 3.0)]) == 1.0  # +Inf: highest finite bound
    assert histogram_quantile(0.5, [(1.0, 0.0), (float("inf"), 0.0)]) is None


@given(st.lists(st.integers(min_value=0, max_value=50), min_size=4, max_size=4),
       st.floats(min_value=0.0, max_value=1.0))
def test_quantiles_are_monotonic_and_within_the_bounds(increments: list[int], q: float) -> None:
    bounds = [1.0, 5.0, 10.0, float("inf")]
    cumulative, running = [], 0
    for bound, inc in zip(bounds, increments):
        running += inc
        cumulative.append((bound, float(running)))
    value = histogram_quantile(q, cumulative)
    if running == 0:
        assert value is None
        return
    assert value is not None and 0.0 <= value <= 10.0
    assert histogram_quantile(min(1.0, q + 0.1), cumulative) >= value
