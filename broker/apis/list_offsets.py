"""ListOffsets: earliest, latest, max-timestamp and by-timestamp offsets.

Special timestamps, as in Kafka's ``UnifiedLog.fetchOffsetByTimestamp`` without remote storage:
-1 LATEST (the HW for read_uncommitted consumers, the last stable offset for read_committed ones,
the LEO for a replica, ``replica_id >= 0``) with the partition's leader epoch;
-2 EARLIEST and -4 EARLIEST_LOCAL (KIP-405: the local log start, which is the log start here)
with the epoch of the earliest leader-epoch entry if it starts at or below the log start;
-3 MAX_TIMESTAMP (KIP-734) the record with the largest timestamp and the epoch that wrote it
(among the records at or above the log start: Kafka's segment-level maximum can still name a
record DeleteRecords removed until its segment is deleted; the emulator never does);
-5 LATEST_TIERED (KIP-1005) offset -1 and epoch -1 (nothing is tiered). Clients ask -3, -4 and -5
from v7, v8 and v9 on (Kafka's ``ListOffsetsRequest.Builder`` raises its minimum version), and
the broker, like Kafka's, answers them at any version it serves. A timestamp ``t >= 0`` finds
the first offset whose record timestamp is ``>= t`` below that same LATEST offset, or offset -1
and timestamp -1 when there is none.

Only the leader answers (NOT_LEADER_OR_FOLLOWER otherwise); a ``current_leader_epoch`` older or
newer than the leader's gets FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (KIP-320).

v0 (served as Kafka 3.9 only (``emulator.kafka.version=3.9``)) answers with a list of segment
offsets chosen by segment modification time, as Kafka 3.9 did (``_legacy_offsets``).

The log answers by timestamp through its segments' time indexes (``UnifiedLog.fetch_offset_by_timestamp``),
decompressing the one batch that holds the answer.
"""
from __future__ import annotations

from itertools import dropwhile
from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import TOPIC, Op, filter_authorized
from kafka_emu.broker.server.partition import Partition
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.server.fetch_params import isolation_for
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2


def _answer(partition: Partition, replica_id: int, isolation_level: int, timestamp: int,
            current_leader_epoch: int) -> tuple[int, int, int, int]:
    """(error, timestamp, offset, leader_epoch) for one partition."""
    with partition.lock:
        if not partition.online or not partition.is_leader:
            return Errors.NOT_LEADER_OR_FOLLOWER, -1, -1, -1
        epoch = partition.leader_epoch
        if current_leader_epoch >= 0:
            if current_leader_epoch < epoch:
                return Errors.FENCED_LEADER_EPOCH, -1, -1, -1
            if current_leader_epoch > epoch:
                return Errors.UNKNOWN_LEADER_EPOCH, -1, -1, -1
        log = partition.log
        limit = partition.end_offset_for(isolation_for(replica_id, isolation_level))
        if timestamp == LATEST:
            return Errors.NONE, -1, limit, epoch
        if timestamp in (EARLIEST, EARLIEST_LOCAL):
            earliest = log.leader_epoch_cache.earliest_entry()
            start = log.log_start_offset
            return Errors.NONE, -1, start, earliest.epoch if earliest and earliest.start_offset <= start else -1
        if timestamp == LATEST_TIERED:
            return Errors.NONE, -1, -1, -1
        if timestamp == MAX_TIMESTAMP:
            off, ts = log.fetch_offset_of_max_timestamp(limit)
            return Errors.NONE, ts, off, log.leader_epoch_cache.epoch_for_offset(off) if off >= 0 else -1
        if timestamp < 0:
            return Errors.INVALID_REQUEST, -1, -1, -1
        off, ts = log.fetch_offset_by_timestamp(timestamp, limit)
        return Errors.NONE, ts, off, log.leader_epoch_cache.epoch_for_offset(off) if off >= 0 else -1


