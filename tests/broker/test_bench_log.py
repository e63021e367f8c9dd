"""Smoke test of ``kafka-emu bench log --log-dir`` (small numbers): the persisted log's row is
measured and its directory removed afterwards."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_emu.cli import main


@pytest.mark.timeout(120)
def test_bench_log_with_a_persisted_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "log", "--batches", "300", "--random-reads", "50", "--sustain-seconds", "0.2",
                 "--log-dir", str(tmp_path), "--flush-messages", "100", "--json", "--no-progress"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    persisted = result["persisted"]
    assert persisted["flush_messages"] == 100
    assert persisted["append_batches_per_s"] > 0 and persisted["read_mib_per_s"] > 0
    assert list(tmp_path.iterdir()) == []
