"""DelayedProduce: an acks=all produce waiting until the ISR has every partition's data.

A ``DelayedPartitionsOperation`` in the ``Produce`` purgatory: a pending partition is settled
when it is gone or not led here (UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER) or when the
HW reached the required offset (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
min ISR meanwhile).

Locking: the operation lock (the purgatory's RLock, or the caller's, e.g. a group lock for a
coordinator append) guards ``statuses``; ``settle`` reads partition state without partition
locks (ints; a stale read is repeated by the next trigger).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_emu.broker.server.delayed_partitions import DelayedPartitionsOperation
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.protocol.fast_produce import RecordError
    from kafka_emu.broker.server.partition import Partition


@dataclass(slots=True)
class ProducePartitionStatus:
    required_offset: int
    error: int
    base_offset: int
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    acks_pending: bool = False
    record_errors: tuple[RecordError, ...] = ()   # INVALID_RECORD: the records at fault


class DelayedProduce(DelayedPartitionsOperation[ProducePartitionStatus]):
    def settle(self, partition: Partition | None, status: ProducePartitionStatus) -> bool:
        if partition is None:
            status.error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            return True
        done, error = partition.check_enough_replicas_reach_offset(status.required_offset)
        if error != Errors.NONE or done:
            status.error = error
            return True
        return False

    def record_expiration(self) -> None:
        self.replica_manager.stats.record_produce_expiration()
