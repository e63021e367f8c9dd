"""ReplicaManagerCoordinatorLog: ``coordinator.coordinator_log.CoordinatorLog`` over the ReplicaManager, for
one internal topic (``__consumer_offsets`` for the group coordinator, ``__transaction_state`` for
the transaction coordinator).

``append_records`` writes one uncompressed v2 batch to ``<topic>-<partition>`` with acks=-1
through ``ReplicaManager.append_records`` (internal topics allowed, origin COORDINATOR), passing
the caller's lock as the DelayedProduce's operation lock, as Kafka's GroupMetadataManager and
TransactionStateManager do; with a producer id the batch is transactional (producer id and epoch,
no sequence: Kafka's TxnOffsetCommit batches), verified with the transaction coordinator and
appended under the partition's verification guard like a producer's. The callback gets the partition's error code once
the ISR has the batch (or it failed or timed out). The purgatory triggers of the append are
deferred to the action queue, so nothing is completed under the caller's lock.
``read_batches`` returns the batches from log start to the HW (producer id, transactional and
control flags, the COMMIT/ABORT type of a marker); ``read_records`` their data records.

Locking: no state of its own; the partition lock is taken briefly to copy the batches.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

from kafka_emu.broker.storage.control_record import ControlRecordType
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.broker.storage.producer_state import AppendOrigin
from kafka_emu.broker.storage.record_batch import build_batch, iter_records, parse_batches
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.coordinator_log import NO_PRODUCER_ID, LogBatch

if TYPE_CHECKING:
    from kafka_emu.broker.server.replica_manager import ReplicaManager
    from kafka_emu.coordinator.group_lock import GroupLock

TRANSACTIONAL_ATTRIBUTE = 0x10


class ReplicaManagerCoordinatorLog:
    def __init__(self, replica_manager: "ReplicaManager", topic: str = OFFSETS_TOPIC,
                 default_timeout_ms: int = 5000) -> None:
        self.replica_manager = replica_manager
        self.topic = topic
        self.default_timeout_ms = default_timeout_ms

    def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]],
                       timeout_ms: int, lock: GroupLock, callback: Callable[[int], None],
                       producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                       transactional_id: str | None = None) -> None:
        tp = (self.topic, partition)
        if not records:
            callback(Errors.NONE)
            return
        batch = build_batch(records, timestamp_ms=self.replica_manager.time.milliseconds(),
                            producer_id=producer_id, producer_epoch=producer_epoch,
                            attributes=TRANSACTIONAL_ATTRIBUTE if producer_id != NO_PRODUCER_ID else 0)

        def on_done(statuses: dict) -> None:
            st = statuses.get(tp)
            callback(st.error if st is not None else Errors.UNKNOWN_TOPIC_OR_PARTITION)

        self.replica_manager.append_records(timeout_ms if timeout_ms > 0 else self.default_timeout_ms,
                                            -1, {tp: batch}, on_done, delayed_produce_lock=lock,
                                            internal_topics_allowed=True, origin=AppendOrigin.COORDINATOR,
                                            transactional_id=transactional_id,
                                            transaction_abortable_supported=True)

    def read_batches(self, partition: int) -> Iterable[LogBatch]:
        p = self.replica_manager.get_partition((self.topic, partition))
        if p is None:
            return []
        with p.lock:
            hw = p.log.high_watermark
            batches = p.log.batches_from(p.log.log_start_offset)
        out = []
        for base, data in batches:
            if base >= hw:
                break
            for info in parse_batches(data, check_crc=False):
                raw = data[info.position:info.position + info.size]
                records = tuple((offset, key if key is not None else b"", value)
                                for offset, key, value in iter_records(raw) if offset < hw)
                if info.is_control:
                    kind = ControlRecordType.parse(records[0][1]) if records else None
                    commit = (None if kind not in (ControlRecordType.COMMIT, ControlRecordType.ABORT)
                              else kind is ControlRecordType.COMMIT)
                    out.append(LogBatch(info.producer_id, info.is_transactional, True, commit, ()))
                elif records:
                    out.append(LogBatch(info.producer_id, info.is_transactional, False, None, records))
        return out

    def read_records(self, partition: int) -> Iterable[tuple[int, bytes, bytes | None]]:
        return [r for b in self.read_batches(partition) if not b.is_control for r in b.records]

    def high_watermark(self, partition: int) -> int:
        p = self.replica_manager.get_partition((self.topic, partition))
        return p.log.high_watermark if p is not None else -1
