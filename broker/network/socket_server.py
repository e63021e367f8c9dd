"""SocketServer: Kafka's network layer, the facade over acceptors and processors.

Structure (as in Kafka's ``kafka.network.SocketServer``), one concept per module:

* ``acceptor.Acceptor``: one thread per listener (``data-plane-kafka-socket-acceptor-PLAINTEXT-
  <port>``) accepts connections and hands each, round robin, to one of the listener's
  ``num.network.threads`` processors;
* ``processor.Processor``: a network thread (``data-plane-kafka-network-thread-<brokerId>-
  PLAINTEXT-<n>``) that owns its connections and its own selector, reads requests onto the
  broker's ``RequestChannel`` and writes their responses (its module says how, and where it
  departs from Kafka);
* ``kafka_channel.KafkaChannel``: one connection's state;
* ``ssl_transport_layer.SslTransportLayer``: TLS of one connection, driven by its processor;
* ``sasl_server_authenticator.SaslServerAuthenticator``: SASL of one connection, on its processor;
* the responses a processor is handed, ``broker.network.request_channel.{SendResponse, NoOpResponse,
  CloseConnectionResponse, WrittenResponse}``.

Security: each listener speaks the protocol ``listener.security.protocol.map`` gives it
(``broker.security.listener_security``); a TLS listener's context is built at ``startup`` before
anything is bound (a key store that cannot be read stops the start with one line), and SASL
connections authenticate on their processor (``new_authenticator``), with SCRAM credentials read
from the cluster metadata (``scram_credentials``).

Client quotas reach the network layer as throttling (KIP-219): the request channel hands a
throttled request's processor a start and an end of throttling (``Processor``); the request
memory pool (``queued.max.request.bytes``) is the processors' shared ``memory_pool``.

Differences from Kafka: no per-IP connection limits or connection-rate quotas; no control-plane listener.
"""
from __future__ import annotations

import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import structlog

from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.network.acceptor import Acceptor
from kafka_emu.broker.network.processor import ApiVersionManager, Processor
from kafka_emu.broker.network.request_channel import CloseConnectionResponse, Request
from kafka_emu.broker.network.sasl_server_authenticator import SaslServerAuthenticator
from kafka_emu.broker.security.listener_security import ListenerSecurity, ScramLookup, listener_securities
from kafka_emu.common.memory_pool import SimpleMemoryPool

_log = structlog.get_logger("broker.network")


class BindError(OSError):
    """A listener could not bind its address (Kafka's Acceptor throws ``KafkaException("Socket
    server failed to bind to host:port")``); keeps the cause's errno and names the address."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        super().__init__(cause.errno, f"failed to bind to {host}:{port}: {cause.strerror or cause}")
        self.host = host
        self.port = port


@dataclass(frozen=True)
class EndPoint:
    """A listener's bind address and what clients are told to connect to."""

    listener_name: str
    host: str
    port: int
    advertised_host: str | None = None
    advertised_port: int | None = None


