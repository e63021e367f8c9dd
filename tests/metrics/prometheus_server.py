"""A real Prometheus server for tests: started in a temp dir, queried over its HTTP API.

The binary comes from Debian's ``prometheus`` package (scripts/test.sh installs it). Outside CI
a missing binary skips the test with the reason; with ``CI=true`` it fails, so CI can never go
green without having scraped anything.

Waiting is by polling with a deadline: the server is ready when ``/-/ready`` answers 200, and a
query is retried every 100 ms until its result satisfies the test's predicate.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

SCRAPE_INTERVAL = "500ms"  # Prometheus accepts sub-second intervals; 1 s would double test time


def prometheus_binary() -> str:
    """Path of the prometheus binary, or skip (fail in CI) with the reason."""
    path = shutil.which("prometheus") or next(
        (p for p in ("/usr/bin/prometheus", "/usr/local/bin/prometheus") if os.access(p, os.X_OK)), None)
    if path is None:
        reason = "prometheus binary not installed: apt-get install prometheus (scripts/test.sh does)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason=reason)
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """One prometheus process scraping ``targets`` (host:port) every ``SCRAPE_INTERVAL``."""

    def __init__(self, binary: str, workdir: Path, targets: list[str]) -> None:
        self.binary = binary
        self.workdir = workdir
        self.targets = targets
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> "PrometheusServer":
        config = self.workdir / "prometheus.yml"
        # JSON is valid YAML, so no YAML writer is needed.
        config.write_text(json.dumps({
            "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL,
                       "evaluation_interval": SCRAPE_INTERVAL},
            "scrape_configs": [{"job_name": "kafka-emu", "metrics_path": "/metrics",
                                "static_configs": [{"targets": self.targets}]}],
        }))
        for attempt in range(3):  # the free port may be taken between probe and bind
            self.port = _free_port()
            log = open(self._log_path, "ab")
            self._process = subprocess.Popen(
                [self.binary, f"--config.file={config}", f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
                 "--storage.tsdb.retention.time=1h"],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
            log.close()
            if self._wait_ready(timeout_s):
                return self
            self.stop()
        raise AssertionError(f"prometheus did not become ready; log:\n{self.log_tail()}")

    def _wait_ready(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; the ``result`` vector (each item has ``metric`` and ``value``)."""
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as response:
            payload = json.load(response)
        assert payload["status"] == "success", payload
        return payload["data"]["result"]

    def values(self, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
        """Query result as {sorted label items (without __name__): value}."""
        out = {}
        for item in self.query(expr):
            labels = tuple(sorted((k, v) for k, v in item["metric"].items() if k != "__name__"))
            out[labels] = float(item["value"][1])
        return out

    def wait_for(self, expr: str, predicate: Callable[[list[float]], bool], timeout_s: float = 30.0,
                 what: str = "") -> list[float]:
        """Poll ``expr`` until ``predicate(values)`` holds; returns the values."""
        deadline = time.monotonic() + timeout_s
        values: list[float] = []
        while True:
            values = sorted(self.values(expr).values())
            if predicate(values):
                return values
            if time.monotonic() > deadline:
                targets = self.query_targets()
                raise AssertionError(f"timed out waiting for {what or expr}: last values {values}; "
                                     f"targets {targets}; prometheus log:\n{self.log_tail(10)}")
            time.sleep(0.1)

    def query_targets(self) -> list[dict[str, Any]]:
        try:
            with urllib.request.urlopen(self.url + "/api/v1/targets", timeout=5) as response:
                active = json.load(response)["data"]["activeTargets"]
            return [{k: t.get(k) for k in ("scrapeUrl", "health", "lastError")} for t in active]
        except Exception as exc:  # noqa: BLE001 - diagnostics only
            return [{"error": repr(exc)}]

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
