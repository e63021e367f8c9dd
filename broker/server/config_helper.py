"""What DescribeConfigs reports, after Kafka's ``ConfigHelper`` (``createBrokerConfigEntry``,
``createTopicConfigEntry``, ``configSynonyms``): entries computed from the config tables
(``KAFKA_CONFIG_DEF``, ``LOG_CONFIG_DEF``, the group configs' ``GROUP_CONFIG_DEF``) and the broker's dynamic configs
(``DynamicBrokerConfig``), so clients see the values in force.

Synonyms follow Kafka: for a topic key, the topic override (TOPIC_CONFIG) if any, then its broker
synonyms as found in the per-broker dynamic configs (DYNAMIC_BROKER_CONFIG), the cluster-wide
dynamic configs (DYNAMIC_DEFAULT_BROKER_CONFIG), the static broker config (STATIC_BROKER_CONFIG)
and the non-null built-in defaults (DEFAULT_CONFIG), each group in synonym order; broker entries
before the first one named like the primary synonym are dropped (so an un-overridden
``retention.ms`` has no synonym: its built-in default lives on ``log.retention.hours``). An
entry's source is its first synonym's, else DEFAULT_CONFIG. The cluster-wide BROKER resource
(name ``""``) describes only the keys set there, without per-broker synonyms.

Differences from Kafka on purpose: ``read_only`` is false only for the broker keys the emulator
changes at run time (``Dynamic.APPLIED``), not for every key Kafka marks dynamic, since altering
the others is refused; keys the emulator does not implement say so at the start of their
documentation. Stateless.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kafka_emu.broker.server.client_metrics_config import CLIENT_METRICS_CONFIG_DEF
from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF
from kafka_emu.common.config_def import ConfigDef, ConfigKey, ConfigValue, Dynamic, Type, render
from kafka_emu.broker.server.dynamic_config import DynamicBrokerConfig
from kafka_emu.broker.storage.log_config import LOG_CONFIG_DEF, TOPIC_CONFIG_SYNONYMS, topic_value
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.coordinator.group.group_config import GROUP_CONFIG_DEF, broker_group_values

# DescribeConfigsResponse ConfigSource ids
SOURCE_TOPIC_CONFIG, SOURCE_DYNAMIC_BROKER_CONFIG, SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
SOURCE_STATIC_BROKER_CONFIG, SOURCE_DEFAULT_CONFIG = 4, 5
SOURCE_GROUP_CONFIG = 8
SOURCE_CLIENT_METRICS_CONFIG = 7
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


def _broker_synonyms(view: DynamicBrokerConfig, primary: str, names: list[str],
                     per_broker: bool = True) -> list[Synonym]:
    """Kafka's ``ConfigHelper.configSynonyms`` (``per_broker=False``: the cluster-wide resource's
    view, without DYNAMIC_BROKER_CONFIG entries)."""
    layers: list[tuple[int, Mapping[str, ConfigValue]]] = [(SOURCE_DYNAMIC_BROKER_CONFIG, view.per_broker)] \
        if per_broker else []
    layers.append((SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG, view.cluster_default))
    found = [Synonym(n, _rendered(values[n]), source) for source, values in layers for n in names if n in values]
    found += [Synonym(n, _rendered(view.static[n]), SOURCE_STATIC_BROKER_CONFIG)
              for n in names if n in view.static.originals]
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
    if sensitive:   # a password is never described, not even through its synonyms
        synonyms = [Synonym(s.name, None, s.source) for s in synonyms]
    return ConfigEntry(key.name, None if sensitive else _rendered(value), source, read_only, sensitive,
                       tuple(synonyms), int(key.type), doc)


def _wanted(table: ConfigDef, keys: Iterable[str] | None) -> list[ConfigKey]:
    """The described keys in table order; ``keys`` None or empty: all (unknown names omitted)."""
    names = set(keys or ())
    return [k for name, k in table.keys.items() if not k.internal and (not names or name in names)]


def describe_broker(view: DynamicBrokerConfig, keys: Iterable[str] | None,
                    per_broker: bool = True) -> list[ConfigEntry]:
    """This broker's configs (``per_broker``), or the cluster-wide dynamic ones (resource "")."""
    current = view.current()
    entries = []
    for key in _wanted(KAFKA_CONFIG_DEF, keys):
        if not per_broker and key.name not in view.cluster_default:
            continue
        value = current[key.name] if per_broker else view.cluster_default[key.name]
        synonyms = _broker_synonyms(view, key.name, _broker_synonym_names(key.name), per_broker)
        source = synonyms[0].source if synonyms else SOURCE_DEFAULT_CONFIG
        entries.append(_entry(key, value, source, key.dynamic is not Dynamic.APPLIED, synonyms))
    return entries


def describe_topic(view: DynamicBrokerConfig, overrides: Mapping[str, ConfigValue],
                   keys: Iterable[str] | None) -> list[ConfigEntry]:
    current = view.current()
    entries = []
    for key in _wanted(LOG_CONFIG_DEF, keys):
        names = [s.name for s in TOPIC_CONFIG_SYNONYMS.get(key.name, ())]
        synonyms = _broker_synonyms(view, names[0], names) if names else []
        if key.name in overrides:
            synonyms.insert(0, Synonym(key.name, _rendered(overrides[key.name]), SOURCE_TOPIC_CONFIG))
        source = synonyms[0].source if synonyms else SOURCE_DEFAULT_CONFIG
        entries.append(_entry(key, topic_value(key.name, overrides, current), source, False, synonyms))
    return entries


def describe_group(view: DynamicBrokerConfig, overrides: Mapping[str, ConfigValue],
                   keys: Iterable[str] | None) -> list[ConfigEntry]:
    """A GROUP resource (Kafka's ``createGroupConfigEntry``): each group key's override
    (GROUP_CONFIG) or the broker's ``group.consumer.*`` value (DEFAULT_CONFIG, as Kafka reports
    it), one synonym of the same name and source."""
    defaults = broker_group_values(GroupCoordinatorConfig.from_mapping(view.current().as_dict()))
    entries = []
    for key in _wanted(GROUP_CONFIG_DEF, keys):
        overridden = key.name in overrides
        value = overrides[key.name] if overridden else defaults[key.name]
        source = SOURCE_GROUP_CONFIG if overridden else SOURCE_DEFAULT_CONFIG
        entries.append(_entry(key, value, source, False, [Synonym(key.name, _rendered(value), source)]))
    return entries


def describe_client_metrics(stored: Mapping[str, ConfigValue], keys: Iterable[str] | None) -> list[ConfigEntry]:
    """A CLIENT_METRICS resource's configs (Kafka's ``createClientMetricsConfigEntry``): every key,
    the stored value (CLIENT_METRICS_CONFIG, its one synonym) or the default (DEFAULT_CONFIG)."""
    entries = []
    for key in _wanted(CLIENT_METRICS_CONFIG_DEF, keys):
        if key.name in stored:
            value = stored[key.name]
            synonyms = [Synonym(key.name, _rendered(value), SOURCE_CLIENT_METRICS_CONFIG)]
        else:
            value, synonyms = key.default, []
        source = synonyms[0].source if synonyms else SOURCE_DEFAULT_CONFIG
        entries.append(_entry(key, value, source, False, synonyms))
    return entries
