"""DelayedDeleteRecords: a DeleteRecords request waiting until every replica dropped the records.

Kafka's ``DelayedDeleteRecords``. The leader raised its log start offset at once; followers raise
theirs when their next fetch brings the leader's log start offset (the same path retention
uses), and report it in the fetch after. The request is done for a partition when the leader's
*low watermark* (``Partition.low_watermark_if_leader``: the smallest log start offset over the
leader and its live followers) reached the requested offset.

A ``DelayedPartitionsOperation`` in the ``DeleteRecords`` purgatory (on expiry the client sees
REQUEST_TIMED_OUT with the last low watermark seen): a pending partition is settled when it is
gone (UNKNOWN_TOPIC_OR_PARTITION), offline or not led here (NOT_LEADER_OR_FOLLOWER), or its low
watermark reached the requested offset (NONE). It is re-checked whenever the replica manager
triggers a partition's delayed operations: an HW move, a follower's log start offset moving, a
leadership change.

Locking: the purgatory's operation lock guards ``statuses``; ``settle`` takes the partition's
lock only inside ``low_watermark_if_leader``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_emu.broker.server.delayed_partitions import DelayedPartitionsOperation
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.partition import Partition


@dataclass
class DeleteRecordsPartitionStatus:
    required_offset: int
    low_watermark: int
    error: int
    acks_pending: bool = False


class DelayedDeleteRecords(DelayedPartitionsOperation[DeleteRecordsPartitionStatus]):
    def settle(self, partition: Partition | None, status: DeleteRecordsPartitionStatus) -> bool:
        if partition is None:
            status.error, status.low_watermark = Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
            return True
        low_watermark = partition.low_watermark_if_leader()
        if low_watermark is None:
            status.error, status.low_watermark = Errors.NOT_LEADER_OR_FOLLOWER, -1
            return True
        status.low_watermark = low_watermark
        if low_watermark >= status.required_offset:
            status.error = Errors.NONE
            return True
        return False

    def record_expiration(self) -> None:
        self.replica_manager.stats.record_delete_records_expiration()
