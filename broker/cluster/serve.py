"""``kafka-emu serve``: run an in-process Kafka cluster until SIGINT/SIGTERM.

    kafka-emu serve --brokers 3 --port 9092 [--config server.properties] [--metrics-port N]

Broker ``i`` listens on ``--host:--port+i`` (``--port 0``: ephemeral ports). The bootstrap
servers are printed on stdout as the first line (``bootstrap.servers=host:port,...``) so
scripts can read them; logs go to stderr. A ``server.properties`` file supplies broker
properties under Kafka's names; ``--set key=value`` overrides single properties, and explicit
``--host``/``--port`` win over the file's ``listeners``. A bad value stops the command before
anything starts with one line naming key, value and what is expected (exit 2), as does a port
in use or a missing config file. On SIGINT or SIGTERM every broker is shut down (every thread
joined; events ``shutting_down`` then ``stopped``) and the command exits 0.

``--kafka-version 4.1`` (``emulator.kafka.version``) makes the brokers answer as that Kafka
release: its API versions, the features ApiVersions reports, its config defaults (default the
newest the emulator knows; docs/compatibility.md). The ``serving`` event names it.

Logging: ``--log-level``, ``--log-format`` and ``--log-logger-level`` (added by ``kafka-emu``
itself), then ``log.level``/``log.format``/``log.level.<logger>`` from the properties, then
``$KAFKA_EMU_LOG_LEVEL``/``$KAFKA_EMU_LOG_FORMAT``; JSON lines by default.

``--metrics-port`` serves the cluster's Prometheus metrics (``metrics.cluster.ClusterMetrics``)
at ``http://host:port/metrics``; its address is printed as a second line (``metrics=...``).

``--set log.dirs=DIR`` (or ``log.dirs``/``log.dir`` in the file) keeps the logs in Kafka's
on-disk layout under DIR (``broker.storage.persistent_log``, ``broker.storage.log_dirs``; with several
brokers, ``DIR/broker-<i>``): a restart on the same directory, after SIGTERM or SIGKILL, brings
back topics, records, committed offsets and producer state. An unwritable directory, one in
use by another process or one of another cluster is a one-line error (exit 2).

``--control-port`` serves the test-control API (``broker.cluster.control.control_http``: injected
errors, latency, isolation, leader moves, time travel, recorded requests) on
``--control-host`` (127.0.0.1 unless given), printed as ``control=http://host:port``;
``--time offset|manual`` and ``--record-requests [N]`` configure the cluster for it; a
non-loopback ``--control-host`` needs ``--control-token`` (a bearer token every request must
carry). See docs/testing-failure.md.

Security: listeners of any protocol (``listener.security.protocol.map``, TLS and SASL settings,
``authorizer.class.name``) come from the properties file or ``--set``; ``--host``/``--port``
make a PLAINTEXT listener. The advertised addresses of every listener follow the bound ports.

``--schema-registry-port`` starts an embedded Confluent Schema Registry (REST API v1, stored in
the ``_schemas`` topic; ``broker.cluster.schema_registry``, the ``registry`` extra) on
``--schema-registry-host`` (127.0.0.1 unless given), printed as ``schema.registry.url=http://host:port``.
Without the extra installed the command stops with one line naming it (exit 2).
"""
from __future__ import annotations

import argparse
import errno
import signal
import sys
import threading
from typing import Any

import structlog

_log = structlog.get_logger("broker.serve")


DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 9092


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import port, positive_int

    from kafka_emu.common.kafka_releases import LATEST, RELEASE_NAMES

    parser.add_argument("--brokers", type=positive_int, default=3, help="number of brokers")
    parser.add_argument("--kafka-version", choices=RELEASE_NAMES, default=None,
                        help=f"the Kafka release the brokers answer as: its API versions, features and "
                             f"defaults (emulator.kafka.version; default: the file's, else {LATEST})")
    parser.add_argument("--port", type=port, default=None,
                        help=f"listener port of broker 0; broker i uses port+i (0: ephemeral; default: "
                             f"{DEFAULT_PORT}, or the file's listeners)")
    parser.add_argument("--host", default=None,
                        help=f"address to bind (default: {DEFAULT_HOST}, or the file's listeners)")
    parser.add_argument("--advertised-host", default=None,
                        help="host name clients are told to connect to (default: --host)")
    parser.add_argument("--config", default=None,
                        help="a server.properties file (Kafka property names; default: none, Kafka's defaults)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one broker property (repeatable; default: none)")
    parser.add_argument("--metrics-port", type=port, default=None,
                        help="serve Prometheus metrics on this port (default: no metrics endpoint)")
    parser.add_argument("--control-port", type=port, default=None,
                        help="serve the test-control HTTP API on this port (0: a free port; default: none)")
    parser.add_argument("--control-host", default="127.0.0.1",
                        help="address of the test-control API (not loopback: needs --control-token)")
    parser.add_argument("--control-token", default=None,
                        help="bearer token every control request must carry (required off loopback; default: none)")
    parser.add_argument("--schema-registry-port", type=port, default=None,
                        help="serve a Confluent-compatible schema registry on this port (0: a free port; "
                             "needs the registry extra; default: none)")
    parser.add_argument("--schema-registry-host", default="127.0.0.1",
                        help="address of the schema registry")
    parser.add_argument("--time", choices=("real", "offset", "manual"), default="real",
                        help="broker clock: offset or manual allow POST /v1/time/advance")
    parser.add_argument("--record-requests", type=positive_int, nargs="?", const=10_000, default=None,
                        metavar="N", help="record the last N client requests for GET /v1/requests "
                        "(10000 when given without N; default: off)")


