"""What DescribeConfigs reports, after Kafka's ``ConfigHelper`` (``createBrokerConfigEntry``,
``createTopicConfigEntry``, ``configSynonyms``): entries computed from the config tables
(``KAFKA_CONFIG_DEF``, ``LOG_CONFIG_DEF``), so clients see the values in force.

Synonyms follow Kafka: for a topic key, the topic override (TOPIC_CONFIG) if any, then the broker
synonyms given in the static broker config (STATIC_BROKER_CONFIG), then those with a non-null
built-in default (DEFAULT_CONFIG), each group in synonym order; broker entries before the first
one named like the primary synonym are dropped (so an un-overridden ``retention.ms`` has no
synonym: its built-in default lives on ``log.retention.hours``). The entry's source is its first
synonym's, else DEFAULT_CONFIG.

Differences from Kafka on purpose: there are no dynamic configs (no AlterConfigs), so no
DYNAMIC_* sources and every broker entry is read-only; keys the emulator does not implement say so
at the start of their documentation. Stateless.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kafka_emu.broker.config import KAFKA_CONFIG_DEF, KafkaConfig
from kafka_emu.broker.config_def import ConfigDef, ConfigKey, ConfigValue, Type, render
from kafka_emu.broker.log_config import LOG_CONFIG_DEF, TOPIC_CONFIG_SYNONYMS, topic_value

# DescribeConfigsResponse ConfigSource ids
SOURCE_TOPIC_CONFIG, SOURCE_STATIC_BROKER_CONFIG, SOURCE_DEFAULT_CONFIG = 1, 4, 5
NOT_IMPLEMENTED_DOC = "Not implemented by the emulator (accepted, no effect). "


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[Synonym, ...]
    config_type: int
    documentation: str


def _rendered(value: ConfigValue) -> str | None:
    return None if value is None else render(value)


def _broker_synonyms(config: KafkaConfig, primary: str, names: list[str]) -> list[Synonym]:
    found = [Synonym(n, _rendered(config[n]), SOURCE_STATIC_BROKER_CONFIG) for n in names if n in config.originals]
    found += [Synonym(n, _rendered(KAFKA_CONFIG_DEF.keys[n].default), SOURCE_DEFAULT_CONFIG)
              for n in names if KAFKA_CONFIG_DEF.keys[n].default is not None]
    for i, synonym in enumerate(found):
        if synonym.name == primary:
            return found[i:]
    return []


def _broker_synonym_names(name: str) -> list[str]:
    """Kafka's ``DynamicBrokerConfig.brokerConfigSynonyms``: the group of keys that set the same
    thing in different units (``log.retention.{ms,minutes,hours}``), else the key alone."""
    for synonyms in TOPIC_CONFIG_SYNONYMS.values():
        names = [s.name for s in synonyms]
        if len(names) > 1 and name in names:
            return names
    return [name]


def _entry(key: ConfigKey, value: ConfigValue, source: int, read_only: bool,
           synonyms: list[Synonym]) -> ConfigEntry:
    sensitive = key.type is Type.PASSWORD
    doc = key.doc if key.implemented else NOT_IMPLEMENTED_DOC + key.doc
    return ConfigEntry(key.name, None if sensitive else _rendered(value), source, read_only, sensitive,
                       tuple(synonyms), int(key.type), doc)


def _wanted(table: ConfigDef, keys: Iterable[str] | None) -> list[ConfigKey]:
    """The described keys in table order; ``keys`` None or empty: all (unknown names omitted)."""
    names = set(keys or ())
    return [k for name, k in table.keys.items() if not k.internal and (not names or name in names)]


def describe_broker(config: KafkaConfig, keys: Iterable[str] | None) -> list[ConfigEntry]:
    entries = []
    for key in _wanted(KAFKA_CONFIG_DEF, keys):
        synonyms = _broker_synonyms(config, key.name, _broker_synonym_names(key.name))
        source = SOURCE_STATIC_BROKER_CONFIG if key.name in config.originals else SOURCE_DEFAULT_CONFIG
        entries.append(_entry(key, config[key.name], source, True, synonyms))
    return entries


def describe_topic(config: KafkaConfig, overrides: Mapping[str, ConfigValue],
                   keys: Iterable[str] | None) -> list[ConfigEntry]:
    entries = []
    for key in _wanted(LOG_CONFIG_DEF, keys):
        names = [s.name for s in TOPIC_CONFIG_SYNONYMS.get(key.name, ())]
        synonyms = _broker_synonyms(config, names[0], names) if names else []
        if key.name in overrides:
            synonyms.insert(0, Synonym(key.name, _rendered(overrides[key.name]), SOURCE_TOPIC_CONFIG))
        source = synonyms[0].source if synonyms else SOURCE_DEFAULT_CONFIG
        entries.append(_entry(key, topic_value(key.name, overrides, config), source, False, synonyms))
    return entries
