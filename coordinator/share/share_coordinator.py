"""ShareCoordinator: the keeper of share-partition state (Kafka's ``ShareCoordinatorService`` with
a ``ShareCoordinatorShard`` per ``__share_group_state`` partition, KIP-932).

Each share partition (group, topic id, partition) has one state: its state epoch, the leader
epoch of the share-partition leader that last wrote it, its start offset and the state batches
(delivery state and count of the in-flight offsets above the start offset). The state of key K
lives in partition ``abs(hash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions``
of ``__share_group_state`` (FindCoordinator key type 2 finds its leader), which this broker
coordinates while it leads that partition.

Writes (``write_state``, Kafka's ``ShareCoordinatorShard.writeState``): a state epoch below the
current one is FENCED_STATE_EPOCH, a leader epoch below it FENCED_LEADER_EPOCH; otherwise the
write is a ShareUpdate record (the new batches, which win over the old ones where they overlap,
``combine_state_batches``), or a ShareSnapshot record (the whole combined state) for a new key and
after every ``share.coordinator.snapshot.update.records.per.snapshot`` updates. Each record is
replayed onto the in-memory state before it is appended (acks=-1) and the caller is answered once
it is replicated; a load (``on_elected``, a new leader or a restart) replays the partition's
records the same way: a snapshot replaces the state, an update combines into it, a tombstone
deletes it. ``initialize_state`` writes a snapshot with the new state epoch and start offset;
``delete_state`` writes tombstones of both keys. Reads are answered from memory.

Status checks (Kafka's ``ShareCoordinatorService``): not started is COORDINATOR_NOT_AVAILABLE, a
partition loading COORDINATOR_LOAD_IN_PROGRESS, one not led here NOT_COORDINATOR.

Locking: ``_lock`` guards the partition sets and ``_states``; each partition's ``GroupLock`` (the
shard lock) orders its writes and is the DelayedProduce lock of their appends; callbacks run after
it is released. The shard lock is taken before ``_lock``, never the other way round.

Differences from Kafka on purpose: a read does not write the reader's leader epoch (Kafka writes
an update when a new leader reads); the timestamps of a snapshot are the coordinator's clock; state
of a partition whose topic was deleted is not pruned (Kafka's periodic ``lastRedundantOffset``
and topic-deletion cleanup); the ``share-coordinator`` metrics are not reported.
"""
from __future__ import annotations

import struct
import threading
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import structlog

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.group.group_metadata_manager import InlineScheduler, Scheduler
from kafka_emu.coordinator.group.records import partition_for as hash_partition
from kafka_emu.coordinator.group_lock import GroupLock
from kafka_emu.coordinator.share.config import ShareCoordinatorConfig
from kafka_emu.coordinator.share.share_coordinator_records import (
    SHARE_SNAPSHOT_KEY_TYPE, SHARE_UPDATE_KEY_TYPE, ShareSnapshotValue, ShareStateKey, ShareUpdateValue, StateBatch,
    combine_state_batches, key_bytes, read_key, read_snapshot_value, read_update_value, snapshot_value_bytes,
    update_value_bytes,
)
from kafka_emu.timer.time import Time

_log = structlog.get_logger("coordinator.share_coordinator")

ErrorCallback = Callable[[int, "str | None"], None]
UNINITIALIZED = -1   # the start offset of a share partition with no state yet


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """One share partition's state (Kafka's ``ShareGroupOffset``)."""
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    create_timestamp: int = 0
    write_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class ReadStateResult:
    error: int
    error_message: str | None = None
    state_epoch: int = 0
    leader_epoch: int = -1
    start_offset: int = UNINITIALIZED
    state_batches: tuple[StateBatch, ...] = ()


@dataclass
class _Shard:
    lock: GroupLock = field(default_factory=GroupLock)
    updates_since_snapshot: dict[ShareStateKey, int] = field(default_factory=dict)


