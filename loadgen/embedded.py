"""Starting an in-process cluster for the stress commands and the load driver.

Kept in one place so the group timeouts that make churn testable in seconds (no initial
rebalance delay, short minimum session timeout) and the replication settings are the same
everywhere, and so a missing broker package is reported as one clean line.
"""
from __future__ import annotations

from typing import Any

from kafka_emu.loadgen.errors import LoadgenError

CLUSTER_CONFIG: dict[str, Any] = {
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 10,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 500,
    # consumer-protocol groups (KIP-848) get the spec's timeouts as group configs, within these
    "group.consumer.min.session.timeout.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 100,
}


def embedded_cluster_class() -> Any:
    try:
        from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    except ImportError as exc:
        raise LoadgenError(f"the embedded cluster is not available ({exc})") from None
    return EmbeddedCluster


def start_cluster(brokers: int = 3, config: dict[str, Any] | None = None,
                  schema_registry_host: str | None = None) -> Any:
    """``schema_registry_host``: also run the cluster's schema registry there, on a free port
    (None: no registry); a missing ``registry`` extra is one line."""
    cfg = dict(CLUSTER_CONFIG)
    cfg["default.replication.factor"] = min(brokers, 3)
    cfg["offsets.topic.replication.factor"] = min(brokers, 3)
    cfg.update(config or {})
    cls = embedded_cluster_class()
    if schema_registry_host is None:
        return cls(brokers=brokers, config=cfg)
    from kafka_emu.broker.cluster.schema_registry import require_extra
    from kafka_emu.broker.server.config import ConfigException

    try:
        require_extra()
    except ConfigException as exc:
        raise LoadgenError(str(exc)) from None
    return cls(brokers=brokers, config=cfg, schema_registry_port=0, schema_registry_host=schema_registry_host)


def close_cluster(cluster: Any) -> None:
    close = getattr(cluster, "close", None)
    if close is not None:
        close()
    else:
        cluster.__exit__(None, None, None)
