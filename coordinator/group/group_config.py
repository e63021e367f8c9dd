"""Per-group configs (KIP-848's GROUP config resource), after Kafka's ``GroupConfig`` and
``GroupConfigManager``.

A group's dynamic configs are set with IncrementalAlterConfigs/AlterConfigs on a GROUP resource
(the broker keeps them in its cluster metadata, as Kafka's controller keeps ConfigRecords) and
override the broker's ``group.consumer.*`` values for that group: the coordinator reads them on
every heartbeat, so a change acts from the member's next heartbeat (the interval it is told, the
session timeout armed).

``validate_group_configs`` is Kafka's ``GroupConfigManager.validate``: the
new overrides over the broker's values (``extractConsumerGroupConfigMap``) must each lie within
the broker's ``group.consumer.{min,max}.*`` bounds, and the session timeout must exceed the
heartbeat interval; an unknown name is "Unknown group config name: <name>" (INVALID_CONFIG).

The share group keys (KIP-932: Kafka 4.1's and 4.2's ``share.*`` GroupConfig keys, and
``share.delivery.count.limit`` and ``share.partition.max.record.locks`` of Kafka's next release)
override the broker's ``group.share.*`` values for one share group:
the session timeout and heartbeat interval (read by the coordinator on every heartbeat), the record
lock duration, delivery count limit and in-flight record limit (read by the share-partition leader when it acquires or
releases records), ``share.auto.offset.reset`` (``latest``, ``earliest`` or ``by_duration:<ISO-8601
duration>``, read when a share partition is first initialized) and ``share.isolation.level``.

Differences from Kafka on purpose: the two keys of Kafka's next release are accepted whatever
``emulator.kafka.version`` (4.1 and 4.2 would refuse them as unknown), because
confluent-kafka's ShareConsumer tests set them; the streams group keys (``streams.*``) belong to a group type
the emulator does not serve: setting one is refused with INVALID_CONFIG saying so, and
DescribeConfigs does not list them.
"""
from __future__ import annotations

import re
from typing import Mapping

from kafka_emu.common.config_def import (
    ConfigDef,
    ConfigException,
    ConfigKey,
    ConfigValue,
    Importance,
    Range,
    Type,
    ValidString,
)
from kafka_emu.coordinator.group.config import DEFAULTS, GroupCoordinatorConfig

CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"

SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"
BY_DURATION = "by_duration:"

# Kafka 4.1's other GroupConfig keys (streams groups)
_UNSERVED = ("streams.session.timeout.ms", "streams.heartbeat.interval.ms", "streams.num.standby.replicas")

_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_by_duration(value: str) -> int | None:
    """The milliseconds of a ``by_duration:<ISO-8601 duration>`` reset (Java's
    ``Duration.parse``, days to seconds; no negative durations), None if it does not parse."""
    m = _ISO_DURATION.match(value[len(BY_DURATION):]) if value.startswith(BY_DURATION) else None
    if m is None or not any(m.groups()) or value.endswith("T"):
        return None
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


def _auto_offset_reset(name: str, value: ConfigValue) -> None:
    text = str(value)
    if text in ("latest", "earliest"):
        return
    if text.startswith(BY_DURATION) and parse_by_duration(text) is not None:
        return
    if text.startswith(BY_DURATION):
        raise ConfigException(name, value, "Invalid duration format for by_duration offset reset strategy.")
    raise ConfigException(name, value, "Invalid value `" + text + "` for configuration " + name
                          + ". The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.")

