"""The test-control operations as JSON over HTTP, for test suites in any language.

``kafka-emu serve --control-port N`` (``--control-host``, default 127.0.0.1) serves, under
``/v1`` (curl examples in docs/testing-failure.md):

==========================================  =================================================
``GET    /v1/cluster``                      brokers (id, address, stopped, isolated), time
``GET    /v1/faults``                       active injections, latencies, interceptors, counts
``POST   /v1/faults/errors``                ``{"api", "errors", "broker"?, "topic"?, "partition"?, "group"?}``
``POST   /v1/faults/latency``               ``{"broker", "ms", "api"?}`` (``ms`` 0 removes it)
``POST   /v1/faults/responses``             ``{"api", "response", "count"?}``: answer the next requests yourself
``POST   /v1/faults/registry``              ``{"errors", "method"?, "endpoint"?}``: schema registry error codes
``POST   /v1/faults/registry/latency``      ``{"ms"}``: delay every schema registry answer (0 removes it)
``DELETE /v1/faults``                       clear every fault (heals isolated brokers)
``POST   /v1/brokers/{id}/{action}``        ``stop``, ``start``, ``isolate``, ``heal``
``POST   /v1/leaders``                      ``{"topic", "partition", "broker"}``
``POST   /v1/coordinators``                 ``{"group", "broker"}``
``GET    /v1/time``                         ``{"mode", "now_ms"}``
``POST   /v1/time/advance``                 ``{"ms"}``: returns once what fell due has run
``GET    /v1/requests``                     ``?api=&broker=&client_id=&limit=``: recorded requests
``DELETE /v1/requests``                     forget the recorded requests
==========================================  =================================================

Answers are JSON objects. Bad requests get a 4xx with ``{"error": "<one line>"}``: 400 for
malformed JSON, a missing, unknown or mistyped field, or an unknown API or error name; 404 for
an unknown path or broker; 405 for a method a path does not take; 409 for an operation the
cluster's state refuses (recording off, real time, a broker that cannot lead). A callable
interceptor needs Python; ``faults/responses`` gives the next ``count`` requests a fixed answer.

Access: whoever reaches this endpoint can stop brokers and rewrite answers, so it binds a
non-loopback address only with a ``token`` (``serve --control-token``; ``ControlTokenRequired``
otherwise, one line at start-up), and then every request must carry ``Authorization: Bearer
<token>`` (401 otherwise, compared in constant time). On loopback a token is optional and, when
given, required the same way.

Runs ``http.server.ThreadingHTTPServer`` on one named thread (``control-http-<port>``; each
request on its own short-lived ``control-http-request`` thread, so a slow ``time/advance``
does not block a ``GET /v1/requests``). ``close()`` stops it and joins the serving thread.
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Callable, TypeAlias
from urllib.parse import parse_qs, urlsplit

import structlog

from kafka_emu.broker.cluster.control.control import UnknownBrokerError
from kafka_emu.broker.cluster.control.entity_json import JsonValue

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

_log = structlog.get_logger("broker.control_http")

MAX_BODY_BYTES = 1 << 20
_BROKER_PATH = re.compile(r"^/v1/brokers/(-?\d+)/(stop|start|isolate|heal)$")

Reply: TypeAlias = tuple[int, dict[str, JsonValue]]   # HTTP status, JSON object


class _NamedThreadingHTTPServer(ThreadingHTTPServer):
    """Each request on a daemon thread named ``control-http-request`` (http.server leaves them
    unnamed)."""

    daemon_threads = True

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket],
                        client_address: tuple[str, int]) -> None:
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                  name="control-http-request", daemon=True)
        thread.start()


class ControlTokenRequired(ValueError):
    """A non-loopback bind without a token."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BadRequest(ValueError):
    """A request the control API refuses with 400."""


class _Route:
    def __init__(self, fn: Callable[..., Reply], fields: dict[str, tuple[type, ...]],
                 required: tuple[str, ...] = ()) -> None:
        self.fn = fn
        self.fields = fields          # field -> accepted JSON types
        self.required = required


def _check(body: JsonValue, route: _Route) -> dict[str, JsonValue]:
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    unknown = sorted(set(body) - set(route.fields))
    if unknown:
        raise BadRequest(f"unknown field {', '.join(unknown)} (fields: {', '.join(route.fields) or 'none'})")
    for name in route.required:
        if body.get(name) is None:
            raise BadRequest(f"missing field {name!r}")
    for name, value in body.items():
        types = route.fields[name]
        if value is not None and (not isinstance(value, types) or (isinstance(value, bool) and bool not in types)):
            raise BadRequest(f"field {name!r} must be {' or '.join(t.__name__ for t in types)}")
    return body


