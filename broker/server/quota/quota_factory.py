"""QuotaManagers: a broker's four client quota managers, and the quota records applied to them.

Kafka's ``QuotaFactory.instantiate`` (Fetch and Produce byte rates, request time, controller
mutations: the windows come from ``quota.window.*`` and ``controller.quota.window.*``; threads
are named ``broker-<id>-ThrottledChannelReaper-<type>``) and ``ClientQuotaMetadataManager``
(``apply``: a quota record's key picks the manager, its entity the level: a named or default
user and/or client id). Replication quotas (``leader.replication.throttled.rate`` ...) are not
implemented.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import structlog

from kafka_emu.broker.server.quota.client_quota_manager import (
    DEFAULT,
    ClientQuotaConfig,
    ClientQuotaManager,
    QuotaEntity,
    QuotaManagerSnapshot,
    QuotaType,
)
from kafka_emu.broker.server.quota.client_request_quota_manager import ClientRequestQuotaManager
from kafka_emu.broker.server.quota.controller_mutation_quota_manager import ControllerMutationQuotaManager
from kafka_emu.broker.server.quota.quota_config import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    CONTROLLER_QUOTA_WINDOW_NUM,
    CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS,
    PRODUCER_BYTE_RATE,
    QUOTA_WINDOW_NUM,
    QUOTA_WINDOW_SIZE_SECONDS,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuotaEntity,
)
from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.quota")


@dataclass(frozen=True)
class QuotaManagers:
    fetch: ClientQuotaManager
    produce: ClientQuotaManager
    request: ClientRequestQuotaManager
    controller_mutation: ControllerMutationQuotaManager

    @classmethod
    def instantiate(cls, config: Mapping[str, object], time: Time, broker_id: int) -> "QuotaManagers":
        client = ClientQuotaConfig(int(config[QUOTA_WINDOW_NUM]), int(config[QUOTA_WINDOW_SIZE_SECONDS]))  # type: ignore[call-overload]
        mutation = ClientQuotaConfig(int(config[CONTROLLER_QUOTA_WINDOW_NUM]),  # type: ignore[call-overload]
                                     int(config[CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS]))  # type: ignore[call-overload]
        prefix = f"broker-{broker_id}-"
        return cls(ClientQuotaManager(client, QuotaType.FETCH, time, prefix, broker_id),
                   ClientQuotaManager(client, QuotaType.PRODUCE, time, prefix, broker_id),
                   ClientRequestQuotaManager(client, time, prefix, broker_id),
                   ControllerMutationQuotaManager(mutation, time, prefix, broker_id))

    def all(self) -> tuple[ClientQuotaManager, ...]:
        return self.fetch, self.produce, self.request, self.controller_mutation

    def any_enabled(self) -> bool:
        """Whether a quota of any kind was ever set (each manager's flag only grows; read without
        its lock, as Kafka reads its volatile ``quotaTypesEnabled``)."""
        # compared as ints: IntFlag's | and bool() are Python-level calls, on every request
        return (self.fetch.quota_types_enabled != 0 or self.produce.quota_types_enabled != 0
                or self.request.quota_types_enabled != 0 or self.controller_mutation.quota_types_enabled != 0)

    def start(self) -> None:
        for manager in self.all():
            manager.start()

    def shutdown(self) -> None:
        for manager in self.all():
            manager.initiate_shutdown()
        for manager in self.all():
            manager.throttled_channel_reaper.await_shutdown()

    def apply(self, entity: ClientQuotaEntity, changes: Mapping[str, float | None]) -> None:
        """A quota record from the cluster metadata: each changed key of ``entity`` to its
        manager (Kafka's ``ClientQuotaMetadataManager.handleUserClientQuotaChange``)."""
        names = dict(entity)
        if USER not in names and CLIENT_ID not in names:
            _log.warning("quota_entity_ignored", entity=str(entity), message=f"unsupported quota entity {entity}")
            return
        target = QuotaEntity(_level(names, USER), _level(names, CLIENT_ID))
        managers = {CONSUMER_BYTE_RATE: self.fetch, PRODUCER_BYTE_RATE: self.produce,
                    REQUEST_PERCENTAGE: self.request, CONTROLLER_MUTATION_RATE: self.controller_mutation}
        for key, value in changes.items():
            manager = managers.get(key)
            if manager is None:
                _log.warning("quota_key_ignored", key=key, message=f"ignoring unexpected quota key {key}")
                continue
            manager.update_quota(target, value)

    def snapshot(self) -> tuple[QuotaManagerSnapshot, ...]:
        return tuple(manager.snapshot() for manager in self.all())


def _level(names: Mapping[str, str | None], entity_type: str) -> str | object | None:
    """An entity part as the managers take it: absent (None), DEFAULT, or the name."""
    if entity_type not in names:
        return None
    name = names[entity_type]
    return DEFAULT if name is None else name
