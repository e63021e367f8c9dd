"""AlterReplicaLogDirs (key 34): move replicas between this broker's log directories.

Kafka's ``KafkaApis.handleAlterReplicaLogDirsRequest`` and ``ReplicaManager.alterReplicaLogDirs``
(``broker.server.replica_manager``): one result per requested partition, grouped by topic, with
NONE (the log is in the directory now), LOG_DIR_NOT_FOUND (the broker has no such directory:
with logs in memory only the notional one DescribeLogDirs names exists), REPLICA_NOT_AVAILABLE (no
replica here; the directory is used when one comes), INVALID_TOPIC_EXCEPTION (a name too long for
the future directory) or KAFKA_STORAGE_ERROR (the move failed); CLUSTER_AUTHORIZATION_FAILED for
all without ALTER on the cluster.

Difference from Kafka on purpose: the move is done before the answer, by renaming the partition
directory under the log's lock (Kafka copies into a ``-future`` replica with a
ReplicaAlterLogDirsThread and swaps when it has caught up, so DescribeLogDirs shows a future
replica meanwhile); a move across file systems, which a rename cannot do, is KAFKA_STORAGE_ERROR.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, authorize
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request



def handle_alter_replica_log_dirs(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.ALTER_REPLICA_LOG_DIRS, request.api_version)
    topic_cls = item_cls(cls, "results")
    part_cls = item_cls(topic_cls, "partitions")
    wanted = {(t.name, int(p)): d.path for d in request.body.dirs for t in d.topics for p in t.partitions}
    if authorize(apis, request, Op.ALTER, CLUSTER):
        results = apis.replica_manager.alter_replica_log_dirs(wanted)
    else:   # Kafka: every partition CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster
        results = {tp: Errors.CLUSTER_AUTHORIZATION_FAILED for tp in wanted}
    by_topic: dict[str, list[object]] = {}
    for (topic, partition), error in results.items():
        by_topic.setdefault(topic, []).append(build(part_cls, partition_index=partition, error_code=error))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, results=tuple(
        build(topic_cls, topic_name=topic, partitions=tuple(parts)) for topic, parts in by_topic.items())))


APIS = (ApiSpec(ApiKeys.ALTER_REPLICA_LOG_DIRS, 0, 2, handle_alter_replica_log_dirs),)   # v0 = v1
