"""The driver's Spark aggregations and the report folder, on samples whose answers are known."""
from __future__ import annotations

import json

import pytest

from kafka_emu.loadgen.report import build_report, save_samples
from kafka_emu.loadgen.samples import SampleSink, SPARK_SCHEMA

PYSPARK_PANDAS3_NOISE = [pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas.*:FutureWarning"),
                         pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")]
pytestmark = [*PYSPARK_PANDAS3_NOISE, pytest.mark.timeout(120)]


def _samples(spark):
    """Producer acks offsets 0..99 on t-0; group g reads 0..97 plus 10..19 again; consumer c reads all."""
    prod = SampleSink("producer:p:0", "confluent")
    for i in range(100):
        prod.add("produce", float(i + 1), topic="t", partition=0, offset=i, nbytes=10, ts=1000.0 + i / 50)
    prod.add("produce", None, error="REQUEST_TIMED_OUT", topic="t", ts=1001.0)
    g = SampleSink("member:g-m0", "confluent", "g", "g-m0")
    g.add("join", ts=1000.0)
    g.add("rebalance", 250.0, detail="assigned=1", ts=1000.3)
    for i in list(range(98)) + list(range(10, 20)):
        g.add("consume", 5.0, topic="t", partition=0, offset=i, nbytes=10, ts=1000.5 + i / 50)
    g.add("crash", ts=1002.5)
    c = SampleSink("consumer:c", "kafka-python")
    for i in range(100):
        c.add("consume", 7.0, topic="t", partition=0, offset=i, nbytes=10, ts=1000.5 + i / 50)
    table = [b for s in (prod, g, c) for b in [s.to_arrow()]]
    rows = [r for b in table for r in b.to_pylist()]
    return spark.createDataFrame(rows, SPARK_SCHEMA)


def test_report_counts_latencies_and_files(spark, tmp_path):
    df = save_samples(_samples(spark), tmp_path)
    summary = build_report(df, tmp_path, {"run_id": "t", "target": "x", "master": "local[2]"},
                           {"g": ["t"], "consumer:c": ["t"]})
    assert summary["produced"] == {"attempted": 101, "acked": 100, "failed": 1, "bytes": 1000}
    assert summary["consumed"]["g"] == {"records": 108, "unique": 98, "duplicates": 10, "expected": 100,
                                        "missing": 2, "unexpected": 0}
    assert summary["consumed"]["consumer:c"]["missing"] == 0
    lat = summary["operations"]["produce"]["latency_ms"]
    assert lat["p50"] == pytest.approx(50.5) and lat["max"] == 100.0
    assert summary["errors"] == [{"op": "produce", "error": "REQUEST_TIMED_OUT", "count": 1}]
    assert summary["rebalances"]["count"] == 1 and summary["rebalances"]["crashes"] == 1
    assert summary["throughput"]["produce"]["messages_per_s_peak"] == 50
    for name in ("summary.json", "summary.md", "throughput.png", "latency_over_time.png",
                 "latency_histogram.png", "rebalance_timeline.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert json.loads((tmp_path / "summary.json").read_text())["produced"]["acked"] == 100
    assert spark.read.parquet(str(tmp_path / "samples.parquet")).count() == df.count()
    md = (tmp_path / "summary.md").read_text()
    assert "| g | 108 | 98 | 10 | 2 |" in md
