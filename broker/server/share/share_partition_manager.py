"""SharePartitionManager: the share partitions this broker leads, the members' share sessions, and
ShareFetch/ShareAcknowledge (Kafka's ``SharePartitionManager`` with its ``ShareSessionCache``).

Share sessions (KIP-932, Kafka's ``ShareSessionContext``): a member's ShareFetch with epoch 0
opens its session on this broker with the partitions it names (acknowledgements are refused
there: INVALID_REQUEST); later requests carry the session's next epoch (a session that is not
here: SHARE_SESSION_NOT_FOUND; another epoch: INVALID_SHARE_SESSION_EPOCH) and add or forget
partitions; epoch -1 closes it (a final fetch or acknowledge may only acknowledge), releasing
every record the member still holds on this broker's share partitions. At most
``group.share.max.share.sessions`` sessions: past that a new one gets SHARE_SESSION_LIMIT_REACHED.
A session is keyed by (group, member); one opened again with epoch 0 replaces the old one.

A ShareFetch first applies the acknowledgements it carries (their errors go in each partition's
``AcknowledgeErrorCode``), then acquires from the session's partitions (``try_acquire``); with
nothing acquired and ``max_wait_ms`` > 0 it parks as a ``DelayedShareFetch``. A share partition is
created on first use on the partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere, with the
leader's endpoint; UNKNOWN_TOPIC_ID for an id this broker does not know) and initialized from its
persisted state before anything is acquired. Leadership lost closes the topic partition's share
partitions (their locks are dropped; the next leader restores the state).

Metrics counters (``snapshot``): acknowledgements by type, records whose lock expired, share
fetches, and per share partition its start offset and lag (high watermark minus start offset,
what Kafka's share lag estimates).

Locking: ``_lock`` guards ``_partitions`` and ``_sessions``; each share partition guards itself.
Nothing is called out under ``_lock``.

Differences from Kafka on purpose: the fetched records of a partition are capped by the request's
``max_bytes`` alone (Kafka also spreads it over the partitions); the membership of the fetching
member is not checked with the group coordinator (Kafka does neither in 4.x); records of a
member whose connection drops stay acquired until their lock expires or its session is reused.
"""
from __future__ import annotations

import struct
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

import structlog

from kafka_emu.broker.server.fetch_params import (
    ISOLATION_HIGH_WATERMARK, ISOLATION_TXN_COMMITTED, FetchParams, PartitionFetchInfo,
)
from kafka_emu.broker.server.share.delayed_share_fetch import DelayedShareFetch, DelayedShareFetchGroupKey
from kafka_emu.broker.server.share.share_partition import (
    AcknowledgeType, AcquiredRecords, FetchedBatch, Persister, SharePartition, SharePartitionState, ShareSettings,
)
from kafka_emu.broker.storage.log_segment import iter_headers
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.group_config import (
    BY_DURATION, READ_COMMITTED, SHARE_AUTO_OFFSET_RESET, SHARE_DELIVERY_COUNT_LIMIT, SHARE_ISOLATION_LEVEL,
    SHARE_PARTITION_MAX_RECORD_LOCKS, SHARE_RECORD_LOCK_DURATION_MS, parse_by_duration,
)
from kafka_emu.timer import DelayedOperationPurgatory, PurgatorySnapshot, Time, Timer, TopicPartitionOperationKey

if TYPE_CHECKING:
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.broker.server.replica_manager import ReplicaManager

_log = structlog.get_logger("broker.share_partition_manager")

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
TopicIdPartition = tuple[uuid.UUID, int]
Acknowledgements = list[tuple[int, int, tuple[int, ...]]]
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
CONTROL_FLAG = 0x20
TRANSACTIONAL_FLAG = 0x10


@dataclass(slots=True)
class PartitionResult:
    """One partition of a ShareFetch answer."""
    error: int = Errors.NONE
    records: bytes = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)
    leader_id: int = -1
    leader_epoch: int = -1