def _legacy_offsets(partition: Partition, replica_id: int, timestamp: int, max_num_offsets: int,
                    now_ms: int) -> tuple[int, tuple[int, ...]]:
    """(error, offsets) of a v0 partition: Kafka's ``Partition.legacyFetchOffsetsForTimestamp``
    over ``UnifiedLog.legacyFetchOffsetsBefore``. The candidates are each segment's base offset
    (at least the log start) with the segment's last-modified time, and the log end offset with
    the current time if the active segment holds data; -1 picks the last, -2 the first, a time
    the last modified at or before it; up to ``max_num_offsets`` going back from there, in
    descending order. A consumer (replica id -1) never sees offsets above the HW: they are
    replaced by the HW."""
    if timestamp < EARLIEST:
        return Errors.UNSUPPORTED_VERSION, ()   # v0 knows only -1 and -2 among negative timestamps
    if max_num_offsets < 0:
        return Errors.UNKNOWN_SERVER_ERROR, ()   # Kafka: a negative array size, an unexpected exception
    with partition.lock:
        if not partition.online or (not partition.is_leader and replica_id != DEBUGGING_REPLICA_ID):
            return Errors.NOT_LEADER_OR_FOLLOWER, ()
        log = partition.log
        candidates = [(max(seg.base_offset, log.log_start_offset), seg.last_modified_ms) for seg in log.segments]
        if log.segments[-1].size > 0:
            candidates.append((log.log_end_offset, now_ms))
        if timestamp == LATEST:
            start = len(candidates) - 1
        elif timestamp == EARLIEST:
            start = 0
        else:
            start = len(candidates) - 1
            while start >= 0 and candidates[start][1] > timestamp:
                start -= 1
        count = min(max_num_offsets, start + 1)
        offsets = sorted((candidates[start - j][0] for j in range(count)), reverse=True)
        hw = log.high_watermark
    if replica_id == CONSUMER_REPLICA_ID and any(o > hw for o in offsets):
        offsets = [hw, *dropwhile(lambda o: o > hw, offsets)]
    return Errors.NONE, tuple(offsets)


def handle_list_offsets(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.LIST_OFFSETS, request.api_version)
    topic_cls = item_cls(cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")
    replica_id = int(getattr(body, "replica_id", -1))
    isolation = int(getattr(body, "isolation_level", 0))
    rm = apis.replica_manager
    topics = []
    described = filter_authorized(apis, request, Op.DESCRIBE, TOPIC, (t.name for t in body.topics))
    for t in body.topics:
        parts = []
        for p in t.partitions:
            partition = rm.get_partition((t.name, p.partition_index))
            if t.name not in described:   # Kafka: DESCRIBE on the topic, else TOPIC_AUTHORIZATION_FAILED
                parts.append(build(part_cls, partition_index=p.partition_index,
                                   error_code=Errors.TOPIC_AUTHORIZATION_FAILED, timestamp=-1, offset=-1,
                                   leader_epoch=-1))
                continue
            if partition is None:
                known = apis.metadata.partition_state(t.name, p.partition_index) is not None
                err = Errors.NOT_LEADER_OR_FOLLOWER if known else Errors.UNKNOWN_TOPIC_OR_PARTITION
                parts.append(build(part_cls, partition_index=p.partition_index, error_code=err,
                                   timestamp=-1, offset=-1, leader_epoch=-1))
                continue
            if request.api_version == 0:
                err, offsets = _legacy_offsets(partition, replica_id, int(p.timestamp), int(p.max_num_offsets),
                                               apis.time.milliseconds())
                parts.append(build(part_cls, partition_index=p.partition_index, error_code=err,
                                   old_style_offsets=offsets))
                continue
            err, ts, off, epoch = _answer(partition, replica_id, isolation, int(p.timestamp),
                                          int(getattr(p, "current_leader_epoch", -1)))
            parts.append(build(part_cls, partition_index=p.partition_index, error_code=err,
                               timestamp=ts, offset=off, leader_epoch=epoch))
        topics.append(build(topic_cls, name=t.name, partitions=tuple(parts)))
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, topics=tuple(topics)))


APIS = (ApiSpec(ApiKeys.LIST_OFFSETS, 0, 11, handle_list_offsets),)
