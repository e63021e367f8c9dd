"""GroupMetadataManager: the group cache, ``__consumer_offsets`` ownership, persistence and loading
(Kafka's ``kafka.coordinator.group.GroupMetadataManager``).

Locking:
* ``_partition_lock`` guards ``_owned_partitions``, ``_loading_partitions`` and removals from
  the cache during unload. Request handlers only *read* the partition sets (single ``in`` tests,
  atomic under the GIL), so they never take this lock while holding a group lock; unload takes
  this lock first, releases it, then takes each group lock (Kafka nests the other way round in
  ``removeGroupsAndOffsets``; the emulator avoids nesting altogether).
* ``_cache_lock`` guards inserts into and removals from ``_groups`` (lookups read the dict).
* Every group's state is guarded by its own ``GroupMetadata.lock``; ``store_group`` and
  ``store_offsets`` are called with it held and pass it to ``CoordinatorLog.append_records`` as
  the DelayedProduce operation lock; their completion callbacks re-take it (reentrant).

Transactional offsets (TxnOffsetCommit) are appended as the producer's transactional batch and
kept per producer id in the group (``GroupMetadata.pending_transactional_offset_commits``) until
the transaction's marker arrives (``handle_txn_completion``); the load replays them the same way:
offsets of a batch count once a COMMIT control batch of its producer follows, are dropped by an
ABORT, and stay pending if the transaction is still open at the end of the log. Which of two
commits of a partition wins is decided by log position (Kafka's ``appendedBatchOffset``).

Loading and unloading run on the ``scheduler`` (default: one named worker thread,
``group-metadata-manager-<broker>``, so loads and unloads of partitions happen in order);
tests pass an inline scheduler.
"""
from __future__ import annotations

import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

import structlog

from kafka_emu.common import errors
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import Dead, Empty, GroupMetadata, Stable
from kafka_emu.coordinator.coordinator_log import NO_PRODUCER_ID, CoordinatorLog
from kafka_emu.coordinator.group.classic.member_metadata import MemberMetadata
from kafka_emu.coordinator.group.records import (
    GroupMetadataKey, GroupValue, MemberValue, OffsetKey, group_metadata_key, group_metadata_value,
    offset_commit_key, offset_commit_value, partition_for, read_group_value, read_key,
    read_offset_value,
)
from kafka_emu.coordinator.group.results import INVALID_OFFSET_DATA, OffsetAndMetadata, OffsetFetchPartitionData
from kafka_emu.timer.time import Time

_log = structlog.get_logger("coordinator.group_metadata_manager")

TopicPartition = tuple[str, int]


class Scheduler:
    """Runs load/unload jobs in submission order on one named thread."""

    def __init__(self, name: str) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def schedule(self, name: str, fn: Callable[[], None]) -> None:
        self._executor.submit(fn)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


class InlineScheduler:
    """Runs jobs on the caller's thread (tests and benchmarks)."""

    def schedule(self, name: str, fn: Callable[[], None]) -> None:
        fn()

    def shutdown(self) -> None:
        pass


