"""DelayedDeleteRecords: a DeleteRecords request waiting until every replica dropped the records.

Kafka's ``DelayedDeleteRecords``. The leader raised its log start offset at once; followers raise
theirs when their next fetch brings the leader's log start offset (the same path retention
uses), and report it in the fetch after. The request is done for a partition when the leader's
*low watermark* (``Partition.low_watermark_if_leader``: the smallest log start offset over the
leader and its live followers) reached the requested offset.

One operation per request, watched on one ``TopicPartitionOperationKey`` per partition in the
``DeleteRecords`` purgatory. Partitions that succeeded on the leader start pending with their
error preset to REQUEST_TIMED_OUT (what the client sees on expiry, with the last low watermark
seen); failed ones are settled. ``try_complete`` settles a pending partition when the partition
is gone (UNKNOWN_TOPIC_OR_PARTITION), offline or not led here (NOT_LEADER_OR_FOLLOWER), or its low
watermark reached the requested offset (NONE). It is re-checked whenever the replica manager
triggers a partition's delayed operations: an HW move, a follower's log start offset moving, a
leadership change.

Locking: the purgatory's operation lock guards ``statuses``; ``try_complete`` takes each
partition's lock only inside ``low_watermark_if_leader``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from kafka_emu.common.errors import Errors
from kafka_emu.timer import DelayedOperation

if TYPE_CHECKING:
    from kafka_emu.broker.server.replica_manager import ReplicaManager


@dataclass
class DeleteRecordsPartitionStatus:
    required_offset: int
    low_watermark: int
    error: int
    pending: bool = False


class DelayedDeleteRecords(DelayedOperation):
    def __init__(self, delay_ms: int, statuses: dict[tuple[str, int], DeleteRecordsPartitionStatus],
                 replica_manager: "ReplicaManager",
                 response_callback: Callable[[dict[tuple[str, int], DeleteRecordsPartitionStatus]], None]) -> None:
        super().__init__(delay_ms)
        self.statuses = statuses
        self.replica_manager = replica_manager
        self.response_callback = response_callback
        for status in statuses.values():
            if status.error == Errors.NONE:
                status.pending = True
                status.error = Errors.REQUEST_TIMED_OUT

    def try_complete(self) -> bool:
        rm = self.replica_manager
        pending = False
        for tp, status in self.statuses.items():
            if not status.pending:
                continue
            partition = rm.get_partition(tp)
            if partition is None:
                status.pending, status.error, status.low_watermark = False, Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
                continue
            low_watermark = partition.low_watermark_if_leader()
            if low_watermark is None:
                status.pending, status.error, status.low_watermark = False, Errors.NOT_LEADER_OR_FOLLOWER, -1
            elif low_watermark >= status.required_offset:
                status.pending, status.error, status.low_watermark = False, Errors.NONE, low_watermark
            else:
                status.low_watermark = low_watermark
                pending = True
        if not pending:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        for status in self.statuses.values():
            if status.pending:
                self.replica_manager.stats.record_delete_records_expiration()

    def on_complete(self) -> None:
        self.response_callback(self.statuses)
