"""The registry's REST API v1 (Confluent's resources) on a thread-pool HTTP/1.1 server.

Routes, parameters and answers follow Confluent's ``SubjectsResource``,
``SubjectVersionsResource``, ``SchemasResource``, ``ConfigResource``, ``ModeResource``,
``CompatibilityResource`` and ``RootResource``. Errors are Confluent's ``ErrorMessage`` JSON
(``errors.RestError``); what Jersey answers before a resource runs is answered the same way:
an unknown path 404 and a method a path does not take 405 (``{"error_code": 404, "message":
"HTTP 404 Not Found"}``), a body whose Content-Type is not one the resources consume 415, a
body that is not JSON 400 (rest-utils' ``JsonParseExceptionMapper``), a body over
``MAX_BODY_BYTES`` 413.

Server: one acceptor thread (``schema-registry-acceptor-<port>``) hands each accepted
connection to a fixed pool of worker threads (``schema-registry-request-<port>-<i>``) through a
queue; a worker serves its connection's requests in order (HTTP/1.1 keep-alive, as the
clients' connection pools expect) until the client closes it, asks to, or it stays idle for
``IDLE_TIMEOUT_S``, then takes the next one. The request parser is a few lines over the
socket's buffered reader (request line, headers, Content-Length or chunked body), not
``http.server``, whose header parsing costs more than a registry lookup. ``close()`` closes the
listener, wakes every worker (its connection shut down) and joins every thread; each logs its
death.

Around each request: the test control's registry faults (``ClusterControl.registry_fault``:
an injected error status or a latency, see docs/testing-failure.md), the per-endpoint counts
the metrics read (``RequestCounts``, in ``snapshot()``), and a debug event ``schema_registry_request`` under
``logsetup.request_context`` (``request`` is ``SchemaRegistry <METHOD> <endpoint>``,
``client_id`` the client's ``User-Agent``).

Locking: ``_lock`` guards the open connections set and the request counters.
"""
from __future__ import annotations

import itertools
import json
import queue
import re
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import parse_qs, unquote

import structlog

from kafka_emu.broker.cluster.schema_registry import errors
from kafka_emu.broker.cluster.schema_registry.errors import RestError
from kafka_emu.broker.cluster.schema_registry.registry import RegistrySnapshot, SchemaRegistry
from kafka_emu.broker.cluster.schema_registry.schema_types import SCHEMA_TYPES
from kafka_emu.logsetup import request_context

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.control import ClusterControl

_log = structlog.get_logger("broker.schema_registry.rest")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
# what the resources @Consume (Versions.SCHEMA_REGISTRY_V1_JSON, SCHEMA_REGISTRY_DEFAULT_JSON,
# JSON, GENERIC_REQUEST)
CONSUMED_TYPES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                  "application/json", "application/octet-stream")
MAX_BODY_BYTES = 16 << 20
MAX_HEADER_LINE = 64 << 10
IDLE_TIMEOUT_S = 30.0
DEFAULT_THREADS = 8
_STATUS_TEXT = {200: "OK", 204: "No Content", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                409: "Conflict", 411: "Length Required", 413: "Payload Too Large", 415: "Unsupported Media Type",
                422: "Unprocessable Entity", 500: "Internal Server Error", 502: "Bad Gateway",
                503: "Service Unavailable", 504: "Gateway Timeout"}


def _jersey(status: int) -> RestError:
    """An error Jersey raises before any resource runs (Confluent maps it to the same JSON)."""
    return RestError(status, status, f"HTTP {status} {_STATUS_TEXT.get(status, '')}".rstrip())


@dataclass
class Call:
    """One parsed request as the resources see it."""

    method: str
    params: list[str]
    query: dict[str, str]
    body: Any

    def flag(self, name: str) -> bool:
        """A boolean query parameter as Jersey reads it (``true`` in any case; else false)."""
        return self.query.get(name, "").lower() == "true"


@dataclass(frozen=True)
class Route:
    method: str
    endpoint: str            # the template, the metrics' and logs' label
    pattern: re.Pattern[str]
    handler: Callable[[Call], Any]
    takes_body: bool = False


@dataclass(frozen=True)
class LoggedCall:
    """What ``logsetup.request_context`` reads of a registry request."""

    api_name: str
    api_version: int
    correlation_id: int
    client_id: str | None


