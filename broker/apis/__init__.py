"""The APIs the broker serves, gathered from the handler modules' declarations.

Each module here declares ``APIS``, one ``ApiSpec`` (key, name, version range, handler) per API
it serves. ``APIS`` below is their union, the single statement of what the broker speaks: KafkaApis
dispatches on it, ApiVersions advertises it and the network processors admit only what it
serves (``api_versions.DefaultApiVersionManager``, handed to them). Each range is what kio
decodes and the handler fills correctly; versions newer than a handler understands are left out
rather than half-served.

Deliberately absent: GetTelemetrySubscriptions (librdkafka calls it only when advertised).
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

from kafka_emu.broker.apis import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    api_versions,
    consumer_group,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    group,
    init_producer_id,
    list_offsets,
    list_transactions,
    metadata,
    offset_for_leader_epoch,
    partition_reassignments,
    produce,
    txn_offset_commit,
    write_txn_markers,
)
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.config import KAFKA_4X

_MODULES = (produce, fetch, list_offsets, metadata, group, find_coordinator, api_versions, create_topics,
            delete_topics, describe_cluster, describe_configs, init_producer_id, create_partitions, alter_configs,
            delete_records, offset_for_leader_epoch, elect_leaders, describe_log_dirs, describe_producers,
            partition_reassignments, write_txn_markers, add_partitions_to_txn, add_offsets_to_txn, end_txn,
            txn_offset_commit, describe_transactions, list_transactions, consumer_group)


def _collect() -> Mapping[int, ApiSpec]:
    table: dict[int, ApiSpec] = {}
    for module in _MODULES:
        for spec in module.APIS:
            if spec.api_key in table:
                raise ValueError(f"api key {spec.api_key} declared twice ({table[spec.api_key].name}, {spec.name})")
            table[spec.api_key] = spec
    return MappingProxyType(dict(sorted(table.items())))


APIS: Mapping[int, ApiSpec] = _collect()


def api_name(api_key: int) -> str:
    """Kafka's name of ``api_key`` for logs and metric labels (``Unknown(<key>)`` if not served)."""
    spec = APIS.get(api_key)
    return spec.name if spec is not None else f"Unknown({api_key})"


def is_supported(api_key: int, api_version: int, compatibility: str = KAFKA_4X) -> bool:
    """Whether the broker serves ``api_version`` of ``api_key`` in ``compatibility`` mode
    (``emulator.api.compatibility``). Everything else closes the connection, as in Kafka."""
    spec = APIS.get(api_key)
    return spec is not None and spec.supports(api_version, compatibility)


__all__ = ["APIS", "ApiSpec", "api_name", "is_supported"]