def parse_listeners(value: str) -> list[tuple[str, str, int]]:
    """``PLAINTEXT://127.0.0.1:0,OTHER://host:9093`` -> [(name, host, port)]."""
    out: list[tuple[str, str, int]] = []
    for item in (value or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, _, rest = item.partition("://")
        host, _, port = rest.rpartition(":")
        out.append((name.upper(), host or "127.0.0.1", int(port or 0)))
    return out


# Kafka's socket-server authentication metrics, one counter each per processor
AUTHENTICATION_COUNTERS = ("successful_authentications", "failed_authentications", "successful_reauthentications",
                           "failed_reauthentications", "expired_connections_killed")


@dataclass(frozen=True, slots=True)
class SocketServerSnapshot:
    """Kafka's SocketServer and RequestChannel network gauges, summed over the processors.

    NetworkProcessorAvgIdlePercent over a window is Δidle_ns / Δcapacity_ns; ``idle_ns``
    includes the polls in progress. The memory pool's fields are Kafka's SocketServer gauges
    MemoryPoolAvailable and MemoryPoolUsed (size - available) and the socket-server-metrics
    MemoryPoolDepletedTimeTotal.
    """

    processors: int
    response_queue_size: int   # responses waiting for their processor (ResponseQueueSize)
    idle_ns: int               # time spent waiting in epoll
    capacity_ns: int           # time since the processors started, times their number
    # per listener: Kafka's authentication counters (AUTHENTICATION_COUNTERS) over its processors
    authentication: tuple[tuple[str, dict[str, float]], ...] = ()
    memory_pool_size: int = 0            # queued.max.request.bytes; 0: no pool (unbounded)
    memory_pool_available: int = 0       # MemoryPoolAvailable (negative when overdrawn)
    memory_pool_depleted_ns: int = 0     # MemoryPoolDepletedTimeTotal, in ns


class SocketServer:
    """The broker's network layer: listeners, acceptors and processors.

    ``startup()`` binds synchronously (so ``bound_port`` and ``bootstrap_servers`` are known when
    it returns) and starts the threads; ``shutdown()`` stops acceptors first (no new
    connections), then processors (closing their connections), and joins every thread.
    Configuration read: ``listeners`` (default ``PLAINTEXT://127.0.0.1:0``),
    ``advertised.listeners``, ``num.network.threads``, ``socket.request.max.bytes``,
    ``connections.max.idle.ms``, ``queued.max.request.bytes`` (the processors' shared
    ``memory_pool``, ``kafka_emu.common.memory_pool``). What the broker serves comes with
    ``api_versions`` (built by ``KafkaServer`` for its ``emulator.kafka.version``, as Kafka's
    ``BrokerServer`` hands its
    ``SocketServer`` an ``ApiVersionManager``): the network layer imports no handler.
    """

    def __init__(self, config: KafkaConfig | Mapping[str, object] | None, request_channel: Any,
                 broker_id: int | None = None, request_factory: Callable[..., Any] | None = None, *,
                 api_versions: ApiVersionManager, scram_credentials: ScramLookup | None = None) -> None:
        config = config if isinstance(config, KafkaConfig) else KafkaConfig(config)
        self.config = config
        self.request_channel = request_channel
        self.broker_id = broker_id if broker_id is not None else config.broker_id
        self.request_factory = request_factory or Request
        self.api_versions = api_versions
        self.max_request_size: int = config["socket.request.max.bytes"]
        # Kafka's SocketServer: a SimpleMemoryPool when queued.max.request.bytes > 0, else MemoryPool.NONE
        queued_max_bytes: int = config["queued.max.request.bytes"]
        self.memory_pool: SimpleMemoryPool | None = None
        if queued_max_bytes > 0:
            self.memory_pool = SimpleMemoryPool(queued_max_bytes, self.max_request_size)
            self.memory_pool.on_available = self._memory_available
        self.connections_max_idle_ms: int = config["connections.max.idle.ms"]
        self.num_network_threads: int = config["num.network.threads"]
        listeners = parse_listeners(config["listeners"]) or [("PLAINTEXT", "127.0.0.1", 0)]
        advertised = {name: (host, port) for name, host, port in
                      parse_listeners(config.get("advertised.listeners", ""))}
        self._listener_specs = [(name, host, port, advertised.get(name)) for name, host, port in listeners]
        self.securities: dict[str, ListenerSecurity] = listener_securities(config.originals, config.props)
        self.ssl_contexts: dict[str, ssl.SSLContext] = {}   # built by startup()
        self.scram_credentials: ScramLookup = scram_credentials or (lambda _user, _mechanism: None)
        self.endpoints: list[EndPoint] = []
        self.acceptors: list[Acceptor] = []
        self.processors: list[Processor] = []
        self._lock = threading.Lock()  # guards startup/shutdown transitions
        self._started = False
        self._stopped = False
        self._started_ns = 0   # perf_counter_ns() when the processors started (their idle clock)

    def startup(self) -> None:
        """Bind every listener, then start the threads. A failed bind (port taken) raises
        ``BindError`` with nothing started and every socket already bound closed again."""
        with self._lock:
            if self._started:
                return
            for name, *_ in self._listener_specs:
                security = self.securities.get(name)
                if security is not None and security.protocol.uses_tls and name not in self.ssl_contexts:
                    self.ssl_contexts[name] = security.create_ssl_context()
            bound_socks: list[tuple[str, str, socket.socket, Any]] = []
            try:
                for name, host, port, adv in self._listener_specs:
                    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
                    bound_socks.append((name, host, sock, adv))
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((host, port))
                    sock.listen(512)
                    sock.setblocking(False)
            except OSError as exc:
                for _, _, sock, _ in bound_socks:
                    sock.close()
                raise BindError(host, port, exc) from exc
            self._started = True
            pid = 0
            for name, host, sock, adv in bound_socks:
                bound = sock.getsockname()[1]
                ep = EndPoint(name, host, bound,
                              adv[0] if adv else None, (adv[1] or bound) if adv else None)
                processors = []
                for _ in range(self.num_network_threads):
                    processors.append(Processor(self, pid, name))
                    pid += 1
                self.endpoints.append(ep)
                self.processors.extend(processors)
                self.acceptors.append(Acceptor(self, ep, sock, processors))
            self._started_ns = time.perf_counter_ns()
            for p in self.processors:
                self.request_channel.add_processor(p.processor_id, p)
                p.start()
            for a in self.acceptors:
                a.start()
            _log.info("socket_server_started", broker_id=self.broker_id,
                      endpoints=[f"{e.listener_name}://{e.host}:{e.port}" for e in self.endpoints])

    def new_authenticator(self, security: ListenerSecurity) -> SaslServerAuthenticator:
        """A SASL connection's authenticator (called by its processor)."""
        return SaslServerAuthenticator(security, self.scram_credentials, self.api_versions)

    def shutdown(self) -> None:
        with self._lock:
            if self._stopped or not self._started:
                self._stopped = True
                return
            self._stopped = True
        for a in self.acceptors:
            a.initiate_shutdown()
        for a in self.acceptors:
            a.await_shutdown()
        for p in self.processors:
            p.initiate_shutdown()
        for p in self.processors:
            p.await_shutdown()
        _log.info("socket_server_stopped", broker_id=self.broker_id)

    def _memory_available(self) -> None:
        """The memory pool has memory again (any thread): wake the processors with connections
        muted for it."""
        for processor in self.processors:
            if processor.waiting_for_memory():
                processor.wakeup()

    # --- addresses -------------------------------------------------------------------------------

    @property
    def bound_port(self) -> int:
        return self.endpoints[0].port

    def advertised_endpoint(self, listener: str | None = None) -> tuple[str, int]:
        """(host, port) clients should use: advertised values if configured, else the bind address."""
        for ep in self.endpoints:
            if listener is None or ep.listener_name == listener:
                host = ep.advertised_host or ep.host
                if host in ("0.0.0.0", "::", ""):
                    host = "127.0.0.1"
                return host, ep.advertised_port or ep.port
        raise KeyError(listener)

    @property
    def bootstrap_server(self) -> str:
        host, port = self.advertised_endpoint()
        return f"{host}:{port}"

    def close_connections(self) -> int:
        """Close every client connection, from any thread (test control's network partition):
        each processor closes its own on its thread; the number asked to close."""
        count = 0
        for processor in self.processors:
            for connection_id in list(processor._channels):
                processor.enqueue_response(CloseConnectionResponse(connection_id, None))
                count += 1
            processor.wakeup()
        return count

    # --- metrics ---------------------------------------------------------------------------------

    def threads(self) -> list[threading.Thread]:
        return [*self.acceptors, *self.processors]

    def connection_count(self) -> int:
        return sum(p.channel_count() for p in self.processors)

    def stats(self) -> dict[str, int]:
        """Totals over the processors (plain counters read without locks, for metrics scrapes):
        Kafka's connection-count, connection-close-total, request/response totals, bytes in/out,
        malformed frames, and ``idle_ns`` (time spent waiting in epoll; Kafka's
        NetworkProcessorAvgIdlePercent is its rate over wall time)."""
        keys = ("connections_closed", "malformed_frames", "requests_received",
                "responses_sent", "bytes_in", "bytes_out", "idle_ns", "wakeups") + AUTHENTICATION_COUNTERS
        out = {k: sum(getattr(p, k) for p in self.processors) for k in keys}
        out["connection_count"] = self.connection_count()
        out["connections_accepted"] = sum(a.accepted for a in self.acceptors)
        return out

    def authentication_stats(self) -> dict[str, dict[str, float]]:
        """Kafka's per-listener authentication counters (``AUTHENTICATION_COUNTERS``) summed over
        the listener's processors, by listener name."""
        out: dict[str, dict[str, float]] = {}
        for p in self.processors:
            totals = out.setdefault(p.listener, dict.fromkeys(AUTHENTICATION_COUNTERS, 0))
            for key in AUTHENTICATION_COUNTERS:
                totals[key] += getattr(p, key)
        return out

    def snapshot(self) -> SocketServerSnapshot:
        processors = list(self.processors)
        now = time.perf_counter_ns()
        idle = 0
        for p in processors:
            idle += p.idle_ns                # read before poll_started_ns (see Processor._poll)
            started = p.poll_started_ns
            if started:
                idle += max(0, now - started)
        elapsed = now - self._started_ns if self._started_ns else 0
        pool = self.memory_pool
        return SocketServerSnapshot(len(processors), sum(p.response_queue_size() for p in processors),
                                    idle, elapsed * len(processors), tuple(sorted(self.authentication_stats().items())),
                                    pool.size if pool is not None else 0,
                                    pool.available if pool is not None else 0,
                                    pool.depleted_ns if pool is not None else 0)
