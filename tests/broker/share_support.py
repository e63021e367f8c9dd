"""Test doubles for the share-partition tests (after Kafka's ``SharePartitionTest`` set-up): a
``SharePartition`` over a ``MockTimer`` and an in-memory persister that answers at once and keeps
what was written."""
from __future__ import annotations

import uuid
from typing import Any, Callable

from kafka_emu.broker.server.share.share_partition import FetchedBatch, SharePartition, ShareSettings
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.share.share_coordinator import UNINITIALIZED, ReadStateResult
from kafka_emu.coordinator.share.share_coordinator_records import StateBatch, combine_state_batches
from kafka_emu.timer import MockTime, MockTimer

GROUP, TOPIC, MEMBER = "test-group", "test-topic", "member-1"
TOPIC_ID = uuid.UUID(int=7)
LOCK_MS = 30_000


class InMemoryPersister:
    """Reads and writes one share partition's state synchronously (Kafka's
    ``NoOpStatePersister`` keeping state); ``error`` makes the next writes fail."""

    def __init__(self, start_offset: int = UNINITIALIZED, batches: tuple[StateBatch, ...] = ()) -> None:
        self.start_offset = start_offset
        self.batches = batches
        self.state_epoch = 0
        self.writes: list[tuple[int, list[StateBatch]]] = []
        self.error = Errors.NONE

    def read_state(self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                   callback: Callable[[ReadStateResult], None]) -> None:
        callback(ReadStateResult(Errors.NONE, None, self.state_epoch, leader_epoch, self.start_offset, self.batches))

    def initialize_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                         start_offset: int, callback: Callable[[int], None]) -> None:
        self.start_offset, self.batches = start_offset, ()
        callback(Errors.NONE)

    def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int, leader_epoch: int,
                    start_offset: int, batches: list[StateBatch], callback: Callable[[int], None]) -> None:
        if self.error != Errors.NONE:
            callback(self.error)
            return
        self.writes.append((start_offset, list(batches)))
        self.start_offset = start_offset
        self.batches = combine_state_batches(self.batches, batches, start_offset)
        callback(Errors.NONE)


class Box:
    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> None:
        self.values.append(value)


def share_partition(settings: ShareSettings | None = None, persister: InMemoryPersister | None = None,
                    start: int = 0, time: MockTime | None = None) -> tuple[SharePartition, MockTimer, InMemoryPersister]:
    """An active share partition starting at ``start`` (earliest), its timer and persister."""
    time = time or MockTime()
    timer = MockTimer(time)
    persister = persister or InMemoryPersister()
    chosen = settings or ShareSettings(record_lock_duration_ms=LOCK_MS)
    sp = SharePartition(GROUP, TOPIC, TOPIC_ID, 0, 0, timer, persister, time, lambda: chosen)
    assert not sp.maybe_initialize(lambda s: start, lambda p: None) or sp.is_active
    assert sp.is_active
    return sp, timer, persister


def batches(*ranges: tuple[int, int]) -> list[FetchedBatch]:
    """Fetched log batches [first, last] of plain records."""
    return [FetchedBatch(first, last, -1, False) for first, last in ranges]
