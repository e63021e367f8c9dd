"""GroupMetadataManager: the groups of every type this broker coordinates, the ``__consumer_offsets``
partitions it owns, and their loading (the cache and load half of Kafka's
``org.apache.kafka.coordinator.group.GroupMetadataManager``; each group type's request handling is
in its package, e.g. ``classic.classic_group_manager``, and offsets in ``OffsetMetadataManager``).

Locking:
* ``_partition_lock`` guards ``_owned_partitions``, ``_loading_partitions`` and removals from
  the cache during unload. Request handlers only *read* the partition sets (single ``in`` tests,
  atomic under the GIL), so they never take this lock while holding a group lock; unload takes
  this lock first, releases it, then takes each group lock (Kafka nests the other way round in
  ``removeGroupsAndOffsets``; the emulator avoids nesting altogether).
* ``_cache_lock`` guards inserts into and removals from ``_groups`` (lookups read the dict).
* Every group's state is guarded by its own ``Group.lock``.

Loading replays the whole partition from ``CoordinatorLog.read_batches`` in one go: offset
records through ``OffsetsLoad``, classic group records into ``GroupMetadata``, consumer group
records into ``ConsumerGroup`` (``ConsumerGroup.replay``, as they were applied when written); a
group converted from one type to the other is the type whose record came last. Loading and
unloading run on the ``scheduler`` (default: one named worker thread,
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
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.group.classic.group_metadata import Empty, GroupMetadata, GroupState
from kafka_emu.coordinator.group.config import GroupCoordinatorConfig
from kafka_emu.coordinator.group.group import Group, GroupType
from kafka_emu.coordinator.group.modern.consumer.consumer_group import ConsumerGroup
from kafka_emu.coordinator.group.group_offsets import TopicPartition
from kafka_emu.coordinator.group.offset_metadata_manager import OffsetMetadataManager, OffsetsLoad
from kafka_emu.coordinator.group.records import (
    GroupMetadataKey, GroupValue, OffsetKey, partition_for, read_consumer_group_value, read_group_value, read_key,
)
from kafka_emu.coordinator.group.results import OffsetAndMetadata
from kafka_emu.timer.time import Time

_log = structlog.get_logger("coordinator.group_metadata_manager")


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
        self._groups: dict[str, Group] = {}
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

    def is_loading(self) -> bool:
        return bool(self._loading_partitions)

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

    def has_local_replica(self, group_id: str) -> bool:
        p = self.partition_for(group_id)
        return p in self._owned_partitions or p in self._loading_partitions

    # ------------------------------------------------------------------ cache
    def get_group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def get_or_maybe_create_group(self, group_id: str, create_if_not_exist: bool) -> Group | None:
        """The group, or (``create_if_not_exist``) a new empty classic group (Kafka's
        ``getOrMaybeCreateClassicGroup``)."""
        group = self._groups.get(group_id)
        if group is not None or not create_if_not_exist:
            return group
        return self.add_group(self.new_group(group_id))

    def new_group(self, group_id: str, state: GroupState = Empty) -> GroupMetadata:
        """A classic group, reporting its transitions to the coordinator's metrics."""
        return GroupMetadata(group_id, state, self.time, on_transition=self._on_transition)

    def add_group(self, group: Group) -> Group:
        with self._cache_lock:
            existing = self._groups.get(group.group_id)
            if existing is not None:
                return existing
            self._groups[group.group_id] = group
            return group

    def replace_group(self, old: Group, new: Group) -> None:
        """``new`` (another type, same id) takes ``old``'s place (a conversion)."""
        with self._cache_lock:
            if self._groups.get(old.group_id) is old:
                self._groups[old.group_id] = new

    def remove_group_if_same(self, group: Group) -> bool:
        with self._cache_lock:
            if self._groups.get(group.group_id) is group:
                del self._groups[group.group_id]
                return True
            return False

    def current_groups(self) -> list[Group]:
        return list(self._groups.values())

    def group_not_exists(self, group_id: str) -> bool:
        if not self.is_group_local(group_id):
            return False
        group = self._groups.get(group_id)
        if group is None:
            return True
        with group.lock:
            return group.is_dead()

    # ------------------------------------------------------------------ cleanup / tombstones
    def cleanup_group_metadata(self, groups: Iterable[Group],
                               selector: Callable[[Group], dict[TopicPartition, OffsetAndMetadata]]) -> int:
        """Remove the offsets ``selector`` picks, kill empty groups without offsets, write
        tombstones (Kafka's ``cleanupGroupMetadata`` with ``maybeDeleteGroup``). Tombstones go
        through the acks=-1 CoordinatorLog (Kafka appends them with acks=0); failures are only
        logged."""
        offsets_removed = 0
        for group in groups:
            with group.lock:
                removed = selector(group)
                if group.is_empty() and not group.has_offsets():
                    group.mark_dead("no offsets left")
                tombstones = OffsetMetadataManager.offset_tombstones(group.group_id, removed)
                if group.is_dead() and self.remove_group_if_same(group):
                    tombstones.extend((key, None) for key in group.tombstone_keys())
                if tombstones and self.has_local_replica(group.group_id):
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
                                        on_group_loaded: Callable[[Group], None]) -> None:
        if self._add_load_task(partition):
            _log.info("scheduling_load", partition=partition, epoch=epoch, broker_id=self.broker_id)
            start = self.time.milliseconds()
            self.scheduler.schedule(f"__consumer_offsets-{partition}",
                                    lambda: self._load_groups_and_offsets(partition, epoch, on_group_loaded, start))
        else:
            _log.info("already_loading", partition=partition, epoch=epoch)

    def _load_groups_and_offsets(self, partition: int, epoch: int,
                                 on_group_loaded: Callable[[Group], None], start_ms: int) -> None:
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

    def _do_load(self, partition: int, on_group_loaded: Callable[[Group], None]) -> None:
        offsets = OffsetsLoad()
        group_values: dict[str, GroupValue] = {}
        consumer_groups: dict[str, ConsumerGroup] = {}
        latest_type: dict[str, GroupType] = {}   # the type whose record came last, per group
        end_offset = 0
        for batch in self.log.read_batches(partition):
            if self._shutting_down:
                return
            if batch.is_control:
                offsets.replay_marker(batch)
                continue
            for offset, key, value in batch.records:
                end_offset = offset + 1
                try:
                    k = read_key(key)
                except (ValueError, struct.error, UnicodeDecodeError):
                    _log.warning("unknown_key_skipped", partition=partition)
                    continue
                if isinstance(k, OffsetKey):
                    offsets.replay(batch, offset, k, value)
                elif isinstance(k, GroupMetadataKey):
                    if value is None:
                        group_values.pop(k.group, None)
                    else:
                        group_values[k.group] = read_group_value(value)
                        latest_type[k.group] = GroupType.CLASSIC
                else:
                    consumer_group = consumer_groups.get(k.group_id)
                    if consumer_group is None:
                        consumer_group = consumer_groups[k.group_id] = ConsumerGroup(k.group_id)
                    consumer_group.replay(k, read_consumer_group_value(k, value))
                    if value is not None:
                        latest_type[k.group_id] = GroupType.CONSUMER
        live_consumer_groups = {gid: g for gid, g in consumer_groups.items() if not g.deleted}
        loaded = 0
        for gid in dict.fromkeys(list(group_values) + list(live_consumer_groups) + offsets.group_ids()):
            gv = group_values.get(gid)
            consumer_group = live_consumer_groups.get(gid)
            group: Group
            if consumer_group is not None and (gv is None or latest_type.get(gid) is GroupType.CONSUMER):
                group = consumer_group
            elif gv is not None:
                group = GroupMetadata.from_record(gid, gv, self.time, self._on_transition)
            elif offsets.has_offsets(gid):
                group = self.new_group(gid)
            else:
                continue
            offsets.install(group, end_offset)
            current = self.add_group(group)
            if current is group:
                loaded += 1
                on_group_loaded(group)
        self.groups_loaded += loaded
        self.offsets_loaded += sum(len(g.offsets) for g in self._groups.values()
                                   if self.partition_for(g.group_id) == partition)

    def remove_groups_for_partition(self, partition: int, epoch: int | None,
                                    on_group_unloaded: Callable[[Group], None]) -> None:
        _log.info("scheduling_unload", partition=partition, epoch=epoch, broker_id=self.broker_id)
        self.scheduler.schedule(f"__consumer_offsets-{partition}",
                                lambda: self._remove_groups_and_offsets(partition, on_group_unloaded))

    def _remove_groups_and_offsets(self, partition: int, on_group_unloaded: Callable[[Group], None]) -> None:
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
