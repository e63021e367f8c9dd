"""Observability for kafka-emu: Prometheus metrics named after Kafka's JMX metrics.

How the metrics reach the broker: they do not. Each component describes itself with a cheap
``snapshot()`` returning a frozen dataclass defined next to it (``RequestChannelSnapshot``,
``HandlerPoolSnapshot``, ``SocketServerSnapshot``, ``ReplicaManagerSnapshot`` with
``BrokerTopicStatsSnapshot`` and ``LogSnapshot``, ``PurgatorySnapshot``, ``TimerSnapshot``,
``GroupCoordinatorSnapshot``); ``KafkaServer.snapshot()`` gathers them into one
``BrokerSnapshot``; the cluster's schema registry, while one runs, gives its own
``SchemaRegistrySnapshot``. ``metrics.sources`` states, as Protocols, what the collectors read of those
snapshots, so this package imports nothing of ``broker`` or ``coordinator`` and never looks an
attribute up by a guessed name. Request timings and error counts come from a listener the
metrics append to ``KafkaServer.request_listeners``.

``ClusterMetrics(cluster)`` builds one registry per cluster and ``start_http_server(port)``
serves it; see ``docs/metrics.md`` for every series. Log set-up is ``kafka_emu.logsetup``.
"""
from kafka_emu.metrics.broker_metrics import BrokerMetrics
from kafka_emu.metrics.cluster import ClusterMetrics, serve_cluster_metrics, start_http_server
from kafka_emu.metrics.endpoint import MetricsHTTPServer
from kafka_emu.metrics.summary import summarize_exposition

__all__ = ["BrokerMetrics", "ClusterMetrics", "MetricsHTTPServer", "serve_cluster_metrics",
           "start_http_server", "summarize_exposition"]