class ControlHTTPServer:
    def __init__(self, cluster: EmbeddedCluster, port: int = 0, host: str = "127.0.0.1",
                 token: str | None = None) -> None:
        if not token and not is_loopback(host):
            raise ControlTokenRequired(f"the control API on {host} would let anyone who reaches it stop brokers: "
                                       f"give --control-token (clients then send Authorization: Bearer <token>) "
                                       f"or bind a loopback address")
        self.token = token or None
        self.cluster = cluster
        self.control = cluster.control
        self._routes: dict[tuple[str, str], _Route] = {
            ("GET", "/v1/cluster"): _Route(self._cluster, {}),
            ("GET", "/v1/faults"): _Route(lambda: (200, self.control.describe()), {}),
            ("POST", "/v1/faults/errors"): _Route(self._errors, {
                "api": (str, int), "errors": (list,), "broker": (int,), "topic": (str,),
                "partition": (int,), "group": (str,)}, ("api", "errors")),
            ("POST", "/v1/faults/latency"): _Route(self._latency, {
                "broker": (int,), "ms": (int, float), "api": (str, int)}, ("broker", "ms")),
            ("POST", "/v1/faults/responses"): _Route(self._responses, {
                "api": (str, int), "response": (dict,), "count": (int,)}, ("api", "response")),
            ("POST", "/v1/faults/registry"): _Route(self._registry_errors, {
                "errors": (list,), "method": (str,), "endpoint": (str,)}, ("errors",)),
            ("POST", "/v1/faults/registry/latency"): _Route(self._registry_latency, {"ms": (int, float)}, ("ms",)),
            ("DELETE", "/v1/faults"): _Route(self._clear, {}),
            ("POST", "/v1/leaders"): _Route(self._leader, {
                "topic": (str,), "partition": (int,), "broker": (int,)}, ("topic", "partition", "broker")),
            ("POST", "/v1/coordinators"): _Route(self._coordinator, {
                "group": (str,), "broker": (int,)}, ("group", "broker")),
            ("GET", "/v1/time"): _Route(lambda: (200, self.control.describe()["time"]), {}),
            ("POST", "/v1/time/advance"): _Route(self._advance, {"ms": (int, float)}, ("ms",)),
            ("GET", "/v1/requests"): _Route(self._requests, {
                "api": (str,), "broker": (str,), "client_id": (str,), "limit": (str,)}),
            ("DELETE", "/v1/requests"): _Route(self._clear_requests, {}),
        }
        self._httpd = _NamedThreadingHTTPServer((host, port), self._handler_class())
        self.host = host
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._serve, name=f"control-http-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> "ControlHTTPServer":
        self._thread.start()
        _log.info("control_http_started", url=self.url)
        return self

    def _serve(self) -> None:
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            _log.info("thread_stopped", thread=threading.current_thread().name)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)

    # ------------------------------------------------------------------ dispatch
    def dispatch(self, method: str, raw_path: str, raw_body: bytes) -> Reply:
        parts = urlsplit(raw_path)
        path = parts.path.rstrip("/") or "/"
        try:
            m = _BROKER_PATH.match(path)
            if m:
                if method != "POST":
                    return 405, {"error": f"{method} not allowed on {path} (use POST)"}
                _check(self._json(raw_body), _Route(lambda: (0, {}), {}))
                return self._broker_action(int(m.group(1)), m.group(2))
            route = self._routes.get((method, path))
            if route is None:
                allowed = sorted(mth for mth, p in self._routes if p == path)
                if allowed:
                    return 405, {"error": f"{method} not allowed on {path} (use {', '.join(allowed)})"}
                return 404, {"error": f"no such path {path}"}
            if method == "GET":
                query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                return route.fn(**_check(query, route))
            return route.fn(**_check(self._json(raw_body), route))
        except BadRequest as exc:
            return 400, {"error": str(exc)}
        except UnknownBrokerError as exc:
            return 404, {"error": str(exc)}
        except (ValueError, TypeError) as exc:
            return 400, {"error": str(exc)}
        except RuntimeError as exc:
            return 409, {"error": str(exc)}

    @staticmethod
    def _json(raw: bytes) -> JsonValue:
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadRequest(f"malformed JSON: {exc}") from None

    # ------------------------------------------------------------------ operations
    def _cluster(self) -> Reply:
        brokers = []
        for bid, server in sorted(self.cluster.servers.items()):
            brokers.append({"id": bid, "bootstrap_server": server.bootstrap_server, "stopped": server.stopped,
                            "isolated": self.control.is_isolated(bid)})
        return 200, {"brokers": brokers, "bootstrap_servers": self.cluster.bootstrap_servers,
                     "cluster_id": self.cluster.metadata.cluster_id, "time": self.control.describe()["time"]}

    def _errors(self, api: str | int, errors: list[str | int], broker: int | None = None, topic: str | None = None,
                partition: int | None = None, group: str | None = None) -> Reply:
        injection = self.control.inject_errors(api, errors, broker=broker, topic=topic,
                                               partition=partition, group=group)
        return 201, {"injection": injection.describe()}

    def _latency(self, broker: int, ms: float, api: str | int | None = None) -> Reply:
        self.control.set_latency(broker, int(ms), api)
        return 200, {"broker": broker, "ms": int(ms), "api": api}

    def _responses(self, api: str | int, response: dict[str, JsonValue], count: int = 1) -> Reply:
        self.control.answer_with(api, response, count)
        return 201, {"api": api, "count": count}

    def _registry_errors(self, errors: list[Any], method: str | None = None,
                         endpoint: str | None = None) -> Reply:
        if not all(isinstance(e, int) and not isinstance(e, bool) for e in errors):
            raise BadRequest("errors must be Confluent error codes (integers such as 50001)")
        injection = self.control.inject_registry_errors(errors, method=method, endpoint=endpoint)
        return 201, {"injection": injection.describe()}

    def _registry_latency(self, ms: float) -> Reply:
        self.control.set_registry_latency(int(ms))
        return 200, {"ms": int(ms)}

    def _clear(self) -> Reply:
        self.control.clear_faults()
        return 200, self.control.describe()

    def _broker_action(self, broker: int, action: str) -> Reply:
        self.control._check_broker(broker)
        if action == "stop":
            self.cluster.stop_broker(broker)
        elif action == "start":
            self.cluster.start_broker(broker)
        elif action == "isolate":
            self.control.isolate(broker)
        else:
            self.control.heal(broker)
        server = self.cluster.servers[broker]
        return 200, {"broker": broker, "action": action, "stopped": server.stopped,
                     "isolated": self.control.is_isolated(broker),
                     "bootstrap_server": server.bootstrap_server}

    def _leader(self, topic: str, partition: int, broker: int) -> Reply:
        try:
            state = self.control.move_leader(topic, partition, broker)
        except ValueError as exc:
            raise RuntimeError(str(exc)) from None   # the partition's state refuses it: 409
        return 200, {"topic": topic, "partition": partition, "leader": state.leader,
                     "leader_epoch": state.leader_epoch, "isr": list(state.isr)}

    def _coordinator(self, group: str, broker: int) -> Reply:
        try:
            partition = self.control.move_group_coordinator(group, broker)
        except ValueError as exc:
            raise RuntimeError(str(exc)) from None
        return 200, {"group": group, "partition": partition, "coordinator": broker}

    def _advance(self, ms: float) -> Reply:
        self.control.advance_time(ms)
        return 200, self.control.describe()["time"]

    def _requests(self, api: str | None = None, broker: str | None = None, client_id: str | None = None,
                  limit: str | None = None) -> Reply:
        try:
            broker_id = None if broker in (None, "") else int(broker)
            last = None if limit in (None, "") else int(limit)
        except ValueError:
            raise BadRequest("broker and limit must be integers") from None
        records = self.control.requests(api or None, broker_id, client_id)
        if last is not None:
            records = records[-last:] if last > 0 else []
        recorder = self.control.recorder
        return 200, {"requests": [r.to_json() for r in records], "dropped": recorder.dropped if recorder else 0}

    def _clear_requests(self) -> Reply:
        self.control.clear_requests()
        return 200, {"cleared": True}

    # ------------------------------------------------------------------ http.server glue
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "kafka-emu-control"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if owner.token is not None and not hmac.compare_digest(
                        (self.headers.get("Authorization") or "").encode(), f"Bearer {owner.token}".encode()):
                    status, payload = 401, {"error": "missing or wrong bearer token (Authorization: Bearer <token>)"}
                elif length > MAX_BODY_BYTES:
                    status, payload = 413, {"error": f"body larger than {MAX_BODY_BYTES} bytes"}
                else:
                    raw = self.rfile.read(length) if length > 0 else b""
                    try:
                        status, payload = owner.dispatch(self.command, self.path, raw)
                    except Exception as exc:  # noqa: BLE001 - one line to the client, the trace to the log
                        _log.exception("control_http_failed", method=self.command, path=self.path)
                        status, payload = 500, {"error": f"internal error: {exc!r}"}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = _handle

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
                _log.debug("control_http_request", line=format % args)

        return Handler


def serve_control(cluster: EmbeddedCluster, port: int = 0, host: str = "127.0.0.1",
                  token: str | None = None) -> ControlHTTPServer:
    """Start the control endpoint of ``cluster`` on ``host:port`` (0: a free port)."""
    return ControlHTTPServer(cluster, port, host, token).start()
