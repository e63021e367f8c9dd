"""The ``/metrics`` endpoint: prometheus_client's WSGI app on a stdlib server thread of our own.

prometheus_client's ``start_http_server`` runs an anonymous ``Thread-N`` with no way to stop it
but the server object; the emulator needs a thread that is named (``metrics-http-<port>``),
logs its start and death, and stops on ``shutdown()`` so ``EmbeddedCluster.close()`` leaves no
thread behind. Each scrape is served on its own short-lived daemon thread
(``metrics-http-<port>-scrape``), so a slow scraper never delays another; a scrape only runs
the registry's collectors, which never block request handling.

Paths: ``/metrics`` (Prometheus text format; OpenMetrics when the scraper asks for it), ``/``
(a one-line pointer) and ``/-/healthy``; anything else is 404.
"""
from __future__ import annotations

import socket
import threading
from socketserver import ThreadingMixIn
from typing import Any, Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import structlog
from prometheus_client import CollectorRegistry, make_wsgi_app

_log = structlog.get_logger("metrics.http")


class _QuietHandler(WSGIRequestHandler):
    """No per-request line on stderr (wsgiref's default): scrapes every second would flood it."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    thread_name = "metrics-http-scrape"

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self._serve_one, args=(request, client_address),
                                  name=self.thread_name, daemon=True)
        thread.start()

    def _serve_one(self, request: Any, client_address: Any) -> None:
        """One scrape; ends with its connection (the debug line is its death notice)."""
        try:
            self.process_request_thread(request, client_address)
        finally:
            _log.debug("thread_stopped", thread=threading.current_thread().name, reason="scrape served")


def _routes(metrics_app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return metrics_app(environ, start_response)
        if path == "/-/healthy":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"kafka-emu metrics: GET /metrics\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]

    return app


class MetricsHTTPServer:
    """A started-once, stopped-once HTTP endpoint for one registry."""

    def __init__(self, registry: CollectorRegistry, port: int = 0, host: str = "127.0.0.1") -> None:
        self.registry = registry
        self.host = host
        server_class = _ThreadingWSGIServer
        if ":" in host:
            server_class = type("_ThreadingWSGIServerV6", (_ThreadingWSGIServer,),
                                {"address_family": socket.AF_INET6})
        self._httpd = make_server(host, port, _routes(make_wsgi_app(registry)),
                                  server_class=server_class, handler_class=_QuietHandler)
        self.port: int = self._httpd.server_port
        self._httpd.thread_name = f"metrics-http-{self.port}-scrape"  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._serve, name=f"metrics-http-{self.port}",
                                        daemon=True)
        self._lock = threading.Lock()  # guards _started/_stopped
        self._started = False
        self._stopped = False

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def start(self) -> "MetricsHTTPServer":
        with self._lock:
            if self._started:
                return self
            self._started = True
        self._thread.start()
        return self

    def _serve(self) -> None:
        _log.info("thread_started", thread=self._thread.name, url=self.url)
        reason = "shutdown"
        try:
            self._httpd.serve_forever(poll_interval=0.1)
        except BaseException as exc:  # pragma: no cover - a crash of the stdlib loop
            reason = f"fatal: {exc!r}"
            raise
        finally:
            _log.info("thread_stopped", thread=self._thread.name, reason=reason)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop serving, close the socket and join the thread; idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            started = self._started
        if started:
            self._httpd.shutdown()  # returns once serve_forever's loop has exited
            self._thread.join(timeout_s)
        self._httpd.server_close()

    def __enter__(self) -> "MetricsHTTPServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
