"""DescribeProducers (key 61): the idempotent and transactional producers a partition remembers.

Kafka's ``KafkaApis.handleDescribeProducersRequest`` and ``Partition.activeProducerState``: per
partition, from the local replica's producer state (leader or follower: the admin client asks
the leader unless told otherwise), each producer id with its epoch, the last sequence and the
max timestamp of its newest retained batch, the coordinator epoch of its last transaction marker
and the first offset of its ongoing transaction (-1 for none). An illegal topic name answers
INVALID_TOPIC_EXCEPTION, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, a partition
this broker does not host (or has taken offline) NOT_LEADER_OR_FOLLOWER.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond, topic_name_error
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, Op, authorize
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_describe_producers(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.DESCRIBE_PRODUCERS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    state_cls = item_cls(part_cls, "active_producers")
    rm = apis.replica_manager
    topics = []
    for t in request.body.topics:
        parts = []
        for index in t.partition_indexes:
            index = int(index)
            producers: tuple[object, ...] = ()
            partition = rm.get_partition((t.name, index))
            if topic_name_error(t.name):
                error = Errors.INVALID_TOPIC_EXCEPTION
            elif not authorize(apis, request, Op.READ, TOPIC, t.name):   # Kafka: READ on the topic
                error = Errors.TOPIC_AUTHORIZATION_FAILED
            elif apis.metadata.partition_state(t.name, index) is None:
                error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            elif partition is None or not partition.online:
                error = Errors.NOT_LEADER_OR_FOLLOWER
            else:
                error = Errors.NONE
                with partition.lock:
                    producers = tuple(build(
                        state_cls, producer_id=e.producer_id, producer_epoch=e.producer_epoch,
                        last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                        coordinator_epoch=e.coordinator_epoch,
                        current_txn_start_offset=e.current_txn_first_offset)
                        for e in partition.log.producers.values())
            parts.append(build(part_cls, partition_index=index, error_code=error, error_message=None,
                               active_producers=producers))
        topics.append(build(topic_cls, name=t.name, partitions=tuple(parts)))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(topics)))


APIS = (ApiSpec(ApiKeys.DESCRIBE_PRODUCERS, 0, 0, handle_describe_producers),)
