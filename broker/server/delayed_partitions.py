"""DelayedPartitionsOperation: a request waiting, partition by partition, until each partition's
leader has reached an offset the request requires.

The shape ``DelayedProduce`` (the ISR's high watermark, for acks=all) and ``DelayedDeleteRecords``
(the low watermark, once followers dropped the records) share; Kafka writes the same loop out in
each. One operation per request, watched on one ``TopicPartitionOperationKey`` per partition.
Partitions that failed when the request was handled keep their error; the rest start
``acks_pending`` with REQUEST_TIMED_OUT preset, which is what the client sees if the operation
expires. ``try_complete`` asks the subclass to ``settle`` each pending partition (given None for a
partition no longer hosted here) and completes the operation once none is pending;
``on_expiration`` calls ``record_expiration`` for each partition still pending.

Locking: the operation lock (the purgatory's, or the caller's) guards ``statuses``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Generic, Protocol, TypeVar

from kafka_emu.common.errors import Errors
from kafka_emu.timer import DelayedOperation

if TYPE_CHECKING:
    from kafka_emu.broker.server.partition import Partition
    from kafka_emu.broker.server.replica_manager import ReplicaManager
    from kafka_emu.coordinator.group_lock import GroupLock

TP = tuple[str, int]


class PartitionStatus(Protocol):
    required_offset: int
    error: int
    acks_pending: bool


S = TypeVar("S", bound=PartitionStatus)


class DelayedPartitionsOperation(DelayedOperation, Generic[S]):
    def __init__(self, delay_ms: int, statuses: dict[TP, S], replica_manager: ReplicaManager,
                 response_callback: Callable[[dict[TP, S]], None], lock: GroupLock | None = None) -> None:
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

    def settle(self, partition: Partition | None, status: S) -> bool:
        """Whether ``status`` is settled now (its error and results set); False to keep waiting."""
        raise NotImplementedError

    def record_expiration(self) -> None:
        """Count one partition that was still pending when the operation expired."""
        raise NotImplementedError

    def try_complete(self) -> bool:
        get_partition = self.replica_manager.get_partition
        pending = False
        for tp, status in self.statuses.items():
            if not status.acks_pending:
                continue
            if self.settle(get_partition(tp), status):
                status.acks_pending = False
            else:
                pending = True
        if not pending:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        for status in self.statuses.values():
            if status.acks_pending:
                self.record_expiration()

    def on_complete(self) -> None:
        self.response_callback(self.statuses)
