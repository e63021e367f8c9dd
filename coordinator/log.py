"""The coordinator's only way to ``__consumer_offsets``: the ``CoordinatorLog`` protocol.

The broker implements it over its replica manager (``broker/coordinator_log.py``); unit tests
inject an in-memory log. The coordinator never imports ``broker``.

Lock order: the coordinator calls ``append_records`` while holding the group lock (as Kafka calls
``ReplicaManager.appendRecords`` under ``group.inLock``). The implementation may take its own
partition locks after the group lock, and must not hold any of them while it invokes
``callback`` or completes the DelayedProduce whose operation lock is ``lock``.
"""
from __future__ import annotations

from typing import Callable, Iterable, Protocol

from kafka_emu.coordinator.group_lock import GroupLock


class CoordinatorLog(Protocol):
    def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]],
                       timeout_ms: int, lock: GroupLock, callback: Callable[[int], None]) -> None:
        """Append key/value records to __consumer_offsets-<partition> as one batch with acks=-1.
        callback(error_code) runs once the batch is replicated to the ISR (0) or failed
        (e.g. NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT). `lock` is the group lock, used as the
        DelayedProduce's operation lock. The callback may run synchronously or on another thread."""
        ...

    def read_records(self, partition: int) -> Iterable[tuple[int, bytes, bytes | None]]:
        """All (offset, key, value) records of the partition from log start to the HW."""
        ...
