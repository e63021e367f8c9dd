"""OffsetForLeaderEpoch (key 23): where did a leader epoch end (KIP-101, KIP-279, KIP-320)?

Consumers (librdkafka, the Java client) ask it after a leader change to validate their fetch
position: if the epoch of the last record they consumed ended before their position on the new
leader, the log was truncated under them (an unclean election) and they reset. Kafka's
``KafkaApis.handleOffsetForLeaderEpochRequest`` and ``ReplicaManager.lastOffsetForLeaderEpoch``:
a partition not hosted here answers NOT_LEADER_OR_FOLLOWER if it exists, else
UNKNOWN_TOPIC_OR_PARTITION; then ``Partition.last_offset_for_leader_epoch`` checks the caller's
``current_leader_epoch`` (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), requires the leader (the
4.0 broker serves this from leaders only, for consumers and for ``replica_id`` >= 0 alike; the
emulator's followers detect divergence through Fetch instead), and answers from the leader-epoch
cache (``LeaderEpochFileCache.end_offset_for``): the latest epoch ends at the LEO; an epoch the
cache cannot place answers NONE with epoch and end offset -1.

Versions 2–4 (4.0's range, KIP-896); ``replica_id`` (v3+) does not change the answer. Under
as Kafka 3.9 (``emulator.kafka.version=3.9``) also v0-v1 (no current leader epoch to check; v0 answers
without the epoch), served as Kafka 3.9 did.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import CLUSTER, TOPIC, Op, authorize
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_offset_for_leader_epoch(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.OFFSET_FOR_LEADER_EPOCH, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    rm = apis.replica_manager
    topics = []
    # Kafka's handleOffsetForLeaderEpochRequest: a follower needs CLUSTER_ACTION, a consumer
    # DESCRIBE on each topic
    follower = int(getattr(request.body, "replica_id", -1)) >= 0
    cluster_action = follower and authorize(apis, request, Op.CLUSTER_ACTION, CLUSTER)
    for t in request.body.topics:
        parts = []
        allowed = cluster_action if follower else authorize(apis, request, Op.DESCRIBE, TOPIC, t.topic)
        for p in t.partitions:
            partition = rm.get_partition((t.topic, p.partition))
            if not allowed:
                error, epoch, end_offset = Errors.TOPIC_AUTHORIZATION_FAILED, -1, -1
            elif partition is None:
                known = apis.metadata.partition_state(t.topic, p.partition) is not None
                error, epoch, end_offset = (Errors.NOT_LEADER_OR_FOLLOWER if known
                                            else Errors.UNKNOWN_TOPIC_OR_PARTITION), -1, -1
            else:
                error, epoch, end_offset = partition.last_offset_for_leader_epoch(
                    int(getattr(p, "current_leader_epoch", -1)), int(p.leader_epoch))   # v2+
            parts.append(build(part_cls, error_code=error, partition=p.partition, leader_epoch=epoch,
                               end_offset=end_offset))
        topics.append(build(topic_cls, topic=t.topic, partitions=tuple(parts)))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(topics)))


APIS = (ApiSpec(ApiKeys.OFFSET_FOR_LEADER_EPOCH, 0, 4, handle_offset_for_leader_epoch),)
