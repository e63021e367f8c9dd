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

The broker keys the log layer reads are defined here too, as Kafka's storage module defines
``ServerLogConfigs`` and ``CleanerConfig`` and ``KafkaConfig`` includes them: ``SERVER_LOG_KEYS``
(``log.dirs``, the topic configs' broker synonyms, the checkpoint intervals, producer-id
expiration) and ``LOG_MANAGER_KEYS`` (the retention task, the cleaner, the emulator's memory
budget). The log is handed the broker's config as a ``BrokerConfig`` (read by key), so it imports
nothing of the server.

Stateless; no locking.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping, Protocol

import structlog

from kafka_emu.common.config_def import (
    LONG_MAX,
    UNKNOWN,
    ConfigDef,
    ConfigException,
    ConfigKey,
    ConfigValue,
    Dynamic,
    Importance,
    Range,
    Type,
    ValidList,
    ValidString,
    ignored_message,
    strict_refusal,
)

_log = structlog.get_logger("broker.log_config")
HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
MIB = 1024 * 1024
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
MEMORY_BUDGET_CONFIG = "emulator.log.memory.max.bytes"   # the emulator's own (broker.storage.log_manager)


class BrokerConfig(Protocol):
    """What the log layer reads of the broker's configuration, by key: those of
    ``SERVER_LOG_KEYS`` and ``LOG_MANAGER_KEYS``, the broker keys ``TOPIC_CONFIG_SYNONYMS`` names,
    and (``LogManager``) ``broker.id`` and ``replica.high.watermark.checkpoint.interval.ms``.
    ``broker.server.config.KafkaConfig`` is one (its table includes these keys);
    ``BROKER_DEFAULTS`` is the one a log without a broker reads."""

    def __getitem__(self, key: str) -> ConfigValue: ...
    def get(self, key: str, default: ConfigValue = None) -> ConfigValue: ...


# ---- the broker keys of the log layer (KafkaConfig includes them) -----------------------------

def _server_key(name: str, type_: Type, default: ConfigValue, validator: object, importance: Importance,
                doc: str, implemented: bool = True, dynamic: Dynamic = Dynamic.READ_ONLY) -> ConfigKey:
    return ConfigKey(name, type_, default, validator, importance, doc, implemented,  # type: ignore[arg-type]
                     dynamic=dynamic)


def _synonym_key(name: str, type_: Type, default: ConfigValue, validator: object, doc: str,
                 implemented: bool = False, primary: bool = True) -> ConfigKey:
    """A broker-level default of a topic config (``implemented``: the emulator's log acts on it).

    The primary synonym of a topic config (``primary``) is dynamic, as Kafka's
    ``DynamicLogConfig.ReconfigurableConfigs``; the emulator applies it at once exactly when its
    log acts on it (every log's ``LogConfig`` is recomputed). Alternate units
    (``log.retention.hours``) are read-only, as in Kafka."""
    dynamic = Dynamic.READ_ONLY if not primary else Dynamic.APPLIED if implemented else Dynamic.NOT_APPLIED
    return _server_key(name, type_, default, validator, MEDIUM, doc, implemented, dynamic)


