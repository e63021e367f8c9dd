"""The benchmarks start, finish and print one JSON object with the documented keys.

Tiny sizes only: speed is measured by running the benchmarks, never by tests.
"""
from __future__ import annotations

import json

import pytest

from kafka_emu.cli import main


def _run_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1, "exactly one line of JSON on stdout"
    return json.loads(out)


@pytest.mark.timeout(60)
def test_bench_timer_json(capsys) -> None:
    result = _run_json(capsys, ["bench", "timer", "--json", "--no-progress", "--tasks", "3000",
                                "--outstanding", "100", "--fire-tasks", "300",
                                "--max-delay-ms", "50"])
    a, b = result["add_cancel"], result["firing"]
    for side in ("wheel", "naive"):
        assert {"rate_per_s", "retained_entries", "rss_delta_mib"} <= a[side].keys()
        assert {"add_rate_per_s", "lateness_ms_p50", "lateness_ms_p99", "lateness_ms_max",
                "early_firings", "fired"} <= b[side].keys()
        assert b[side]["fired"] == 300 and b[side]["early_firings"] == 0
    assert a["wheel"]["retained_entries"] == 100  # bounded by the outstanding tasks
    assert a["naive"]["retained_entries"] == 3000  # keeps every cancelled entry
    assert {"rate_ratio", "passed"} <= a.keys() and "add_rate_ratio" in b
    assert isinstance(result["passed"], bool)


@pytest.mark.timeout(60)
def test_bench_purgatory_json(capsys) -> None:
    result = _run_json(capsys, ["bench", "purgatory", "--json", "--no-progress", "--num", "2000",
                                "--rate", "5000", "--timeout", "50", "--pct75", "20",
                                "--pct50", "5"])
    for side in ("wheel", "naive"):
        r = result[side]
        assert {"elapsed_ms", "target_rate", "actual_rate", "cpu_ms", "all_completed",
                "memory_samples", "rss_growth_after_warmup_mib"} <= r.keys()
        assert r["all_completed"]
    assert {"actual_rate_ratio", "cpu_ratio", "sustained", "peak_rss_mib",
            "latency_samples_ms", "interval_samples"} <= result.keys()