GROUP_CONFIG_DEF = ConfigDef([
    ConfigKey(CONSUMER_SESSION_TIMEOUT_MS, Type.INT, DEFAULTS["group.consumer.session.timeout.ms"],
              Range.at_least(1), Importance.MEDIUM,
              "The timeout to detect client failures when using the consumer group protocol "
              "(overrides group.consumer.session.timeout.ms for this group)."),
    ConfigKey(CONSUMER_HEARTBEAT_INTERVAL_MS, Type.INT, DEFAULTS["group.consumer.heartbeat.interval.ms"],
              Range.at_least(1), Importance.MEDIUM,
              "The heartbeat interval given to the members (overrides group.consumer.heartbeat.interval.ms "
              "for this group)."),
    ConfigKey(SHARE_SESSION_TIMEOUT_MS, Type.INT, DEFAULTS["group.share.session.timeout.ms"],
              Range.at_least(1), Importance.MEDIUM,
              "The timeout to detect client failures when using the share group protocol "
              "(overrides group.share.session.timeout.ms for this group)."),
    ConfigKey(SHARE_HEARTBEAT_INTERVAL_MS, Type.INT, DEFAULTS["group.share.heartbeat.interval.ms"],
              Range.at_least(1), Importance.MEDIUM,
              "The heartbeat interval given to the members of a share group (overrides "
              "group.share.heartbeat.interval.ms for this group)."),
    ConfigKey(SHARE_RECORD_LOCK_DURATION_MS, Type.INT, DEFAULTS["group.share.record.lock.duration.ms"],
              Range.at_least(1000), Importance.MEDIUM,
              "The record acquisition lock duration in milliseconds for share groups (overrides "
              "group.share.record.lock.duration.ms for this group)."),
    ConfigKey(SHARE_DELIVERY_COUNT_LIMIT, Type.INT, DEFAULTS["group.share.delivery.count.limit"],
              Range.at_least(2), Importance.MEDIUM,
              "The maximum number of delivery attempts for a record delivered to this share group "
              "(overrides group.share.delivery.count.limit)."),
    ConfigKey(SHARE_PARTITION_MAX_RECORD_LOCKS, Type.INT, DEFAULTS["group.share.partition.max.record.locks"],
              Range.at_least(100), Importance.MEDIUM,
              "The maximum number of records in flight per share partition of this group (at most the "
              "broker's group.share.partition.max.record.locks)."),
    ConfigKey(SHARE_AUTO_OFFSET_RESET, Type.STRING, "latest", _auto_offset_reset, Importance.MEDIUM,
              "The strategy to initialize the share-partition start offset: latest, earliest or "
              "by_duration:<ISO-8601 duration>."),
    ConfigKey(SHARE_ISOLATION_LEVEL, Type.STRING, READ_UNCOMMITTED, ValidString((READ_UNCOMMITTED, READ_COMMITTED)),
              Importance.MEDIUM, "How to read records written transactionally: read_committed returns "
                                 "only committed records, read_uncommitted all of them."),
], known_names=_UNSERVED)


def broker_group_values(config: GroupCoordinatorConfig) -> dict[str, int | str]:
    """Kafka's ``extractConsumerGroupConfigMap`` and ``extractShareGroupConfigMap``: what a group
    without overrides gets."""
    return {CONSUMER_SESSION_TIMEOUT_MS: config.consumer_group_session_timeout_ms,
            CONSUMER_HEARTBEAT_INTERVAL_MS: config.consumer_group_heartbeat_interval_ms,
            SHARE_SESSION_TIMEOUT_MS: config.share_group_session_timeout_ms,
            SHARE_HEARTBEAT_INTERVAL_MS: config.share_group_heartbeat_interval_ms,
            SHARE_RECORD_LOCK_DURATION_MS: config.share_group_record_lock_duration_ms,
            SHARE_DELIVERY_COUNT_LIMIT: config.share_group_delivery_count_limit,
            SHARE_PARTITION_MAX_RECORD_LOCKS: config.share_group_partition_max_record_locks,
            SHARE_AUTO_OFFSET_RESET: "latest", SHARE_ISOLATION_LEVEL: READ_UNCOMMITTED}


