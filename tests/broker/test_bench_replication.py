import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)


def test_bench_prints_one_json_object():
    out = subprocess.run([sys.executable, "-m", "kafka_emu.cli", "bench", "replication", "--seconds", "0.3",
                          "--warmup", "0.1", "--json"], capture_output=True, text=True, timeout=50)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for mode in ("acks_all", "acks_1"):
        r = result["modes"][mode]
        assert r["batches"] > 0 and r["errors"] == 0 and r["latency_ms_p99"] >= r["latency_ms_p50"]
    assert "met" in result["target"]
