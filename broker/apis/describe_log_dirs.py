"""DescribeLogDirs (key 35): each log directory of this broker with its partitions' sizes.

Kafka's ``KafkaApis.handleDescribeLogDirsRequest`` and ``ReplicaManager.describeLogDirs``: one
result per log directory (``LogManager.log_dirs``), listing the requested partitions (null: all)
hosted there, leader or follower, with ``partition_size`` (bytes of the log's segments),
``offset_lag`` (Kafka's max(HW − LEO, 0) of the local log, so 0 for a normal replica) and ``is_future_key`` false (no replica is ever moving between directories); topics without
a listed partition are left out. v4 adds the directory's total and usable bytes; v5
``is_cordoned`` is false (no directory is ever cordoned). A directory that failed is listed with
KAFKA_STORAGE_ERROR, no partitions and unknown (-1) sizes, as Kafka lists an offline one.

Difference from Kafka on purpose: without ``log.dirs`` logs live in memory, so the one
directory is notional (see ``LogManager.log_dirs``: its path names the broker, its total bytes
are the memory budget); with ``log.dirs`` the directories and sizes are the real ones.
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


def handle_describe_log_dirs(apis: KafkaApis, request: Request) -> None:
    if deny(apis, request, Op.DESCRIBE, CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED):
        return
    cls = response_schema(ApiKeys.DESCRIBE_LOG_DIRS, request.api_version)
    result_cls = item_cls(cls, "results")
    topic_cls = item_cls(result_cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    requested = None if request.body.topics is None else \
        {(t.topic, int(p)) for t in request.body.topics for p in t.partitions}
    results = []
    for log_dir in apis.replica_manager.log_manager.log_dirs():
        by_topic: dict[str, list[object]] = {}
        for log in sorted(log_dir.logs, key=lambda lg: (lg.topic, lg.partition)):
            if requested is not None and (log.topic, log.partition) not in requested:
                continue
            with log.lock:
                size, lag = log.size_bytes, max(log.high_watermark - log.log_end_offset, 0)
            by_topic.setdefault(log.topic, []).append(build(
                part_cls, partition_index=log.partition, partition_size=size, offset_lag=lag,
                is_future_key=False))
        results.append(build(result_cls, error_code=log_dir.error, log_dir=log_dir.path,
                             topics=tuple(build(topic_cls, name=name, partitions=tuple(parts))
                                          for name, parts in by_topic.items()),
                             total_bytes=log_dir.total_bytes, usable_bytes=log_dir.usable_bytes,
                             is_cordoned=False))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE,
                                 results=tuple(results)))


APIS = (ApiSpec(ApiKeys.DESCRIBE_LOG_DIRS, 0, 5, handle_describe_log_dirs),)   # v0 = v1