def build_config(args: argparse.Namespace) -> dict[str, object]:
    """The broker properties: the ``--config`` file, then ``--set``, then the explicit flags, each
    winning over the ones before (as Kafka's ``--override`` wins over server.properties).

    ``--host``/``--port``, when given, replace ``listeners`` (and ``--advertised-host`` replaces
    ``advertised.listeners``, advertising each broker's bound port); without them the file's
    ``listeners`` apply, else ``PLAINTEXT://127.0.0.1:9092``. Raises ``ConfigException``.
    """
    from kafka_emu.common.config_def import ConfigException
    from kafka_emu.common.properties import load_properties

    props: dict[str, object] = dict(load_properties(args.config)) if args.config else {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigException(f"--set expects KEY=VALUE, got {item!r}")
        props[key.strip()] = value.strip()
    if args.host is not None or args.port is not None or "listeners" not in props:
        host = DEFAULT_HOST if args.host is None else args.host
        props["listeners"] = f"PLAINTEXT://{host}:{DEFAULT_PORT if args.port is None else args.port}"
    if args.advertised_host:   # every listener advertised on that host, each at its bound port
        names = [item.strip().partition("://")[0] for item in str(props["listeners"]).split(",") if item.strip()]
        props["advertised.listeners"] = ",".join(f"{name}://{args.advertised_host}:0" for name in names)
    if args.kafka_version is not None:
        props["emulator.kafka.version"] = args.kafka_version
    # Kafka's default offsets.topic.replication.factor (3) cannot be met by fewer brokers
    props.setdefault("offsets.topic.replication.factor", min(3, args.brokers))
    return props


def _start_metrics(cluster: Any, port: int, host: str) -> Any:
    """Serve the cluster's Prometheus registry (``metrics.cluster.ClusterMetrics``) on ``port``."""
    from kafka_emu.metrics.cluster import ClusterMetrics

    exporter = ClusterMetrics(cluster)
    server = exporter.start_http_server(port, host=host)
    print(f"metrics=http://{host}:{server.port}/metrics", flush=True)
    return exporter


def _bind_failure(label: str, host: str, port: int, exc: OSError) -> int:
    """Report a listener that could not bind (a user error: exit 2, one line)."""
    if exc.errno == errno.EADDRINUSE:
        message = f"{label} {port} is already in use"
    else:
        message = f"cannot listen on {host}:{port} ({label}): {exc.strerror or exc}"
    print(f"kafka-emu: {message}", file=sys.stderr)
    return 2


def _start_control(cluster: Any, port: int, host: str, token: str | None) -> Any:
    """The test-control endpoint (``broker.cluster.control.control_http``); raises OSError if the port
    cannot be bound."""
    from kafka_emu.broker.cluster.control.control_http import serve_control

    server = serve_control(cluster, port, host, token)
    print(f"control={server.url}", flush=True)
    return server


def run(args: argparse.Namespace) -> int:
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.network.socket_server import BindError
    from kafka_emu.logsetup import configure_from

    if args.port and args.port + args.brokers - 1 > 65535:
        print(f"kafka-emu: --port {args.port} with --brokers {args.brokers} needs ports up to "
              f"{args.port + args.brokers - 1}, past 65535", file=sys.stderr)
        return 2
    if args.control_port is not None and not args.control_token:
        from kafka_emu.broker.cluster.control.control_http import is_loopback

        if not is_loopback(args.control_host):
            print(f"kafka-emu: --control-host {args.control_host} is not a loopback address: the control API lets "
                  f"whoever reaches it stop brokers, so it needs --control-token", file=sys.stderr)
            return 2
    props = build_config(args)
    # every value checked before logging is set up from some of them (ConfigException: exit 2)
    checked = KafkaConfig(props)
    # log.level / log.format / log.level.<logger> from server.properties apply (the command line
    # still wins, the environment loses), and kafka-python & co. log through the same renderer.
    configure_from(args, config=checked.as_dict(), default_format="json", capture_stdlib=True)
    stop = threading.Event()
    received: list[str] = []

    def on_signal(signum: int, _frame: Any) -> None:
        received.append(signal.Signals(signum).name)   # logged by the main loop, not in the handler
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    # with a registry port: ConfigException (one line naming the registry extra, exit 2) when the
    # extra is missing; the registry starts with the brokers and its metrics are the cluster's
    cluster = EmbeddedCluster(brokers=args.brokers, config=props, start=False, time=args.time,
                              record_requests=args.record_requests or False,
                              schema_registry_port=args.schema_registry_port,
                              schema_registry_host=args.schema_registry_host)
    exporter = None
    control = None
    try:
        try:
            cluster.start()
        except BindError as exc:
            return _bind_failure("port", exc.host, exc.port, exc)
        except OSError as exc:   # the brokers bind BindError's, so this is the registry's port
            if args.schema_registry_port is None:
                raise
            return _bind_failure("schema registry port", args.schema_registry_host, args.schema_registry_port, exc)
        print(f"bootstrap.servers={cluster.bootstrap_servers}", flush=True)
        if cluster.schema_registry_url is not None:
            print(f"schema.registry.url={cluster.schema_registry_url}", flush=True)
        if args.metrics_port is not None:
            host = args.host or DEFAULT_HOST
            try:
                exporter = _start_metrics(cluster, args.metrics_port, host)
            except OSError as exc:
                return _bind_failure("metrics port", host, args.metrics_port, exc)
        if args.control_port is not None:
            try:
                control = _start_control(cluster, args.control_port, args.control_host, args.control_token)
            except OSError as exc:
                return _bind_failure("control port", args.control_host, args.control_port, exc)
        _log.info("serving", brokers=args.brokers, bootstrap_servers=cluster.bootstrap_servers,
                  kafka_version=cluster.kafka_version.name, kafka_tag=cluster.kafka_version.tag)
        while not stop.wait(0.5):
            pass
        _log.info("shutting_down", signal=received[0])
    finally:
        if control is not None:
            control.close()
        if exporter is not None:
            try:
                exporter.close()
            except Exception:  # noqa: BLE001
                _log.exception("metrics_exporter_close_failed")
        cluster.close()
        for s, handler in previous.items():
            signal.signal(s, handler)
        _log.info("stopped")
    return 0
