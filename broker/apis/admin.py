"""Admin APIs: CreateTopics (19), DeleteTopics (20), DescribeCluster (60), DescribeConfigs (32).

Differences from Kafka on purpose:
* Any broker accepts CreateTopics/DeleteTopics (Kafka forwards them to the controller); the
  in-process controller applies them synchronously, so ``timeout`` never expires and the topic's
  leaders exist when the response is sent.
* Manual replica ``assignments`` are honoured only in shape (partition count and replication
  factor); placement is the controller's round robin.
* DescribeConfigs reports the broker's own properties for any broker resource and a fixed set of
  topic-level keys (overrides as TOPIC_CONFIG, the rest as DEFAULT_CONFIG); nothing is sensitive.
"""
from __future__ import annotations

from typing import Any

from kafka_emu.broker.protocol.codec import response_schema
from kio.schema.errors import ErrorCode

from kafka_emu.broker.apis._common import (
    AUTHORIZED_OPS_OMITTED,
    OFFSETS_TOPIC,
    ZERO_THROTTLE,
    broker_endpoint,
    config,
    respond,
    topic_name_error,
)
from kafka_emu.broker.protocol.adapter import build, item_cls

CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER = 19, 20, 32, 60

RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER = 2, 4, 8
SOURCE_TOPIC_CONFIG, SOURCE_STATIC_BROKER_CONFIG, SOURCE_DEFAULT_CONFIG = 1, 4, 5
TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_LONG, TYPE_LIST = 1, 2, 3, 5, 7

# topic config key -> broker property it defaults to (None: a fixed default)
TOPIC_CONFIG_DEFAULTS: dict[str, tuple[str | None, Any]] = {
    "cleanup.policy": (None, "delete"),
    "compression.type": (None, "producer"),
    "max.message.bytes": ("message.max.bytes", 1048588),
    "message.timestamp.type": ("log.message.timestamp.type", "CreateTime"),
    "min.insync.replicas": ("min.insync.replicas", 1),
    "retention.bytes": (None, -1),
    "retention.ms": ("log.retention.ms", 604800000),
    "segment.bytes": (None, 1073741824),
    "unclean.leader.election.enable": ("unclean.leader.election.enable", False),
}


# --- CreateTopics ------------------------------------------------------------------------------

def _create_one(apis: Any, t: Any, validate_only: bool) -> tuple[int, str | None, int, int]:
    """(error, message, partitions, replication factor) for one CreatableTopic."""
    md = apis.metadata
    name = t.name
    err = topic_name_error(name)
    if err:
        return err, f"illegal topic name {name!r}", -1, -1
    if md.topic(name) is not None:
        return int(ErrorCode.topic_already_exists), f"Topic '{name}' already exists.", -1, -1
    assignments = getattr(t, "assignments", ()) or ()
    partitions = int(t.num_partitions)
    rf = int(t.replication_factor)
    if assignments:
        partitions = len(assignments)
        rf = len(assignments[0].broker_ids)
    if partitions == -1:
        partitions = int(config(apis, "num.partitions", 1))
    if rf == -1:
        rf = int(config(apis, "default.replication.factor", 1))
    if partitions <= 0:
        return int(ErrorCode.invalid_partitions), "Number of partitions must be larger than 0.", -1, -1
    live = len(md.live_broker_ids())
    if rf <= 0 or rf > live:
        return (int(ErrorCode.invalid_replication_factor),
                f"Replication factor: {rf} larger than available brokers: {live}.", -1, -1)
    if validate_only:
        return 0, None, partitions, rf
    configs = {c.name: c.value for c in (getattr(t, "configs", ()) or ())}
    try:
        md.create_topic(name, partitions, rf, configs=configs)
    except ValueError as exc:
        if md.topic(name) is not None:
            return int(ErrorCode.topic_already_exists), f"Topic '{name}' already exists.", -1, -1
        return int(ErrorCode.invalid_request), str(exc), -1, -1
    return 0, None, partitions, rf


def handle_create_topics(apis: Any, request: Any) -> None:
    body = request.body
    cls = response_schema(CREATE_TOPICS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    validate_only = bool(getattr(body, "validate_only", False))
    seen: set[str] = set()
    dupes = {t.name for t in body.topics if t.name in seen or seen.add(t.name)}  # type: ignore[func-returns-value]
    results = []
    for t in body.topics:
        if t.name in dupes:
            err, msg, parts, rf = int(ErrorCode.invalid_request), "Duplicate topic name.", -1, -1
        else:
            err, msg, parts, rf = _create_one(apis, t, validate_only)
        info = apis.metadata.topic(t.name) if err == 0 else None
        results.append(build(topic_cls, name=t.name, topic_id=info.topic_id if info else None,
                             error_code=ErrorCode(err), error_message=msg, num_partitions=parts,
                             replication_factor=rf, configs=None if err else ()))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(results)))


