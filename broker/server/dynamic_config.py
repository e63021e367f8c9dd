"""DynamicBrokerConfig: a broker's configuration in force, its static config plus the dynamic
broker configs set with AlterConfigs / IncrementalAlterConfigs (after Kafka's
``DynamicBrokerConfig``).

Kafka keeps dynamic broker configs in the cluster metadata, per broker (BROKER resource named by
the broker id: ``DYNAMIC_BROKER_CONFIG``) and cluster-wide (the resource named ``""``:
``DYNAMIC_DEFAULT_BROKER_CONFIG``); here ``MetadataStore.broker_configs`` holds both. Precedence:
per-broker dynamic > cluster-wide dynamic > static (``server.properties``) > built-in default
(``DynamicBrokerConfig.current``). A broker applies a change at once: ``KafkaServer`` hears it
from the metadata store and hands the new config to the ``ReplicaManager``, which recomputes
every log's ``LogConfig`` (Kafka's ``DynamicLogConfig.reconfigure``).

``validate_broker_configs`` is Kafka's ``DynamicBrokerConfig.validate`` as the broker runs it
before forwarding an alteration (``ConfigAdminManager.validateBrokerConfigChange``): a key Kafka
does not mark dynamic is refused with INVALID_REQUEST ("Cannot update these configs
dynamically", Kafka's wording and code, KAFKA-13609), so is a bad value.

Differences from Kafka on purpose: a key Kafka marks dynamic that the emulator reads at start-up
only (``Dynamic.NOT_APPLIED``: thread pool sizes, unimplemented log settings), and a key Kafka
does not define or the emulator does not model, is refused with INVALID_CONFIG naming it (Kafka
accepts the latter and ignores it); no key is per-broker only (Kafka's are the listener and SSL
configs, which the emulator does not model).

Immutable values; no locking (the metadata store hands out copies).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF, KafkaConfig
from kafka_emu.common.config_def import ConfigException, ConfigValue, Dynamic
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.server.metadata_store import MetadataStore

CLUSTER_DEFAULT = ""   # the BROKER resource name of the cluster-wide dynamic defaults


def _scala_set(names: list[str]) -> str:
    return f"Set({', '.join(names)})"


def validate_broker_configs(configs: Mapping[str, object]) -> dict[str, ConfigValue]:
    """The typed dynamic config of one BROKER resource (per-broker or cluster-wide: every
    dynamic key here may be either), or ``KafkaError`` naming the refused keys."""
    keys = {name: KAFKA_CONFIG_DEF.key(name) for name in configs}
    read_only = sorted(n for n, k in keys.items() if k is not None and k.dynamic is Dynamic.READ_ONLY)
    if read_only:
        raise KafkaError(Errors.INVALID_REQUEST, f"Cannot update these configs dynamically: {_scala_set(read_only)}")
    not_applied = sorted(n for n, k in keys.items() if k is None or k.dynamic is Dynamic.NOT_APPLIED)
    if not_applied:
        raise KafkaError(Errors.INVALID_CONFIG, f"The emulator does not apply these configs at run time: "
                                                f"{_scala_set(not_applied)}")
    typed: dict[str, ConfigValue] = {}
    for name, value in configs.items():
        try:
            typed[name] = keys[name].parse(name, value)  # type: ignore[union-attr]
        except ConfigException as exc:
            raise KafkaError(Errors.INVALID_REQUEST, str(exc)) from None
    return typed


@dataclass(frozen=True)
class DynamicBrokerConfig:
    """One broker's static config and the dynamic broker configs that apply to it."""

    static: KafkaConfig
    cluster_default: Mapping[str, ConfigValue]   # DYNAMIC_DEFAULT_BROKER_CONFIG
    per_broker: Mapping[str, ConfigValue]        # DYNAMIC_BROKER_CONFIG

    @classmethod
    def of(cls, static: KafkaConfig, metadata: MetadataStore) -> DynamicBrokerConfig:
        return cls(static, metadata.broker_configs(CLUSTER_DEFAULT),
                   metadata.broker_configs(str(static.broker_id)))

    def current(self) -> KafkaConfig:
        """The config in force (Kafka's ``DynamicBrokerConfig.currentKafkaConfig``)."""
        if not self.cluster_default and not self.per_broker:
            return self.static
        return KafkaConfig({**self.static.originals, **self.cluster_default, **self.per_broker})
