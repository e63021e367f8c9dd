"""DescribeTopicPartitions (key 75, KIP-966): topics and their partitions, paged by a cursor.

Kafka's ``DescribeTopicPartitionsRequestHandler`` and ``KRaftMetadataCache.describeTopicResponse``:

* the topics are the request's, or every topic when it names none, taken in name order from the
  cursor's topic on (names before it are skipped); a cursor naming a topic the request does not
  list, or a negative cursor partition, is INVALID_REQUEST for the whole request;
* partitions are listed from the cursor's partition in its topic (0 in the others) until
  ``response_partition_limit`` (capped by ``max.request.partition.size.limit``, at least 1) is
  reached; ``next_cursor`` then names the first partition not listed (a topic's first partition
  when the limit ran out between topics), and is null when everything was listed;
* a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an
  illegal name); topics that do not exist are left out when the request named none;
* each partition: its leader when the leader is live (-1 otherwise), leader epoch, replicas, ISR,
  the replicas of brokers that are not live (``offline_replicas``) and empty ELR lists (the
  emulator has no ELR: eligible.leader.replicas.version is off);
* ACLs: a topic needs DESCRIBE; a named one without it is TOPIC_AUTHORIZATION_FAILED (no id,
  listed after the others), one not named is left out; ``topic_authorized_operations`` is the
  principal's (every operation a topic supports without an authorizer).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond, respond_error, topic_name_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import TOPIC, Op, authorized_operations, filter_authorized
from kafka_emu.broker.server.replica_manager import INTERNAL_TOPICS
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.server.metadata_store import TopicInfo
    from kafka_emu.broker.network.request_channel import Request

PARTITION_LIMIT_CONFIG = "max.request.partition.size.limit"


def _partitions(part_cls: type, info: TopicInfo, start: int, limit: int, live: set[int]) -> tuple[list[Any], int]:
    """The partitions ``start .. start+limit-1`` of ``info`` and the next index (-1: none left)."""
    count = len(info.partitions)
    upper = min(count, start + limit)
    out = []
    for index in range(start, upper):
        st = info.partitions.get(index)
        if st is None:
            continue
        out.append(build(part_cls, error_code=Errors.NONE, partition_index=index,
                         leader_id=st.leader if st.leader in live else -1, leader_epoch=st.leader_epoch,
                         replica_nodes=st.replicas, isr_nodes=st.isr, eligible_leader_replicas=(),
                         last_known_elr=(), offline_replicas=tuple(r for r in st.replicas if r not in live)))
    return out, (upper if upper < count else -1)


def handle_describe_topic_partitions(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.DESCRIBE_TOPIC_PARTITIONS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    md = apis.metadata
    cursor = body.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not body.topics
    names = set(md.topics) if fetch_all else {t.name for t in body.topics}
    names = {n for n in names if n >= cursor_topic}
    if cursor is not None and ((not fetch_all and cursor.topic_name not in names) or cursor.partition_index < 0):
        respond_error(apis, request, Errors.INVALID_REQUEST)
        return
    allowed = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, names)
    unauthorized = [] if fetch_all else sorted(names - allowed)
    names = allowed
    remaining = max(min(int(apis.config[PARTITION_LIMIT_CONFIG]), int(body.response_partition_limit)), 1)
    live = set(md.live_broker_ids())
    topics: list[Any] = []
    next_cursor = None
    for name in sorted(names):
        if remaining == 0:   # the limit ran out between topics: go on from this one's start
            next_cursor = build(item_cls(cls, "next_cursor"), topic_name=name, partition_index=0)
            break
        info = md.topic(name)
        if info is None:
            if not fetch_all:
                topics.append(build(topic_cls, error_code=topic_name_error(name) or Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                    name=name, topic_id=None, is_internal=name in INTERNAL_TOPICS, partitions=(),
                                    topic_authorized_operations=authorized_operations(apis, request, TOPIC, name)))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        parts, next_index = _partitions(part_cls, info, start, remaining, live)
        topics.append(build(topic_cls, error_code=Errors.NONE, name=name, topic_id=info.topic_id,
                            is_internal=name in INTERNAL_TOPICS, partitions=tuple(parts),
                            topic_authorized_operations=authorized_operations(apis, request, TOPIC, name)))
        if next_index != -1:
            next_cursor = build(item_cls(cls, "next_cursor"), topic_name=name, partition_index=next_index)
            break
        remaining -= len(parts)
    topics += [build(topic_cls, error_code=Errors.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=None,
                     is_internal=False, partitions=()) for name in unauthorized]
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(topics), next_cursor=next_cursor))


APIS = (ApiSpec(ApiKeys.DESCRIBE_TOPIC_PARTITIONS, 0, 0, handle_describe_topic_partitions),)
