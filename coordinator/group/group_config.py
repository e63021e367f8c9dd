"""Per-group configs (KIP-848's GROUP config resource), after Kafka's ``GroupConfig`` and
``GroupConfigManager``.

A group's dynamic configs are set with IncrementalAlterConfigs/AlterConfigs on a GROUP resource
(the broker keeps them in its cluster metadata, as Kafka's controller keeps ConfigRecords) and
override the broker's ``group.consumer.*`` values for that group: the coordinator reads them on
every heartbeat, so a change acts from the member's next heartbeat (the interval it is told, the
session timeout armed).

``validate_group_configs`` is Kafka's ``GroupConfigManager.validate`` on the consumer keys: the
new overrides over the broker's values (``extractConsumerGroupConfigMap``) must each lie within
the broker's ``group.consumer.{min,max}.*`` bounds, and the session timeout must exceed the
heartbeat interval; an unknown name is "Unknown group config name: <name>" (INVALID_CONFIG).

Differences from Kafka on purpose: only the consumer keys are defined. Kafka 4.1's share
(``share.*``) and streams (``streams.*``) group keys belong to group types the emulator does not
serve: setting one is refused with INVALID_CONFIG saying so, and DescribeConfigs does not list
them.
"""
from __future__ import annotations

from typing import Mapping

from kafka_emu.common.config_def import (
    ConfigDef,
    ConfigException,
    ConfigKey,
    ConfigValue,
    Importance,
    Range,
    Type,
)
from kafka_emu.coordinator.group.config import DEFAULTS, GroupCoordinatorConfig

CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"

# Kafka 4.1's other GroupConfig keys (share and streams groups)
_UNSERVED = ("share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
             "share.auto.offset.reset", "share.isolation.level", "streams.session.timeout.ms",
             "streams.heartbeat.interval.ms", "streams.num.standby.replicas")

GROUP_CONFIG_DEF = ConfigDef([
    ConfigKey(CONSUMER_SESSION_TIMEOUT_MS, Type.INT, DEFAULTS["group.consumer.session.timeout.ms"],
              Range.at_least(1), Importance.MEDIUM,
              "The timeout to detect client failures when using the consumer group protocol "
              "(overrides group.consumer.session.timeout.ms for this group)."),
    ConfigKey(CONSUMER_HEARTBEAT_INTERVAL_MS, Type.INT, DEFAULTS["group.consumer.heartbeat.interval.ms"],
              Range.at_least(1), Importance.MEDIUM,
              "The heartbeat interval given to the members (overrides group.consumer.heartbeat.interval.ms "
              "for this group)."),
], known_names=_UNSERVED)


def broker_group_values(config: GroupCoordinatorConfig) -> dict[str, int]:
    """Kafka's ``extractConsumerGroupConfigMap``: what a group without overrides gets."""
    return {CONSUMER_SESSION_TIMEOUT_MS: config.consumer_group_session_timeout_ms,
            CONSUMER_HEARTBEAT_INTERVAL_MS: config.consumer_group_heartbeat_interval_ms}


def validate_group_configs(configs: Mapping[str, object], config: GroupCoordinatorConfig) -> dict[str, ConfigValue]:
    """Typed overrides for one group, or ``ConfigException`` with Kafka's message."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise ConfigException("Null value not supported for group configs: " + ",".join(nulls))
    for name in configs:
        if GROUP_CONFIG_DEF.key(name) is None:
            if GROUP_CONFIG_DEF.is_known(name):
                raise ConfigException(f"The group config '{name}' is defined by Kafka for share or streams "
                                      "groups, which the emulator does not serve.")
            raise ConfigException(f"Unknown group config name: {name}")
    typed = {name: GROUP_CONFIG_DEF.keys[name].parse(name, value) for name, value in configs.items()}
    values = {**broker_group_values(config), **typed}
    heartbeat, session = values[CONSUMER_HEARTBEAT_INTERVAL_MS], values[CONSUMER_SESSION_TIMEOUT_MS]
    assert isinstance(heartbeat, int) and isinstance(session, int)
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
    )
    for failed, name, relation, other in checks:
        if failed:
            raise ConfigException(f"{name} must be {relation} {other}")
    return typed
