"""The control HTTP API is not left open: a non-loopback bind needs a token (serve: one line,
exit 2), and with a token every request must carry it as a bearer token."""
from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kafka_emu.broker.cluster.control.control_http import ControlTokenRequired, ControlHTTPServer, serve_control
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[2]


def test_serve_refuses_a_public_control_host_without_a_token() -> None:
    result = subprocess.run([sys.executable, "-m", "kafka_emu.cli", "serve", "--brokers", "1", "--port", "0",
                             "--control-port", "0", "--control-host", "0.0.0.0"],
                            capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "kafka-emu: --control-host 0.0.0.0 is not a loopback address: the control API lets whoever reaches it "
        "stop brokers, so it needs --control-token"]


def test_bearer_token_required_when_given() -> None:
    with EmbeddedCluster(brokers=1, config={"listeners": ""}, offsets_topic=False) as cluster:
        with pytest.raises(ControlTokenRequired):
            ControlHTTPServer(cluster, 0, "0.0.0.0")
        server = serve_control(cluster, 0, "127.0.0.1", token="s3cret")
        try:
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(f"{server.url}/v1/cluster", timeout=10)
            assert info.value.code == 401
            wrong = urllib.request.Request(f"{server.url}/v1/cluster", headers={"Authorization": "Bearer nope"})
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(wrong, timeout=10)
            right = urllib.request.Request(f"{server.url}/v1/cluster", headers={"Authorization": "Bearer s3cret"})
            assert urllib.request.urlopen(right, timeout=10).status == 200
        finally:
            server.close()
