"""DescribeQuorum (key 55): the metadata quorum, answered for the in-process controller.

Kafka's broker forwards the request to the controller, whose ``KafkaRaftClient`` answers
(``handleDescribeQuorumRequest``, ``RaftUtil.singletonDescribeQuorumResponse``): anything but one
topic ``__cluster_metadata`` with one partition 0 gets UNKNOWN_TOPIC_OR_PARTITION (with its
message) on every partition asked for; otherwise one partition with the leader, its epoch, the high
watermark and the replica states: the voters (v1+: last fetch and caught-up times, the leader's
being now; v2: directory ids, and ``nodes`` with each voter's listeners).

The emulator's controller is one voter (KRaft's combined mode: the controller runs in the first
live broker, Metadata's ``controller_id``), whose log end offset is the number of metadata
changes committed (``MetadataStore.quorum_state``); every other live broker is an observer that
has fetched everything (its log end offset the leader's, fetched now). The high watermark is the
log end offset: a single voter commits what it writes. Directory ids are the zero uuid (Kafka's
``ReplicaKey.NO_DIRECTORY_ID``); the voter's listener is its broker's.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kafka_emu.broker.apis._common import broker_endpoint, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, deny
from kafka_emu.broker.security.acl import CLUSTER_NAME
from kafka_emu.broker.protocol.adapter import build, has_field, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

METADATA_TOPIC = "__cluster_metadata"   # Kafka's Topic.CLUSTER_METADATA_TOPIC_NAME
LISTENER_NAME = "PLAINTEXT"
NO_DIRECTORY_ID = uuid.UUID(int=0)


def handle_describe_quorum(apis: KafkaApis, request: Request) -> None:
    if deny(apis, request, Op.DESCRIBE, CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED):
        return   # Kafka: authorizeClusterOperation(DESCRIBE), a top-level error
    body = request.body
    cls = response_schema(ApiKeys.DESCRIBE_QUORUM, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    topics = body.topics
    valid = len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC and \
        len(topics[0].partitions) == 1 and topics[0].partitions[0].partition_index == 0
    if not valid:
        error = Errors.UNKNOWN_TOPIC_OR_PARTITION
        respond(apis, request, build(cls, error_code=Errors.NONE, error_message=None, nodes=(), topics=tuple(
            build(topic_cls, topic_name=t.topic_name, partitions=tuple(
                build(part_cls, partition_index=p.partition_index, error_code=error, error_message=error.message,
                      leader_id=0, leader_epoch=0, high_watermark=0, current_voters=(), observers=())
                for p in t.partitions)) for t in topics)))
        return
    md = apis.metadata
    leader, epoch, end_offset = md.quorum_state()
    now = apis.time.milliseconds()
    state_cls = item_cls(part_cls, "current_voters")

    def replica(replica_id: int) -> Any:
        return build(state_cls, replica_id=replica_id, replica_directory_id=NO_DIRECTORY_ID,
                     log_end_offset=end_offset, last_fetch_timestamp=now, last_caught_up_timestamp=now)

    observers = tuple(replica(b) for b in md.live_broker_ids() if b != leader)
    partition = build(part_cls, partition_index=0, error_code=Errors.NONE, error_message=None, leader_id=leader,
                      leader_epoch=epoch, high_watermark=end_offset, current_voters=(replica(leader),),
                      observers=observers)
    nodes: tuple[Any, ...] = ()
    info = md.broker(leader)
    if info is not None and has_field(cls, "nodes"):
        node_cls = item_cls(cls, "nodes")
        host, port = broker_endpoint(info)
        nodes = (build(node_cls, node_id=leader, listeners=(
            build(item_cls(node_cls, "listeners"), name=LISTENER_NAME, host=host, port=port),)),)
    respond(apis, request, build(cls, error_code=Errors.NONE, error_message=None, nodes=nodes,
                                 topics=(build(topic_cls, topic_name=METADATA_TOPIC, partitions=(partition,)),)))


APIS = (ApiSpec(ApiKeys.DESCRIBE_QUORUM, 0, 2, handle_describe_quorum),)
