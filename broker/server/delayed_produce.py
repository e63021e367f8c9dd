"""DelayedProduce: an acks=all produce waiting until the ISR has every partition's data.

One operation per request, watched on one ``TopicPartitionOperationKey`` per partition in the
``Produce`` purgatory. Partitions whose append succeeded start with ``acks_pending`` and their
error preset to REQUEST_TIMED_OUT (what the client sees on expiry); failed ones are settled.
``try_complete`` settles a pending partition when the partition is gone or not led here
(UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER) or when the HW reached the required
offset (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min ISR meanwhile).

Locking: the operation lock (the purgatory's RLock, or the caller's, e.g. a group lock for a
coordinator append) guards ``statuses`` and ``acks_pending``; ``try_complete`` reads partition
state without partition locks (ints; a stale read is repeated by the next trigger).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from kafka_emu.common.errors import Errors
from kafka_emu.timer import DelayedOperation

if TYPE_CHECKING:
    from kafka_emu.broker.protocol.fast_produce import RecordError
    from kafka_emu.broker.server.replica_manager import ReplicaManager
    from kafka_emu.coordinator.group_lock import GroupLock


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


class DelayedProduce(DelayedOperation):
    def __init__(self, delay_ms: int, statuses: dict[tuple[str, int], ProducePartitionStatus],
                 replica_manager: "ReplicaManager",
                 response_callback: Callable[[dict[tuple[str, int], ProducePartitionStatus]], None],
                 lock: GroupLock | None = None) -> None:
        super().__init__(delay_ms, lock)
        self.statuses = statuses
        self.replica_manager = replica_manager
        self.response_callback = response_callback
        for status in statuses.values():
            if status.error == Errors.NONE:
                status.acks_pending = True
                status.error = Errors.REQUEST_TIMED_OUT
            else:
                status.acks_pending = False

    def try_complete(self) -> bool:
        rm = self.replica_manager
        pending = False
        for tp, status in self.statuses.items():
            if not status.acks_pending:
                continue
            partition = rm.get_partition(tp)
            if partition is None:
                status.acks_pending = False
                status.error = Errors.UNKNOWN_TOPIC_OR_PARTITION
                continue
            done, error = partition.check_enough_replicas_reach_offset(status.required_offset)
            if error != Errors.NONE or done:
                status.acks_pending = False
                status.error = error
            else:
                pending = True
        if not pending:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        for status in self.statuses.values():
            if status.acks_pending:
                self.replica_manager.stats.record_produce_expiration()

    def on_complete(self) -> None:
        self.response_callback(self.statuses)
