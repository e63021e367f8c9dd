"""A two-step saturation ramp in Spark local mode against an embedded 3-broker cluster.

Each step is a barrier stage of real clients; the ramp's acknowledged counts are checked against
the brokers' logs, and the cluster's own metrics (handler idle, purgatory sizes) are scraped
from its /metrics endpoint at every step.
"""
from __future__ import annotations

import json

import pytest

from kafka_emu.loadgen.ramp import run_ramp
from kafka_emu.loadgen.spec import parse_spec
from kafka_emu.loadgen.target import create_topics, open_target

pytestmark = [pytest.mark.filterwarnings("ignore:.*does not yet fully support pandas.*:FutureWarning"),
              pytest.mark.timeout(180)]

SPEC = {
    "seed": 2,
    "topics": [{"name": "ramp", "partitions": 3, "replication_factor": 3}],
    "producers": [{"name": "w", "topics": ["ramp"], "rate": 1, "instances": 2, "size": 100, "batching": "throughput"}],
    "groups": [{"group_id": "ramp-app", "topics": ["ramp"], "members": 1}],
    # limits loose enough that a loaded 2-core machine still runs both steps
    "ramp": {"start_rate": 100, "step_rate": 100, "max_rate": 200, "step_s": 3,
             "limits": {"p99_ms": 20000, "error_rate": 0.5, "lag_growth_s": None}},
}




def test_ramp_steps_up_and_reports_each_step(spark, tmp_path, in_log):
    spec = parse_spec(SPEC)
    with open_target(None) as target:
        create_topics(target.bootstrap, spec.topics, 3)
        summary = run_ramp(spark, spec, target.bootstrap, tmp_path, {"run_id": "ramp-test"}, target.metrics_url,
                           show_progress=False)
        held = in_log(target.bootstrap, "ramp", 3)
    steps = summary["ramp"]["steps"]
    assert [s["offered_rate"] for s in steps] == [100, 200]
    assert sum(s["acked"] for s in steps) == held
    for s in steps:
        assert s["failed"] == 0 and s["attempted"] == pytest.approx(s["offered_rate"] * 3, abs=20)
        assert s["members_per_group"] == {"ramp-app": 1}
        if target.metrics_url:
            assert 0.0 <= s["cluster"]["request_handler_idle"] <= 1.0
            assert "Produce" in s["cluster"]["purgatory_size"]
    if not any(s["crossed"] for s in steps):
        assert summary["ramp"]["highest_sustained_rate"] == 200
        assert summary["ramp"]["stopped_by"] == ["max_rate reached"]
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["ramp"]["steps"][0]["acked"] == steps[0]["acked"]
    assert "Highest sustained produce rate" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "ramp.png").stat().st_size > 5000 and (tmp_path / "report.html").exists()
