"""User-fixable failures of ``kafka-emu load`` end with one line on stderr and a distinct exit code."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)


def _load(args: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_emu.cli", "load", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=50)


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_invalid_spec(tmp_path):
    spec = tmp_path / "w.yaml"
    spec.write_text("duration_s: -1\nproducers: [{name: p, topics: [x], rate: 5}]\n")
    result = _load(["--spec", str(spec)])
    assert result.returncode == 2
    line = _one_line(result.stderr)
    assert "duration_s: must be > 0" in line and "topic 'x' is not declared" in line


def test_unreachable_cluster():
    result = _load(["--bootstrap-servers", "127.0.0.1:1", "--duration", "5", "--connect-timeout", "1"])
    assert result.returncode == 4
    assert "cannot reach a Kafka cluster at 127.0.0.1:1" in _one_line(result.stderr)


def test_avro_producer_against_an_external_cluster_needs_the_registry_url(tmp_path):
    spec = tmp_path / "w.yaml"
    spec.write_text("topics: [{name: t}]\nproducers: [{name: p, topics: [t], serializer: avro}]\n")
    result = _load(["--spec", str(spec), "--bootstrap-servers", "127.0.0.1:1"])
    assert result.returncode == 2
    assert _one_line(result.stderr) == (
        "kafka-emu load: invalid workload spec: producers[0].serializer: avro against an external cluster "
        "(--bootstrap-servers) needs the registry's URL in the spec's schema_registry_url")


def test_java_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)   # no java (and nothing else) on the PATH
    result = _load(["--duration", "5"], env=env)
    assert result.returncode == 3
    assert "Java was not found" in _one_line(result.stderr)


@pytest.mark.parametrize("args, message", [
    (["--ramp", "100,x,300"], "invalid --ramp '100,x,300': expected START,STEP,MAX"),
    (["--ramp", "500,100,300"], "ramp.max_rate: is below start_rate"),
    (["--spark-conf", "spark.executor.cores"], "--spark-conf expects KEY=VALUE"),
])
def test_bad_ramp_and_spark_options(args, message):
    result = _load(["--duration", "5", *args])
    assert result.returncode == 2
    assert message in _one_line(result.stderr)
