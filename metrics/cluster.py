"""ClusterMetrics: the Prometheus registry of one cluster and the collector that fills it.

One ``CollectorRegistry`` per cluster (not prometheus_client's global one), so two clusters in
one process — two test fixtures, say — never mix series, and every series has a ``broker_id``
label. A single custom collector emits each family once with one sample per broker: emitting a
family per broker would repeat ``# TYPE`` lines, which Prometheus rejects.

Usage::

    metrics = ClusterMetrics(cluster)          # follows cluster.servers, attaches listeners
    server = metrics.start_http_server(9404)   # GET http://127.0.0.1:9404/metrics
    ...
    metrics.close()                            # stops the server, detaches listeners

or, for one broker on its own, ``ClusterMetrics().register_broker(server)``.

A scrape takes one snapshot per broker first, then emits: consumer-group lag joins the committed
offsets of each coordinator with the high watermarks of the partitions' leaders, which may be
other brokers. The cluster's schema registry, while ``cluster.schema_registry`` runs one, adds
its own snapshot's families (``metrics.schema_registry``, no ``broker_id``).

Locking: ``_lock`` guards ``_brokers``, ``_servers``, ``_closed`` and each BrokerMetrics'
``retired`` flag. A scrape copies the broker list under it and reads the brokers without it, so
registering a broker never waits for a scrape; nothing is called out to while it is held.
"""
from __future__ import annotations

import threading
from typing import Iterator

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily, Metric,
                                    SummaryMetricFamily)
from prometheus_client.openmetrics.exposition import generate_latest as _generate_openmetrics
from prometheus_client import generate_latest

from kafka_emu.metrics import names
from kafka_emu.metrics.broker_metrics import BrokerMetrics, Samples, leader_high_watermarks
from kafka_emu.metrics.endpoint import MetricsHTTPServer
from kafka_emu.metrics.request_metrics import RequestMetrics
from kafka_emu.metrics.schema_registry import collect_schema_registry
from kafka_emu.metrics.sources import BrokerSnapshotView, BrokerSource, ClusterSource

_log = structlog.get_logger("metrics.cluster")

_FAMILY_TYPES = {"gauge": GaugeMetricFamily, "counter": CounterMetricFamily}
_SCRAPED_SPECS = tuple(spec for spec in names.ALL if spec.kind != "histogram"
                       and spec not in (names.REQUESTS, names.ERRORS))


class _ClusterCollector:
    """prometheus_client custom collector: reads every registered broker at scrape time."""

    def __init__(self, owner: "ClusterMetrics") -> None:
        self._owner = owner

    def describe(self) -> list[Metric]:
        """Declares the family names, so registering a second collector for them fails loudly."""
        return [self._family(spec) for spec in _SCRAPED_SPECS]

    @staticmethod
    def _family(spec: names.MetricSpec) -> Metric:
        if spec.kind == "summary":
            return SummaryMetricFamily(spec.name, spec.help, labels=spec.all_labels)
        return _FAMILY_TYPES[spec.kind](spec.name, spec.help, labels=spec.all_labels)

    def collect(self) -> Iterator[Metric]:
        samples = Samples()
        taken: list[tuple[BrokerMetrics, BrokerSnapshotView]] = []
        for broker in self._owner.brokers_for_scrape():
            try:
                snapshot = broker.broker.snapshot()
            except Exception:   # a broker stopping under the scrape: the others still count
                _log.warning("metrics_snapshot_failed", broker_id=broker.broker_id, exc_info=True)
                continue
            if snapshot is not None:   # None: not started yet
                taken.append((broker, snapshot))
        high_watermarks = leader_high_watermarks([snapshot for _, snapshot in taken])
        for broker, snapshot in taken:
            broker.collect_into(samples, snapshot, high_watermarks)
        cluster = self._owner.cluster
        if cluster is not None:
            for action, count in sorted(cluster.control.action_counts().items()):
                samples.add(names.CONTROL_ACTIONS, count, action)
        registry = cluster.schema_registry if cluster is not None else None
        if registry is not None:
            try:
                collect_schema_registry(samples, registry.snapshot())
            except Exception:   # the registry closing under the scrape: the brokers still count
                _log.warning("metrics_schema_registry_snapshot_failed", exc_info=True)
        for spec in _SCRAPED_SPECS:
            rows = samples.values.get(spec.name)
            if not rows:
                continue
            family = self._family(spec)
            for labels, value in rows:
                if spec.kind == "summary":
                    count, total = value
                    family.add_metric(list(labels), count_value=count, sum_value=total)
                else:
                    family.add_metric(list(labels), float(value))
            yield family


