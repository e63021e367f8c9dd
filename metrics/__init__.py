"""Observability for kafka-emu: Prometheus metrics named after Kafka's JMX metrics, structlog logs.

``ClusterMetrics(cluster)`` builds one registry per cluster and ``start_http_server(port)``
serves it; see ``docs/metrics.md`` for every series and ``metrics.logging`` for log set-up.

The names below are imported lazily, so ``import metrics.logging`` (which every package does)
does not pull in prometheus_client.
"""
from __future__ import annotations

from typing import Any

__all__ = ["BrokerMetrics", "ClusterMetrics", "MetricsHTTPServer", "serve_cluster_metrics",
           "start_http_server"]

_LAZY = {
    "BrokerMetrics": "kafka_emu.metrics.broker_metrics",
    "ClusterMetrics": "kafka_emu.metrics.cluster",
    "start_http_server": "kafka_emu.metrics.cluster",
    "serve_cluster_metrics": "kafka_emu.metrics.cluster",
    "MetricsHTTPServer": "kafka_emu.metrics.endpoint",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'metrics' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(module), name)
