"""The cluster a load run drives: an in-process EmbeddedCluster, or any reachable Kafka cluster.

The embedded cluster lives in the driver process; Spark's Python workers are separate
processes and reach it over TCP like any client would. Reachability is checked before Spark
starts, so an unreachable cluster costs seconds, not a Spark session, and fails with one line.
"""
from __future__ import annotations

import contextlib
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterator

import structlog

from kafka_emu.loadgen.errors import ClusterUnreachableError, LoadgenError, SpecError
from kafka_emu.loadgen.spec import GroupSpec, ShareGroupSpec, TopicSpec

_log = structlog.get_logger("loadgen.target")

QUIET = {"log_level": 0}  # librdkafka logs every refused connection to stderr; the error says it once


@dataclass
class Target:
    bootstrap: str
    cluster: Any = None            # the EmbeddedCluster when the run started one
    metrics_url: str | None = None
    schema_registry_url: str | None = None   # the embedded cluster's registry, when it runs one

    @property
    def embedded(self) -> bool:
        return self.cluster is not None


def check_reachable(bootstrap: str, timeout_s: float = 5.0) -> int:
    """Number of brokers in the cluster's metadata; ClusterUnreachableError if there is no answer."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    try:
        md = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        why = err.str() if hasattr(err, "str") else str(exc)
        raise ClusterUnreachableError(f"cannot reach a Kafka cluster at {bootstrap}: {why}") from None
    return len(md.brokers)


def check_registry_reachable(url: str, timeout_s: float = 5.0) -> None:
    """ClusterUnreachableError unless an HTTP server answers at ``url`` (any status: it is there)."""
    import urllib.error

    try:
        urllib.request.urlopen(f"{url.rstrip('/')}/subjects", timeout=timeout_s).close()
    except urllib.error.HTTPError:
        return
    except (OSError, ValueError) as exc:
        why = getattr(exc, "reason", None) or exc
        raise ClusterUnreachableError(f"cannot reach the schema registry at {url}: {why}") from None


def create_topics(bootstrap: str, topics: tuple[TopicSpec, ...], brokers: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    for t in topics:
        if t.replication_factor > brokers:
            raise SpecError(f"invalid workload spec: topics: {t.name} has replication_factor "
                            f"{t.replication_factor} but the cluster has {brokers} broker(s)")
    if not topics:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    futures = admin.create_topics([NewTopic(t.name, t.partitions, t.replication_factor) for t in topics],
                                  request_timeout=30)
    for name, fut in futures.items():
        try:
            fut.result(30)
        except Exception as exc:
            err = exc.args[0] if exc.args else None
            if getattr(err, "name", lambda: "")() == "TOPIC_ALREADY_EXISTS":
                continue
            raise LoadgenError(f"creating topic {name} failed: {err.str() if hasattr(err, 'str') else exc}") from None


def _alter_group_configs(bootstrap: str, configs: dict[str, dict[str, str]]) -> dict[str, str]:
    """Set group id -> {key: value} with IncrementalAlterConfigs on the GROUP resources; the
    refusals by group id (logged), the run going on."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    if not configs:
        return {}
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    refused: dict[str, str] = {}
    for group_id, values in configs.items():
        resource = ConfigResource(ResourceType.GROUP, group_id, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()])
        try:
            admin.incremental_alter_configs([resource], request_timeout=30)[resource].result(30)
        except Exception as exc:
            err = exc.args[0] if exc.args else None
            refused[group_id] = err.str() if hasattr(err, "str") else str(exc)
            _log.warning("group_configs_refused", group_id=group_id, error=refused[group_id])
    return refused


def set_group_configs(bootstrap: str, groups: tuple[GroupSpec, ...]) -> dict[str, str]:
    """Give each consumer-protocol group its spec's session timeout and heartbeat interval as
    group configs (IncrementalAlterConfigs on the GROUP resource, KIP-848), since its members
    cannot choose them. A broker that refuses (its group.consumer.min/max bounds exclude the
    values, or it predates group configs) leaves the group on the broker's values: the refusal
    is logged and returned per group, and the run goes on."""
    return _alter_group_configs(bootstrap, {
        g.group_id: {"consumer.session.timeout.ms": str(g.session_timeout_ms),
                     "consumer.heartbeat.interval.ms": str(g.heartbeat_interval_ms)}
        for g in groups if g.group_protocol == "consumer"})


def set_share_group_configs(bootstrap: str, share_groups: tuple[ShareGroupSpec, ...]) -> dict[str, str]:
    """Each share group's configs on the broker before the run (KIP-932): ``share.auto.offset.reset
    =earliest`` so the members read what the run produces from its first record, and the spec's
    ``share.delivery.count.limit``. A refusal is logged and returned per group, and the run goes on."""
    return _alter_group_configs(bootstrap, {
        g.group_id: {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": str(g.delivery_count_limit)}
        for g in share_groups})


def delete_topic(bootstrap: str, name: str) -> None:
    """Best effort: a leftover control topic is harmless, so failures are only logged."""
    from confluent_kafka.admin import AdminClient

    try:
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        for fut in admin.delete_topics([name], request_timeout=10).values():
            fut.result(10)
    except Exception as exc:
        _log.info("control_topic_not_deleted", topic=name, error=repr(exc))


def _start_embedded(brokers: int, config: dict[str, Any], schema_registry_host: str | None
                    ) -> tuple[Any, Any, str | None]:
    """Start an EmbeddedCluster (with its schema registry on ``schema_registry_host`` unless None)
    and its /metrics endpoint, which has the registry's series too; returns (cluster, metrics, url)."""
    from kafka_emu.loadgen.embedded import start_cluster

    cluster = start_cluster(brokers, config, schema_registry_host)
    try:
        from kafka_emu.metrics.cluster import ClusterMetrics

        metrics = ClusterMetrics(cluster)
        server = metrics.start_http_server(0)
        return cluster, metrics, server.url if str(server.url).endswith("/metrics") else f"{server.url}/metrics"
    except Exception as exc:   # the load can run without metrics; say so once
        _log.warning("metrics_endpoint_unavailable", error=repr(exc))
        return cluster, None, None


@contextlib.contextmanager
def open_target(bootstrap: str | None, brokers: int = 3, config: dict[str, Any] | None = None,
                timeout_s: float = 5.0, schema_registry_host: str | None = None) -> Iterator[Target]:
    """``schema_registry_host``: the embedded cluster also runs its schema registry, reached by
    clients at that host (bound there when it is the loopback, on every interface otherwise, as
    with ``--advertised-host``); None: no registry."""
    if bootstrap:
        check_reachable(bootstrap, timeout_s)
        yield Target(bootstrap)
        return
    bind = schema_registry_host if schema_registry_host in (None, "127.0.0.1", "localhost") else "0.0.0.0"
    cluster, metrics, url = _start_embedded(brokers, dict(config or {}), bind)
    registry = cluster.schema_registry
    try:
        yield Target(cluster.bootstrap_servers, cluster, url,
                     f"http://{schema_registry_host}:{registry.port}" if registry is not None else None)
    finally:
        if metrics is not None:
            metrics.close()
        cluster.close()


def scrape_metrics(url: str | None, names: tuple[str, ...] = ()) -> dict[str, Any]:
    """One /metrics scrape reduced by metric type (``metrics.summary``); empty when unavailable."""
    if not url:
        return {}
    try:
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    except Exception:
        return {}
    from kafka_emu.metrics.summary import summarize_exposition

    return summarize_exposition(text, names or ("kafka_",))
