"""``kafka-emu bench transactions`` runs both shapes and its comparator and prints one JSON object."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(90)


def test_bench_transactions_prints_one_json_object():
    out = subprocess.run([sys.executable, "-m", "kafka_emu.cli", "bench", "transactions", "--seconds", "1.5",
                          "--warmup", "0.3", "--producers", "2", "--partitions", "3", "--json"],
                         capture_output=True, text=True, timeout=80)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result["shapes"]) == {"one_partition", "3_partitions"}
    for shape in result["shapes"].values():
        txn, idem = shape["transactional"], shape["idempotent"]
        assert txn["rounds"] > 0 and idem["rounds"] > 0
        assert txn["commit_ms_p99"] >= txn["commit_ms_p50"] > 0
        assert shape["transactional_over_idempotent_records"] > 0