# --- DeleteTopics ------------------------------------------------------------------------------

def handle_delete_topics(apis: Any, request: Any) -> None:
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
        err = ErrorCode.none
        msg = None
        if name is None and topic_id is not None:
            name = md.topic_name(topic_id)
            if name is None:
                err = ErrorCode.unknown_topic_id
        if err == ErrorCode.none:
            info = md.topic(name) if name else None
            if info is None:
                err = ErrorCode.unknown_topic_or_partition
            elif info.internal or name == OFFSETS_TOPIC:
                err, msg = ErrorCode.invalid_request, "internal topics cannot be deleted"
            else:
                topic_id = info.topic_id
                if not md.delete_topic(name):
                    err = ErrorCode.unknown_topic_or_partition
        results.append(build(result_cls, name=name, topic_id=topic_id, error_code=err, error_message=msg))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, responses=tuple(results)))


# --- DescribeCluster ---------------------------------------------------------------------------

def handle_describe_cluster(apis: Any, request: Any) -> None:
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
                                     error_code=ErrorCode.unsupported_endpoint_type,
                                     error_message="only broker endpoints are emulated",
                                     endpoint_type=endpoint_type, cluster_id=md.cluster_id,
                                     controller_id=-1, brokers=()))
        return
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=ErrorCode.none,
                                 error_message=None, endpoint_type=1, cluster_id=md.cluster_id,
                                 controller_id=md.controller_id, brokers=tuple(brokers),
                                 cluster_authorized_operations=AUTHORIZED_OPS_OMITTED))


# --- DescribeConfigs ---------------------------------------------------------------------------

def _config_type(value: Any) -> int:
    if isinstance(value, bool):
        return TYPE_BOOLEAN
    if isinstance(value, int):
        return TYPE_INT if -(1 << 31) <= value < (1 << 31) else TYPE_LONG
    return TYPE_STRING


def _render(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _topic_entries(apis: Any, info: Any) -> list[tuple[str, Any, int]]:
    entries: dict[str, tuple[Any, int]] = {}
    for key, (broker_key, fallback) in TOPIC_CONFIG_DEFAULTS.items():
        value = config(apis, broker_key, fallback) if broker_key else fallback
        entries[key] = (value, SOURCE_DEFAULT_CONFIG)
    for key, value in (info.configs or {}).items():
        entries[key] = (value, SOURCE_TOPIC_CONFIG)
    return [(k, v, s) for k, (v, s) in sorted(entries.items())]


def _broker_entries(apis: Any) -> list[tuple[str, Any, int]]:
    cfg = apis.config
    props = cfg.as_dict() if hasattr(cfg, "as_dict") else dict(cfg)
    return [(k, v, SOURCE_STATIC_BROKER_CONFIG) for k, v in sorted(props.items())]


def handle_describe_configs(apis: Any, request: Any) -> None:
    body = request.body
    cls = response_schema(DESCRIBE_CONFIGS, request.api_version)
    result_cls = item_cls(cls, "results")
    entry_cls = item_cls(result_cls, "configs")
    md = apis.metadata
    results = []
    for res in body.resources:
        rtype = int(res.resource_type)
        err, msg = ErrorCode.none, None
        entries: list[tuple[str, Any, int]] = []
        if rtype == RESOURCE_TOPIC:
            info = md.topic(res.resource_name)
            if info is None:
                err, msg = ErrorCode.unknown_topic_or_partition, f"Topic {res.resource_name} does not exist"
            else:
                entries = _topic_entries(apis, info)
        elif rtype == RESOURCE_BROKER:
            if res.resource_name and not res.resource_name.lstrip("-").isdigit():
                err, msg = ErrorCode.invalid_request, f"invalid broker id {res.resource_name!r}"
            else:
                entries = _broker_entries(apis)
        elif rtype == RESOURCE_BROKER_LOGGER:
            entries = []
        else:
            err, msg = ErrorCode.invalid_request, f"unsupported resource type {rtype}"
        keys = res.configuration_keys
        if keys is not None:
            wanted = set(keys)
            entries = [e for e in entries if e[0] in wanted]
        configs = tuple(build(entry_cls, name=k, value=_render(v), read_only=False, config_source=src,
                              is_sensitive=False, synonyms=(), config_type=_config_type(v),
                              documentation=None, is_default=(src == SOURCE_DEFAULT_CONFIG))
                        for k, v, src in entries)
        results.append(build(result_cls, error_code=err, error_message=msg, resource_type=rtype,
                             resource_name=res.resource_name, configs=configs))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(results)))


def register(apis: Any) -> None:
    apis.register(CREATE_TOPICS, handle_create_topics)
    apis.register(DELETE_TOPICS, handle_delete_topics)
    apis.register(DESCRIBE_CLUSTER, handle_describe_cluster)
    apis.register(DESCRIBE_CONFIGS, handle_describe_configs)
