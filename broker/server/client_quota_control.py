"""ClientQuotaControl: the cluster's client quotas as the controller keeps them.

After Kafka's ``ClientQuotaControlManager`` (AlterClientQuotas: validate each alteration, then
apply the changed keys) and ``ClientQuotasImage.describe`` (DescribeClientQuotas: the entities a
filter matches). The ``MetadataStore`` owns one, alters it under its controller lock, persists it
with the rest of the controller state and tells the brokers each entity's changed keys.

Validation, in Kafka's order and words: a duplicate key or entity in one request; an empty
entity, an unknown entity type, a duplicate type or an empty name; an IP entity combined with a
user or client id; then each set value: a key valid for the entity's kind, greater than 0,
integral for the byte rates. Removing a key that is not set changes nothing. ``validate_only``
checks and changes nothing.

Difference from Kafka on purpose: IP quotas (``connection_creation_rate``, KIP-612) are refused
with INVALID_REQUEST naming them: the emulator has no connection-rate limits, and storing a
quota it would not enforce would be silently wrong. No entity can match an IP filter, so
DescribeClientQuotas of IPs answers empty (its filter checks are Kafka's).

Locking: none of its own; the ``MetadataStore`` serialises every call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kafka_emu.broker.server.quota.quota_config import (
    CLIENT_ID,
    IP,
    IP_QUOTA_KEYS,
    USER,
    USER_AND_CLIENT_QUOTA_KEYS,
    ClientQuotaEntity,
    describe_entity,
    entity_of,
)
from kafka_emu.common.errors import Errors, KafkaError

MATCH_TYPE_EXACT, MATCH_TYPE_DEFAULT, MATCH_TYPE_SPECIFIED = 0, 1, 2
ENTITY_TYPES = (USER, CLIENT_ID, IP)

QuotaOps = list[tuple[str, "float | None"]]   # (key, value or None to remove), as the request lists them


@dataclass(frozen=True, slots=True)
class AlterResult:
    entity: list[tuple[str, str | None]]   # as the request named it
    error: int
    message: str | None = None


class ClientQuotaControl:
    def __init__(self) -> None:
        self.quotas: dict[ClientQuotaEntity, dict[str, float]] = {}

    # ------------------------------------------------------------------ alter
    def alter(self, alterations: Iterable[tuple[list[tuple[str, str | None]], QuotaOps]], validate_only: bool
              ) -> tuple[list[AlterResult], dict[ClientQuotaEntity, dict[str, float | None]]]:
        """(one result per alteration, the changes: entity -> key -> new value or None for a
        removal); unless ``validate_only`` the changes are applied."""
        results: dict[ClientQuotaEntity, AlterResult] = {}
        order: list[ClientQuotaEntity] = []
        changes: dict[ClientQuotaEntity, dict[str, float | None]] = {}
        for pairs, ops in alterations:
            key = entity_of(pairs)   # Kafka's results map is keyed by the entity (a map of its parts)
            if key not in results:
                order.append(key)
            ops_by_key: dict[str, float | None] = {}
            for name, value in ops:
                if name in ops_by_key:
                    results[key] = AlterResult(list(pairs), Errors.INVALID_REQUEST,
                                               f"Duplicate quota key {name} not updating quota for this entity "
                                               f"{describe_entity(entity_of(pairs))}")
                else:
                    ops_by_key[name] = value
            if key in results:
                results[key] = AlterResult(list(pairs), Errors.INVALID_REQUEST,
                                           f"Ignoring duplicate entity {describe_entity(entity_of(pairs))}")
                continue
            error, message, entity, changed = self._alter_entity(pairs, ops_by_key)
            results[key] = AlterResult(list(pairs), error, message)
            if error == Errors.NONE and changed:
                changes[entity] = changed
        if not validate_only:
            for entity, changed in changes.items():
                self.apply(entity, changed)
        return [results[key] for key in order], changes

    def _alter_entity(self, pairs: list[tuple[str, str | None]], ops: Mapping[str, float | None]
                      ) -> tuple[int, str | None, ClientQuotaEntity, dict[str, float | None]]:
        none: dict[str, float | None] = {}
        entity: ClientQuotaEntity = ()
        error = _validate_entity(pairs)
        if error is not None:
            return Errors.INVALID_REQUEST, error, entity, none
        entity = entity_of(pairs)
        keys, error = _keys_for(dict(entity))
        if error is not None:
            return Errors.INVALID_REQUEST, error, entity, none
        current = self.quotas.get(entity, {})
        changed: dict[str, float | None] = {}
        for name, value in ops.items():
            if value is None:
                if name in current:
                    changed[name] = None
                continue
            error = _validate_value(keys, name, value)
            if error is not None:
                return Errors.INVALID_REQUEST, error, entity, none
            if current.get(name) != value:
                changed[name] = value
        return Errors.NONE, None, entity, changed

    def apply(self, entity: ClientQuotaEntity, changed: Mapping[str, float | None]) -> None:
        values = self.quotas.setdefault(entity, {})
        for name, value in changed.items():
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value
        if not values:
            del self.quotas[entity]

    # ------------------------------------------------------------------ describe
    def describe(self, components: Iterable[tuple[str, int, str | None]], strict: bool
                 ) -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
        """The entities matching the filter (``ClientQuotasImage.describe``); ``KafkaError``
        INVALID_REQUEST or UNSUPPORTED_VERSION for a bad filter, as Kafka raises them."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for entity_type, match_type, match in components:
            if not entity_type:
                raise KafkaError(Errors.INVALID_REQUEST, "Invalid empty entity type.")
            if entity_type in exact or entity_type in typed:
                raise KafkaError(Errors.INVALID_REQUEST,
                                 f"Entity type {entity_type} cannot appear more than once in the filter.")
            if entity_type not in ENTITY_TYPES:
                raise KafkaError(Errors.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
            if match_type == MATCH_TYPE_EXACT:
                if match is None:
                    raise KafkaError(Errors.INVALID_REQUEST,
                                     "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[entity_type] = match
            elif match_type == MATCH_TYPE_DEFAULT:
                if match is not None:
                    raise KafkaError(Errors.INVALID_REQUEST,
                                     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[entity_type] = None
            elif match_type == MATCH_TYPE_SPECIFIED:
                if match is not None:
                    raise KafkaError(Errors.INVALID_REQUEST,
                                     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                typed.add(entity_type)
            else:
                raise KafkaError(Errors.INVALID_REQUEST, f"Unknown match type {match_type}")
        if (IP in exact or IP in typed) and (USER in exact or USER in typed or CLIENT_ID in exact
                                             or CLIENT_ID in typed):
            raise KafkaError(Errors.INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                                                     "component should not be used with user or clientId filter "
                                                     "component.")
        out = []
        for entity, values in self.quotas.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(typed):
                continue
            if all(t in names and names[t] == m for t, m in exact.items()) and all(t in names for t in typed):
                out.append((entity, dict(values)))
        return out

    # ------------------------------------------------------------------ persistence
    def state(self) -> list[dict[str, Any]]:
        return [{"entity": [list(pair) for pair in entity], "values": dict(values)}
                for entity, values in self.quotas.items()]

    def restore(self, state: list[dict[str, Any]]) -> None:
        self.quotas = {entity_of([(t, n) for t, n in item["entity"]]): dict(item["values"]) for item in state}


def _validate_entity(pairs: list[tuple[str, str | None]]) -> str | None:
    if not pairs:
        return "Invalid empty client quota entity"
    seen: set[str] = set()
    for entity_type, name in pairs:
        if entity_type in seen:
            return f"Invalid client quota entity, duplicate entity entry {entity_type}"
        seen.add(entity_type)
        if entity_type not in ENTITY_TYPES:
            return f"Unhandled client quota entity type: {entity_type}"
        if name is not None and not name:
            return f"Empty {entity_type} not supported"
    return None


def _keys_for(entity: dict[str, str | None]) -> tuple[dict[str, bool], str | None]:
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            return {}, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        return IP_QUOTA_KEYS, ("IP quotas (connection_creation_rate, KIP-612) are not implemented by the "
                               "emulator: it has no connection rate limits")
    return USER_AND_CLIENT_QUOTA_KEYS, None


def _validate_value(keys: Mapping[str, bool], name: str, value: float) -> str | None:
    integral = keys.get(name)
    if integral is None:
        return f"Invalid configuration key {name}"
    if value <= 0.0:
        return f"Quota {name} must be greater than 0"
    if integral:
        if value > 2 ** 63 - 1:
            return f"Proposed value for {name} is too large for a LONG."
        if abs(value % 1.0) > 1e-6:
            return f"{name} cannot be a fractional value."
    return None
