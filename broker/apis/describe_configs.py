"""DescribeConfigs (key 32): topic, broker and group configs (``AdminClient.describe_configs``).

Differences from Kafka: the answer is what ``broker.server.config_helper`` says about the config
tables and the dynamic configs (its differences are listed there); BROKER_LOGGER resources
answer with no entries. CLIENT_METRICS resources (KIP-714 subscriptions) answer every key, as
Kafka's ``ConfigHelper`` does for a name with no configs too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond, topic_name_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import CLUSTER, GROUP, TOPIC, Op, authorize
from kafka_emu.broker.server.config_helper import (
    ConfigEntry, describe_broker, describe_client_metrics, describe_group, describe_topic,
)
from kafka_emu.broker.server.dynamic_config import CLUSTER_DEFAULT, DynamicBrokerConfig
from kafka_emu.broker.server.metadata_store import ConfigResourceType
from kafka_emu.broker.protocol.adapter import build, has_field, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_describe_configs(apis: KafkaApis, request: Request) -> None:
    """Kafka's ``ConfigHelper.describeConfigs``; the entries come from the config tables
    (``broker.server.config_helper``)."""
    body = request.body
    cls = response_schema(ApiKeys.DESCRIBE_CONFIGS, request.api_version)
    result_cls = item_cls(cls, "results")
    entry_cls = item_cls(result_cls, "configs")
    synonym_cls = item_cls(entry_cls, "synonyms") if has_field(entry_cls, "synonyms") else None
    include_synonyms = bool(getattr(body, "include_synonyms", False)) and synonym_cls is not None
    include_documentation = bool(getattr(body, "include_documentation", False))
    md = apis.metadata
    broker_id = str(apis.broker_id)
    view = DynamicBrokerConfig.of(apis.config, md)
    results = []
    for res in body.resources:
        rtype = int(res.resource_type)
        err, msg = Errors.NONE, None
        entries: list[ConfigEntry] = []
        keys = res.configuration_keys
        if rtype == ConfigResourceType.TOPIC and not authorize(apis, request, Op.DESCRIBE_CONFIGS, TOPIC,
                                                               res.resource_name):
            err = Errors.TOPIC_AUTHORIZATION_FAILED
        elif rtype in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER, ConfigResourceType.CLIENT_METRICS) and \
                not authorize(apis, request, Op.DESCRIBE_CONFIGS, CLUSTER):
            err = Errors.CLUSTER_AUTHORIZATION_FAILED
        elif rtype == ConfigResourceType.GROUP and not authorize(apis, request, Op.DESCRIBE_CONFIGS, GROUP,
                                                                 res.resource_name):
            err = Errors.GROUP_AUTHORIZATION_FAILED
        elif rtype == ConfigResourceType.TOPIC:
            info = md.topic(res.resource_name)
            if topic_name_error(res.resource_name):
                err, msg = Errors.INVALID_TOPIC_EXCEPTION, f"Invalid topic name {res.resource_name!r}"
            elif info is None:
                err, msg = Errors.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {res.resource_name} does not exist"
            else:
                entries = describe_topic(view, info.configs, keys)
        elif rtype == ConfigResourceType.BROKER:
            if res.resource_name in (broker_id, CLUSTER_DEFAULT):
                entries = describe_broker(view, keys, per_broker=res.resource_name == broker_id)
            elif not res.resource_name.lstrip("-").isdigit():
                err, msg = Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {res.resource_name}"
            else:
                err, msg = Errors.INVALID_REQUEST, (f"Unexpected broker id, expected {broker_id} or "
                                                       f"empty string, but received {res.resource_name}")
        elif rtype == ConfigResourceType.GROUP:
            if not res.resource_name:
                err, msg = Errors.INVALID_REQUEST, "Group name must not be empty"
            else:
                entries = describe_group(view, md.group_configs(res.resource_name), keys)
        elif rtype == ConfigResourceType.CLIENT_METRICS:
            if not res.resource_name:
                err, msg = Errors.INVALID_REQUEST, "Client metrics subscription name must not be empty"
            else:
                entries = describe_client_metrics(md.client_metrics_configs(res.resource_name), keys)
        elif rtype != ConfigResourceType.BROKER_LOGGER:
            err, msg = Errors.INVALID_REQUEST, f"unsupported resource type {rtype}"
        configs = tuple(build(entry_cls, name=e.name, value=e.value, read_only=e.read_only,
                              config_source=e.source,   # v0's is_default: never set by Kafka's broker
                              is_sensitive=e.is_sensitive, config_type=e.config_type,
                              documentation=e.documentation if include_documentation else None,
                              synonyms=tuple(build(synonym_cls, name=s.name, value=s.value, source=s.source)
                                             for s in e.synonyms) if include_synonyms else ())
                        for e in entries)
        results.append(build(result_cls, error_code=err, error_message=msg, resource_type=rtype,
                             resource_name=res.resource_name, configs=configs))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(results)))


APIS = (ApiSpec(ApiKeys.DESCRIBE_CONFIGS, 0, 4, handle_describe_configs),)
