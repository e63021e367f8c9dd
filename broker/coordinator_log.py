"""ReplicaManagerCoordinatorLog: ``coordinator.log.CoordinatorLog`` over the ReplicaManager.

``append_records`` writes one uncompressed v2 batch to ``__consumer_offsets-<partition>`` with
acks=-1 through ``ReplicaManager.append_records`` (internal topics allowed), passing the group
lock as the DelayedProduce's operation lock, as Kafka's GroupMetadataManager does; the callback
gets the partition's error code once the ISR has the batch (or it failed or timed out). The
purgatory triggers of the append are deferred to the action queue, so nothing is completed
under the group lock. ``read_records`` returns (offset, key, value) from log start to the HW.

Locking: no state of its own; the partition lock is taken briefly to copy the batches.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from kafka_emu.broker.metadata import OFFSETS_TOPIC
from kafka_emu.broker.record_batch import build_batch, iter_records
from kafka_emu.coordinator.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.replica_manager import ReplicaManager
    from kafka_emu.coordinator.group_lock import GroupLock



class ReplicaManagerCoordinatorLog:
    def __init__(self, replica_manager: "ReplicaManager", topic: str = OFFSETS_TOPIC,
                 default_timeout_ms: int = 5000) -> None:
        self.replica_manager = replica_manager
        self.topic = topic
        self.default_timeout_ms = default_timeout_ms

    def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]],
                       timeout_ms: int, lock: GroupLock, callback: Callable[[int], None]) -> None:
        tp = (self.topic, partition)
        if not records:
            callback(Errors.NONE)
            return
        batch = build_batch(records, timestamp_ms=self.replica_manager.time.milliseconds())

        def on_done(statuses: dict) -> None:
            st = statuses.get(tp)
            callback(st.error if st is not None else Errors.UNKNOWN_TOPIC_OR_PARTITION)

        self.replica_manager.append_records(timeout_ms if timeout_ms > 0 else self.default_timeout_ms,
                                            -1, {tp: batch}, on_done, delayed_produce_lock=lock,
                                            internal_topics_allowed=True)

    def read_records(self, partition: int) -> Iterable[tuple[int, bytes, bytes | None]]:
        p = self.replica_manager.get_partition((self.topic, partition))
        if p is None:
            return []
        with p.lock:
            hw = p.log.high_watermark
            batches = p.log.batches_from(p.log.log_start_offset)
        out = []
        for base, batch in batches:
            if base >= hw:
                break
            for offset, key, value in iter_records(batch):
                if offset >= hw:
                    break
                out.append((offset, key if key is not None else b"", value))
        return out

    def high_watermark(self, partition: int) -> int:
        p = self.replica_manager.get_partition((self.topic, partition))
        return p.log.high_watermark if p is not None else -1