def _physical_memory_quarter() -> int:
    """A quarter of the machine's physical memory (the default log memory budget)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 1024 * MIB


_AT_LEAST_0, _AT_LEAST_1 = Range.at_least(0), Range.at_least(1)

# Kafka's ServerLogConfigs (and ProducerStateManagerConfig's producer-id expiration), in the order
# KAFKA_CONFIG_DEF lists them
SERVER_LOG_KEYS: tuple[ConfigKey, ...] = (
    # ProducerStateManagerConfig: producer-id expiration (KIP-854), read by LogManager.remove_expired_producers
    _server_key("producer.id.expiration.ms", Type.INT, 86400000, _AT_LEAST_1, LOW,
                "The time in ms that a topic partition leader will wait before expiring producer IDs (producers "
                "with an ongoing transaction never expire).", dynamic=Dynamic.APPLIED),
    ConfigKey("producer.id.expiration.check.interval.ms", Type.INT, 600000, _AT_LEAST_1, LOW,
              "The interval at which to remove producer IDs that have expired.", internal=True),
    # ServerLogConfigs: broker defaults of topic configs (see TOPIC_CONFIG_SYNONYMS)
    _synonym_key("log.segment.bytes", Type.INT, 1024 * MIB, Range.at_least(1 * MIB), "The maximum size of a single log file.", implemented=True),
    _synonym_key("log.roll.ms", Type.LONG, None, None, "The maximum time before a new log segment is rolled out (in milliseconds).", implemented=True),
    _synonym_key("log.roll.hours", Type.INT, 168, _AT_LEAST_1, "The maximum time before a new log segment is rolled out (in hours).", implemented=True, primary=False),
    _synonym_key("log.roll.jitter.ms", Type.LONG, None, None, "The maximum jitter subtracted from the roll time (in milliseconds).", implemented=True),
    _synonym_key("log.roll.jitter.hours", Type.INT, 0, _AT_LEAST_0, "The maximum jitter subtracted from the roll time (in hours).", implemented=True, primary=False),
    _synonym_key("log.index.size.max.bytes", Type.INT, 10 * MIB, Range.at_least(4), "The maximum size in bytes of the offset index.", implemented=True),
    _synonym_key("log.flush.interval.messages", Type.LONG, LONG_MAX, _AT_LEAST_1, "Messages accumulated on a log partition before they are flushed.", implemented=True),
    _synonym_key("log.flush.interval.ms", Type.LONG, None, None, "The maximum time a message stays in memory before being flushed.", implemented=True),
    _synonym_key("log.flush.scheduler.interval.ms", Type.LONG, LONG_MAX, None, "How often the log flusher checks whether a log needs flushing.", implemented=True, primary=False),
    _synonym_key("log.retention.bytes", Type.LONG, -1, None, "The maximum size of the log before deleting it.", implemented=True),
    _synonym_key("log.retention.ms", Type.LONG, None, None, "How long to keep a log file before deleting it (in milliseconds).", implemented=True),
    _synonym_key("log.retention.minutes", Type.INT, None, None, "How long to keep a log file before deleting it (in minutes).", implemented=True, primary=False),
    _synonym_key("log.retention.hours", Type.INT, 168, None, "How long to keep a log file before deleting it (in hours).", implemented=True, primary=False),
    _synonym_key("log.index.interval.bytes", Type.INT, 4096, _AT_LEAST_0, "The interval with which an entry is added to the offset index.", implemented=True),
    _synonym_key("log.cleaner.delete.retention.ms", Type.LONG, 86400000, _AT_LEAST_0, "How long delete tombstones are retained in compacted logs.", implemented=True),
    _synonym_key("log.cleaner.min.compaction.lag.ms", Type.LONG, 0, _AT_LEAST_0, "The minimum time a message remains uncompacted in the log.", implemented=True),
    _synonym_key("log.cleaner.max.compaction.lag.ms", Type.LONG, LONG_MAX, _AT_LEAST_1, "The maximum time a message remains ineligible for compaction.", implemented=True),
    _synonym_key("log.segment.delete.delay.ms", Type.LONG, 60000, _AT_LEAST_0, "The amount of time to wait before deleting a file from the filesystem."),
    _synonym_key("log.cleaner.min.cleanable.ratio", Type.DOUBLE, 0.5, Range.between(0, 1), "The minimum ratio of dirty log to total log for a log to be cleaned.", implemented=True),
    _synonym_key("log.cleanup.policy", Type.LIST, ["delete"], ValidList(CLEANUP_POLICIES, allow_empty=True), "The default cleanup policy for segments beyond the retention window.", implemented=True),
    _synonym_key("compression.type", Type.STRING, "producer", ValidString(COMPRESSION_TYPES), "The final compression type of a topic's batches.", implemented=True),
    _synonym_key("compression.gzip.level", Type.INT, -1, None, "The compression level to use if compression.type is gzip.", implemented=True),
    _synonym_key("compression.lz4.level", Type.INT, 9, Range.between(1, 17), "The compression level to use if compression.type is lz4.", implemented=True),
    _synonym_key("compression.zstd.level", Type.INT, 3, Range.between(-131072, 22), "The compression level to use if compression.type is zstd.", implemented=True),
    _synonym_key("log.preallocate", Type.BOOLEAN, False, None, "Preallocate the file on disk when creating a new log segment."),
    _synonym_key("log.message.timestamp.type", Type.STRING, "CreateTime", ValidString(TIMESTAMP_TYPES), "Whether the timestamp in the message is create time or log append time.", implemented=True),
    _synonym_key("log.message.timestamp.before.max.ms", Type.LONG, LONG_MAX, _AT_LEAST_0, "How far a message timestamp may lie in the past."),
    _synonym_key("log.message.timestamp.after.max.ms", Type.LONG, 3600000, _AT_LEAST_0, "How far a message timestamp may lie in the future."),
    _synonym_key("log.local.retention.ms", Type.LONG, -2, Range.at_least(-2), "Local retention time of tiered-storage logs (-2: log.retention.ms)."),
    _synonym_key("log.local.retention.bytes", Type.LONG, -2, Range.at_least(-2), "Local retention size of tiered-storage logs (-2: log.retention.bytes)."),
    _server_key("log.dirs", Type.STRING, None, None, HIGH,
                "Comma-separated directories holding the logs in Kafka's layout (unset: log.dir; both unset: "
                "logs in memory only, nothing touches the disk)."),
    _server_key("log.dir", Type.STRING, None, None, HIGH, "The log directory, used when log.dirs is not set."),
    _server_key("log.flush.offset.checkpoint.interval.ms", Type.INT, 60000, _AT_LEAST_0, HIGH,
                "How often the recovery-point-offset-checkpoint is written (with log.dirs)."),
    _server_key("log.flush.start.offset.checkpoint.interval.ms", Type.INT, 60000, _AT_LEAST_0, HIGH,
                "How often the log-start-offset-checkpoint is written (with log.dirs)."),
)

# The log manager's periodic tasks (ServerLogConfigs), Kafka's CleanerConfig and the emulator's
# memory budget
LOG_MANAGER_KEYS: tuple[ConfigKey, ...] = (
    _server_key("log.retention.check.interval.ms", Type.LONG, 300000, _AT_LEAST_1, MEDIUM,
                "The frequency in milliseconds that the log retention task checks for deletable segments."),
    _server_key("log.initial.task.delay.ms", Type.LONG, 30000, _AT_LEAST_0, LOW,
                "The initial delay before the log retention (and other log) tasks first run."),
    _server_key("log.cleaner.enable", Type.BOOLEAN, True, None, MEDIUM,
                "Run the log cleaner (compaction of cleanup.policy=compact topics, __consumer_offsets among them)."),
    _server_key("log.cleaner.backoff.ms", Type.LONG, 15000, _AT_LEAST_0, MEDIUM,
                "The amount of time to sleep when there are no logs to clean.", dynamic=Dynamic.NOT_APPLIED),
    _server_key("log.cleaner.dedupe.buffer.size", Type.LONG, 128 * 1024 * 1024, None, MEDIUM,
                "The total memory used for log deduplication across all cleaner threads (24 bytes per key of "
                "the offset map).", dynamic=Dynamic.NOT_APPLIED),
    _server_key("log.cleaner.io.buffer.load.factor", Type.DOUBLE, 0.9, None, MEDIUM,
                "Log cleaner dedupe buffer load factor: the fraction of the offset map's slots filled before a "
                "cleaning round stops mapping.", dynamic=Dynamic.NOT_APPLIED),
    _server_key(MEMORY_BUDGET_CONFIG, Type.LONG, _physical_memory_quarter(), _AT_LEAST_0, HIGH,
                "Memory all logs may hold together; beyond it the oldest committed segments of the largest "
                "partitions are deleted as if by retention (default: a quarter of physical memory)."),
)

# What a log reads of a broker that is not there (``LogConfig.for_topic`` without one): the
# defaults. Every topic config's broker synonyms defined outside these tables (``message.max.bytes``,
# ``min.insync.replicas``, ``unclean.leader.election.enable``) default to the topic config's own
# default, so a log reads the same values as with a default ``KafkaConfig``.
BROKER_DEFAULTS: Mapping[str, ConfigValue] = MappingProxyType(
    {key.name: key.default for key in (*SERVER_LOG_KEYS, *LOG_MANAGER_KEYS)})


def _topic(name: str, type_: Type, default: ConfigValue, validator: object, doc: str,
           implemented: bool = False) -> ConfigKey:
    return ConfigKey(name, type_, default, validator, MEDIUM, doc, implemented)  # type: ignore[arg-type]


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


def topic_value(name: str, overrides: Mapping[str, ConfigValue], broker: BrokerConfig) -> ConfigValue:
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
                  broker: BrokerConfig | None = None) -> "LogConfig":
        typed = LOG_CONFIG_DEF.parse(overrides or {}).values if overrides else {}
        given = {k: typed[k] for k in (overrides or {}) if k in typed}
        broker = broker if broker is not None else BROKER_DEFAULTS
        return cls({name: topic_value(name, given, broker) for name in LOG_CONFIG_DEF.keys},
                   int(broker["producer.id.expiration.ms"]))  # type: ignore[arg-type]

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy
