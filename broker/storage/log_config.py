"""LogConfig: topic-level configs, after Kafka's ``LogConfig`` and ``ServerTopicConfigSynonyms``.

``LOG_CONFIG_DEF`` defines every topic config of Kafka 4.0 with its type, default, validator and
doc; ``TOPIC_CONFIG_SYNONYMS`` names, for each, the broker keys that supply its default, first
wins (``retention.ms`` <- ``log.retention.ms``, ``log.retention.minutes``, ``log.retention.hours``),
with the unit conversion. A topic's value is its override if it has one, else the first broker
synonym that has a value, else the LogConfig default (``topic_value``).

The configs marked ``implemented`` act as in Kafka (``LogConfig`` below is what a ``UnifiedLog`` reads:
segments and rolling, retention, compaction, ``max.message.bytes``, recompression to
``compression.type``, ``LogAppendTime``, ``min.insync.replicas`` read by the partition, and with
``log.dirs`` the fsyncs of ``flush.messages`` and ``flush.ms``); the others are accepted, stored
and described, and warn (or are refused with
INVALID_CONFIG under ``emulator.strict.config``).

Stateless; no locking.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import structlog

from kafka_emu.broker.server.config import (
    CLEANUP_POLICIES,
    COMPRESSION_TYPES,
    TIMESTAMP_TYPES,
    KafkaConfig,
    ignored_message,
    strict_refusal,
)
from kafka_emu.common.config_def import (
    LONG_MAX,
    UNKNOWN,
    ConfigDef,
    ConfigException,
    ConfigKey,
    ConfigValue,
    Importance,
    Range,
    Type,
    ValidList,
    ValidString,
)

_log = structlog.get_logger("broker.log_config")
MEDIUM = Importance.MEDIUM


def _topic(name: str, type_: Type, default: ConfigValue, validator: object, doc: str,
           implemented: bool = False) -> ConfigKey:
    return ConfigKey(name, type_, default, validator, MEDIUM, doc, implemented)  # type: ignore[arg-type]


_AT_LEAST_0, _AT_LEAST_1 = Range.at_least(0), Range.at_least(1)

LOG_CONFIG_DEF = ConfigDef((
    _topic("segment.bytes", Type.INT, 1024 * 1024 * 1024, Range.at_least(14), "The segment file size for the log.", implemented=True),
    _topic("segment.ms", Type.LONG, 604800000, _AT_LEAST_1, "The period after which the log rolls a segment.", implemented=True),
    _topic("segment.jitter.ms", Type.LONG, 0, _AT_LEAST_0, "The maximum random jitter subtracted from segment.ms.", implemented=True),
    _topic("segment.index.bytes", Type.INT, 10 * 1024 * 1024, Range.at_least(4), "The size of the offset index.", implemented=True),
    _topic("flush.messages", Type.LONG, LONG_MAX, _AT_LEAST_1, "Messages written to the log between fsyncs (with log.dirs).", implemented=True),
    _topic("flush.ms", Type.LONG, LONG_MAX, _AT_LEAST_0, "Time between fsyncs of the log (with log.dirs).", implemented=True),
    _topic("retention.bytes", Type.LONG, -1, None, "The maximum size a partition's log can grow to (-1: no limit).", implemented=True),
    _topic("retention.ms", Type.LONG, 604800000, Range.at_least(-1), "How long to retain a log (-1: no limit).", implemented=True),
    _topic("max.message.bytes", Type.INT, 1024 * 1024 + 12, _AT_LEAST_0, "The largest record batch size allowed.", implemented=True),
    _topic("index.interval.bytes", Type.INT, 4096, _AT_LEAST_0, "How frequently an offset index entry is added.", implemented=True),
    _topic("delete.retention.ms", Type.LONG, 86400000, _AT_LEAST_0, "How long delete tombstones are retained (compacted topics).", implemented=True),
    _topic("min.compaction.lag.ms", Type.LONG, 0, _AT_LEAST_0, "The minimum time a message remains uncompacted.", implemented=True),
    _topic("max.compaction.lag.ms", Type.LONG, LONG_MAX, _AT_LEAST_1, "The maximum time a message remains ineligible for compaction.", implemented=True),
    _topic("file.delete.delay.ms", Type.LONG, 60000, _AT_LEAST_0, "The time to wait before deleting a file from the filesystem."),
    _topic("min.cleanable.dirty.ratio", Type.DOUBLE, 0.5, Range.between(0, 1), "How frequently the log compactor cleans the log.", implemented=True),
    _topic("cleanup.policy", Type.LIST, ["delete"], ValidList(CLEANUP_POLICIES, allow_empty=True), "delete, compact or both.", implemented=True),
    _topic("unclean.leader.election.enable", Type.BOOLEAN, False, None, "Elect replicas not in the ISR as a last resort."),
    _topic("min.insync.replicas", Type.INT, 1, _AT_LEAST_1,
           "The minimum number of in-sync replicas that must acknowledge an acks=all write.", implemented=True),
    _topic("compression.type", Type.STRING, "producer", ValidString(COMPRESSION_TYPES), "The final compression type of the topic.", implemented=True),
    _topic("compression.gzip.level", Type.INT, -1, None, "The compression level for gzip.", implemented=True),
    _topic("compression.lz4.level", Type.INT, 9, Range.between(1, 17), "The compression level for lz4.", implemented=True),
    _topic("compression.zstd.level", Type.INT, 3, Range.between(-131072, 22), "The compression level for zstd.", implemented=True),
    _topic("preallocate", Type.BOOLEAN, False, None, "Preallocate the file on disk when creating a segment."),
    _topic("message.timestamp.type", Type.STRING, "CreateTime", ValidString(TIMESTAMP_TYPES), "CreateTime or LogAppendTime.", implemented=True),
    _topic("message.timestamp.before.max.ms", Type.LONG, LONG_MAX, _AT_LEAST_0, "How far a record timestamp may lie in the past."),
    _topic("message.timestamp.after.max.ms", Type.LONG, 3600000, _AT_LEAST_0, "How far a record timestamp may lie in the future."),
    _topic("leader.replication.throttled.replicas", Type.LIST, [], None, "Replicas throttled on the leader side."),
    _topic("follower.replication.throttled.replicas", Type.LIST, [], None, "Replicas throttled on the follower side."),
    _topic("remote.storage.enable", Type.BOOLEAN, False, None, "Tiered storage for this topic."),
    _topic("local.retention.ms", Type.LONG, -2, Range.at_least(-2), "Local retention time with tiered storage (-2: retention.ms)."),
    _topic("local.retention.bytes", Type.LONG, -2, Range.at_least(-2), "Local retention size with tiered storage (-2: retention.bytes)."),
    _topic("remote.log.copy.disable", Type.BOOLEAN, False, None, "Stop copying segments to remote storage."),
    _topic("remote.log.delete.on.disable", Type.BOOLEAN, False, None, "Delete remote data when tiered storage is turned off."),
))


@dataclass(frozen=True)
class ConfigSynonym:
    """A broker key supplying a topic config's default (Kafka's ``ConfigSynonym``)."""

    name: str
    converter: Callable[[ConfigValue], ConfigValue] = lambda value: value


def _hours(value: ConfigValue) -> ConfigValue:
    return None if value is None else int(value) * 3_600_000  # type: ignore[arg-type]


def _minutes(value: ConfigValue) -> ConfigValue:
    return None if value is None else int(value) * 60_000  # type: ignore[arg-type]


def _same(name: str) -> list[ConfigSynonym]:
    return [ConfigSynonym(name)]


TOPIC_CONFIG_SYNONYMS: dict[str, list[ConfigSynonym]] = {
    "segment.bytes": _same("log.segment.bytes"),
    "segment.ms": [ConfigSynonym("log.roll.ms"), ConfigSynonym("log.roll.hours", _hours)],
    "segment.jitter.ms": [ConfigSynonym("log.roll.jitter.ms"), ConfigSynonym("log.roll.jitter.hours", _hours)],
    "segment.index.bytes": _same("log.index.size.max.bytes"),
    "flush.messages": _same("log.flush.interval.messages"),
    "flush.ms": [ConfigSynonym("log.flush.interval.ms"), ConfigSynonym("log.flush.scheduler.interval.ms")],
    "retention.bytes": _same("log.retention.bytes"),
    "retention.ms": [ConfigSynonym("log.retention.ms"), ConfigSynonym("log.retention.minutes", _minutes),
                     ConfigSynonym("log.retention.hours", _hours)],
    "max.message.bytes": _same("message.max.bytes"),
    "index.interval.bytes": _same("log.index.interval.bytes"),
    "delete.retention.ms": _same("log.cleaner.delete.retention.ms"),
    "min.compaction.lag.ms": _same("log.cleaner.min.compaction.lag.ms"),
    "max.compaction.lag.ms": _same("log.cleaner.max.compaction.lag.ms"),
    "file.delete.delay.ms": _same("log.segment.delete.delay.ms"),
    "min.cleanable.dirty.ratio": _same("log.cleaner.min.cleanable.ratio"),
    "cleanup.policy": _same("log.cleanup.policy"),
    "unclean.leader.election.enable": _same("unclean.leader.election.enable"),
    "min.insync.replicas": _same("min.insync.replicas"),
    "compression.type": _same("compression.type"),
    "compression.gzip.level": _same("compression.gzip.level"),
    "compression.lz4.level": _same("compression.lz4.level"),
    "compression.zstd.level": _same("compression.zstd.level"),
    "preallocate": _same("log.preallocate"),
    "message.timestamp.type": _same("log.message.timestamp.type"),
    "message.timestamp.before.max.ms": _same("log.message.timestamp.before.max.ms"),
    "message.timestamp.after.max.ms": _same("log.message.timestamp.after.max.ms"),
    "local.retention.ms": _same("log.local.retention.ms"),
    "local.retention.bytes": _same("log.local.retention.bytes"),
}


def topic_value(name: str, overrides: Mapping[str, ConfigValue], broker: KafkaConfig) -> ConfigValue:
    """The value of topic config ``name`` in force: override, first broker synonym, default."""
    if name in overrides:
        return overrides[name]
    for synonym in TOPIC_CONFIG_SYNONYMS.get(name, ()):
        value = broker.get(synonym.name)
        if value is not None:
            return synonym.converter(value)
    return LOG_CONFIG_DEF.keys[name].default


def validate_topic_configs(topic: str, configs: Mapping[str, object], strict: bool) -> dict[str, ConfigValue]:
    """Typed overrides for a new topic (Kafka's ``LogConfig.validate``).

    An unknown name, a null or bad value raises ``ConfigException`` (CreateTopics answers
    INVALID_CONFIG with its message); so does a key the emulator does not implement when
    ``strict``, which otherwise is logged once and kept (DescribeConfigs shows it).
    """
    for name, value in configs.items():
        if value is None:
            raise ConfigException(f"Null value not supported for topic configs: {name}")
    parsed = LOG_CONFIG_DEF.parse(configs)
    for name, reason in parsed.ignored.items():
        if reason == UNKNOWN:
            raise ConfigException(f"Unknown topic config name: {name}")
        if strict:
            raise strict_refusal(name, reason, "topic config")
    for name, reason in parsed.ignored.items():
        _log.warning("topic_config_ignored", topic=topic, key=name, reason=reason,
                     message=ignored_message(name, reason, "topic config"))
    return {name: parsed.values[name] for name in configs}


class LogConfig:
    """The topic configs in force for one log (Kafka's ``LogConfig``), as attributes.

    ``LogConfig.for_topic(overrides, broker)`` resolves each config the log acts on the way
    ``topic_value`` does (override, broker synonym, default); raw strings in ``overrides`` (the
    offsets topic is created with ``cleanup.policy=compact``) are parsed by the table. Immutable.

    One broker config rides along, ``producer.id.expiration.ms`` (Kafka keeps it in the
    ``ProducerStateManagerConfig`` all of a broker's logs share): every log reads it, and a
    dynamic change reaches every log the way a broker-level topic default does.
    """

    __slots__ = ("segment_bytes", "segment_ms", "segment_jitter_ms", "segment_index_bytes",
                 "retention_bytes", "retention_ms", "max_message_bytes", "index_interval_bytes",
                 "cleanup_policy", "compression_type", "compression_levels", "message_timestamp_type",
                 "delete_retention_ms", "min_compaction_lag_ms", "max_compaction_lag_ms",
                 "min_cleanable_dirty_ratio", "min_insync_replicas", "flush_messages", "flush_ms",
                 "producer_id_expiration_ms")

    def __init__(self, values: Mapping[str, ConfigValue], producer_id_expiration_ms: int) -> None:
        self.segment_bytes = int(values["segment.bytes"])  # type: ignore[arg-type]
        self.segment_ms = int(values["segment.ms"])  # type: ignore[arg-type]
        self.segment_jitter_ms = int(values["segment.jitter.ms"])  # type: ignore[arg-type]
        self.segment_index_bytes = int(values["segment.index.bytes"])  # type: ignore[arg-type]
        self.retention_bytes = int(values["retention.bytes"])  # type: ignore[arg-type]
        self.retention_ms = int(values["retention.ms"])  # type: ignore[arg-type]
        self.max_message_bytes = int(values["max.message.bytes"])  # type: ignore[arg-type]
        self.index_interval_bytes = int(values["index.interval.bytes"])  # type: ignore[arg-type]
        self.cleanup_policy = frozenset(values["cleanup.policy"] or ())  # type: ignore[arg-type]
        self.compression_type = str(values["compression.type"])
        self.compression_levels = {"gzip": int(values["compression.gzip.level"]),  # type: ignore[arg-type]
                                   "lz4": int(values["compression.lz4.level"]),  # type: ignore[arg-type]
                                   "zstd": int(values["compression.zstd.level"])}  # type: ignore[arg-type]
        self.message_timestamp_type = str(values["message.timestamp.type"])
        self.delete_retention_ms = int(values["delete.retention.ms"])  # type: ignore[arg-type]
        self.min_compaction_lag_ms = int(values["min.compaction.lag.ms"])  # type: ignore[arg-type]
        self.max_compaction_lag_ms = int(values["max.compaction.lag.ms"])  # type: ignore[arg-type]
        self.min_cleanable_dirty_ratio = float(values["min.cleanable.dirty.ratio"])  # type: ignore[arg-type]
        self.min_insync_replicas = int(values["min.insync.replicas"])  # type: ignore[arg-type]
        self.flush_messages = int(values["flush.messages"])  # type: ignore[arg-type]
        self.flush_ms = int(values["flush.ms"])  # type: ignore[arg-type]
        self.producer_id_expiration_ms = producer_id_expiration_ms

    @classmethod
    def for_topic(cls, overrides: Mapping[str, object] | None = None,
                  broker: KafkaConfig | None = None) -> "LogConfig":
        typed = LOG_CONFIG_DEF.parse(overrides or {}).values if overrides else {}
        given = {k: typed[k] for k in (overrides or {}) if k in typed}
        broker = broker if broker is not None else KafkaConfig()
        return cls({name: topic_value(name, given, broker) for name in LOG_CONFIG_DEF.keys},
                   int(broker["producer.id.expiration.ms"]))  # type: ignore[arg-type]

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy
