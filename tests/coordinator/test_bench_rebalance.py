"""Smoke test of ``kafka-emu bench rebalance`` (small N, short heartbeat phase)."""
from __future__ import annotations

import json

import pytest

from kafka_emu.cli import main


@pytest.mark.timeout(60)
def test_bench_json_prints_one_object(capsys) -> None:
    assert main(["bench", "rebalance", "--members", "10", "50", "--heartbeat-seconds", "0.05", "--json",
                 "--confluent-members", "0",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    result = json.loads(out[0])
    assert [r["members"] for r in result["results"]] == [10, 50]
    for r in result["results"]:
        assert r["emulator"]["heartbeat"]["errors"] == 0 and r["naive"]["heartbeat"]["errors"] == 0
        assert r["ratio_join_sync_wall"] > 0 and r["ratio_heartbeat_rate"] > 0
        assert r["under_2s"]
        assert r["consumer_protocol"]["members"] == r["members"] and r["consumer_protocol"]["group_epoch"] >= 1
