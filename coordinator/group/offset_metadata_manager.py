"""OffsetMetadataManager: committed offsets for every group type (Kafka's
``org.apache.kafka.coordinator.group.OffsetMetadataManager``).

Offsets live in the group objects (``group_offsets.GroupOffsets``, a base of every group type),
guarded by the group lock; this class appends them to ``__consumer_offsets``, answers
OffsetFetch, completes transactional offsets when their transaction ends, and replays offset
records when a partition loads (``OffsetsLoad``). Which member may commit is the group type's
business (``Group.validate_offset_commit``), checked by the coordinator before ``store_offsets``.

Transactional offsets (TxnOffsetCommit) are appended as the producer's transactional batch and
kept per producer id in the group (``pending_transactional_offset_commits``) until the
transaction's marker arrives (``handle_txn_completion``); the load replays them the same way:
offsets of a batch count once a COMMIT control batch of its producer follows, are dropped by an
ABORT, and stay pending if the transaction is still open at the end of the log. Which of two
commits of a partition wins is decided by log position (Kafka's ``appendedBatchOffset``).

Locking: ``store_offsets`` is called with the group lock held and passes it to
``CoordinatorLog.append_records`` as the DelayedProduce operation lock; the completion callback
re-takes it (reentrant).
"""
from __future__ import annotations

from typing import Callable, Iterable

import structlog

from kafka_emu.common import errors
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.coordinator_log import NO_PRODUCER_ID, CoordinatorLog, LogBatch
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.coordinator.group.group import Group
from kafka_emu.coordinator.group.group_offsets import TopicPartition
from kafka_emu.coordinator.group.records import (
    OffsetKey, offset_commit_key, offset_commit_value, read_offset_value,
)
from kafka_emu.coordinator.group.results import INVALID_OFFSET_DATA, OffsetAndMetadata, OffsetFetchPartitionData

_log = structlog.get_logger("coordinator.offset_metadata_manager")

# (log offset of the record, the offset) per partition
PositionedOffsets = dict[TopicPartition, tuple[int, OffsetAndMetadata]]


class OffsetsLoad:
    """The offsets of one ``__consumer_offsets`` partition as its records are replayed in log
    order: committed ones per group, and per producer those of transactions not ended yet."""

    def __init__(self) -> None:
        self.committed: dict[str, PositionedOffsets] = {}
        self.pending: dict[int, dict[str, PositionedOffsets]] = {}   # producer id -> group -> offsets

    def replay(self, batch: LogBatch, offset: int, key: OffsetKey, value: bytes | None) -> None:
        tp = (key.topic, key.partition)
        target = (self.pending.setdefault(batch.producer_id, {}).setdefault(key.group, {})
                  if batch.transactional else self.committed.setdefault(key.group, {}))
        if value is None:
            target.pop(tp, None)
        else:
            v = read_offset_value(value)
            target[tp] = (offset, OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                                                    v.expire_timestamp))

    def replay_marker(self, batch: LogBatch) -> None:
        """A COMMIT marker makes the producer's pending offsets committed (unless a later
        record of the partition already is); an ABORT drops them."""
        ended = self.pending.pop(batch.producer_id, {})
        if batch.commit:
            for gid, tps in ended.items():
                group_offsets = self.committed.setdefault(gid, {})
                for tp, (position, om) in tps.items():
                    current = group_offsets.get(tp)
                    if current is None or current[0] < position:
                        group_offsets[tp] = (position, om)

    def group_ids(self) -> list[str]:
        """Groups with offsets, committed first, then those with open transactions only."""
        return list(dict.fromkeys(list(self.committed) + [
            g for per_producer in self.pending.values() for g in per_producer]))

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.committed.get(group_id)) or any(
            per_group.get(group_id) for per_group in self.pending.values())

    def install(self, group: Group, end_offset: int) -> None:
        """Hand ``group`` its replayed offsets; positions of later appends start at ``end_offset``."""
        gid = group.group_id
        offs = self.committed.get(gid, {})
        open_txns = {pid: per_group[gid] for pid, per_group in self.pending.items() if per_group.get(gid)}
        group.initialize_offsets({tp: om for tp, (_, om) in offs.items()},
                                 {tp: pos for tp, (pos, _) in offs.items()}, open_txns, end_offset)


