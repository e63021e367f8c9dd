"""The driver's aggregations and the report folder, on samples whose answers are known.

No Spark here: the report is built from the samples' Arrow table on the driver (``aggregate``).
"""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from kafka_emu.loadgen import aggregate
from kafka_emu.loadgen.report import build_report, save_samples, write_summary

pytestmark = [pytest.mark.timeout(60)]


def test_report_counts_latencies_and_files(known_samples, tmp_path):
    table = known_samples
    save_samples(table, tmp_path)
    summary = build_report(table, tmp_path, {"run_id": "t", "target": "x", "master": "local[2]",
                                             "spark_start_s": 7.5, "stage_submit_ts": 998.0, "stage_done_ts": 1003.0},
                           {"g": ["t"], "consumer:c": ["t"]})
    write_summary(summary, tmp_path)
    assert summary["produced"] == {"attempted": 101, "acked": 100, "failed": 1, "bytes": 1000}
    assert summary["consumed"]["g"] == {"records": 108, "unique": 98, "duplicates": 10, "expected": 100,
                                        "missing": 2, "unexpected": 0}
    assert summary["consumed"]["consumer:c"]["missing"] == 0
    lat = summary["operations"]["produce"]["latency_ms"]
    assert lat["p50"] == pytest.approx(50.5) and lat["max"] == 100.0 and lat["p99.9"] == pytest.approx(99.901)
    assert summary["errors"] == [{"op": "produce", "error": "REQUEST_TIMED_OUT", "count": 1}]
    reb = summary["rebalances"]
    assert (reb["count"], reb["joins"], reb["leaves"], reb["crashes"], reb["closes_at_end"]) == (3, 2, 1, 1, 0)
    # The standalone consumer's close is not a group leave: the table and the rebalance line agree.
    assert summary["operations"]["leave"]["count"] == reb["leaves"] + reb["closes_at_end"]
    assert [(c["op"], c["member"]) for c in summary["churn"]] == [("join", "g-m1"), ("leave", "g-m1"),
                                                                   ("crash", "g-m0")]
    assert summary["throughput"]["produce"]["messages_per_s_peak"] == 50
    assert summary["phases_s"]["spark_start"] == 7.5
    assert summary["phases_s"]["load"] == pytest.approx(1.98)
    assert summary["phases_s"]["drain"] == pytest.approx(0.62)
    assert summary["phases_s"]["stage_start"] == pytest.approx(2.0)
    assert summary["phases_s"]["stage_end"] == pytest.approx(0.4)
    for name in ("summary.json", "summary.md", "report.html", "throughput.png", "latency_over_time.png",
                 "latency_histogram.png", "rebalance_timeline.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert json.loads((tmp_path / "summary.json").read_text())["produced"]["acked"] == 100
    assert pq.read_table(tmp_path / "samples.parquet").num_rows == table.num_rows == summary["run"]["samples"]
    md = (tmp_path / "summary.md").read_text()
    assert "| g | 108 | 98 | 10 | 2 |" in md
    assert "consume: end to end" in md and "produce: delivery latency" in md
    assert "Spark start 7.5 s" in md
    page = (tmp_path / "report.html").read_text()
    assert "<td>108</td>" in page and 'src="rebalance_timeline.png"' in page and "end to end" in page


def test_per_second_and_histogram_add_up_to_the_totals(known_samples):
    frame = known_samples.to_pandas()
    per_second = aggregate.per_second(frame, 1000.0)
    assert per_second[per_second["op"] == "produce"]["messages"].sum() == 100
    assert per_second[per_second["op"] == "consume"]["messages"].sum() == 208
    first = per_second[(per_second["op"] == "produce") & (per_second["second"] == 0)].iloc[0]
    assert first["messages"] == 50 and first["p50_ms"] == pytest.approx(25.5)
    hist = aggregate.latency_histogram(frame)
    assert hist.groupby("op")["count"].sum().to_dict() == {"consume": 208, "produce": 100}
    # 5.0 ms lands in the bucket [10**0.6, 10**0.7) = [3.98, 5.01)
    consume = hist[hist["op"] == "consume"].set_index("bucket")["count"]
    assert consume[6] == 108 and consume[8] == 100


def test_rebalance_chart_draws_millisecond_assignments_visibly(known_samples, tmp_path):
    """A 2 ms rebalance on a 40 s axis is narrower than a pixel; the chart widens it to a mark."""
    import numpy as np
    from PIL import Image

    from kafka_emu.loadgen import charts

    events = aggregate.member_events(known_samples.to_pandas(), 1000.0)
    events = events[(events["op"] != "rebalance") | (events["latency_ms"] < 10)]   # the 2 ms and 3 ms ones
    path = tmp_path / "r.png"
    charts.rebalance_chart(events, 40.0, path)
    px = np.asarray(Image.open(path).convert("RGB")).astype(int)
    orange = ((px[..., 0] > 240) & (px[..., 1] > 110) & (px[..., 1] < 140) & (px[..., 2] < 40)).sum()
    # Drawn to scale each would be a sliver under a pixel wide; as marks, each is >= 3 px x 8 px.
    assert orange >= 2 * 3 * 8
