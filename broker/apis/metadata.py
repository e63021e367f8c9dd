"""Metadata: brokers, controller, topics with stable ids, partition leaders and ISRs.

Auto topic creation follows Kafka: a missing topic is created with ``num.partitions`` and
``default.replication.factor`` when ``auto.create.topics.enable`` is true and the request allows
it (``allow_auto_topic_creation``, v4+; always for older versions); internal or illegal names are
never created. Differences on purpose: the in-process controller creates the topic synchronously,
so the same response already carries its leaders (Kafka answers LEADER_NOT_AVAILABLE first and
the client asks again); a replication factor larger than the live brokers gives
INVALID_REPLICATION_FACTOR, as Kafka's auto-creation does.

Only live brokers are listed; replica lists may name stopped brokers, which also appear in
``offline_replicas``, as in Kafka.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from kafka_emu.broker.apis._common import (
    AUTHORIZED_OPS_OMITTED,
    ZERO_THROTTLE,
    broker_endpoint,
    respond,
    topic_name_error,
)
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.metadata import OFFSETS_TOPIC
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.coordinator.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.kafka_apis import KafkaApis
    from kafka_emu.broker.request_channel import Request

API_KEY = 3


def maybe_create_topic(apis: KafkaApis, name: str) -> int:
    """Auto-create ``name``; returns the error code for the metadata answer (0 if it exists now)."""
    if name == OFFSETS_TOPIC or name.startswith("__"):
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    err = topic_name_error(name)
    if err:
        return err
    md = apis.metadata
    partitions = apis.config["num.partitions"]
    rf = apis.config["default.replication.factor"]
    if rf > len(md.live_broker_ids()):
        return Errors.INVALID_REPLICATION_FACTOR
    try:
        md.create_topic(name, partitions, rf)
    except ValueError:
        if md.topic(name) is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
    return Errors.NONE


def handle_metadata(apis: KafkaApis, request: Request) -> None:
    body = request.body
    version = request.api_version
    cls = response_schema(API_KEY, version)
    broker_cls = item_cls(cls, "brokers")
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    md = apis.metadata

    live = md.live_brokers()
    live_ids = {b.broker_id for b in live}
    brokers = []
    for b in live:
        host, port = broker_endpoint(b)
        brokers.append(build(broker_cls, node_id=b.broker_id, host=host, port=port, rack=b.rack))

    allow_auto = bool(getattr(body, "allow_auto_topic_creation", True)) and \
        apis.config["auto.create.topics.enable"]
    include_ops = bool(getattr(body, "include_topic_authorized_operations", False))
    requested = body.topics
    if requested is None or (version == 0 and not requested):
        wanted: list[tuple[str | None, UUID | None]] = [(name, None) for name in sorted(md.topics)]
    else:
        wanted = [(getattr(t, "name", None), getattr(t, "topic_id", None)) for t in requested]

    topics = []
    for name, topic_id in wanted:
        if name is None and topic_id is not None and topic_id.int != 0:
            name = md.topic_name(topic_id)
            if name is None:
                topics.append(build(topic_cls, error_code=Errors.UNKNOWN_TOPIC_ID, name=None,
                                    topic_id=topic_id, is_internal=False, partitions=()))
                continue
        if name is None:
            topics.append(build(topic_cls, error_code=Errors.INVALID_REQUEST, name=None,
                                topic_id=topic_id, partitions=()))
            continue
        info = md.topic(name)
        if info is None:
            err = maybe_create_topic(apis, name) if allow_auto else Errors.UNKNOWN_TOPIC_OR_PARTITION
            info = md.topic(name) if err == 0 else None
            if info is None:
                topics.append(build(topic_cls, error_code=err or Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                    name=name, is_internal=False, partitions=()))
                continue
        partitions = []
        for p in sorted(info.partitions):
            st = info.partitions[p]
            offline = tuple(r for r in st.replicas if r not in live_ids)
            err = Errors.NONE if st.leader >= 0 and st.leader in live_ids else Errors.LEADER_NOT_AVAILABLE
            partitions.append(build(part_cls, error_code=err, partition_index=p, leader_id=st.leader,
                                    leader_epoch=st.leader_epoch, replica_nodes=st.replicas,
                                    isr_nodes=st.isr, offline_replicas=offline))
        topics.append(build(topic_cls, error_code=Errors.NONE, name=name, topic_id=info.topic_id,
                            is_internal=bool(info.internal), partitions=tuple(partitions),
                            topic_authorized_operations=(0 if include_ops else AUTHORIZED_OPS_OMITTED)))

    resp = build(cls, throttle_time=ZERO_THROTTLE, brokers=tuple(brokers), cluster_id=md.cluster_id,
                 controller_id=md.controller_id, topics=tuple(topics),
                 cluster_authorized_operations=AUTHORIZED_OPS_OMITTED, error_code=Errors.NONE)
    respond(apis, request, resp)


APIS = (ApiSpec(API_KEY, "Metadata", 0, 13, handle_metadata),)
