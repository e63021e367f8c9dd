"""Metadata: brokers, controller, topics with stable ids, partition leaders and ISRs.

Auto topic creation follows Kafka: a missing topic is created with ``num.partitions`` and
``default.replication.factor`` when ``auto.create.topics.enable`` is true and the request allows
it (``allow_auto_topic_creation``, v4+; always for older versions); internal or illegal names are
never created. Differences on purpose: the in-process controller creates the topic synchronously,
so the same response already carries its leaders (Kafka answers LEADER_NOT_AVAILABLE first and
the client asks again); a replication factor larger than the live brokers gives
INVALID_REPLICATION_FACTOR, as Kafka's auto-creation does.

Only live brokers are listed; replica lists may name stopped brokers, which also appear in
``offline_replicas``, as do replicas whose log directory failed, as in Kafka.

The topic entries are encoded once and reused (``TopicEncodingCache``): a response is the
encoded brokers/cluster part with the cached bytes of each topic spliced in as the topics array
(an ``EncodedResponse``; the bytes are ``broker.protocol.metadata_splice``'s), so a Metadata
request for 10,000 partitions costs a lookup per topic rather than 10,000 entities built and
written.
"""
from __future__ import annotations

import dataclasses
import operator
import weakref
from datetime import timedelta
from typing import TYPE_CHECKING
from uuid import UUID

from kafka_emu.broker.apis._common import (
    AUTHORIZED_OPS_OMITTED,
    broker_endpoint,
    permissive_controller_mutation_quota,
    topic_name_error,
)
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import (
    CLUSTER, TOPIC, Op, authorize, authorized_operations, filter_authorized,
)
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC, MetadataStore, PartitionState, TopicInfo
from kafka_emu.broker.protocol.adapter import build, has_field, item_cls, response_schema
from kafka_emu.broker.protocol.codec import EncodedResponse
from kafka_emu.broker.protocol.metadata_splice import encode_entity, splice_topics
from kafka_emu.broker.server.quota.controller_mutation_quota_manager import UNBOUNDED, ControllerMutationQuota
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def maybe_create_topic(apis: KafkaApis, name: str,
                       mutation_quota: ControllerMutationQuota = UNBOUNDED) -> int:
    """Auto-create ``name``; returns the error code for the metadata answer (0 if it exists now).
    Its partitions count against the permissive controller mutation quota (Kafka's
    ``AutoTopicCreationManager``: recorded, never refused)."""
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
    mutation_quota.record(partitions)
    try:
        md.create_topic(name, partitions, rf)
    except ValueError:
        if md.topic(name) is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
    return Errors.NONE


@dataclasses.dataclass(frozen=True, slots=True)
class _EncodedTopic:
    info: TopicInfo
    states: tuple[PartitionState, ...]
    live_ids: frozenset[int]
    data: bytes
    error_counts: dict[int, int]


class TopicEncodingCache:
    """Encoded Metadata topic entries per (version, authorized operations or None, topic).

    An entry is valid while the topic's ``TopicInfo`` is the same object, each of its
    ``PartitionState`` objects is the one it was encoded from (states are immutable and
    replaced on every leader or ISR change, so an identity check finds any change) and the live
    brokers are the same (they decide ``offline_replicas`` and LEADER_NOT_AVAILABLE). One cache
    per ``MetadataStore`` (``for_store``).

    Locking: none; dict reads and writes are atomic under the GIL, and two threads encoding the
    same topic at once both store a correct entry.
    """

    _stores: "weakref.WeakKeyDictionary[MetadataStore, TopicEncodingCache]" = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self._entries: dict[tuple[int, int | None, str], _EncodedTopic] = {}

    @classmethod
    def for_store(cls, md: MetadataStore) -> "TopicEncodingCache":
        cache = cls._stores.get(md)
        if cache is None:
            cache = cls._stores[md] = TopicEncodingCache()
        return cache

    def encoded(self, version: int, include_ops: int | None, info: TopicInfo, live_ids: frozenset[int]) -> _EncodedTopic:
        """``include_ops``: the topic's authorized operations, None when not requested."""
        states = tuple(info.partitions[p] for p in sorted(info.partitions))
        key = (version, include_ops, info.name)
        hit = self._entries.get(key)
        if hit is not None and hit.info is info and hit.live_ids == live_ids and \
                len(hit.states) == len(states) and all(map(operator.is_, hit.states, states)):
            return hit
        topic_cls = item_cls(response_schema(ApiKeys.METADATA, version), "topics")
        part_cls = item_cls(topic_cls, "partitions")
        counts = {Errors.NONE: 1}
        partitions = []
        for st in states:
            offline = tuple(r for r in st.replicas if r not in live_ids or r in st.offline_replicas)
            err = Errors.NONE if st.leader >= 0 and st.leader in live_ids else Errors.LEADER_NOT_AVAILABLE
            counts[err] = counts.get(err, 0) + 1
            partitions.append(build(part_cls, error_code=err, partition_index=st.partition, leader_id=st.leader,
                                    leader_epoch=st.leader_epoch, replica_nodes=st.replicas,
                                    isr_nodes=st.isr, offline_replicas=offline))
        entity = build(topic_cls, error_code=Errors.NONE, name=info.name, topic_id=info.topic_id,
                       is_internal=bool(info.internal), partitions=tuple(partitions),
                       topic_authorized_operations=(AUTHORIZED_OPS_OMITTED if include_ops is None else include_ops))
        entry = _EncodedTopic(info, states, live_ids, encode_entity(entity), counts)
        self._entries[key] = entry
        return entry


