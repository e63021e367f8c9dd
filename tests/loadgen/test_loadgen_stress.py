"""Short runs of the stress commands, through the CLI, asserting their verdicts."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_emu.cli import main


def _verdict(capsys, argv: list[str]) -> tuple[int, dict]:
    code = main(argv + ["--json", "--no-progress"])
    out = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(out[-1])


def _checks(verdict: dict) -> dict[str, dict]:
    return {c["name"]: c for c in verdict["checks"]}


@pytest.mark.timeout(30)
def test_purgatory_stress_completes_every_operation_exactly_once(capsys):
    code, verdict = _verdict(capsys, ["stress", "purgatory", "--count", "20000", "--threads", "8", "--keys", "4"])
    assert code == 0 and verdict["passed"]
    checks = _checks(verdict)
    assert checks["operations created"]["observed"] == 20000
    assert checks["never completed"]["observed"] == 0 and checks["completed more than once"]["observed"] == 0
    assert verdict["stats"]["expired"] > 0          # the timeout path raced too
    assert verdict["stats"]["triggers"] > 0


@pytest.mark.timeout(90)
def test_replication_stress_loses_no_acknowledged_message(capsys):
    code, verdict = _verdict(capsys, ["stress", "replication", "--count", "2", "--down", "0.5", "--up", "0.5",
                                      "--rate", "300"])
    checks = _checks(verdict)
    assert checks["broker stop/start rounds"]["passed"], verdict
    assert checks["messages acknowledged"]["observed"] > 300
    assert checks["acknowledged but lost"]["observed"] == 0, verdict
    assert code == 0 and verdict["passed"], verdict


@pytest.mark.timeout(120)
def test_rebalance_stress_always_reaches_stable_and_offsets_never_go_back(capsys):
    code, verdict = _verdict(capsys, ["stress", "rebalance", "--count", "2", "--members", "3", "--partitions", "6",
                                      "--session-timeout-ms", "1000"])
    checks = _checks(verdict)
    assert checks["rounds that reached Stable"]["observed"] == "3/3", verdict
    assert checks["committed offsets that went backwards"]["observed"] == 0, verdict
    assert verdict["stats"]["crashed"] >= 1
    assert code == 0 and verdict["passed"], verdict


@pytest.mark.timeout(5)
def test_a_failed_check_fails_the_verdict_and_the_exit_code(capsys):
    from kafka_emu.loadgen.verdict import Verdict

    v = Verdict("demo")
    v.check("fine", 0, "0", True)
    v.check("lost", 3, "0", False)
    assert not v.passed
    assert v.emit(as_json=False) == 1
    table = capsys.readouterr().out
    assert "demo: FAIL" in table and "| lost" in table and "FAIL" in table.splitlines()[-2]
    assert not Verdict("empty").passed   # no checks is not a pass


@pytest.mark.timeout(90)
def test_overload_stress_keeps_rss_within_its_bounds():
    """A short ``stress overload``: both phases run, every check passes (RSS within retained +
    overhead flat out, within retained + pools + overhead under the flood, the canary served).
    In a process of its own, as the command runs: the bound is on the whole resident set, which
    in this one holds what earlier tests left."""
    run = subprocess.run([sys.executable, "-m", "kafka_emu.cli", "stress", "overload", "--duration", "3",
                          "--producers", "1", "--flood-seconds", "3", "--flood-connections", "8", "--json",
                          "--no-progress"], capture_output=True, text=True, timeout=80)
    code, verdict = run.returncode, json.loads(run.stdout.strip().splitlines()[-1])
    checks = _checks(verdict)
    assert checks["phase 1 records acknowledged"]["observed"] > 0, verdict
    assert checks["phase 2 flood requests answered"]["observed"] > 0, verdict
    assert code == 0 and verdict["passed"], verdict
