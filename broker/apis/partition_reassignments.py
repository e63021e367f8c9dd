"""AlterPartitionReassignments (45) and ListPartitionReassignments (46): move replicas (KIP-455).

Kafka forwards both to the controller; here the in-process controller
(``MetadataStore.alter_partition_reassignments``) applies a reassignment at once and the move is
real: the new replicas' brokers create the replica and fetch from the leader through their
replica fetchers, join the ISR once caught up (the leader's usual ISR expansion), and then the
controller completes the reassignment (``MetadataStore.complete_reassignments``): the old
replicas stop and delete their logs, and a leader that is not among the target replicas hands
over to one that is (epoch bump). A null replica list cancels an ongoing reassignment.

Errors, as Kafka's: unknown partition UNKNOWN_TOPIC_OR_PARTITION; empty or duplicate replica
lists or unregistered brokers INVALID_REPLICA_ASSIGNMENT; a replication factor change with
``allow_replication_factor_change`` false (v1) INVALID_REPLICATION_FACTOR; cancelling nothing
NO_REASSIGNMENT_IN_PROGRESS. ``timeout`` never expires (the controller answers synchronously).
ListPartitionReassignments lists the ongoing reassignments (all, or of the requested
partitions) with the full replica set and its adding and removing replicas.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.security.acl import CLUSTER_NAME
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, deny
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_alter_partition_reassignments(apis: KafkaApis, request: Request) -> None:
    if deny(apis, request, Op.ALTER, CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED):
        return
    body = request.body
    cls = response_schema(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, request.api_version)
    topic_cls = item_cls(cls, "responses")
    part_cls = item_cls(topic_cls, "partitions")
    allow_rf_change = bool(getattr(body, "allow_replication_factor_change", True))
    wanted = {(t.name, int(p.partition_index)): None if p.replicas is None else tuple(int(r) for r in p.replicas)
              for t in body.topics for p in t.partitions}
    results = apis.metadata.alter_partition_reassignments(wanted, allow_rf_change)
    by_topic: dict[str, list[object]] = {}
    for (topic, partition), (error, message) in results.items():
        by_topic.setdefault(topic, []).append(build(part_cls, partition_index=partition, error_code=error,
                                                    error_message=message))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, allow_replication_factor_change=allow_rf_change,
                                 error_code=Errors.NONE, error_message=None, responses=tuple(
                                     build(topic_cls, name=name, partitions=tuple(parts))
                                     for name, parts in by_topic.items())))


def handle_list_partition_reassignments(apis: KafkaApis, request: Request) -> None:
    if deny(apis, request, Op.DESCRIBE, CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED):
        return
    body = request.body
    cls = response_schema(ApiKeys.LIST_PARTITION_REASSIGNMENTS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    wanted = None if body.topics is None else \
        {(t.name, int(p)) for t in body.topics for p in t.partition_indexes}
    by_topic: dict[str, list[object]] = {}
    for st in apis.metadata.ongoing_reassignments():
        if wanted is not None and (st.topic, st.partition) not in wanted:
            continue
        by_topic.setdefault(st.topic, []).append(build(
            part_cls, partition_index=st.partition, replicas=st.replicas,
            adding_replicas=st.adding_replicas, removing_replicas=st.removing_replicas))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, error_message=None,
                                 topics=tuple(build(topic_cls, name=name, partitions=tuple(parts))
                                              for name, parts in by_topic.items())))


APIS = (
    ApiSpec(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, 0, 1, handle_alter_partition_reassignments),
    ApiSpec(ApiKeys.LIST_PARTITION_REASSIGNMENTS, 0, 0, handle_list_partition_reassignments),
)