def handle_metadata(apis: KafkaApis, request: Request) -> None:
    body = request.body
    version = request.api_version
    cls = response_schema(ApiKeys.METADATA, version)
    broker_cls = item_cls(cls, "brokers")
    topic_cls = item_cls(cls, "topics")
    md = apis.metadata

    live = md.live_brokers()
    live_ids = {b.broker_id for b in live}
    brokers = []
    for b in live:
        host, port = broker_endpoint(b, request.listener)
        brokers.append(build(broker_cls, node_id=b.broker_id, host=host, port=port, rack=b.rack))

    allow_auto = bool(getattr(body, "allow_auto_topic_creation", True)) and \
        apis.config["auto.create.topics.enable"]
    include_ops = bool(getattr(body, "include_topic_authorized_operations", False))
    requested = body.topics
    all_topics = requested is None or (version == 0 and not requested)
    if all_topics:   # Kafka lists only the topics the principal may describe
        described = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, md.topics)
        wanted: list[tuple[str | None, UUID | None]] = [(name, None) for name in sorted(described)]
    else:
        wanted = [(getattr(t, "name", None), getattr(t, "topic_id", None)) for t in requested]
        described = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, (
            name or md.topic_name(topic_id) for name, topic_id in wanted if name or topic_id))
    may_create: bool | None = None   # CREATE on the cluster, asked once when a topic is missing

    cache = TopicEncodingCache.for_store(md)
    live_frozen = frozenset(live_ids)
    mutation_quota = permissive_controller_mutation_quota(apis, request) if allow_auto else UNBOUNDED
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
        if name not in described:   # a topic id answers without its name (Kafka: no existence leak)
            topics.append(build(topic_cls, error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                                name=None if topic_id is not None and topic_id.int != 0 else name,
                                topic_id=topic_id, is_internal=False, partitions=()))
            continue
        info = md.topic(name)
        if info is None:
            if allow_auto and may_create is None:
                may_create = authorize(apis, request, Op.CREATE, CLUSTER)
            if allow_auto and not may_create and not authorize(apis, request, Op.CREATE, TOPIC, name):
                topics.append(build(topic_cls, error_code=Errors.TOPIC_AUTHORIZATION_FAILED, name=name,
                                    is_internal=False, partitions=()))
                continue
            err = maybe_create_topic(apis, name, mutation_quota) if allow_auto else Errors.UNKNOWN_TOPIC_OR_PARTITION
            info = md.topic(name) if err == 0 else None
            if info is None:
                topics.append(build(topic_cls, error_code=err or Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                    name=name, is_internal=False, partitions=()))
                continue
        topics.append(cache.encoded(version, authorized_operations(apis, request, TOPIC, info.name)
                                    if include_ops else None, info, live_frozen))

    counts = {Errors.NONE: 1} if has_field(cls, "error_code") else {}
    encoded = []
    for t in topics:
        if isinstance(t, _EncodedTopic):
            encoded.append(t.data)
            topic_counts = t.error_counts
        else:
            encoded.append(encode_entity(t))
            topic_counts = {int(t.error_code): 1}
        for code, n in topic_counts.items():
            counts[code] = counts.get(code, 0) + n

    def create_response(throttle_time_ms: int) -> EncodedResponse:
        shell = build(cls, throttle_time=timedelta(milliseconds=throttle_time_ms), brokers=tuple(brokers),
                      cluster_id=md.cluster_id, controller_id=md.controller_id, topics=(),
                      cluster_authorized_operations=AUTHORIZED_OPS_OMITTED, error_code=Errors.NONE)
        return EncodedResponse(splice_topics(version, shell, encoded), cls.__header_schema__.__flexible__, counts)

    apis.request_helper.send_response_maybe_throttle_with(request, create_response)


APIS = (ApiSpec(ApiKeys.METADATA, 0, 13, handle_metadata),)
