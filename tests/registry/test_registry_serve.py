"""``kafka-emu serve --schema-registry-port``: the registry starts with the brokers, prints its URL,
and its series are on the cluster's /metrics; a busy registry port is one line and exit 2."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from registry_support import Rest, avro_record

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "kafka_emu.cli", "serve", "--brokers", "1", "--port", "0"]


def test_serve_runs_the_registry_with_its_metrics() -> None:
    proc = subprocess.Popen([*SERVE, "--schema-registry-port", "0", "--metrics-port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        printed = dict(proc.stdout.readline().strip().split("=", 1) for _ in range(3))
        assert set(printed) == {"bootstrap.servers", "schema.registry.url", "metrics"}, printed
        rest = Rest(printed["schema.registry.url"])
        assert rest.register("orders-value", avro_record({"name": "a", "type": "int"}))[0] == 200
        text = urllib.request.urlopen(printed["metrics"], timeout=10).read().decode()
        assert ('kafka_emu_schema_registry_requests_total{endpoint="/subjects/{subject}/versions",'
                'method="POST",status="200"} 1.0') in text
        assert "kafka_emu_schema_registry_subjects 1.0" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err


def test_busy_registry_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        result = subprocess.run([*SERVE, "--schema-registry-port", str(busy)], cwd=ROOT, capture_output=True,
                                text=True, timeout=30)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"kafka-emu: schema registry port {busy} is already in use"
    assert "Traceback" not in result.stderr
