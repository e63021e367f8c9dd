"""The coordinators' only way to their internal topics: the ``CoordinatorLog`` protocol.

One instance per topic: the group coordinator's over ``__consumer_offsets``, the transaction
coordinator's over ``__transaction_state``. The broker implements it over its replica manager
(``broker/server/replica_manager_coordinator_log.py``); unit tests inject an in-memory log. The coordinators never
import ``broker``.

Lock order: a coordinator calls ``append_records`` while holding the group lock or the
transaction metadata's lock (as Kafka calls ``ReplicaManager.appendRecords`` under
``group.inLock`` / ``txnMetadata.inLock``). The implementation may take its own partition locks
after it, and must not hold any of them while it invokes ``callback`` or completes the
DelayedProduce whose operation lock is ``lock``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from kafka_emu.coordinator.group_lock import GroupLock

NO_PRODUCER_ID = -1


@dataclass(frozen=True, slots=True)
class LogBatch:
    """One batch as a coordinator replays it on load.

    ``producer_id`` is -1 for a coordinator's plain batch; ``transactional`` batches (offsets a
    producer committed with TxnOffsetCommit) count only once a COMMIT marker of the same producer
    follows. A control batch (``is_control``) carries no records for the coordinator: ``commit``
    says whether it is a COMMIT (True) or ABORT (False) marker (None for other control types).
    """

    producer_id: int
    transactional: bool
    is_control: bool
    commit: bool | None
    records: tuple[tuple[int, bytes, bytes | None], ...]   # (offset, key, value); no records for control batches


class CoordinatorLog(Protocol):
    def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]],
                       timeout_ms: int, lock: GroupLock, callback: Callable[[int], None],
                       producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                       transactional_id: str | None = None) -> None:
        """Append key/value records to <topic>-<partition> as one batch with acks=-1.
        callback(error_code) runs once the batch is replicated to the ISR (0) or failed
        (e.g. NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT). `lock` is the caller's lock, used as the
        DelayedProduce's operation lock. With a producer id the batch is transactional (Kafka's
        TxnOffsetCommit appends: producer id and epoch, no sequence) and the producer's
        ``transactional_id`` is given: the partition leader verifies the partition is in the
        transaction (KIP-890) as for a producer's batch. The callback may run synchronously or
        on another thread."""
        ...

    def read_records(self, partition: int) -> Iterable[tuple[int, bytes, bytes | None]]:
        """All (offset, key, value) records of the partition's data batches from log start to
        the HW (control batches left out)."""
        ...

    def read_batches(self, partition: int) -> Iterable[LogBatch]:
        """Every batch of the partition from log start to the HW, control batches included."""
        ...
