"""Admin APIs: CreateTopics, DeleteTopics, DescribeCluster, DescribeConfigs.

Differences from Kafka on purpose:
* Any broker accepts CreateTopics/DeleteTopics (Kafka forwards them to the controller); the
  in-process controller applies them synchronously, so ``timeout`` never expires and the topic's
  leaders exist when the response is sent.
* Manual replica ``assignments`` are honoured only in shape (partition count and replication
  factor); placement is the controller's round robin.
* DescribeConfigs reports what ``broker.server.config_helper`` says about the config tables and the
  dynamic configs (its differences are listed there).
* Topic configs the emulator does not implement are accepted with a warning (refused with
  INVALID_CONFIG under ``emulator.strict.config=true``), see ``broker.storage.log_config``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_emu.broker.apis._common import (
    AUTHORIZED_OPS_OMITTED,
    ZERO_THROTTLE,
    broker_endpoint,
    respond,
    topic_name_error,
)
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.config import STRICT_CONFIG, ConfigException
from kafka_emu.broker.server.config_helper import ConfigEntry, describe_broker, describe_topic
from kafka_emu.broker.server.dynamic_config import CLUSTER_DEFAULT, DynamicBrokerConfig
from kafka_emu.broker.storage.log_config import validate_topic_configs
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC, ConfigResourceType
from kafka_emu.broker.protocol.adapter import build, has_field, item_cls, response_schema
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER = 19, 20, 32, 60

# --- CreateTopics ------------------------------------------------------------------------------

def _create_one(apis: KafkaApis, t: Any, validate_only: bool) -> tuple[int, str | None, int, int]:
    """(error, message, partitions, replication factor) for one CreatableTopic."""
    md = apis.metadata
    name = t.name
    err = topic_name_error(name)
    if err:
        return err, f"illegal topic name {name!r}", -1, -1
    if md.topic(name) is not None:
        return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", -1, -1
    assignments = getattr(t, "assignments", ()) or ()
    partitions = int(t.num_partitions)
    rf = int(t.replication_factor)
    if assignments:
        partitions = len(assignments)
        rf = len(assignments[0].broker_ids)
    if partitions == -1:
        partitions = apis.config["num.partitions"]
    if rf == -1:
        rf = apis.config["default.replication.factor"]
    if partitions <= 0:
        return Errors.INVALID_PARTITIONS, "Number of partitions must be larger than 0.", -1, -1
    live = len(md.live_broker_ids())
    if rf <= 0 or rf > live:
        return (Errors.INVALID_REPLICATION_FACTOR,
                f"Replication factor: {rf} larger than available brokers: {live}.", -1, -1)
    try:
        configs = validate_topic_configs(name, {c.name: c.value for c in (getattr(t, "configs", ()) or ())},
                                         bool(apis.config[STRICT_CONFIG]))
    except ConfigException as exc:
        return Errors.INVALID_CONFIG, str(exc), -1, -1
    if validate_only:
        return Errors.NONE, None, partitions, rf
    try:
        md.create_topic(name, partitions, rf, configs=configs)
    except ValueError as exc:
        if md.topic(name) is not None:
            return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", -1, -1
        return Errors.INVALID_REQUEST, str(exc), -1, -1
    return Errors.NONE, None, partitions, rf


def handle_create_topics(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(CREATE_TOPICS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    validate_only = bool(getattr(body, "validate_only", False))
    seen: set[str] = set()
    dupes = {t.name for t in body.topics if t.name in seen or seen.add(t.name)}  # type: ignore[func-returns-value]
    results = []
    for t in body.topics:
        if t.name in dupes:
            err, msg, parts, rf = Errors.INVALID_REQUEST, "Duplicate topic name.", -1, -1
        else:
            err, msg, parts, rf = _create_one(apis, t, validate_only)
        info = apis.metadata.topic(t.name) if err == 0 else None
        results.append(build(topic_cls, name=t.name, topic_id=info.topic_id if info else None,
                             error_code=err, error_message=msg, num_partitions=parts,
                             replication_factor=rf, configs=None if err else ()))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(results)))


# --- DeleteTopics ------------------------------------------------------------------------------

def handle_delete_topics(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(DELETE_TOPICS, request.api_version)
    result_cls = item_cls(cls, "responses")
    md = apis.metadata
    if request.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in body.topics]
    else:
        wanted = [(name, None) for name in body.topic_names]
    results = []
    for name, topic_id in wanted:
        err = Errors.NONE
        msg = None
        if name is None and topic_id is not None:
            name = md.topic_name(topic_id)
            if name is None:
                err = Errors.UNKNOWN_TOPIC_ID
        if err == Errors.NONE:
            info = md.topic(name) if name else None
            if info is None:
                err = Errors.UNKNOWN_TOPIC_OR_PARTITION
            elif info.internal or name == OFFSETS_TOPIC:
                err, msg = Errors.INVALID_REQUEST, "internal topics cannot be deleted"
            else:
                topic_id = info.topic_id
                if not md.delete_topic(name):
                    err = Errors.UNKNOWN_TOPIC_OR_PARTITION
        results.append(build(result_cls, name=name, topic_id=topic_id, error_code=err, error_message=msg))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, responses=tuple(results)))


# --- DescribeCluster ---------------------------------------------------------------------------

def handle_describe_cluster(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(DESCRIBE_CLUSTER, request.api_version)
    broker_cls = item_cls(cls, "brokers")
    md = apis.metadata
    brokers = []
    listed = md.live_brokers()
    if getattr(request.body, "include_fenced_brokers", False):   # v2: stopped brokers, fenced
        listed = sorted(md.brokers.values(), key=lambda b: b.broker_id)
    for b in listed:
        host, port = broker_endpoint(b)
        brokers.append(build(broker_cls, broker_id=b.broker_id, host=host, port=port, rack=b.rack,
                             is_fenced=not b.live))
    endpoint_type = int(getattr(request.body, "endpoint_type", 1))
    if endpoint_type != 1:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE,
                                     error_code=Errors.UNSUPPORTED_ENDPOINT_TYPE,
                                     error_message="only broker endpoints are emulated",
                                     endpoint_type=endpoint_type, cluster_id=md.cluster_id,
                                     controller_id=-1, brokers=()))
        return
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE,
                                 error_message=None, endpoint_type=1, cluster_id=md.cluster_id,
                                 controller_id=md.controller_id, brokers=tuple(brokers),
                                 cluster_authorized_operations=AUTHORIZED_OPS_OMITTED))


# --- DescribeConfigs ---------------------------------------------------------------------------

def handle_describe_configs(apis: KafkaApis, request: Request) -> None:
    """Kafka's ``ConfigHelper.describeConfigs``; the entries come from the config tables
    (``broker.server.config_helper``)."""
    body = request.body
    cls = response_schema(DESCRIBE_CONFIGS, request.api_version)
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
        if rtype == ConfigResourceType.TOPIC:
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


APIS = (
    ApiSpec(CREATE_TOPICS, "CreateTopics", 2, 7, handle_create_topics, kafka_3_9=(0, 7)),
    ApiSpec(DELETE_TOPICS, "DeleteTopics", 1, 6, handle_delete_topics, kafka_3_9=(0, 6)),
    ApiSpec(DESCRIBE_CONFIGS, "DescribeConfigs", 1, 4, handle_describe_configs, kafka_3_9=(0, 4)),
    ApiSpec(DESCRIBE_CLUSTER, "DescribeCluster", 0, 2, handle_describe_cluster, kafka_3_9=(0, 1)),
)