class OffsetMetadataManager:
    def __init__(self, config: GroupCoordinatorConfig, log: CoordinatorLog,
                 partition_for: Callable[[str], int], has_local_replica: Callable[[str], bool]) -> None:
        self.config = config
        self.log = log
        self._partition_for = partition_for
        self._has_local_replica = has_local_replica

    def _valid_metadata(self, om: OffsetAndMetadata) -> bool:
        return om.metadata is None or len(om.metadata) <= self.config.offset_metadata_max_bytes

    def store_offsets(self, group: Group, offset_metadata: dict[TopicPartition, OffsetAndMetadata],
                      callback: Callable[[dict[TopicPartition, int]], None],
                      producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                      transactional_id: str | None = None) -> None:
        """Append offset commits (caller holds the group lock); ``callback`` gets per-partition
        errors once the append completed, after the group lock is released. With a producer id
        (TxnOffsetCommit) the batch is transactional and the offsets stay pending until the
        transaction's COMMIT marker (``handle_txn_completion``)."""
        filtered = {tp: om for tp, om in offset_metadata.items() if self._valid_metadata(om)}
        if not filtered:
            result = {tp: Errors.OFFSET_METADATA_TOO_LARGE for tp in offset_metadata}
            group.lock.defer(lambda: callback(result))
            return
        if not self._has_local_replica(group.group_id):
            result = {tp: Errors.NOT_COORDINATOR for tp in offset_metadata}
            group.lock.defer(lambda: callback(result))
            return
        records = [(offset_commit_key(group.group_id, tp[0], tp[1]),
                    offset_commit_value(om.offset, om.leader_epoch, om.metadata or "", om.commit_timestamp))
                   for tp, om in filtered.items()]
        transactional = producer_id != NO_PRODUCER_ID

        def put_cache_callback(error: int, position: int) -> None:
            with group.lock:
                if error == Errors.NONE:
                    if not group.is_dead():
                        for tp, om in filtered.items():
                            if transactional:
                                group.on_txn_offset_commit_append(producer_id, tp, position, om)
                            else:
                                group.on_offset_commit_append(tp, om, position)
                    response_error = Errors.NONE
                else:
                    if not group.is_dead():
                        for tp, om in filtered.items():
                            if transactional:
                                group.fail_pending_txn_offset_commit(producer_id, tp)
                            else:
                                group.fail_pending_offset_write(tp, om)
                    _log.debug("offset_commit_failed", group_id=group.group_id,
                               error=errors.name(error))
                    response_error = errors.map_store_offsets_error(error)
                status = {tp: (response_error if self._valid_metadata(om) else Errors.OFFSET_METADATA_TOO_LARGE)
                          for tp, om in offset_metadata.items()}
                group.lock.defer(lambda: callback(status))

        with group.lock:
            if transactional:
                group.prepare_txn_offset_commit(producer_id, filtered)
            else:
                group.prepare_offset_commit(filtered)
            position = group.next_append_position()
            self.log.append_records(self._partition_for(group.group_id), records,
                                    self.config.offsets_commit_timeout_ms, group.lock,
                                    lambda error: put_cache_callback(error, position),
                                    producer_id=producer_id, producer_epoch=producer_epoch,
                                    transactional_id=transactional_id)

    def handle_txn_completion(self, groups: Iterable[Group], producer_id: int, is_commit: bool) -> None:
        """Materialise (commit) or drop (abort) ``producer_id``'s pending transactional offsets of
        ``groups`` (Kafka's ``handleTxnCompletion``)."""
        for group in groups:
            with group.lock:
                if not group.is_dead() and group.has_pending_offset_commits_from_producer(producer_id):
                    group.complete_pending_txn_offset_commit(producer_id, is_commit)

    @staticmethod
    def fetch_offsets(group: Group | None, require_stable: bool,
                      partitions: Iterable[TopicPartition] | None) -> dict[TopicPartition, OffsetFetchPartitionData]:
        """OffsetFetch of one group (``partitions`` None: every committed one)."""
        if group is None:
            return {tp: INVALID_OFFSET_DATA for tp in (partitions or [])}
        with group.lock:
            if group.is_dead():
                return {tp: INVALID_OFFSET_DATA for tp in (partitions or [])}
            tps = list(partitions) if partitions is not None else list(group.offsets)
            out = {}
            for tp in tps:
                if require_stable and group.has_pending_offset_commits_for_partition(tp):
                    out[tp] = OffsetFetchPartitionData(-1, None, "", Errors.UNSTABLE_OFFSET_COMMIT)
                else:
                    om = group.offset(tp)
                    out[tp] = (INVALID_OFFSET_DATA if om is None
                               else OffsetFetchPartitionData(om.offset, om.leader_epoch, om.metadata, Errors.NONE))
            return out

    @staticmethod
    def offset_tombstones(group_id: str, removed: Iterable[TopicPartition]) -> list[tuple[bytes, bytes | None]]:
        return [(offset_commit_key(group_id, tp[0], tp[1]), None) for tp in removed]
