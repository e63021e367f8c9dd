"""KafkaConfig: broker configuration under Kafka's property names, with Kafka's defaults.

Values may be given as strings (a ``server.properties`` file) or as Python values; they are
converted to the type of the default. Unknown properties are kept as given (the wire layer and
the group coordinator read their own, e.g. ``listeners``, ``group.*``, ``offsets.*``).

``EmbeddedCluster`` lowers a few defaults for speed (see ``broker.cluster.EMBEDDED_DEFAULTS``);
this module keeps Kafka's.
"""
from __future__ import annotations

from typing import Any, Mapping

MIB = 1024 * 1024

DEFAULTS: dict[str, Any] = {
    "broker.id": 0,
    "node.id": -1,
    "num.io.threads": 8,
    "num.network.threads": 3,
    "queued.max.requests": 500,
    "num.replica.fetchers": 1,
    "replica.lag.time.max.ms": 30000,
    "replica.fetch.wait.max.ms": 500,
    "replica.fetch.min.bytes": 1,
    "replica.fetch.max.bytes": 1 * MIB,
    "replica.fetch.response.max.bytes": 10 * MIB,
    "replica.fetch.backoff.ms": 1000,
    "replica.socket.timeout.ms": 30000,
    "min.insync.replicas": 1,
    "default.replication.factor": 1,
    "num.partitions": 1,
    "message.max.bytes": 1048588,
    "auto.create.topics.enable": True,
    "offsets.topic.num.partitions": 50,
    "offsets.topic.replication.factor": 3,
    "request.timeout.ms": 30000,
    "fetch.purgatory.purge.interval.requests": 1000,
    "producer.purgatory.purge.interval.requests": 1000,
    "log.retention.ms": -1,
    "log.message.timestamp.type": "CreateTime",
    "unclean.leader.election.enable": False,
    "listeners": "",
    "socket.request.max.bytes": 100 * MIB,
    "connections.max.idle.ms": 600000,
}


def _convert(value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if isinstance(value, str):
            return value.strip().lower() in ("true", "1", "yes")
        return bool(value)
    if isinstance(default, int) and not isinstance(value, bool):
        return int(value)
    return value


class KafkaConfig:
    """Immutable after construction (read from any thread without a lock)."""

    def __init__(self, props: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        merged: dict[str, Any] = dict(DEFAULTS)
        for source in (props or {}), {k.replace("_", "."): v for k, v in overrides.items()}:
            for key, value in source.items():
                merged[key] = _convert(value, DEFAULTS[key]) if key in DEFAULTS else value
        if merged["node.id"] == -1:
            merged["node.id"] = merged["broker.id"]
        self.props: dict[str, Any] = merged

    def __getitem__(self, key: str) -> Any:
        return self.props[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.props.get(key, default)

    def __contains__(self, key: str) -> bool:
        return key in self.props

    def with_overrides(self, **props: Any) -> "KafkaConfig":
        merged = dict(self.props)
        merged.update(props)
        return KafkaConfig(merged)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.props)

    @staticmethod
    def parse_properties(text: str) -> dict[str, str]:
        """Parse a ``server.properties`` text (``key=value``, ``#`` comments)."""
        out: dict[str, str] = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
            if sep < 0:
                continue
            out[line[:sep].strip()] = line[sep + 1:].strip()
        return out

    # Convenience accessors for the hot paths.
    @property
    def broker_id(self) -> int:
        return self.props["broker.id"]

    def __repr__(self) -> str:
        return f"KafkaConfig(broker.id={self.broker_id})"
