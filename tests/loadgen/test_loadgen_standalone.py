"""``kafka-emu load --master spark://...`` against a real Spark standalone cluster on 127.0.0.1.

A master and two 1-core workers are started from the installed pyspark (``spark-class``), the
load command runs as a user would run it (its own process, its own Spark driver) against an
embedded cluster that lives in this test process, and the report's counts are checked against
the brokers' logs. Every Spark process the test started (master, workers and the executors the
workers launched) must be gone at the end.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kafka_emu.loadgen.standalone import StandaloneCluster
from kafka_emu.loadgen.target import open_target

# 300 s: three Spark daemons, a driver and two executor JVMs start on a 2-core machine; about 200 s
# under a load average of 15, well under that on an idle machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SPEC = {
    "duration_s": 4, "drain_s": 30, "seed": 5,
    "topics": [{"name": "sa", "partitions": 3, "replication_factor": 3}],
    "producers": [{"name": "w", "topics": ["sa"], "rate": 200, "instances": 2, "size": 200}],
    "groups": [{"group_id": "sa-app", "topics": ["sa"], "members": 2, "session_timeout_ms": 3000,
                "heartbeat_interval_ms": 500}],
}


def _processes_under(directory: Path) -> list[int]:
    """Live processes whose working directory is inside ``directory`` (executors run in the worker's work dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd").startswith(str(directory)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_load_from_a_two_worker_standalone_cluster(tmp_path, in_log):
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(SPEC))
    report = tmp_path / "report"
    work = tmp_path / "spark"
    with open_target(None) as target:
        cluster = StandaloneCluster(workers=2, cores_per_worker=1, memory_per_worker="1g", work_dir=work)
        with cluster:
            pids = cluster.pids
            assert len(pids) == 3
            proc = subprocess.run(
                [sys.executable, "-m", "kafka_emu.cli", "load", "--master", cluster.master_url,
                 "--bootstrap-servers", target.bootstrap, "--spec", str(spec_file), "--report-dir", str(report),
                 "--json", "--no-progress", "--spark-conf", "spark.driver.host=127.0.0.1",
                 "--spark-conf", "spark.executor.memory=512m"],
                capture_output=True, text=True, timeout=250)
            assert proc.returncode == 0, proc.stderr[-2000:]
            assert "Using incubator modules" not in proc.stderr   # the JVM's own lines go to spark.log
            held = in_log(target.bootstrap, "sa", 3)
        summary = json.loads(proc.stdout)
    assert summary["run"]["master"] == cluster.master_url
    assert summary["run"]["partitions"] == 2              # one per worker core
    produced = summary["produced"]
    assert 1400 <= produced["attempted"] <= 1800           # 2 x 200/s x 4 s
    assert produced["failed"] == 0 and produced["acked"] == produced["attempted"] == held
    group = summary["consumed"]["sa-app"]
    assert group["missing"] == 0 and group["unique"] == held
    assert (report / "report.html").exists() and (report / "spark.log").exists()
    # Every Spark process this test started is gone, executors included.
    assert [p for p in pids if _alive(p)] == []
    assert [p for p in _processes_under(work) if _alive(p)] == []