class ClusterMetrics:
    """The metrics of one cluster: registry, request histograms, per-broker sources, endpoint."""

    def __init__(self, cluster: ClusterSource | None = None, registry: CollectorRegistry | None = None) -> None:
        self.cluster = cluster
        self.registry = registry if registry is not None else CollectorRegistry()
        self._lock = threading.Lock()
        self._brokers: dict[int, BrokerMetrics] = {}
        self._servers: list[MetricsHTTPServer] = []
        self._closed = False
        self.server: MetricsHTTPServer | None = None  # set by serve_cluster_metrics
        # Registered before the request histograms on purpose: a registry collects in
        # registration order, and this collector is where a stopped broker is noticed and its
        # request series dropped, so the same scrape must not still show them.
        self.registry.register(_ClusterCollector(self))
        self.request_metrics = RequestMetrics(self.registry)
        self.sync_brokers()

    # ------------------------------------------------------------------ brokers
    def register_broker(self, broker: BrokerSource) -> BrokerMetrics:
        """Start exporting ``broker``; a previous object with its id is detached and its request
        series dropped first (a restarted broker counts from zero, as Kafka's does)."""
        bid = broker.broker_id
        with self._lock:
            old = self._brokers.get(bid)
            if old is not None and old.broker is broker:
                return old
        if old is not None:
            self._retire(old)
        metrics = BrokerMetrics(broker, self.request_metrics)
        with self._lock:
            replaced = self._brokers.get(bid)
            self._brokers[bid] = metrics
        if replaced is not None and replaced is not old:
            replaced.detach()  # a concurrent registration of the same id lost the race
        _log.debug("metrics_broker_registered", broker_id=bid)
        return metrics

    def _retire(self, broker: BrokerMetrics) -> None:
        """Detach a broker's listeners and drop its request series (idempotent)."""
        with self._lock:  # check-and-set only; the work below runs without it
            if broker.retired:
                return
            broker.retired = True
        broker.detach()
        self.request_metrics.forget_broker(broker.broker_id)

    def broker(self, broker_id: int) -> BrokerMetrics:
        with self._lock:
            return self._brokers[broker_id]

    def sync_brokers(self) -> None:
        """Pick up brokers added to (or replaced in) the cluster since the last call."""
        if self.cluster is None or self._closed:
            return
        for bid, broker in list(self.cluster.servers.items()):
            with self._lock:
                current = self._brokers.get(bid)
            if current is None or current.broker is not broker:
                self.register_broker(broker)

    def brokers_for_scrape(self) -> list[BrokerMetrics]:
        try:
            self.sync_brokers()
        except Exception:
            _log.warning("metrics_sync_brokers_failed", exc_info=True)
        with self._lock:
            brokers = [self._brokers[k] for k in sorted(self._brokers)]
        # A stopped broker's series disappear (as its JMX beans do); Prometheus marks them stale.
        live = []
        for broker in brokers:
            if broker.broker.stopped:
                self._retire(broker)
            else:
                live.append(broker)
        return live

    # ------------------------------------------------------------------ exposition
    def start_http_server(self, port: int = 0, host: str = "127.0.0.1") -> MetricsHTTPServer:
        """Serve ``/metrics`` for this registry on a named daemon thread; port 0 picks one."""
        server = MetricsHTTPServer(self.registry, port=port, host=host)
        server.start()
        with self._lock:
            self._servers.append(server)
        return server

    def exposition(self, openmetrics: bool = False) -> str:
        """The text a scrape would get (handy in tests and for ``kafka-emu`` debugging)."""
        render = _generate_openmetrics if openmetrics else generate_latest
        return render(self.registry).decode()

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """The value of one sample, e.g. ``sample("..._total", {"broker_id": "0"})``."""
        return self.registry.get_sample_value(name, labels or {})

    def close(self) -> None:
        """Stop every HTTP server this object started and detach every listener; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            servers, self._servers = self._servers, []
            brokers, self._brokers = list(self._brokers.values()), {}
        for server in servers:
            server.shutdown()
        for broker in brokers:
            broker.detach()

    def __enter__(self) -> "ClusterMetrics":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_cluster_metrics(cluster: ClusterSource, port: int = 0, host: str = "127.0.0.1") -> ClusterMetrics:
    """The one call ``kafka-emu serve --metrics-port`` and ``EmbeddedCluster(metrics_port=...)``
    make: a registry for ``cluster`` with its endpoint started (``.server.url``); ``close()``
    stops both. Call it after the brokers are created (brokers added later are picked up too)."""
    metrics = ClusterMetrics(cluster)
    try:
        metrics.server = metrics.start_http_server(port, host)
    except BaseException:
        metrics.close()
        raise
    return metrics


def start_http_server(port: int, registry: CollectorRegistry, host: str = "127.0.0.1") -> MetricsHTTPServer:
    """Serve ``registry`` on ``host:port``/metrics; returns the started server (``.shutdown()``)."""
    server = MetricsHTTPServer(registry, port=port, host=host)
    server.start()
    return server