def validate_group_configs(configs: Mapping[str, object], config: GroupCoordinatorConfig) -> dict[str, ConfigValue]:
    """Typed overrides for one group, or ``ConfigException`` with Kafka's message."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise ConfigException("Null value not supported for group configs: " + ",".join(nulls))
    for name in configs:
        if GROUP_CONFIG_DEF.key(name) is None:
            if GROUP_CONFIG_DEF.is_known(name):
                raise ConfigException(f"The group config '{name}' is defined by Kafka for streams "
                                      "groups, which the emulator does not serve.")
            raise ConfigException(f"Unknown group config name: {name}")
    typed = {name: GROUP_CONFIG_DEF.keys[name].parse(name, value) for name, value in configs.items()}
    values = {**broker_group_values(config), **typed}
    heartbeat, session = values[CONSUMER_HEARTBEAT_INTERVAL_MS], values[CONSUMER_SESSION_TIMEOUT_MS]
    share_heartbeat, share_session = values[SHARE_HEARTBEAT_INTERVAL_MS], values[SHARE_SESSION_TIMEOUT_MS]
    lock, deliveries = values[SHARE_RECORD_LOCK_DURATION_MS], values[SHARE_DELIVERY_COUNT_LIMIT]
    locks = values[SHARE_PARTITION_MAX_RECORD_LOCKS]
    assert isinstance(heartbeat, int) and isinstance(session, int)
    assert isinstance(share_heartbeat, int) and isinstance(share_session, int)
    assert isinstance(lock, int) and isinstance(deliveries, int) and isinstance(locks, int)
    checks = (
        (heartbeat < config.consumer_group_min_heartbeat_interval_ms, CONSUMER_HEARTBEAT_INTERVAL_MS,
         "greater than or equal to", "group.consumer.min.heartbeat.interval.ms"),
        (heartbeat > config.consumer_group_max_heartbeat_interval_ms, CONSUMER_HEARTBEAT_INTERVAL_MS,
         "less than or equal to", "group.consumer.max.heartbeat.interval.ms"),
        (session < config.consumer_group_min_session_timeout_ms, CONSUMER_SESSION_TIMEOUT_MS,
         "greater than or equal to", "group.consumer.min.session.timeout.ms"),
        (session > config.consumer_group_max_session_timeout_ms, CONSUMER_SESSION_TIMEOUT_MS,
         "less than or equal to", "group.consumer.max.session.timeout.ms"),
        (session <= heartbeat, CONSUMER_SESSION_TIMEOUT_MS, "greater than", CONSUMER_HEARTBEAT_INTERVAL_MS),
        (share_heartbeat < config.share_group_min_heartbeat_interval_ms, SHARE_HEARTBEAT_INTERVAL_MS,
         "greater than or equal to", "group.share.min.heartbeat.interval.ms"),
        (share_heartbeat > config.share_group_max_heartbeat_interval_ms, SHARE_HEARTBEAT_INTERVAL_MS,
         "less than or equal to", "group.share.max.heartbeat.interval.ms"),
        (share_session < config.share_group_min_session_timeout_ms, SHARE_SESSION_TIMEOUT_MS,
         "greater than or equal to", "group.share.min.session.timeout.ms"),
        (share_session > config.share_group_max_session_timeout_ms, SHARE_SESSION_TIMEOUT_MS,
         "less than or equal to", "group.share.max.session.timeout.ms"),
        (share_session <= share_heartbeat, SHARE_SESSION_TIMEOUT_MS, "greater than", SHARE_HEARTBEAT_INTERVAL_MS),
        (lock < config.share_group_min_record_lock_duration_ms, SHARE_RECORD_LOCK_DURATION_MS,
         "greater than or equal to", "group.share.min.record.lock.duration.ms"),
        (lock > config.share_group_max_record_lock_duration_ms, SHARE_RECORD_LOCK_DURATION_MS,
         "less than or equal to", "group.share.max.record.lock.duration.ms"),
        (deliveries < config.share_group_min_delivery_count_limit, SHARE_DELIVERY_COUNT_LIMIT,
         "greater than or equal to", "group.share.min.delivery.count.limit"),
        (deliveries > config.share_group_max_delivery_count_limit, SHARE_DELIVERY_COUNT_LIMIT,
         "less than or equal to", "group.share.max.delivery.count.limit"),
        (locks > config.share_group_partition_max_record_locks, SHARE_PARTITION_MAX_RECORD_LOCKS,
         "less than or equal to", "group.share.partition.max.record.locks"),
    )
    for failed, name, relation, other in checks:
        if failed:
            raise ConfigException(f"{name} must be {relation} {other}")
    return typed