class RequestCounts:
    """Requests answered, by (method, endpoint, status), and their total seconds, for metrics."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.seconds: Counter[tuple[str, str]] = Counter()

    def add(self, method: str, endpoint: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(method, endpoint, status)] += 1
            self.seconds[(method, endpoint)] += seconds

    def snapshot(self) -> tuple[dict[tuple[str, str, int], int], dict[tuple[str, str], float]]:
        with self._lock:
            return dict(self.requests), dict(self.seconds)


@dataclass(frozen=True)
class SchemaRegistrySnapshot:
    """What the metrics read of a running registry (``metrics.sources.SchemaRegistrySnapshotView``)."""

    requests: Mapping[tuple[str, str, int], int]       # (method, endpoint, status) -> requests answered
    request_seconds: Mapping[tuple[str, str], float]   # (method, endpoint) -> seconds spent answering
    contents: RegistrySnapshot


class SchemaRegistryResources:
    """The REST resources: each handler takes a ``Call`` and returns the JSON answer."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry
        seg = r"([^/]+)"
        table: list[tuple[str, str, str, Callable[[Call], Any], bool]] = [
            ("GET", "/", "", self.root, False),
            ("GET", "/schemas/types", "/schemas/types", self.types, False),
            ("GET", "/schemas/ids/{id}", f"/schemas/ids/{seg}", self.schema_by_id, False),
            ("GET", "/schemas/ids/{id}/schema", f"/schemas/ids/{seg}/schema", self.raw_schema_by_id, False),
            ("GET", "/schemas/ids/{id}/subjects", f"/schemas/ids/{seg}/subjects", self.subjects_by_id, False),
            ("GET", "/schemas/ids/{id}/versions", f"/schemas/ids/{seg}/versions", self.versions_by_id, False),
            ("GET", "/subjects", "/subjects", self.list_subjects, False),
            ("POST", "/subjects/{subject}", f"/subjects/{seg}", self.lookup, True),
            ("DELETE", "/subjects/{subject}", f"/subjects/{seg}", self.delete_subject, False),
            ("GET", "/subjects/{subject}/versions", f"/subjects/{seg}/versions", self.list_versions, False),
            ("POST", "/subjects/{subject}/versions", f"/subjects/{seg}/versions", self.register, True),
            ("GET", "/subjects/{subject}/versions/{version}", f"/subjects/{seg}/versions/{seg}",
             self.get_version, False),
            ("DELETE", "/subjects/{subject}/versions/{version}", f"/subjects/{seg}/versions/{seg}",
             self.delete_version, False),
            ("GET", "/subjects/{subject}/versions/{version}/schema", f"/subjects/{seg}/versions/{seg}/schema",
             self.raw_version, False),
            ("GET", "/subjects/{subject}/versions/{version}/referencedby",
             f"/subjects/{seg}/versions/{seg}/referencedby", self.referenced_by, False),
            ("GET", "/config", "/config", self.get_config, False),
            ("PUT", "/config", "/config", self.set_config, True),
            ("DELETE", "/config", "/config", self.delete_config, False),
            ("GET", "/config/{subject}", f"/config/{seg}", self.get_config, False),
            ("PUT", "/config/{subject}", f"/config/{seg}", self.set_config, True),
            ("DELETE", "/config/{subject}", f"/config/{seg}", self.delete_config, False),
            ("GET", "/mode", "/mode", self.get_mode, False),
            ("PUT", "/mode", "/mode", self.set_mode, True),
            ("DELETE", "/mode", "/mode", self.delete_mode, False),
            ("GET", "/mode/{subject}", f"/mode/{seg}", self.get_mode, False),
            ("PUT", "/mode/{subject}", f"/mode/{seg}", self.set_mode, True),
            ("DELETE", "/mode/{subject}", f"/mode/{seg}", self.delete_mode, False),
            ("POST", "/compatibility/subjects/{subject}/versions/{version}",
             f"/compatibility/subjects/{seg}/versions/{seg}", self.compatibility, True),
            ("POST", "/compatibility/subjects/{subject}/versions", f"/compatibility/subjects/{seg}/versions",
             self.compatibility, True),
        ]
        self.routes = [Route(method, endpoint, re.compile(f"^{regex}/?$"), fn, body)
                       for method, endpoint, regex, fn, body in table]

    def route(self, method: str, path: str) -> tuple[Route, list[str]]:
        """The route of ``path`` and its decoded parameters; 404 or 405 as Jersey answers."""
        allowed = False
        for route in self.routes:
            m = route.pattern.match(path)
            if m is None:
                continue
            if route.method == method:
                return route, [unquote(p) for p in m.groups()]
            allowed = True
        raise _jersey(405 if allowed else 404)

    # ------------------------------------------------------------------ root and schemas
    def root(self, call: Call) -> Any:
        return {}

    def types(self, call: Call) -> Any:
        return list(SCHEMA_TYPES)

    @staticmethod
    def _id(call: Call) -> int:
        try:
            return int(call.params[0])
        except ValueError:
            raise _jersey(404) from None   # Jersey cannot convert the path parameter

    def schema_by_id(self, call: Call) -> Any:
        value = self.registry.schema_by_id(self._id(call))
        out: dict[str, Any] = {"schemaType": value.schema_type}
        if value.references:
            out["references"] = [r.to_json() for r in value.references]
        out["schema"] = self.registry.formatted(value, call.query.get("format", ""))
        if call.flag("fetchMaxId"):
            out["maxId"] = self.registry.max_id
        return out

    def raw_schema_by_id(self, call: Call) -> Any:
        value = self.registry.schema_by_id(self._id(call))
        return RawBody(self.registry.formatted(value, call.query.get("format", "")))

    def subjects_by_id(self, call: Call) -> Any:
        pairs = self.registry.subject_versions_by_id(self._id(call), call.flag("deleted"))
        return sorted({subject for subject, _ in pairs})

    def versions_by_id(self, call: Call) -> Any:
        pairs = self.registry.subject_versions_by_id(self._id(call), call.flag("deleted"))
        return [{"subject": subject, "version": version} for subject, version in pairs]

    # ------------------------------------------------------------------ subjects
    def list_subjects(self, call: Call) -> Any:
        return self.registry.list_subjects(call.flag("deleted"), call.flag("deletedOnly"),
                                           call.query.get("subjectPrefix", ""))

    def lookup(self, call: Call) -> Any:
        return self.registry.lookup(call.params[0], call.body, call.flag("normalize"), call.flag("deleted"))

    def delete_subject(self, call: Call) -> Any:
        return self.registry.delete_subject(call.params[0], call.flag("permanent"))

    def list_versions(self, call: Call) -> Any:
        return self.registry.list_versions(call.params[0], call.flag("deleted"), call.flag("deletedOnly"))

    def register(self, call: Call) -> Any:
        return self.registry.register(call.params[0], call.body, call.flag("normalize"))

    def get_version(self, call: Call) -> Any:
        value = self.registry.get_version(call.params[0], call.params[1], call.flag("deleted"))
        entity = value.entity()
        fmt = call.query.get("format", "")
        if fmt:
            entity["schema"] = self.registry.formatted(value, fmt)
        return entity

    def raw_version(self, call: Call) -> Any:
        value = self.registry.get_version(call.params[0], call.params[1], call.flag("deleted"))
        return RawBody(self.registry.formatted(value, call.query.get("format", "")))

    def delete_version(self, call: Call) -> Any:
        return self.registry.delete_version(call.params[0], call.params[1], call.flag("permanent"))

    def referenced_by(self, call: Call) -> Any:
        return self.registry.referenced_by(call.params[0], call.params[1])

    # ------------------------------------------------------------------ config, mode, compatibility
    @staticmethod
    def _subject(call: Call) -> str | None:
        return call.params[0] if call.params else None

    def get_config(self, call: Call) -> Any:
        return self.registry.get_config(self._subject(call), call.flag("defaultToGlobal"))

    def set_config(self, call: Call) -> Any:
        return self.registry.set_config(self._subject(call), call.body)

    def delete_config(self, call: Call) -> Any:
        return self.registry.delete_config(self._subject(call))

    def get_mode(self, call: Call) -> Any:
        return {"mode": self.registry.get_mode(self._subject(call), call.flag("defaultToGlobal"))}

    def set_mode(self, call: Call) -> Any:
        return {"mode": self.registry.set_mode(self._subject(call), call.body, call.flag("force"))}

    def delete_mode(self, call: Call) -> Any:
        return {"mode": self.registry.delete_mode(self._subject(call))}

    def compatibility(self, call: Call) -> Any:
        version = call.params[1] if len(call.params) > 1 else None
        return self.registry.check_compatibility(call.params[0], version, call.body, call.flag("normalize"),
                                                 call.flag("verbose"))


@dataclass(frozen=True)
class RawBody:
    """An answer sent as it is (the ``/schema`` endpoints return the bare schema string)."""

    text: str


class _ConnectionClosed(Exception):
    pass


class SchemaRegistryServer:
    def __init__(self, registry: SchemaRegistry, port: int = 0, host: str = "127.0.0.1",
                 threads: int = DEFAULT_THREADS, control: "ClusterControl | None" = None) -> None:
        self.registry = registry
        self.resources = SchemaRegistryResources(registry)
        self.control = control
        self.counts = RequestCounts()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._queue: queue.SimpleQueue[socket.socket | None] = queue.SimpleQueue()
        self._closed = threading.Event()
        self._correlation = itertools.count(1)
        self._listener = socket.create_server((host, port), backlog=128)
        self.host = host
        self.port = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"schema-registry-acceptor-{self.port}",
                                          daemon=True)
        self._workers = [threading.Thread(target=self._worker_loop, name=f"schema-registry-request-{self.port}-{i}",
                                          daemon=True) for i in range(threads)]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def snapshot(self) -> SchemaRegistrySnapshot:
        """Request counts and contents for a scrape (``metrics.schema_registry``)."""
        requests, seconds = self.counts.snapshot()
        return SchemaRegistrySnapshot(requests, seconds, self.registry.snapshot())

    def start(self) -> "SchemaRegistryServer":
        for thread in (self._acceptor, *self._workers):
            thread.start()
        _log.info("schema_registry_started", url=self.url, threads=len(self._workers))
        return self

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            open_connections = list(self._connections)
        for conn in open_connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for _ in self._workers:
            self._queue.put(None)
        for thread in (self._acceptor, *self._workers):
            thread.join(10)
        _log.info("schema_registry_stopped", url=self.url)

    # ------------------------------------------------------------------ threads
    def _accept_loop(self) -> None:
        reason = "closed"
        try:
            while not self._closed.is_set():
                try:
                    conn, _addr = self._listener.accept()
                except OSError:
                    break
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._queue.put(conn)
        except BaseException as exc:  # noqa: BLE001 - logged as the thread's death
            reason = repr(exc)
            raise
        finally:
            _log.info("thread_stopped", thread=threading.current_thread().name, reason=reason)

    def _worker_loop(self) -> None:
        reason = "closed"
        try:
            while True:
                conn = self._queue.get()
                if conn is None:
                    break
                if self._closed.is_set():
                    conn.close()
                    continue
                with self._lock:
                    self._connections.add(conn)
                try:
                    self._serve_connection(conn)
                finally:
                    with self._lock:
                        self._connections.discard(conn)
                    conn.close()
        except BaseException as exc:  # noqa: BLE001 - logged as the thread's death
            reason = repr(exc)
            raise
        finally:
            _log.info("thread_stopped", thread=threading.current_thread().name, reason=reason)

    def _serve_connection(self, conn: socket.socket) -> None:
        conn.settimeout(IDLE_TIMEOUT_S)
        reader = conn.makefile("rb", buffering=65536)
        try:
            while not self._closed.is_set():
                try:
                    keep_alive = self._serve_one(conn, reader)
                except (_ConnectionClosed, OSError, ValueError):
                    return
                if not keep_alive:
                    return
        finally:
            reader.close()

    # ------------------------------------------------------------------ one request
    def _serve_one(self, conn: socket.socket, reader: Any) -> bool:
        line = reader.readline(MAX_HEADER_LINE)
        if not line:
            raise _ConnectionClosed()
        if line in (b"\r\n", b"\n"):   # stray line between requests
            return True
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            self._send(conn, 400, {"error_code": 400, "message": "HTTP 400 Bad Request"}, False)
            return False
        method, target, version = parts
        headers: dict[str, str] = {}
        while True:
            header = reader.readline(MAX_HEADER_LINE)
            if not header:
                raise _ConnectionClosed()
            if header in (b"\r\n", b"\n"):
                break
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        started = time.perf_counter()
        body_error: RestError | None = None
        raw = b""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            raw = self._read_chunked(reader)
        else:
            length = int(headers.get("content-length") or 0)
            if length > MAX_BODY_BYTES:
                body_error = _jersey(413)
                keep_alive = False
            elif length > 0:
                raw = reader.read(length)
                if len(raw) < length:
                    raise _ConnectionClosed()
        path, _, query_text = target.partition("?")
        endpoint = "unknown"
        status, payload = 500, None
        logged = LoggedCall("SchemaRegistry", 1, next(self._correlation), headers.get("user-agent"))
        with request_context(logged):
            try:
                route, params = self.resources.route(method, path)
                endpoint = route.endpoint
                logged = LoggedCall(f"SchemaRegistry {method} {endpoint}", 1, logged.correlation_id,
                                    logged.client_id)
                with request_context(logged):
                    if body_error is not None:
                        raise body_error
                    self._fault(method, endpoint)
                    query = {k: v[-1] for k, v in parse_qs(query_text, keep_blank_values=True).items()}
                    body = self._body(route, headers, raw)
                    status, payload = 200, route.handler(Call(method, params, query, body))
            except RestError as exc:
                status, payload = exc.status, exc.payload
            except Exception as exc:  # noqa: BLE001 - a bug answers 500, the trace goes to the log
                _log.exception("schema_registry_request_failed", method=method, path=path)
                status, payload = 500, {"error_code": 500, "message": f"Internal error: {exc!r}"}
            seconds = time.perf_counter() - started
            self.counts.add(method, endpoint, status, seconds)
            _log.debug("schema_registry_request", method=method, path=path, status=status,
                       ms=round(seconds * 1000, 3))
        self._send(conn, status, payload, keep_alive)
        return keep_alive

    def _fault(self, method: str, endpoint: str) -> None:
        """The test control's latency and injected error for this request, if any."""
        if self.control is None:
            return
        fault = self.control.registry_fault(method, endpoint)
        if fault is None:
            return
        latency_ms, error_code = fault
        if latency_ms:
            time.sleep(latency_ms / 1000)
        if error_code is not None:
            raise RestError(errors.status_of(error_code), error_code,
                            f"Injected by kafka-emu test control (error {error_code})")

    @staticmethod
    def _body(route: Route, headers: dict[str, str], raw: bytes) -> Any:
        if not route.takes_body:
            return None
        content_type = headers.get("content-type", "application/octet-stream").split(";")[0].strip().lower()
        if content_type not in CONSUMED_TYPES:
            raise _jersey(415)
        if not raw.strip():
            raise errors.RestError(422, 422, "Request body is required")
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RestError(400, 400, f"Unexpected character in the request body: {exc}") from None

    @staticmethod
    def _read_chunked(reader: Any) -> bytes:
        out = bytearray()
        while True:
            size_line = reader.readline(MAX_HEADER_LINE)
            if not size_line:
                raise _ConnectionClosed()
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while reader.readline(MAX_HEADER_LINE) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            if len(out) + size > MAX_BODY_BYTES:
                raise _ConnectionClosed()
            out += reader.read(size)
            reader.readline(MAX_HEADER_LINE)

    @staticmethod
    def _send(conn: socket.socket, status: int, payload: Any, keep_alive: bool) -> None:
        if isinstance(payload, RawBody):
            data = payload.text.encode()
        else:
            data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        head = (f"HTTP/1.1 {status} {_STATUS_TEXT.get(status, 'Unknown')}\r\n"
                f"Content-Type: {CONTENT_TYPE}\r\nContent-Length: {len(data)}\r\n"
                f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
        conn.sendall(head.encode("latin-1") + data)


def serve_schema_registry(cluster: Any, port: int = 0, host: str = "127.0.0.1",
                          threads: int = DEFAULT_THREADS) -> SchemaRegistryServer:
    """Start the registry of ``cluster`` (replaying ``_schemas``) and its HTTP server."""
    registry = SchemaRegistry(cluster).start()
    return SchemaRegistryServer(registry, port, host, threads, control=cluster.control).start()