@dataclass(slots=True)
class ShareFetchRequestState:
    group_id: str
    member_id: str
    partitions: list[TopicIdPartition]
    max_bytes: int
    max_records: int
    strict_limit: bool
    results: dict[TopicIdPartition, PartitionResult] = field(default_factory=dict)


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)   # ordered set


@dataclass(frozen=True, slots=True)
class SharePartitionSnapshot:
    group_id: str
    topic: str
    partition: int
    start_offset: int
    lag: int


@dataclass(frozen=True, slots=True)
class SharePartitionManagerSnapshot:
    """Kafka's share-group broker metrics (``ShareGroupMetrics``, ``BrokerTopicMetrics``)."""
    acknowledgements: Mapping[str, int]        # by type name: Accept, Release, Reject, Renew, Gap
    record_lock_timeouts: int                   # records whose acquisition lock expired
    share_fetches: int
    share_acknowledges: int
    share_sessions: int
    partitions: tuple[SharePartitionSnapshot, ...]
    purgatory: PurgatorySnapshot


class SharePartitionManager:
    """See the module docstring."""

    def __init__(self, broker_id: int, config: KafkaConfig, replica_manager: ReplicaManager,
                 metadata: MetadataStore, time: Time, timer: Timer, persister: Persister,
                 purgatory: DelayedOperationPurgatory) -> None:
        self.broker_id = broker_id
        self.config = config
        self.replica_manager = replica_manager
        self.metadata = metadata
        self.time = time
        self.timer = timer
        self.persister = persister
        self.purgatory = purgatory
        self.max_sessions = int(config["group.share.max.share.sessions"])   # type: ignore[arg-type]
        self._lock = threading.Lock()
        self._partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self._sessions: dict[tuple[str, str], ShareSession] = {}
        # metrics (each written under _metrics_lock)
        self._metrics_lock = threading.Lock()
        self.acknowledgements = {t: 0 for t in AcknowledgeType}
        self.record_lock_timeouts = 0
        self.share_fetches = 0
        self.share_acknowledges = 0

    # ================================================================== settings
    def settings(self, group_id: str) -> ShareSettings:
        cfg = self.config
        overrides = self.metadata.group_configs(group_id)
        return ShareSettings(
            record_lock_duration_ms=int(overrides.get(SHARE_RECORD_LOCK_DURATION_MS,
                                                      cfg["group.share.record.lock.duration.ms"])),
            delivery_count_limit=int(overrides.get(SHARE_DELIVERY_COUNT_LIMIT, cfg["group.share.delivery.count.limit"])),
            max_in_flight_records=int(overrides.get(SHARE_PARTITION_MAX_RECORD_LOCKS,
                                                    cfg["group.share.partition.max.record.locks"])),
            auto_offset_reset=str(overrides.get(SHARE_AUTO_OFFSET_RESET, "latest")),
            read_committed=overrides.get(SHARE_ISOLATION_LEVEL) == READ_COMMITTED)

    def record_lock_duration_ms(self, group_id: str) -> int:
        return self.settings(group_id).record_lock_duration_ms

    # ================================================================== sessions
    def new_context(self, group_id: str, member_id: str, epoch: int, added: list[TopicIdPartition],
                    forgotten: list[TopicIdPartition], has_acknowledgements: bool) -> tuple[int, ShareSession | None]:
        """Kafka's ``newContext``: (error, the session after this request). A final request
        (epoch -1) returns the closed session."""
        key = (group_id, member_id)
        with self._lock:
            if epoch == INITIAL_EPOCH:
                if has_acknowledgements:
                    return Errors.INVALID_REQUEST, None
                if key not in self._sessions and len(self._sessions) >= self.max_sessions:
                    return Errors.SHARE_SESSION_LIMIT_REACHED, None
                replaced = self._sessions.pop(key, None)
                session = self._sessions[key] = ShareSession(group_id, member_id, 1, dict.fromkeys(added))
            else:
                session = self._sessions.get(key)
                if session is None:
                    return Errors.SHARE_SESSION_NOT_FOUND, None
                if epoch == FINAL_EPOCH:
                    del self._sessions[key]
                    replaced = None
                else:
                    if epoch != session.epoch:
                        return Errors.INVALID_SHARE_SESSION_EPOCH, None
                    session.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
                    for tp in forgotten:
                        session.partitions.pop(tp, None)
                    for tp in added:
                        session.partitions[tp] = None
                    return Errors.NONE, session
        if replaced is not None:
            self._release_member(group_id, member_id, list(replaced.partitions))
        if epoch == FINAL_EPOCH:
            self._release_member(group_id, member_id, list(session.partitions))
        return Errors.NONE, session

    def session_epoch_ok(self, group_id: str, member_id: str, epoch: int) -> int:
        """ShareAcknowledge's session check (epoch 0 is INVALID_SHARE_SESSION_EPOCH: an
        acknowledgement needs a session)."""
        if epoch == INITIAL_EPOCH:
            return Errors.INVALID_SHARE_SESSION_EPOCH
        with self._lock:
            session = self._sessions.get((group_id, member_id))
            if session is None:
                return Errors.SHARE_SESSION_NOT_FOUND
            if epoch != FINAL_EPOCH:
                if epoch != session.epoch:
                    return Errors.INVALID_SHARE_SESSION_EPOCH
                session.epoch = epoch + 1
        return Errors.NONE

    def close_session(self, group_id: str, member_id: str) -> None:
        with self._lock:
            session = self._sessions.pop((group_id, member_id), None)
        if session is not None:
            self._release_member(group_id, member_id, list(session.partitions))

    def _release_member(self, group_id: str, member_id: str, partitions: list[TopicIdPartition]) -> None:
        for topic_id, partition in partitions:
            sp = self._partitions.get((group_id, topic_id, partition))
            if sp is not None:
                sp.release_acquired_records(member_id)

    # ================================================================== share partitions
    def share_partition(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, SharePartition | None]:
        """The share partition (created on first use on the leader), or the partition's error."""
        key = (group_id, topic_id, partition)
        sp = self._partitions.get(key)
        if sp is not None and sp.state is not SharePartitionState.FENCED:
            return Errors.NONE, sp
        topic = self.metadata.topic_name(topic_id)
        if topic is None:
            return Errors.UNKNOWN_TOPIC_ID, None
        p = self.replica_manager.get_partition((topic, partition))
        if p is None or not p.is_leader:
            return Errors.NOT_LEADER_OR_FOLLOWER, None
        with self._lock:
            sp = self._partitions.get(key)
            if sp is None or sp.state is SharePartitionState.FENCED:
                sp = self._partitions[key] = SharePartition(
                    group_id, topic, topic_id, partition, p.leader_epoch, self.timer, self.persister, self.time,
                    lambda: self.settings(group_id), self._wake, self._count_lock_timeouts)
        return Errors.NONE, sp

    def on_leadership_change(self, topic: str, partition: int, is_leader: bool, epoch: int) -> None:
        """A partition's leadership moved: its share partitions here go (a new leader, or this
        broker leading again at a new epoch, restores them from the share coordinator)."""
        with self._lock:
            keys = [k for k, sp in self._partitions.items() if sp.topic == topic and sp.partition == partition
                    and (not is_leader or sp.leader_epoch != epoch)]
            gone = [self._partitions.pop(k) for k in keys]
        for sp in gone:
            sp.close()

    def forget_group(self, group_id: str, topic_ids: set[uuid.UUID] | None = None) -> None:
        """The group's share-partition state was altered or deleted: drop the cached share
        partitions (the next fetch reads the new state)."""
        with self._lock:
            keys = [k for k in self._partitions if k[0] == group_id and (topic_ids is None or k[1] in topic_ids)]
            gone = [self._partitions.pop(k) for k in keys]
        for sp in gone:
            sp.close()

    def _wake(self, sp: SharePartition) -> None:
        self.purgatory.check_and_complete(DelayedShareFetchGroupKey(sp.group_id, sp.topic_id, sp.partition))

    def _count_lock_timeouts(self, records: int) -> None:
        with self._metrics_lock:
            self.record_lock_timeouts += records

    def _offset_for_reset(self, sp: SharePartition, settings: ShareSettings) -> int:
        p = self.replica_manager.get_partition((sp.topic, sp.partition))
        if p is None:
            return 0
        log = p.log
        reset = settings.auto_offset_reset
        if reset == "earliest":
            return log.log_start_offset
        if reset.startswith(BY_DURATION):
            ms = parse_by_duration(reset) or 0
            offset, _ts = log.fetch_offset_by_timestamp(self.time.milliseconds() - ms, log.high_watermark)
            return offset if offset >= 0 else log.high_watermark
        return log.high_watermark

    # ================================================================== acknowledging
    def acknowledge(self, group_id: str, member_id: str, acks: Mapping[TopicIdPartition, Acknowledgements],
                    callback: Callable[[dict[TopicIdPartition, int]], None]) -> None:
        """Apply acknowledgements per partition; ``callback({partition: error})`` once every
        partition's change is written (or refused)."""
        results: dict[TopicIdPartition, int] = {}
        pending = [len(acks)]
        lock = threading.Lock()

        def one_done(tp: TopicIdPartition, error: int) -> None:
            with lock:
                results[tp] = error
                pending[0] -= 1
                finished = pending[0] == 0
            if finished:
                callback(results)

        if not acks:
            callback(results)
            return
        with self._metrics_lock:
            self.share_acknowledges += 1
        for tp, batches in acks.items():
            error, sp = self.share_partition(group_id, *tp)
            if sp is None or not sp.is_active:
                one_done(tp, error if sp is None else Errors.INVALID_RECORD_STATE)
                continue
            error, counts = sp.acknowledge(member_id, batches, lambda e, tp=tp: one_done(tp, e))
            with self._metrics_lock:
                for kind, n in counts.items():
                    self.acknowledgements[kind] += n
            if error != Errors.NONE:
                one_done(tp, error)

    # ================================================================== fetching
    def fetch(self, state: ShareFetchRequestState, max_wait_ms: int,
              callback: Callable[[dict[TopicIdPartition, PartitionResult]], None]) -> None:
        """Acquire from the session's partitions now, or park until something can be."""
        with self._metrics_lock:
            self.share_fetches += 1
        if not state.partitions:
            callback({})
            return
        op = DelayedShareFetch(max_wait_ms, state, self.try_acquire, callback)
        keys: list[object] = []
        for topic_id, partition in state.partitions:
            topic = self.metadata.topic_name(topic_id)
            if topic is not None:
                keys.append(TopicPartitionOperationKey(topic, partition))
            keys.append(DelayedShareFetchGroupKey(state.group_id, topic_id, partition))
        if max_wait_ms <= 0:
            op.force_complete()
            return
        self.purgatory.try_complete_else_watch(op, keys)

    def try_acquire(self, state: ShareFetchRequestState) -> bool:
        """One attempt at acquiring for a ShareFetch (``DelayedShareFetch.try_complete``): True
        when something was acquired or a partition answered an error."""
        found = False
        remaining_records = state.max_records - sum(
            a.last_offset - a.first_offset + 1 for r in state.results.values() for a in r.acquired)
        remaining_bytes = state.max_bytes - sum(len(r.records) for r in state.results.values())
        for tp in state.partitions:
            if remaining_records <= 0 or remaining_bytes <= 0:
                break
            if tp in state.results:
                continue
            error, sp = self.share_partition(state.group_id, *tp)
            if sp is None:
                state.results[tp] = self._error_result(tp, error)
                found = True
                continue
            if not sp.maybe_initialize(lambda s, sp=sp: self._offset_for_reset(sp, s), self._wake):
                continue
            result = self._acquire_from(sp, state.member_id, remaining_records, remaining_bytes, state.strict_limit)
            if result is None:
                continue
            state.results[tp] = result
            found = True
            remaining_records -= sum(a.last_offset - a.first_offset + 1 for a in result.acquired)
            remaining_bytes -= len(result.records)
        return found

    def _error_result(self, tp: TopicIdPartition, error: int) -> PartitionResult:
        topic = self.metadata.topic_name(tp[0])
        st = self.metadata.partition_state(topic, tp[1]) if topic is not None else None
        if st is None:
            return PartitionResult(error)
        return PartitionResult(error, leader_id=st.leader, leader_epoch=st.leader_epoch)

    def _acquire_from(self, sp: SharePartition, member_id: str, max_records: int, max_bytes: int,
                      strict: bool) -> PartitionResult | None:
        if not sp.fetch_lock.acquire(blocking=False):
            return None
        try:
            if not sp.can_acquire_records():
                return None
            settings = sp.settings()
            tp = (sp.topic, sp.partition)
            isolation = ISOLATION_TXN_COMMITTED if settings.read_committed else ISOLATION_HIGH_WATERMARK
            params = FetchParams(max_bytes=max_bytes, isolation=isolation)
            offset = sp.next_fetch_offset()
            (_, r), = self.replica_manager.read_from_local_log(params, [(tp, PartitionFetchInfo(offset, max_bytes))],
                                                              False)
            if r.error == Errors.OFFSET_OUT_OF_RANGE and offset < r.log_start_offset:
                sp.skip_to(r.log_start_offset)
                return None
            if r.error != Errors.NONE:
                return PartitionResult(r.error, leader_id=r.leader_id, leader_epoch=r.leader_epoch)
            if not r.records:
                return None
            records = r.records
            headers = list(iter_headers(records))
            fetched = [FetchedBatch(h.base_offset, h.last_offset,
                                    _PRODUCER_ID.unpack_from(records, h.position + 43)[0],
                                    bool(_ATTRIBUTES.unpack_from(records, h.position + 21)[0] & CONTROL_FLAG))
                       for h in headers]
            aborted = None
            if r.aborted_transactions:
                transactional = {h.base_offset for h in headers
                                 if _ATTRIBUTES.unpack_from(records, h.position + 21)[0] & TRANSACTIONAL_FLAG}
                txns = r.aborted_transactions

                def aborted(fb: FetchedBatch) -> bool:
                    return fb.base_offset in transactional and any(
                        t.producer_id == fb.producer_id and t.first_offset <= fb.base_offset <= t.last_offset
                        for t in txns)
            acquired = sp.acquire(member_id, max_records, fetched, aborted, strict)
            if not acquired:
                return None
            low, high = acquired[0].first_offset, acquired[-1].last_offset
            keep = [h for h in headers if h.last_offset >= low and h.base_offset <= high]
            start, end = keep[0].position, keep[-1].position + keep[-1].size
            return PartitionResult(Errors.NONE, records[start:end], acquired, r.leader_id, r.leader_epoch)
        finally:
            sp.fetch_lock.release()

    # ================================================================== metrics
    def snapshot(self) -> SharePartitionManagerSnapshot:
        parts = []
        for sp in list(self._partitions.values()):
            p = self.replica_manager.get_partition((sp.topic, sp.partition))
            hw = p.log.high_watermark if p is not None else sp.start_offset
            parts.append(SharePartitionSnapshot(sp.group_id, sp.topic, sp.partition, sp.start_offset,
                                                max(hw - sp.start_offset, 0)))
        with self._metrics_lock:
            acks = {t.name.capitalize(): n for t, n in self.acknowledgements.items()}
            return SharePartitionManagerSnapshot(acks, self.record_lock_timeouts, self.share_fetches,
                                                 self.share_acknowledges, len(self._sessions), tuple(parts),
                                                 self.purgatory.snapshot())

    def shutdown(self) -> None:
        with self._lock:
            gone, self._partitions = list(self._partitions.values()), {}
            self._sessions.clear()
        for sp in gone:
            sp.close()
        self.purgatory.shutdown()