class ShareCoordinator:
    """See the module docstring."""

    def __init__(self, broker_id: int, config: ShareCoordinatorConfig, log: CoordinatorLog, time: Time,
                 scheduler: Scheduler | InlineScheduler | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.log = log
        self.time = time
        self.scheduler = scheduler if scheduler is not None else Scheduler(f"share-coordinator-loader-{broker_id}")
        self._lock = threading.Lock()
        self._active = False
        self._owned: set[int] = set()
        self._loading: dict[int, int] = {}        # partition -> epoch being loaded
        self._epochs: dict[int, int] = {}
        self._shards: dict[int, _Shard] = {}
        self._states: dict[ShareStateKey, ShareGroupOffset] = {}
        # metrics
        self.writes = 0
        self.snapshots_written = 0

    # ================================================================== lifecycle
    def startup(self) -> None:
        self._active = True

    def shutdown(self) -> None:
        self._active = False
        self.scheduler.shutdown()
        with self._lock:
            self._owned.clear()
            self._loading.clear()
            self._states.clear()

    def partition_for(self, key: ShareStateKey) -> int:
        return hash_partition(key.coordinator_key(), self.config.num_partitions)

    def _shard(self, partition: int) -> _Shard:
        with self._lock:
            shard = self._shards.get(partition)
            if shard is None:
                shard = self._shards[partition] = _Shard()
            return shard

    def _status(self, key: ShareStateKey) -> tuple[int, str | None] | None:
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE, None
        partition = self.partition_for(key)
        if partition in self._loading:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, None
        if partition not in self._owned:
            return Errors.NOT_COORDINATOR, None
        return None

    # ================================================================== election
    def on_loading(self, partition: int, epoch: int) -> None:
        with self._lock:
            if partition not in self._owned:
                self._loading[partition] = epoch

    def on_elected(self, partition: int, epoch: int) -> None:
        """This broker leads ``__share_group_state-<partition>``: load its records."""
        with self._lock:
            current = self._epochs.get(partition)
            if current is not None and epoch < current:
                return
            self._epochs[partition] = epoch
            self._loading[partition] = epoch
        _log.info("elected_share_coordinator", broker_id=self.broker_id, partition=partition, epoch=epoch)
        self.scheduler.schedule(f"__share_group_state-{partition}", lambda: self._load(partition, epoch))

    def on_resigned(self, partition: int, epoch: int | None = None) -> None:
        with self._lock:
            self._owned.discard(partition)
            self._loading.pop(partition, None)
            for key in [k for k in self._states if self.partition_for(k) == partition]:
                del self._states[key]
            self._shards.pop(partition, None)
        _log.info("resigned_share_coordinator", broker_id=self.broker_id, partition=partition, epoch=epoch)

    def _load(self, partition: int, epoch: int) -> None:
        states: dict[ShareStateKey, ShareGroupOffset] = {}
        updates: dict[ShareStateKey, int] = {}
        try:
            for _offset, key, value in self.log.read_records(partition):
                try:
                    key_type, k = read_key(key)
                    self._replay(states, updates, key_type, k, value)
                except (ValueError, struct.error, IndexError, UnicodeDecodeError):
                    _log.warning("unknown_record_skipped", partition=partition)
        except Exception:
            _log.exception("load_failed", partition=partition, epoch=epoch)
        shard = self._shard(partition)
        with shard.lock, self._lock:
            if self._loading.get(partition) != epoch:
                return   # resigned or re-elected meanwhile
            del self._loading[partition]
            self._owned.add(partition)
            self._states.update(states)
            shard.updates_since_snapshot = updates
        _log.info("share_state_loaded", partition=partition, epoch=epoch, share_partitions=len(states))

    @staticmethod
    def _replay(states: dict[ShareStateKey, ShareGroupOffset], updates: dict[ShareStateKey, int], key_type: int,
                key: ShareStateKey, value: bytes | None) -> None:
        """Kafka's ``ShareCoordinatorShard.replay``."""
        if value is None:
            states.pop(key, None)
            updates.pop(key, None)
            return
        if key_type == SHARE_SNAPSHOT_KEY_TYPE:
            v = read_snapshot_value(value)
            states[key] = ShareGroupOffset(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset,
                                           v.state_batches, v.create_timestamp, v.write_timestamp)
            updates[key] = 0
            return
        u = read_update_value(value)
        current = states.get(key)
        if current is None:
            return   # an update without a snapshot (its snapshot was compacted away): nothing to apply to
        start = u.start_offset if u.start_offset != -1 else current.start_offset
        states[key] = replace(current, leader_epoch=max(u.leader_epoch, current.leader_epoch), start_offset=start,
                              state_batches=combine_state_batches(current.state_batches, u.state_batches, start))
        updates[key] = updates.get(key, 0) + 1

    # ================================================================== writing
    def _append(self, key: ShareStateKey, records: list[tuple[int, bytes | None]], callback: ErrorCallback) -> None:
        """Replay ``records`` ((key type, value)) onto the state and append them (shard lock held)."""
        partition = self.partition_for(key)
        shard = self._shard(partition)
        with self._lock:
            for key_type, value in records:
                self._replay(self._states, shard.updates_since_snapshot, key_type, key, value)
        encoded = [(key_bytes(key_type, key), value) for key_type, value in records]

        def done(error: int) -> None:
            if error != Errors.NONE:
                _log.warning("share_state_write_failed", key=key.coordinator_key(), error=error)
                error = Errors.NOT_COORDINATOR if error in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS,
                                                             Errors.UNKNOWN_TOPIC_OR_PARTITION) else error
            shard.lock.defer(lambda: callback(error, None))

        self.writes += 1
        self.log.append_records(partition, encoded, self.config.write_timeout_ms, shard.lock, done)

    def _snapshot(self, key: ShareStateKey, state: ShareGroupOffset) -> tuple[int, bytes]:
        now = self.time.milliseconds()
        self.snapshots_written += 1
        return SHARE_SNAPSHOT_KEY_TYPE, snapshot_value_bytes(ShareSnapshotValue(
            state.snapshot_epoch, state.state_epoch, state.leader_epoch, state.start_offset,
            state.create_timestamp or now, now, state.state_batches))

    def _shard_for_write(self, key: ShareStateKey, callback: ErrorCallback) -> _Shard | None:
        """The key's shard, or None once ``callback`` was told the coordinator status error."""
        error = self._status(key)
        if error is not None:
            callback(*error)
            return None
        return self._shard(self.partition_for(key))

    def initialize_state(self, key: ShareStateKey, state_epoch: int, start_offset: int,
                         callback: ErrorCallback) -> None:
        """InitializeShareGroupState (Kafka's ``initializeState``): a snapshot with the new state
        epoch and start offset; an older state epoch is FENCED_STATE_EPOCH."""
        shard = self._shard_for_write(key, callback)
        if shard is None:
            return
        with shard.lock:
            current = self._states.get(key)
            if current is not None and state_epoch < current.state_epoch:
                shard.lock.defer(lambda: callback(Errors.FENCED_STATE_EPOCH, None))
                return
            snapshot_epoch = current.snapshot_epoch + 1 if current is not None else 0
            state = ShareGroupOffset(snapshot_epoch, state_epoch, -1, start_offset)
            self._append(key, [self._snapshot(key, state)], callback)

    def write_state(self, key: ShareStateKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: Iterable[StateBatch], callback: ErrorCallback) -> None:
        """WriteShareGroupState (Kafka's ``writeState``)."""
        shard = self._shard_for_write(key, callback)
        if shard is None:
            return
        batches = tuple(batches)
        with shard.lock:
            current = self._states.get(key)
            if current is not None:
                if state_epoch < current.state_epoch:
                    shard.lock.defer(lambda: callback(Errors.FENCED_STATE_EPOCH, None))
                    return
                if leader_epoch < current.leader_epoch:
                    shard.lock.defer(lambda: callback(Errors.FENCED_LEADER_EPOCH, None))
                    return
            if current is None or current.state_epoch != state_epoch or \
                    shard.updates_since_snapshot.get(key, 0) >= self.config.snapshot_update_records_per_snapshot:
                base = current if current is not None and current.state_epoch == state_epoch else None
                start = start_offset if start_offset != -1 else (base.start_offset if base is not None else 0)
                combined = combine_state_batches(base.state_batches if base is not None else (), batches, start)
                state = ShareGroupOffset((current.snapshot_epoch + 1) if current is not None else 0, state_epoch,
                                         leader_epoch, start, combined,
                                         current.create_timestamp if current is not None else 0)
                records = [self._snapshot(key, state)]
            else:
                records = [(SHARE_UPDATE_KEY_TYPE, update_value_bytes(ShareUpdateValue(
                    current.snapshot_epoch, leader_epoch, start_offset, batches)))]
            self._append(key, records, callback)

    def delete_state(self, key: ShareStateKey, callback: ErrorCallback) -> None:
        """DeleteShareGroupState (Kafka's ``deleteState``): tombstones of both keys."""
        shard = self._shard_for_write(key, callback)
        if shard is None:
            return
        with shard.lock:
            if key not in self._states:
                shard.lock.defer(lambda: callback(Errors.NONE, None))
                return
            self._append(key, [(SHARE_SNAPSHOT_KEY_TYPE, None), (SHARE_UPDATE_KEY_TYPE, None)], callback)

    # ================================================================== reading
    def read_state(self, key: ShareStateKey, leader_epoch: int) -> ReadStateResult:
        """ReadShareGroupState (Kafka's ``readStateAndMaybeUpdateLeaderEpoch``): the state, or
        start offset -1 for a share partition without one; a leader epoch below the one that last
        wrote is FENCED_LEADER_EPOCH."""
        error = self._status(key)
        if error is not None:
            return ReadStateResult(*error)
        state = self._states.get(key)
        if state is None:
            return ReadStateResult(Errors.NONE)
        if leader_epoch != -1 and leader_epoch < state.leader_epoch:
            return ReadStateResult(Errors.FENCED_LEADER_EPOCH, None)
        return ReadStateResult(Errors.NONE, None, state.state_epoch, state.leader_epoch, state.start_offset,
                               state.state_batches)

    def states_of_group(self, group_id: str) -> list[ShareStateKey]:
        """The share partitions of ``group_id`` whose state this coordinator holds."""
        with self._lock:
            return [k for k in self._states if k.group_id == group_id]

    def snapshot_states(self) -> dict[ShareStateKey, ShareGroupOffset]:
        """A copy of every state held (metrics: share lag; tests)."""
        with self._lock:
            return dict(self._states)
