"""``kafka-emu bench registry``: the embedded schema registry against a plain dict-backed HTTP server.

Two rates on one keep-alive HTTP/1.1 connection, from a client in a ``spawn`` child (so it does
not share the measured server's interpreter lock):

* lookups by id (``GET /schemas/ids/{id}``, the deserializer's hot call), target >= 5,000/s;
* registrations (``POST /subjects/{s}/versions`` of a new Avro schema under compatibility NONE:
  parse, canonical form, one acks=-1 record to ``_schemas`` on a 3-broker cluster), target >= 500/s.

The comparator is ``http.server.ThreadingHTTPServer`` answering the same two paths from a dict
(no parsing, no log), run in the same invocation; the ratio (registry over comparator) says
what the registry's work and its Kafka write cost beyond serving HTTP in Python.
"""
from __future__ import annotations

import argparse
import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kafka_emu.bench.bench_util import child_result, emit

TARGET_LOOKUPS, TARGET_REGISTRATIONS = 5000, 500


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import positive_int

    parser.add_argument("--lookups", type=positive_int, default=20_000, help="lookups by id to time")
    parser.add_argument("--registrations", type=positive_int, default=2_000, help="schemas to register")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def _schema(i: int) -> str:
    return json.dumps({"type": "record", "name": "r", "fields": [{"name": f"f{i}", "type": "int", "default": 0}]})


def _client(port: int, lookups: int, registrations: int, out: Any) -> None:
    """In the child: time registrations, then lookups of the registered ids, on one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
    ids = []
    started = time.perf_counter()
    for i in range(registrations):
        conn.request("POST", "/subjects/bench/versions", body=json.dumps({"schema": _schema(i)}), headers=headers)
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            out.put({"error": f"registration {i}: {response.status} {body[:200]!r}"})
            return
        ids.append(json.loads(body)["id"])
    register_s = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(lookups):
        conn.request("GET", f"/schemas/ids/{ids[i % len(ids)]}")
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            out.put({"error": f"lookup {i}: {response.status}"})
            return
    lookup_s = time.perf_counter() - started
    out.put({"registrations_per_s": round(registrations / register_s, 1), "lookups_per_s": round(lookups / lookup_s, 1)})


class _DictServer:
    """The comparator: a dict of id -> schema behind http.server, the same two paths."""

    def __init__(self) -> None:
        schemas: dict[int, str] = {}
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True   # as the registry server (TCP_NODELAY), or each answer waits 40 ms

            def _answer(self, payload: Any, status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                schema = schemas.get(int(self.path.rsplit("/", 1)[-1]))
                self._answer({"schema": schema} if schema else {"error_code": 40403}, 200 if schema else 404)

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    schema_id = len(schemas) + 1
                    schemas[schema_id] = body["schema"]
                self._answer({"id": schema_id})

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="bench-dict-http", daemon=True)

    def __enter__(self) -> "_DictServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


def _measure(port: int, args: argparse.Namespace, name: str) -> dict[str, Any]:
    result = child_result(_client, (port, args.lookups, args.registrations), name, timeout_s=600)
    if "error" in result:
        raise RuntimeError(f"{name}: {result['error']}")
    return result


def run(args: argparse.Namespace) -> int:
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    with EmbeddedCluster(brokers=3, schema_registry_port=0) as cluster:
        cluster.schema_registry.registry.set_config(None, {"compatibility": "NONE"})
        registry = _measure(cluster.schema_registry.port, args, "bench-registry-client")
    with _DictServer() as server:
        plain = _measure(server.port, args, "bench-dict-client")
    result = {"registry": registry, "dict_http": plain,
              "lookup_ratio": round(registry["lookups_per_s"] / plain["lookups_per_s"], 3),
              "registration_ratio": round(registry["registrations_per_s"] / plain["registrations_per_s"], 3),
              "targets": {"lookups_per_s": TARGET_LOOKUPS, "registrations_per_s": TARGET_REGISTRATIONS}}
    table = [("", "lookups/s", "registrations/s"),
             ("registry", f"{registry['lookups_per_s']:.0f}", f"{registry['registrations_per_s']:.0f}"),
             ("dict HTTP", f"{plain['lookups_per_s']:.0f}", f"{plain['registrations_per_s']:.0f}"),
             ("ratio", f"{result['lookup_ratio']:.2f}", f"{result['registration_ratio']:.2f}"),
             ("target", str(TARGET_LOOKUPS), str(TARGET_REGISTRATIONS))]
    emit(result, args.json, table)
    met = registry["lookups_per_s"] >= TARGET_LOOKUPS and registry["registrations_per_s"] >= TARGET_REGISTRATIONS
    return 0 if met else 1
