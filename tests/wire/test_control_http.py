"""The test-control HTTP API of ``kafka-emu serve --control-port``, driven with urllib.

Each operation once against a served cluster (with a real client where the effect is on
clients), then the clean 4xx answers to bad requests.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from test_serve import stop
from wire_helpers import unique

pytestmark = pytest.mark.timeout(90)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def call(base: str, method: str, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture(scope="module")
def served() -> Any:
    proc = subprocess.Popen([sys.executable, "-m", "kafka_emu.cli", "serve", "--brokers", "3", "--port", "0",
                             "--control-port", "0", "--time", "offset", "--record-requests", "500",
                             "--set", "group.initial.rebalance.delay.ms=0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    try:
        bootstrap = proc.stdout.readline().strip().split("=", 1)[1]
        control = proc.stdout.readline().strip()
        assert control.startswith("control=http://127.0.0.1:"), control
        yield bootstrap, control.split("=", 1)[1]
    finally:
        stop(proc)


def test_each_operation_over_http(served: Any) -> None:
    bootstrap, base = served
    status, cluster = call(base, "GET", "/v1/cluster")
    assert status == 200 and [b["id"] for b in cluster["brokers"]] == [0, 1, 2]
    assert cluster["time"]["mode"] == "offset"

    # errors: two NOT_LEADER_OR_FOLLOWER on Produce to one topic, retried by the producer
    topic = unique("http")
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "retry.backoff.ms": 10, "client.id": "http-producer"})
    p.list_topics(topic, timeout=10)   # auto-created
    status, answer = call(base, "POST", "/v1/faults/errors",
                          {"api": "Produce", "errors": ["NOT_LEADER_OR_FOLLOWER", 6], "topic": topic})
    assert status == 201 and answer["injection"]["errors"] == ["NOT_LEADER_OR_FOLLOWER"] * 2
    p.produce(topic, b"v", partition=0)
    assert p.flush(20) == 0
    status, recorded = call(base, "GET", "/v1/requests?api=Produce&client_id=http-producer")
    assert status == 200
    codes = [r["response"]["responses"][0]["partition_responses"][0]["error_code"] for r in recorded["requests"]]
    assert codes == [6, 6, 0]
    assert recorded["requests"][0]["fault"] == "error"

    # latency, shown by GET /v1/faults, removed by DELETE /v1/faults
    status, _ = call(base, "POST", "/v1/faults/latency", {"broker": 1, "ms": 50, "api": "Metadata"})
    assert status == 200
    status, faults = call(base, "GET", "/v1/faults")
    assert faults["latency"] == [{"broker": 1, "api": "Metadata", "ms": 50}]
    status, faults = call(base, "DELETE", "/v1/faults")
    assert status == 200 and faults["latency"] == [] and faults["errors"] == []

    # a fixed answer for the next ListGroups (any language's ControlKey)
    status, _ = call(base, "POST", "/v1/faults/responses",
                     {"api": "ListGroups", "response": {"groups": [{"group_id": "made-up", "protocol_type": "consumer"}]}})
    assert status == 201
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(20)
    assert "made-up" in [g.group_id for g in listed.valid]
    assert call(base, "GET", "/v1/faults")[1]["interceptors"] == []   # spent after one answer

    # leaders and coordinators
    status, moved = call(base, "POST", "/v1/leaders", {"topic": topic, "partition": 0, "broker": 2})
    assert status in (200, 409)   # 409 if broker 2 holds no replica of the auto-created topic
    if status == 200:
        assert moved["leader"] == 2
    status, coord = call(base, "POST", "/v1/coordinators", {"group": "g1", "broker": 0})
    assert status == 200 and coord["coordinator"] == 0

    # brokers: isolate / heal / stop / start
    status, b = call(base, "POST", "/v1/brokers/1/isolate")
    assert status == 200 and b["isolated"] is True
    status, b = call(base, "POST", "/v1/brokers/1/heal")
    assert status == 200 and b["isolated"] is False
    status, b = call(base, "POST", "/v1/brokers/2/stop")
    assert status == 200 and b["stopped"] is True
    status, b = call(base, "POST", "/v1/brokers/2/start")
    assert status == 200 and b["stopped"] is False

    # time
    status, before = call(base, "GET", "/v1/time")
    status, after = call(base, "POST", "/v1/time/advance", {"ms": 3_600_000})
    assert status == 200 and after["now_ms"] - before["now_ms"] >= 3_600_000

    # recorded requests can be forgotten
    assert call(base, "DELETE", "/v1/requests") == (200, {"cleared": True})
    status, recorded = call(base, "GET", "/v1/requests?api=Produce")
    assert recorded["requests"] == []
    status, faults = call(base, "GET", "/v1/faults")
    assert faults["counts"]["error_injected"] == 2 and faults["counts"]["time_advanced"] == 1


@pytest.mark.parametrize("method,path,body,status,fragment", [
    ("POST", "/v1/faults/errors", b"{not json", 400, "malformed JSON"),
    ("POST", "/v1/faults/errors", b"[1, 2]", 400, "JSON object"),
    ("POST", "/v1/faults/errors", {"api": "Produse", "errors": ["NONE"]}, 400, "unknown API 'Produse'"),
    ("POST", "/v1/faults/errors", {"api": "Produce", "errors": ["NOT_AN_ERROR"]}, 400, "unknown Kafka error"),
    ("POST", "/v1/faults/errors", {"api": "Produce"}, 400, "missing field 'errors'"),
    ("POST", "/v1/faults/errors", {"api": "Produce", "errors": ["NONE"], "brokr": 1}, 400, "unknown field brokr"),
    ("POST", "/v1/faults/errors", {"api": "Produce", "errors": "NONE"}, 400, "'errors' must be list"),
    ("POST", "/v1/faults/errors", {"api": "Produce", "errors": ["NONE"], "broker": 9}, 404, "unknown broker 9"),
    ("POST", "/v1/faults/latency", {"broker": 9, "ms": 10}, 404, "unknown broker 9"),
    ("POST", "/v1/faults/latency", {"broker": 0, "ms": -1}, 400, ">= 0"),
    ("POST", "/v1/faults/responses", {"api": "ListGroups", "response": {"groupz": []}}, 400, "has no field groupz"),
    ("POST", "/v1/brokers/9/isolate", None, 404, "unknown broker 9"),
    ("POST", "/v1/brokers/0/explode", None, 404, "no such path"),
    ("GET", "/v1/faults/errors", None, 405, "use POST"),
    ("GET", "/v1/brokers/0/stop", None, 405, "use POST"),
    ("POST", "/v1/leaders", {"topic": "no-such-topic", "partition": 0, "broker": 0}, 409, "unknown partition"),
    ("POST", "/v1/time/advance", {"ms": -5}, 400, "forward"),
    ("POST", "/v1/time/advance", {"ms": "soon"}, 400, "'ms' must be int or float"),
    ("GET", "/v1/requests?broker=x", None, 400, "integers"),
    ("GET", "/v2/anything", None, 404, "no such path"),
])
def test_bad_requests_get_clean_4xx(served: Any, method: str, path: str, body: Any, status: int,
                                    fragment: str) -> None:
    _, base = served
    raw = body if isinstance(body, bytes) else None
    got_status, answer = call(base, method, path, None if raw is not None else body, raw=raw)
    assert got_status == status, answer
    assert fragment in answer["error"], answer


def test_control_port_taken_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "kafka_emu.cli", "serve", "--brokers", "1", "--port", "0",
                               "--control-port", str(port)], capture_output=True, text=True, cwd=ROOT,
                              timeout=60)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if f"control port {port} is already in use" in line]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