class GroupMetadataManager:
    def __init__(self, broker_id: int, config: GroupCoordinatorConfig, log: CoordinatorLog,
                 time: Time, scheduler: Scheduler | InlineScheduler | None = None,
                 on_transition: Callable[..., None] | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.log = log
        self.time = time
        self.scheduler = scheduler if scheduler is not None else Scheduler(f"group-metadata-manager-{broker_id}")
        self._on_transition = on_transition
        self._groups: dict[str, GroupMetadata] = {}
        self._partition_cache: dict[str, int] = {}  # group id -> partition (Java hash is slow here)
        self._cache_lock = threading.Lock()
        self._partition_lock = threading.Lock()
        self._owned_partitions: set[int] = set()
        self._loading_partitions: set[int] = set()
        self._load_scheduled: set[int] = set()   # loading partitions whose load task is queued or running
        self._shutting_down = False
        # metrics (read at scrape time)
        self.groups_loaded = 0
        self.offsets_loaded = 0
        self.last_load_time_ms = 0
        self.offset_commits_appended = 0

    # ------------------------------------------------------------------ partitions
    def partition_for(self, group_id: str) -> int:
        p = self._partition_cache.get(group_id)
        if p is None:
            p = partition_for(group_id, self.config.offsets_topic_num_partitions)
            if len(self._partition_cache) >= 100_000:
                self._partition_cache.clear()
            self._partition_cache[group_id] = p
        return p

    def is_partition_owned(self, partition: int) -> bool:
        return partition in self._owned_partitions

    def is_partition_loading(self, partition: int) -> bool:
        return partition in self._loading_partitions

    def is_group_local(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._owned_partitions

    def is_group_loading(self, group_id: str) -> bool:
        return self.partition_for(group_id) in self._loading_partitions

    def is_loading(self) -> bool:
        return bool(self._loading_partitions)

    def owned_partitions(self) -> set[int]:
        return set(self._owned_partitions)

    def mark_loading(self, partition: int) -> None:
        """Kafka's ``loadingPartitions`` entry, made as soon as this broker leads the partition,
        before its log is readable and the load task starts: requests for its groups answer
        COORDINATOR_LOAD_IN_PROGRESS from then on, never NOT_COORDINATOR."""
        with self._partition_lock:
            if partition not in self._owned_partitions:
                self._loading_partitions.add(partition)

    def _add_load_task(self, partition: int) -> bool:
        """Mark ``partition`` loading with a load task; false if it is owned or already has one."""
        with self._partition_lock:
            if partition in self._owned_partitions or partition in self._load_scheduled:
                return False
            self._loading_partitions.add(partition)
            self._load_scheduled.add(partition)
            return True

    def add_owned_partition(self, partition: int) -> None:
        """Mark a partition owned without loading (tests)."""
        with self._partition_lock:
            self._owned_partitions.add(partition)
            self._loading_partitions.discard(partition)

    def _has_local_replica(self, group_id: str) -> bool:
        p = self.partition_for(group_id)
        return p in self._owned_partitions or p in self._loading_partitions

    # ------------------------------------------------------------------ cache
    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self._groups.get(group_id)

    def get_or_maybe_create_group(self, group_id: str, create_if_not_exist: bool) -> GroupMetadata | None:
        group = self._groups.get(group_id)
        if group is not None or not create_if_not_exist:
            return group
        return self.add_group(self.new_group(group_id))

    def new_group(self, group_id: str, state=Empty) -> GroupMetadata:
        return GroupMetadata(group_id, state, self.time, on_transition=self._on_transition)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        with self._cache_lock:
            existing = self._groups.get(group.group_id)
            if existing is not None:
                return existing
            self._groups[group.group_id] = group
            return group

    def remove_group_if_same(self, group: GroupMetadata) -> bool:
        with self._cache_lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]
                return True
            return False

    def current_groups(self) -> list[GroupMetadata]:
        return list(self._groups.values())

    def group_not_exists(self, group_id: str) -> bool:
        if not self.is_group_local(group_id):
            return False
        group = self._groups.get(group_id)
        if group is None:
            return True
        with group.lock:
            return group.is_(Dead)

    # ------------------------------------------------------------------ persistence
    def store_group(self, group: GroupMetadata, assignment: dict[str, bytes],
                    callback: Callable[[int], None]) -> None:
        """Persist the group record (caller holds the group lock); ``callback(mapped_error)``
        runs once the append is replicated or failed."""
        if not self._has_local_replica(group.group_id):
            callback(Errors.NOT_COORDINATOR)
            return
        protocol = group.protocol_name
        members = []
        for mid, m in group.members.items():
            members.append(MemberValue(
                mid, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.session_timeout_ms, m.metadata(protocol) if protocol is not None else b"",
                assignment.get(mid, b"")))
        value = GroupValue(group.protocol_type or "", group.generation_id, protocol, group.leader_id,
                           group.current_state_timestamp if group.current_state_timestamp is not None
                           else self.time.milliseconds(), members)
        records = [(group_metadata_key(group.group_id), group_metadata_value(value))]

        def on_append(error: int) -> None:
            if error != Errors.NONE:
                _log.debug("store_group_failed", group_id=group.group_id,
                           generation=group.generation_id, error=errors.name(error))
            callback(errors.map_store_group_error(error))

        self.log.append_records(self.partition_for(group.group_id), records,
                                self.config.offsets_commit_timeout_ms, group.lock, on_append)

    def _valid_metadata(self, om: OffsetAndMetadata) -> bool:
        return om.metadata is None or len(om.metadata) <= self.config.offset_metadata_max_bytes

    def store_offsets(self, group: GroupMetadata, consumer_id: str,
                      offset_metadata: dict[TopicPartition, OffsetAndMetadata],
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
                    if not group.is_(Dead):
                        for tp, om in filtered.items():
                            if transactional:
                                group.on_txn_offset_commit_append(producer_id, tp, position, om)
                            else:
                                group.on_offset_commit_append(tp, om, position)
                    self.offset_commits_appended += len(records)
                    response_error = Errors.NONE
                else:
                    if not group.is_(Dead):
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
            self.log.append_records(self.partition_for(group.group_id), records,
                                    self.config.offsets_commit_timeout_ms, group.lock,
                                    lambda error: put_cache_callback(error, position),
                                    producer_id=producer_id, producer_epoch=producer_epoch,
                                    transactional_id=transactional_id)

    def handle_txn_completion(self, producer_id: int, offsets_partitions: set[int], is_commit: bool) -> None:
        """Materialise (commit) or drop (abort) ``producer_id``'s pending transactional offsets of
        the groups in these partitions (Kafka's ``handleTxnCompletion``)."""
        for group in self.current_groups():
            if self.partition_for(group.group_id) not in offsets_partitions:
                continue
            with group.lock:
                if not group.is_(Dead) and group.has_pending_offset_commits_from_producer(producer_id):
                    group.complete_pending_txn_offset_commit(producer_id, is_commit)

    def get_offsets(self, group_id: str, require_stable: bool,
                    partitions: Iterable[TopicPartition] | None) -> dict[TopicPartition, OffsetFetchPartitionData]:
        group = self._groups.get(group_id)
        if group is None:
            return {tp: INVALID_OFFSET_DATA for tp in (partitions or [])}
        with group.lock:
            if group.is_(Dead):
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

    # ------------------------------------------------------------------ cleanup / tombstones
    def cleanup_group_metadata(self, groups: Iterable[GroupMetadata],
                               selector: Callable[[GroupMetadata], dict[TopicPartition, OffsetAndMetadata]]) -> int:
        """Remove the offsets ``selector`` picks, kill Empty groups without offsets, write
        tombstones (the group tombstone only when the generation is > 0). Tombstones go through
        the acks=-1 CoordinatorLog (Kafka appends them with acks=0); failures are only logged."""
        offsets_removed = 0
        for group in groups:
            with group.lock:
                removed = selector(group)
                if group.is_(Empty) and not group.has_offsets():
                    group.transition_to(Dead, "no offsets left")
                is_dead = group.is_(Dead)
                generation = group.generation_id
                tombstones: list[tuple[bytes, bytes | None]] = [
                    (offset_commit_key(group.group_id, tp[0], tp[1]), None) for tp in removed]
                if is_dead and self.remove_group_if_same(group) and generation > 0:
                    tombstones.append((group_metadata_key(group.group_id), None))
                if tombstones and self._has_local_replica(group.group_id):
                    gid = group.group_id

                    def done(error: int, gid: str = gid) -> None:
                        if error != Errors.NONE:
                            _log.warning("tombstone_append_failed", group_id=gid, error=errors.name(error))

                    self.log.append_records(self.partition_for(gid), tombstones,
                                            self.config.offsets_commit_timeout_ms, group.lock, done)
                    offsets_removed += len(removed)
        return offsets_removed

    # ------------------------------------------------------------------ loading
    def schedule_load_group_and_offsets(self, partition: int, epoch: int,
                                        on_group_loaded: Callable[[GroupMetadata], None]) -> None:
        if self._add_load_task(partition):
            _log.info("scheduling_load", partition=partition, epoch=epoch, broker_id=self.broker_id)
            start = self.time.milliseconds()
            self.scheduler.schedule(f"__consumer_offsets-{partition}",
                                    lambda: self._load_groups_and_offsets(partition, epoch, on_group_loaded, start))
        else:
            _log.info("already_loading", partition=partition, epoch=epoch)

    def _load_groups_and_offsets(self, partition: int, epoch: int,
                                 on_group_loaded: Callable[[GroupMetadata], None], start_ms: int) -> None:
        try:
            if partition in self._loading_partitions:  # an unload scheduled meanwhile wins
                self._do_load(partition, on_group_loaded)
        except Exception:
            _log.exception("load_failed", partition=partition, epoch=epoch)
        finally:
            with self._partition_lock:
                self._load_scheduled.discard(partition)
                if partition in self._loading_partitions:
                    self._owned_partitions.add(partition)
                    self._loading_partitions.discard(partition)
            self.last_load_time_ms = self.time.milliseconds() - start_ms
            _log.info("load_finished", partition=partition, epoch=epoch, ms=self.last_load_time_ms)

    def _do_load(self, partition: int, on_group_loaded: Callable[[GroupMetadata], None]) -> None:
        offsets: dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata]]] = {}
        # producer id -> group -> tp -> (log offset, offset) of transactions not ended yet
        pending: dict[int, dict[str, dict[TopicPartition, tuple[int, OffsetAndMetadata]]]] = {}
        group_values: dict[str, GroupValue] = {}
        removed: set[str] = set()
        end_offset = 0
        for batch in self.log.read_batches(partition):
            if self._shutting_down:
                return
            if batch.is_control:
                ended = pending.pop(batch.producer_id, {})
                if batch.commit:
                    for gid, tps in ended.items():
                        group_offsets = offsets.setdefault(gid, {})
                        for tp, (position, om) in tps.items():
                            current = group_offsets.get(tp)
                            if current is None or current[0] < position:
                                group_offsets[tp] = (position, om)
                continue
            for offset, key, value in batch.records:
                end_offset = offset + 1
                try:
                    k = read_key(key)
                except (ValueError, struct.error, UnicodeDecodeError):
                    _log.warning("unknown_key_skipped", partition=partition)
                    continue
                if isinstance(k, OffsetKey):
                    tp = (k.topic, k.partition)
                    target = (pending.setdefault(batch.producer_id, {}).setdefault(k.group, {})
                              if batch.transactional else offsets.setdefault(k.group, {}))
                    if value is None:
                        target.pop(tp, None)
                    else:
                        v = read_offset_value(value)
                        target[tp] = (offset, OffsetAndMetadata(
                            v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp))
                elif isinstance(k, GroupMetadataKey):
                    if value is None:
                        group_values.pop(k.group, None)
                        removed.add(k.group)
                    else:
                        group_values[k.group] = read_group_value(value)
                        removed.discard(k.group)
        loaded = 0
        gids = list(group_values) + [g for g in offsets if g not in group_values] + [
            g for per_producer in pending.values() for g in per_producer
            if g not in group_values and g not in offsets]
        for gid in dict.fromkeys(gids):
            gv = group_values.get(gid)
            offs = offsets.get(gid, {})
            open_txns = {pid: per_group[gid] for pid, per_group in pending.items() if per_group.get(gid)}
            if gv is None and not offs and not open_txns:
                continue
            group = self._group_from_value(gid, gv) if gv is not None else self.new_group(gid)
            group.initialize_offsets({tp: om for tp, (_, om) in offs.items()},
                                     {tp: pos for tp, (pos, _) in offs.items()}, open_txns, end_offset)
            current = self.add_group(group)
            if current is group:
                loaded += 1
                on_group_loaded(group)
        self.groups_loaded += loaded
        self.offsets_loaded += sum(len(g.offsets) for g in self._groups.values()
                                   if self.partition_for(g.group_id) == partition)

    def _group_from_value(self, group_id: str, gv: GroupValue) -> GroupMetadata:
        group = self.new_group(group_id, Stable if gv.members else Empty)
        group.generation_id = gv.generation
        group.protocol_type = gv.protocol_type or None
        group.protocol_name = gv.protocol
        if gv.current_state_timestamp is not None:
            group.current_state_timestamp = gv.current_state_timestamp
        for mv in gv.members:
            member = MemberMetadata(mv.member_id, mv.group_instance_id, mv.client_id, mv.client_host,
                                    mv.rebalance_timeout, mv.session_timeout, gv.protocol_type,
                                    [(gv.protocol or "", mv.subscription)], group_id)
            member.assignment = mv.assignment
            group.add(member, None)
        group.leader_id = gv.leader
        group.protocol_type = gv.protocol_type or None
        group.subscribed_topics = group._compute_subscribed_topics()
        return group

    def remove_groups_for_partition(self, partition: int, epoch: int | None,
                                    on_group_unloaded: Callable[[GroupMetadata], None]) -> None:
        _log.info("scheduling_unload", partition=partition, epoch=epoch, broker_id=self.broker_id)
        self.scheduler.schedule(f"__consumer_offsets-{partition}",
                                lambda: self._remove_groups_and_offsets(partition, on_group_unloaded))

    def _remove_groups_and_offsets(self, partition: int, on_group_unloaded: Callable[[GroupMetadata], None]) -> None:
        with self._partition_lock:
            self._owned_partitions.discard(partition)
            self._loading_partitions.discard(partition)
            groups = [g for g in list(self._groups.values()) if self.partition_for(g.group_id) == partition]
        removed = 0
        for group in groups:
            on_group_unloaded(group)
            if self.remove_group_if_same(group):
                removed += 1
        _log.info("unloaded_partition", partition=partition, groups=removed)

    def shutdown(self) -> None:
        self._shutting_down = True
        self.scheduler.shutdown()
