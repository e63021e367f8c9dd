"""AlterConfigs (key 33) and IncrementalAlterConfigs (key 44): topic configs and dynamic broker
configs, after Kafka's ``ConfigAdminManager.preprocess`` (the receiving broker's checks) and
``ConfigurationControlManager`` (the controller's alteration and validation).

Per request: a resource named twice (same type and name) gets INVALID_REQUEST for every
occurrence. Per resource, in Kafka's order: a config key named twice, a null value (AlterConfigs:
any; incremental: with an op other than DELETE) or an unknown op is INVALID_REQUEST; then
* TOPIC: the new overrides are computed (legacy AlterConfigs replaces them all; incremental ops
  SET/DELETE/APPEND/SUBTRACT as ``incremental_alter``) and validated as CreateTopics validates
  them (``log_config.validate_topic_configs``: INVALID_CONFIG with Kafka's message), then the
  topic must exist (UNKNOWN_TOPIC_OR_PARTITION); the brokers apply the change to their logs at
  once.
* BROKER: the name is ``""`` (cluster-wide default) or this broker's id (else INVALID_REQUEST,
  Kafka's messages); the resulting dynamic config is validated by
  ``dynamic_config.validate_broker_configs``.
* GROUP (KIP-848's per-group configs): the name must not be empty (INVALID_REQUEST, "Default
  group resources are not allowed."); the new overrides are validated by
  ``coordinator.group.group_config.validate_group_configs`` against this broker's
  ``group.consumer.*`` bounds (INVALID_CONFIG with Kafka's message). The group need not exist.
* CLIENT_METRICS: a KIP-714 telemetry subscription; the resulting configs are validated by
  ``client_metrics_config.validate_client_metrics`` (Kafka's ``ClientMetricsConfigs.validate``);
  none left removes the subscription.
``validate_only`` runs every check and changes nothing.

Differences from Kafka on purpose: BROKER_LOGGER resources (the emulator's loggers are not
log4j's) are refused with INVALID_REQUEST naming the type; there is no
``alter.config.policy.class.name``; any broker applies the change (Kafka forwards to the
controller).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond, topic_name_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.security.acl import AclOperation
from kafka_emu.broker.server.auth_helper import CLUSTER, GROUP, TOPIC, authorize
from kafka_emu.broker.server.client_metrics_config import CLIENT_METRICS_CONFIG_DEF, validate_client_metrics
from kafka_emu.broker.server.config import KAFKA_CONFIG_DEF, STRICT_CONFIG
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.config_def import ConfigDef, ConfigException, ConfigValue, Type, render
from kafka_emu.broker.server.dynamic_config import CLUSTER_DEFAULT, validate_broker_configs
from kafka_emu.broker.storage.log_config import LOG_CONFIG_DEF, validate_topic_configs
from kafka_emu.broker.server.metadata_store import ConfigResourceType
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.coordinator.group.group_config import GROUP_CONFIG_DEF, validate_group_configs

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3     # Kafka's AlterConfigOp.OpType ids
OP_NAMES = {OP_SET: "SET", OP_DELETE: "DELETE", OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}

_NOT_SUPPORTED = frozenset({ConfigResourceType.BROKER_LOGGER})

Op = tuple[str, int, "str | None"]    # (config name, op id, value)


def _java_split(text: str) -> list[str]:
    """Java's ``String.split(",")``: trailing empty strings dropped, except of an input with no comma."""
    if "," not in text:
        return [text]
    parts = text.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def incremental_alter(current: Mapping[str, str], ops: Iterable[Op], table: ConfigDef) -> dict[str, str]:
    """Kafka's ``ConfigurationControlManager.incrementalAlterConfigResource`` on rendered values.

    SET replaces, DELETE removes; APPEND and SUBTRACT only for LIST keys (INVALID_CONFIG
    otherwise): the current value, or the key's default when unset, split on commas (empty parts
    dropped), gets each given element appended if absent or its first occurrence removed."""
    result = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            result[name] = value  # type: ignore[assignment]  # nulls are refused before
        elif op == OP_DELETE:
            result.pop(name, None)
        else:
            key = table.key(name)
            if key is None or key.type is not Type.LIST:
                raise KafkaError(Errors.INVALID_CONFIG,
                                 f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
            old = result.get(name)
            if old is None:
                old = None if key.default is None else render(key.default)
            parts = [p for p in _java_split(old) if p] if old is not None else []
            for element in _java_split(value or ""):
                if op == OP_APPEND and element not in parts:
                    parts.append(element)
                elif op == OP_SUBTRACT and element in parts:
                    parts.remove(element)
            result[name] = ",".join(parts)
    return result


def _rendered(configs: Mapping[str, ConfigValue]) -> dict[str, str]:
    return {name: render(value) for name, value in configs.items()}


def _preprocess(ops: list[Op], incremental: bool) -> None:
    """``ConfigAdminManager.preprocess``'s per-resource checks (INVALID_REQUEST)."""
    names = [name for name, _op, _value in ops]
    if len(set(names)) != len(names):
        raise KafkaError(Errors.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [name for name, op, value in ops if value is None and (not incremental or op != OP_DELETE)]
    if nulls:
        raise KafkaError(Errors.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
    for _name, op, _value in ops:
        if op not in OP_NAMES:
            raise KafkaError(Errors.INVALID_REQUEST, f"Unknown operations type {op}")


def _new_configs(current: Mapping[str, ConfigValue], ops: list[Op], incremental: bool,
                 table: ConfigDef) -> dict[str, str]:
    if incremental:
        return incremental_alter(_rendered(current), ops, table)
    return {name: value for name, _op, value in ops}  # type: ignore[misc]  # legacy: replaces all


def _alter_resource(apis: KafkaApis, rtype: int, name: str, ops: list[Op], incremental: bool,
                    validate_only: bool) -> None:
    """Alter one resource or raise ``KafkaError``."""
    _preprocess(ops, incremental)
    md = apis.metadata
    if rtype == ConfigResourceType.TOPIC:
        if not name:
            raise KafkaError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        if topic_name_error(name):
            raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION, f"Invalid topic name {name!r}")
        strict = bool(apis.config[STRICT_CONFIG])

        def alter_topic(current: dict[str, Any]) -> dict[str, Any]:
            try:
                return validate_topic_configs(name, _new_configs(current, ops, incremental, LOG_CONFIG_DEF), strict)
            except ConfigException as exc:
                raise KafkaError(Errors.INVALID_CONFIG, str(exc)) from None

        md.alter_topic_configs(name, alter_topic, validate_only)
    elif rtype == ConfigResourceType.BROKER:
        if name != CLUSTER_DEFAULT:
            if not name.lstrip("-").isdigit():
                raise KafkaError(Errors.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
            if int(name) != apis.broker_id:
                raise KafkaError(Errors.INVALID_REQUEST,
                                 f"Unexpected broker id, expected {apis.broker_id}, but received {name}")
        md.alter_broker_configs(
            name, lambda current: validate_broker_configs(_new_configs(current, ops, incremental, KAFKA_CONFIG_DEF)),
            validate_only)
    elif rtype == ConfigResourceType.GROUP:
        if not name:
            raise KafkaError(Errors.INVALID_REQUEST, "Default group resources are not allowed.")
        coordinator_config = GroupCoordinatorConfig.from_mapping(apis.config.as_dict())

        def alter_group(current: dict[str, Any]) -> dict[str, Any]:
            try:
                return validate_group_configs(_new_configs(current, ops, incremental, GROUP_CONFIG_DEF),
                                              coordinator_config)
            except ConfigException as exc:
                raise KafkaError(Errors.INVALID_CONFIG, str(exc)) from None

        md.alter_group_configs(name, alter_group, validate_only)
    elif rtype == ConfigResourceType.CLIENT_METRICS:
        md.alter_client_metrics(name, lambda current: validate_client_metrics(
            name, _new_configs(current, ops, incremental, CLIENT_METRICS_CONFIG_DEF)), validate_only)
    elif rtype in _NOT_SUPPORTED:
        raise KafkaError(Errors.INVALID_REQUEST,
                         f"Resource type {ConfigResourceType(rtype).name} is not supported by the emulator")
    else:
        raise KafkaError(Errors.INVALID_REQUEST, f"Unknown resource type {rtype}")


def _handle(apis: KafkaApis, request: Request, api_key: int, incremental: bool) -> None:
    body = request.body
    cls = response_schema(api_key, request.api_version)
    result_cls = item_cls(cls, "responses")
    ids = [(int(r.resource_type), r.resource_name) for r in body.resources]
    results = []
    for res, rid in zip(body.resources, ids):
        if ids.count(rid) > 1:
            err, msg = Errors.INVALID_REQUEST, "Each resource must appear at most once."
        elif rid[0] == ConfigResourceType.TOPIC and not authorize(apis, request, AclOperation.ALTER_CONFIGS, TOPIC,
                                                                  rid[1]):
            err, msg = Errors.TOPIC_AUTHORIZATION_FAILED, None   # Kafka: ALTER_CONFIGS on the topic
        elif rid[0] in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER, ConfigResourceType.CLIENT_METRICS) and \
                not authorize(apis, request, AclOperation.ALTER_CONFIGS, CLUSTER):
            err, msg = Errors.CLUSTER_AUTHORIZATION_FAILED, None
        elif rid[0] == ConfigResourceType.GROUP and not authorize(apis, request, AclOperation.ALTER_CONFIGS, GROUP,
                                                                  rid[1]):
            err, msg = Errors.GROUP_AUTHORIZATION_FAILED, None
        else:
            ops = [(c.name, int(c.config_operation) if incremental else OP_SET, c.value) for c in res.configs]
            try:
                _alter_resource(apis, rid[0], rid[1], ops, incremental, bool(body.validate_only))
                err, msg = Errors.NONE, None
            except KafkaError as exc:
                err, msg = exc.code, exc.message or None
        results.append(build(result_cls, error_code=err, error_message=msg, resource_type=rid[0],
                             resource_name=rid[1]))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, responses=tuple(results)))


def handle_alter_configs(apis: KafkaApis, request: Request) -> None:
    _handle(apis, request, ApiKeys.ALTER_CONFIGS, incremental=False)


def handle_incremental_alter_configs(apis: KafkaApis, request: Request) -> None:
    _handle(apis, request, ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental=True)


APIS = (
    ApiSpec(ApiKeys.ALTER_CONFIGS, 0, 2, handle_alter_configs),
    ApiSpec(ApiKeys.INCREMENTAL_ALTER_CONFIGS, 0, 1, handle_incremental_alter_configs),
)
