"""ReplicaManager: the broker's partitions, appends, fetches and their purgatories.

``append_records`` (acks 0, 1, -1) appends to local leader logs, defers the purgatory checks to
the ``ActionQueue`` (HW moved → Produce and Fetch; appended without HW move → Fetch), and for
acks=-1 parks one ``DelayedProduce`` per request in the ``Produce`` purgatory.
``fetch_messages`` reads with the isolation of the requester (follower: LEO; consumer: HW;
read_committed: the LSO, with the aborted transactions overlapping the read), records follower
fetch state (which may move the HW and complete produces directly, as Kafka's
``Partition.updateFollowerFetchState`` does), and parks one ``DelayedFetch`` per request in the
``Fetch`` purgatory unless it can answer now. ``fetch_in_session`` serves the in-process
followers' incremental fetch sessions (``broker.server.fetch_session``, KIP-227): every leader-side
change of a partition (append, HW move, role change) marks it in the sessions holding it, a
session fetch reads only what is marked, and a parked one (``DelayedSessionFetch``) is watched
under its session and woken by new data, not by HW-only moves. ``apply_partition_states`` is the metadata push
(Kafka's LeaderAndIsr / metadata delta): become leader or follower, start or stop fetchers, and
complete delayed operations of partitions this broker no longer leads.

``delete_records`` raises leaders' log start offsets (DeleteRecords) and parks one
``DelayedDeleteRecords`` per request in the ``DeleteRecords`` purgatory until every live
follower's log start offset caught up.

Log directory failure (with ``log.dirs``, Kafka's ``handleLogDirFailure``): an I/O error in a
directory (``LogManager``'s ``LogDirFailureChannel``) reaches the ``LogDirFailureHandler-<id>``
thread, which takes the directory offline: its partitions stop fetching and answer
KAFKA_STORAGE_ERROR (``Partition.mark_log_dir_offline``; later role changes leave them alone),
their parked requests complete, their leaderships resign, and the controller moves them to
replicas in healthy directories (``MetadataStore.handle_directories_offline``). With no directory
left the broker stops (``on_all_log_dirs_offline``), as Kafka halts.

Differences from Kafka on purpose: no ShareFetch or remote-storage purgatories;
consumers fetch from leaders only (no KIP-392 preferred read replica); role changes come from
the in-process metadata store instead of LeaderAndIsr requests or KRaft metadata deltas.

Transactions: a transactional batch that would open its producer's transaction on a partition
is verified with (under transaction version 2: added by) the transaction coordinator first,
through ``verify_transaction`` and ``add_to_transaction`` (``broker.server.transaction_verification``
has the rules, KIP-890). ``write_txn_markers`` is the one entry point of WriteTxnMarkers, for the API and the
coordinator's in-process marker channel alike: one COMMIT/ABORT control batch per partition,
appended with acks=-1 and origin COORDINATOR; markers that land on ``__consumer_offsets``
partitions are handed to the group coordinator (``schedule_handle_txn_completion``).

Locking: ``_lock`` guards the partition map (lookups are plain dict reads); each ``Partition``
has its own lock; purgatories are triggered only with no partition lock held. Counters are in
``stats`` (``BrokerTopicStats``); ``snapshot()`` reads partitions without their locks (each
field once), as Kafka's gauges do.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence
from uuid import UUID, uuid4

import structlog

from kafka_emu.broker.server.action_queue import ActionQueue
from kafka_emu.broker.server.delayed_delete_records import DelayedDeleteRecords, DeleteRecordsPartitionStatus
from kafka_emu.broker.storage.control_record import end_txn_marker_batch
from kafka_emu.broker.server.delayed_fetch import DelayedFetch, DelayedSessionFetch
from kafka_emu.broker.server.delayed_produce import DelayedProduce, ProducePartitionStatus
from kafka_emu.broker.server.fetch_session import FetchSession, FetchSessionCache, SessionFetchResponse
from kafka_emu.broker.storage.persistent_log import PersistentLog
from kafka_emu.broker.storage.unified_log import UnifiedLog, LogSnapshot
from kafka_emu.broker.storage.log_manager import LogManager
from kafka_emu.broker.storage.log_validator import RecordValidationError
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.broker.server.fetch_params import FetchParams, PartitionFetchInfo
from kafka_emu.broker.server.partition import LogReadResult, Partition
from kafka_emu.broker.storage.producer_state import AppendOrigin
from kafka_emu.broker.server.stats import BrokerTopicStats, BrokerTopicStatsSnapshot
from kafka_emu.broker.server.transaction_verification import (
    VerifyTransaction,
    no_transaction_coordinator,
    transactional_producer,
    verification_error_for_produce,
)
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.coordinator.txn_marker import TxnMarkerEntry
from kafka_emu.timer import DelayedOperationPurgatory, ShutdownableThread, TopicPartitionOperationKey
from kafka_emu.timer.purgatory import PurgatorySnapshot
from kafka_emu.timer.time import Time

if TYPE_CHECKING:
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.broker.server.partition_state import PartitionState
    from kafka_emu.broker.server.replica_fetcher import ReplicaFetcherManager
    from kafka_emu.coordinator.group.group_coordinator import GroupCoordinator
    from kafka_emu.coordinator.group_lock import GroupLock

_log = structlog.get_logger("broker.replica_manager")

TP = tuple[str, int]
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_NONE = Errors.NONE   # read once: an Enum member read costs about a function call (3.11)


@dataclass(frozen=True, slots=True)
class ReplicaManagerSnapshot:
    """Kafka's ReplicaManager gauges and meters, BrokerTopicMetrics, and the hosted logs."""

    partition_count: int
    leader_count: int
    under_replicated_partitions: int
    under_min_isr_partitions: int
    stats: BrokerTopicStatsSnapshot
    logs: tuple[LogSnapshot, ...]                 # every hosted replica (leader or follower)
    leaders: frozenset[tuple[str, int]]           # the partitions among them this broker leads
    purgatories: tuple[PurgatorySnapshot, ...]    # Produce, Fetch and DeleteRecords
    log_memory_budget_deleted_bytes: int = 0      # LogManager: segments deleted over the memory budget


# ReplicaManager.appendToLocalLog answers these with UNKNOWN_LOG_APPEND_INFO (log start offset -1)
_UNKNOWN_APPEND_INFO_ERRORS = frozenset((
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.MESSAGE_TOO_LARGE,
    Errors.RECORD_LIST_TOO_LARGE, Errors.CORRUPT_MESSAGE, Errors.KAFKA_STORAGE_ERROR))


class LogDirFailureHandler(ShutdownableThread):
    """Takes each failed log directory off the log manager's channel and takes it offline
    (Kafka's ``LogDirFailureHandler``)."""

    POLL_S = 0.3

    def __init__(self, replica_manager: ReplicaManager) -> None:
        super().__init__(f"LogDirFailureHandler-{replica_manager.broker_id}",
                         log_context={"broker_id": replica_manager.broker_id})
        self.replica_manager = replica_manager

    def do_work(self) -> None:
        log_dir = self.replica_manager.log_manager.log_dir_failure_channel.take_next_offline_log_dir(self.POLL_S)
        if log_dir is not None:
            self.replica_manager.handle_log_dir_failure(log_dir)


class ReplicaManager:
    def __init__(self, config: "KafkaConfig", metadata: "MetadataStore | None" = None,
                 time: Time | None = None, logs: dict[TP, UnifiedLog] | None = None,
                 produce_purgatory: DelayedOperationPurgatory | None = None,
                 fetch_purgatory: DelayedOperationPurgatory | None = None,
                 action_queue: ActionQueue | None = None,
                 delete_records_purgatory: DelayedOperationPurgatory | None = None) -> None:
        self.config = config
        self.broker_id: int = config["broker.id"]
        self.metadata = metadata
        self.time = time or Time.SYSTEM
        self.logs: dict[TP, UnifiedLog] = logs if logs is not None else {}
        self.stats = BrokerTopicStats()
        self.log_manager = LogManager(config, self.logs, self.time)
        self.action_queue = action_queue or ActionQueue()
        self.produce_purgatory = produce_purgatory or DelayedOperationPurgatory(
            "Produce", broker_id=self.broker_id,
            purge_interval=config["producer.purgatory.purge.interval.requests"], time=self.time)
        self.fetch_purgatory = fetch_purgatory or DelayedOperationPurgatory(
            "Fetch", broker_id=self.broker_id,
            purge_interval=config["fetch.purgatory.purge.interval.requests"], time=self.time)
        self.delete_records_purgatory = delete_records_purgatory or DelayedOperationPurgatory(
            "DeleteRecords", broker_id=self.broker_id,
            purge_interval=config["delete.records.purgatory.purge.interval.requests"], time=self.time)
        self._lock = threading.Lock()
        self.partitions: dict[TP, Partition] = {}
        self.fetcher_manager: ReplicaFetcherManager | None = None   # set by KafkaServer
        # callbacks(topic, partition, is_leader, leader_epoch) after role changes, outside locks
        self.leadership_listeners: list[Callable[[str, int, bool, int], None]] = []
        self.replica_lag_time_max_ms: int = config["replica.lag.time.max.ms"]
        self._keys: dict[TP, TopicPartitionOperationKey] = {}
        self.hw_watchers: list[Callable[[TP], None]] = []  # called with tp after an HW move
        self.fetch_session_cache = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"],
                                                     self.time)
        self.shutting_down = False
        # (transactional id, producer id, epoch, partition) -> error code; replaced at broker
        # wiring by the transaction coordinator's check (``verify_transaction``) and, for
        # transaction version 2, its implicit add of the partition (``add_to_transaction``)
        self.verify_transaction: VerifyTransaction = no_transaction_coordinator
        self.add_to_transaction: VerifyTransaction = no_transaction_coordinator
        self.group_coordinator: GroupCoordinator | None = None       # set by KafkaServer
        # the ShareFetch purgatory (KIP-932), set by KafkaServer: a high watermark move wakes the
        # share fetches parked on the partition, as it wakes consumers' fetches
        self.share_fetch_purgatory: DelayedOperationPurgatory | None = None
        self.request_timeout_ms: int = config["request.timeout.ms"]
        self.transaction_verification_enabled: bool = config["transaction.partition.verification.enable"]
        self._log_dir_failure_handler: LogDirFailureHandler | None = None   # started with log.dirs
        self.on_all_log_dirs_offline: Callable[[], None] | None = None      # set by KafkaServer

    # ------------------------------------------------------------------ partitions
    def get_partition(self, tp: TP) -> Partition | None:
        return self.partitions.get(tp)

    def alter_replica_log_dirs(self, partition_dirs: Mapping[TP, str]) -> dict[TP, int]:
        """Kafka's ``ReplicaManager.alterReplicaLogDirs``: per partition, INVALID_TOPIC_EXCEPTION
        when its future directory's name would pass 255 characters, LOG_DIR_NOT_FOUND for a
        directory the broker does not have, REPLICA_NOT_AVAILABLE when the partition has no
        replica here (the directory is remembered for when it comes), KAFKA_STORAGE_ERROR when
        the directory or the replica's is offline or the move fails; else the log is in that
        directory (moved at once, see ``LogManager.move_log``)."""
        out: dict[TP, int] = {}
        for tp, path in partition_dirs.items():
            if len(f"{tp[0]}-{tp[1]}.{uuid4().hex}-future") > 255:   # UnifiedLog.logFutureDirName
                out[tp] = Errors.INVALID_TOPIC_EXCEPTION
                continue
            try:
                directory = self.log_manager.log_dir(path)
            except KafkaError as exc:   # an offline directory
                out[tp] = exc.code
                continue
            if directory is None:
                out[tp] = Errors.LOG_DIR_NOT_FOUND
                continue
            self.log_manager.maybe_update_preferred_log_dir(tp, directory)
            partition = self.partitions.get(tp)
            if partition is not None and partition.log_dir_offline:
                out[tp] = Errors.KAFKA_STORAGE_ERROR
                continue
            if partition is None or self.log_manager.get_log(tp) is None:
                out[tp] = Errors.REPLICA_NOT_AVAILABLE
                continue
            try:
                self.log_manager.move_log(tp, directory)
                out[tp] = Errors.NONE
            except OSError as exc:
                _log.warning("log_move_failed", topic=tp[0], partition=tp[1], log_dir=path, error=str(exc))
                out[tp] = Errors.KAFKA_STORAGE_ERROR
        return out

    def _key(self, tp: TP) -> TopicPartitionOperationKey:
        key = self._keys.get(tp)
        if key is None:
            key = self._keys[tp] = TopicPartitionOperationKey(tp[0], tp[1])
        return key

    def create_partition(self, topic: str, partition: int, topic_id: UUID | None = None,
                         topic_configs: dict[str, Any] | None = None) -> Partition:
        """Create (or return) the local replica; its ``UnifiedLog`` survives emulated restarts."""
        tp = (topic, partition)
        with self._lock:
            p = self.partitions.get(tp)
            if p is not None:
                return p
            log = self.log_manager.get_or_create_log(tp, topic_configs, topic_id)
            p = Partition(topic, partition, topic_id, self.broker_id, log, self.metadata, self.time,
                          self.stats, self.replica_lag_time_max_ms)
            self.partitions[tp] = p
            return p

    def leader_partitions(self) -> list[Partition]:
        return [p for p in list(self.partitions.values()) if p.is_leader]

    def under_replicated_partitions(self) -> int:
        return sum(1 for p in list(self.partitions.values()) if p.is_under_replicated())

    def under_min_isr_partitions(self) -> int:
        return sum(1 for p in list(self.partitions.values()) if p.is_under_min_isr())

    def leader_count(self) -> int:
        return len(self.leader_partitions())

    def partition_count(self) -> int:
        return len(self.partitions)

    def snapshot(self) -> ReplicaManagerSnapshot:
        """One pass over the partitions (a copy of the map; no partition lock taken)."""
        under_replicated = under_min_isr = 0
        logs: list[LogSnapshot] = []
        leaders: set[TP] = set()
        for p in list(self.partitions.values()):
            logs.append(p.log.snapshot())
            if p.is_leader:
                leaders.add(p.tp)
                under_replicated += p.is_under_replicated()
                under_min_isr += p.is_under_min_isr()
        return ReplicaManagerSnapshot(len(logs), len(leaders), under_replicated, under_min_isr,
                                      self.stats.snapshot(), tuple(logs), frozenset(leaders),
                                      (self.produce_purgatory.snapshot(), self.fetch_purgatory.snapshot(),
                                       self.delete_records_purgatory.snapshot()),
                                      self.log_manager.memory_budget_deleted_bytes)

    # ------------------------------------------------------------------ triggers
    def try_complete_delayed_requests(self, tp: TP, wake_sessions: bool = True) -> None:
        """HW or low watermark moved (or the role changed): Fetch, Produce, DeleteRecords (each
        guarded, KAFKA-17240). ``wake_sessions`` false when only the HW moved (a follower fetch
        moved it): follower sessions report it in their next answer instead of being woken for it."""
        self._wake_sessions(tp, wake_sessions)
        key = self._key(tp)
        purgatories = (self.fetch_purgatory, self.produce_purgatory, self.delete_records_purgatory)
        if self.share_fetch_purgatory is not None:
            purgatories += (self.share_fetch_purgatory,)
        for purgatory in purgatories:
            try:
                purgatory.check_and_complete(key)
            except Exception:
                _log.exception("check_and_complete_failed", broker_id=self.broker_id,
                               purgatory=purgatory.purgatory_name, topic=tp[0], partition=tp[1])

    def _complete_fetches(self, tp: TP) -> None:
        """New data (leader append without HW move, or a follower's append): Fetch only."""
        self._wake_sessions(tp, True)
        try:
            self.fetch_purgatory.check_and_complete(self._key(tp))
        except Exception:
            _log.exception("check_and_complete_failed", broker_id=self.broker_id, purgatory="Fetch")

    def _wake_sessions(self, tp: TP, wake: bool) -> None:
        """Mark ``tp`` changed in the follower fetch sessions holding it; complete their parked
        fetches (``wake``) — the session, not the partition, is their purgatory key — where a
        fetch may be parked (``FetchSessionCache.mark_changed`` says which)."""
        for session in self.fetch_session_cache.mark_changed(tp, wake):
            try:
                self.fetch_purgatory.check_and_complete(session)
            except Exception:
                _log.exception("check_and_complete_failed", broker_id=self.broker_id, purgatory="Fetch")

    # ------------------------------------------------------------------ produce
    def append_records(self, timeout_ms: int, required_acks: int, entries: dict[TP, bytes],
                       response_callback: Callable[[dict[TP, ProducePartitionStatus]], None],
                       delayed_produce_lock: GroupLock | None = None, internal_topics_allowed: bool = False,
                       single_batch: bool = True, origin: AppendOrigin = AppendOrigin.CLIENT,
                       transactional_id: str | None = None,
                       transaction_abortable_supported: bool = False, add_partition: bool = False) -> None:
        """Kafka's ``appendRecords``; ``response_callback`` gets one status per partition.

        Transactional batches are verified first (see the module docstring); batches of more
        than one producer id in one transactional request are INVALID_PRODUCER_ID_MAPPING.
        ``transaction_abortable_supported``: the requester understands TRANSACTION_ABORTABLE
        (Produce v11+); older ones get INVALID_TXN_STATE instead. ``add_partition``: Kafka's
        ``TransactionSupportedOperation`` ADD_PARTITION (Produce v12+, transaction version 2):
        a partition not yet in the transaction is added to it (``add_to_transaction``), not
        only verified; this is done whether or not verification is enabled."""
        if required_acks not in (-1, 0, 1):
            response_callback({tp: ProducePartitionStatus(-1, Errors.INVALID_REQUIRED_ACKS, -1,
                                                           error_message="invalid required acks")
                               for tp in entries})
            return
        statuses: dict[TP, ProducePartitionStatus] = {}
        successes = 0
        actions: list[tuple[TP, bool]] = []
        producers = None
        if transactional_id is not None:
            producers = {tp: transactional_producer(data) for tp, data in entries.items()}
            if len({p[0] for p in producers.values() if p is not None}) > 1:
                response_callback({tp: ProducePartitionStatus(
                    -1, Errors.INVALID_PRODUCER_ID_MAPPING, -1,
                    error_message="Transactional records contained more than one producer ID")
                    for tp in entries})
                return
        for tp, data in entries.items():
            if tp[0] in INTERNAL_TOPICS and not internal_topics_allowed:
                statuses[tp] = ProducePartitionStatus(-1, Errors.INVALID_TOPIC_EXCEPTION, -1, -1, -1,
                                                      f"Cannot append to internal topic {tp[0]}")
                continue
            try:
                partition = self.partitions.get(tp)
                if partition is None:
                    raise KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"unknown partition {tp}")
                guard = None
                producer = producers.get(tp) if producers is not None else None
                if producer is not None:
                    guard = partition.maybe_start_transaction_verification(*producer, add_partition)
                    if guard is not None and (self.transaction_verification_enabled or add_partition):
                        self._verify(transactional_id, producer, tp, transaction_abortable_supported,
                                     add_partition)
                info, hw_moved = partition.append_records_to_leader(data, required_acks, single_batch,
                                                                    origin, guard)
                # unpacked at once: reading a NamedTuple's fields by name costs ten times more (3.11)
                first_offset, last_offset, num_records, size_bytes, duplicate, log_append_time = info
                statuses[tp] = ProducePartitionStatus(last_offset + 1, _NONE, first_offset, log_append_time,
                                                      partition.log.log_start_offset)
                successes += 1
                if not duplicate:
                    self.stats.record_bytes_in(tp[0], num_records, size_bytes)
                    actions.append((tp, hw_moved))
            except KafkaError as e:
                self.stats.record_failed_produce(tp[0], e.code)
                statuses[tp] = ProducePartitionStatus(
                    -1, e.code, -1, -1, self._failed_append_log_start_offset(tp, e.code), e.message,
                    record_errors=e.record_errors if isinstance(e, RecordValidationError) else ())
            except Exception as e:  # never let a bad request kill a handler
                _log.exception("append_failed", broker_id=self.broker_id, topic=tp[0], partition=tp[1])
                self.stats.record_failed_produce(tp[0], Errors.UNKNOWN_SERVER_ERROR)
                statuses[tp] = ProducePartitionStatus(-1, Errors.UNKNOWN_SERVER_ERROR, -1, -1, -1, str(e))
        if actions:
            def action(actions: list[tuple[TP, bool]] = actions) -> None:
                for tp, hw_moved in actions:
                    if hw_moved:
                        self.try_complete_delayed_requests(tp)
                    else:
                        self._complete_fetches(tp)
            self.action_queue.add(action)
        if required_acks == -1 and entries and successes > 0:
            op = DelayedProduce(timeout_ms, statuses, self, response_callback, delayed_produce_lock)
            self.produce_purgatory.try_complete_else_watch(op, [self._key(tp) for tp in entries])
        else:
            response_callback(statuses)

    def _failed_append_log_start_offset(self, tp: TP, code: int) -> int:
        """The log start offset a failed append reports: Kafka's ``processFailedRecord`` for
        validation and producer-state errors, -1 (``UNKNOWN_LOG_APPEND_INFO``) for the errors
        ``appendToLocalLog`` names."""
        partition = self.partitions.get(tp)
        if code in _UNKNOWN_APPEND_INFO_ERRORS or partition is None:
            return -1
        return partition.log.log_start_offset

    # ------------------------------------------------------------------ delete records
    def delete_records(self, timeout_ms: int, offsets: dict[TP, int],
                       response_callback: Callable[[dict[TP, DeleteRecordsPartitionStatus]], None],
                       internal_topics_allowed: bool = False) -> None:
        """Kafka's ``deleteRecords``: raise each leader's log start offset (``offsets``: the
        requested offset, -1 for the HW), then answer at once if every successful partition's
        low watermark already reached it, else park a ``DelayedDeleteRecords``."""
        statuses: dict[TP, DeleteRecordsPartitionStatus] = {}
        for tp, offset in offsets.items():
            try:
                if tp[0] in INTERNAL_TOPICS and not internal_topics_allowed:
                    raise KafkaError(Errors.INVALID_TOPIC_EXCEPTION,
                                     f"Cannot delete records of internal topic {tp[0]}")
                partition = self.partitions.get(tp)
                if partition is None:
                    known = self.metadata is not None and self.metadata.partition_state(*tp) is not None
                    raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER if known else Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                     f"partition {tp} is not hosted here")
                requested, low_watermark = partition.delete_records_on_leader(offset)
                statuses[tp] = DeleteRecordsPartitionStatus(requested, low_watermark, Errors.NONE)
            except KafkaError as e:
                statuses[tp] = DeleteRecordsPartitionStatus(-1, -1, e.code)
        for tp, st in statuses.items():   # the followers' sessions learn the new log start offset
            if st.error == Errors.NONE:
                self._wake_sessions(tp, True)
        if any(s.error == Errors.NONE and s.low_watermark < s.required_offset for s in statuses.values()):
            op = DelayedDeleteRecords(timeout_ms, statuses, self, response_callback)
            self.delete_records_purgatory.try_complete_else_watch(op, [self._key(tp) for tp in statuses])
        else:
            response_callback(statuses)

    def _verify(self, transactional_id: str, producer: tuple[int, int], tp: TP,
                transaction_abortable_supported: bool, add_partition: bool) -> None:
        """Ask the transaction coordinator (to add the partition, under transaction version 2);
        raise the producer's error if the partition is not in the producer's transaction."""
        check = self.add_to_transaction if add_partition else self.verify_transaction
        code = check(transactional_id, producer[0], producer[1], tp)
        if code == Errors.NONE:
            return
        code = verification_error_for_produce(code, transaction_abortable_supported, add_partition)
        if code == Errors.INVALID_TXN_STATE:
            raise KafkaError(code, f"Partition {tp[0]}-{tp[1]} was not added to the transaction of producer "
                                   f"{producer[0]} (transactional id {transactional_id!r})")
        raise KafkaError(code, f"transaction verification of {tp[0]}-{tp[1]} failed")

    # ------------------------------------------------------------------ transaction markers
    def write_txn_markers(self, markers: Sequence[TxnMarkerEntry],
                          callback: Callable[[dict[int, dict[TP, int]]], None]) -> None:
        """Append each marker's COMMIT/ABORT control batch to its partitions (this broker must
        lead them) with acks=-1, origin COORDINATOR, internal topics allowed (Kafka's
        ``KafkaApis.handleWriteTxnMarkersRequest``); ``callback`` gets, per producer id, each
        partition's error code once every append is replicated or failed. Markers that landed
        on ``__consumer_offsets`` partitions complete the producer's transactional offset
        commits in the group coordinator first."""
        errors: dict[int, dict[TP, int]] = {}
        lock = threading.Lock()
        remaining = [len(markers)]
        if not markers:
            callback(errors)
            return

        def marker_done(entry: TxnMarkerEntry, statuses: dict[TP, ProducePartitionStatus]) -> None:
            codes = {tp: st.error for tp, st in statuses.items()}
            offsets_partitions = [tp[1] for tp, code in codes.items()
                                  if tp[0] == OFFSETS_TOPIC and code == Errors.NONE]
            if offsets_partitions and self.group_coordinator is not None:
                try:
                    self.group_coordinator.schedule_handle_txn_completion(
                        entry.producer_id, offsets_partitions, entry.committed)
                except Exception:
                    _log.exception("txn_completion_failed", broker_id=self.broker_id,
                                   producer_id=entry.producer_id)
                    for p in offsets_partitions:
                        codes[(OFFSETS_TOPIC, p)] = Errors.UNKNOWN_SERVER_ERROR
            with lock:
                errors.setdefault(entry.producer_id, {}).update(codes)
                remaining[0] -= 1
                done = remaining[0] == 0
            if done:
                callback(errors)

        now = self.time.milliseconds()
        for entry in markers:
            unknown: dict[TP, ProducePartitionStatus] = {}
            batches: dict[TP, bytes] = {}
            for tp in entry.partitions:
                partition = self.partitions.get(tp)
                if partition is None or not partition.online:
                    unknown[tp] = ProducePartitionStatus(-1, Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)
                else:
                    batches[tp] = end_txn_marker_batch(entry.producer_id, entry.producer_epoch,
                                                       entry.coordinator_epoch, entry.committed, now)
            if not batches:
                marker_done(entry, unknown)
                continue

            def on_appended(statuses: dict[TP, ProducePartitionStatus], entry: TxnMarkerEntry = entry,
                            unknown: dict[TP, ProducePartitionStatus] = unknown) -> None:
                marker_done(entry, {**unknown, **statuses})

            self.append_records(self.request_timeout_ms, -1, batches, on_appended,
                                internal_topics_allowed=True, origin=AppendOrigin.COORDINATOR)

    # ------------------------------------------------------------------ fetch
    def fetch_messages(self, params: FetchParams, fetch_infos: list[tuple[TP, PartitionFetchInfo]],
                       response_callback: Callable[[list[tuple[TP, LogReadResult]]], None]) -> None:
        results = self.read_from_local_log(params, fetch_infos, update_fetch_state=params.is_follower)
        if params.max_wait_ms <= 0 or not fetch_infos:
            response_callback(results)
            return
        nbytes = 0
        for _tp, r in results:
            if r.error != Errors.NONE or r.diverging_epoch is not None:
                response_callback(results)
                return
            nbytes += len(r.records)
        if nbytes >= params.min_bytes:
            response_callback(results)
            return
        op = DelayedFetch(params.max_wait_ms, params, fetch_infos, self, response_callback)
        self.fetch_purgatory.try_complete_else_watch(op, [self._key(tp) for tp, _ in fetch_infos])

    def fetch_in_session(self, params: FetchParams, session_id: int, session_epoch: int,
                         updated: list[tuple[TP, PartitionFetchInfo]], removed: list[TP],
                         response_callback: Callable[[SessionFetchResponse], None]) -> None:
        """A follower fetch with KIP-227 session fields (``broker.server.fetch_session`` has the rules).

        Reads the session's changed partitions (the follower's updates among them, with its
        fetch state recorded); answers now if that found bytes, an error or a diverging epoch,
        else parks a ``DelayedSessionFetch`` under the session. Sessionless (cache full, or
        epoch -1) it is an ordinary ``fetch_messages`` of what was sent.
        """
        error, session = self.fetch_session_cache.new_context(params.replica_id, session_id, session_epoch,
                                                              updated, removed)
        if error != Errors.NONE:
            response_callback(SessionFetchResponse(error, session_id, []))
            return
        if session is None:
            self.fetch_messages(params, updated,
                                lambda results: response_callback(SessionFetchResponse(Errors.NONE, 0, results)))
            return

        def respond(results: list[tuple[TP, LogReadResult]], sid: int = session.id) -> None:
            response_callback(SessionFetchResponse(Errors.NONE, sid, results))

        results = self.read_session(params, session, update_fetch_state=True)
        if params.max_wait_ms <= 0 or any(r.records or r.error != Errors.NONE or r.diverging_epoch is not None
                                          for _, r in results):
            respond(results)
            return
        op = DelayedSessionFetch(params.max_wait_ms, params, session, results, self, respond)
        self.fetch_purgatory.try_complete_else_watch(op, [session])

    def read_session(self, params: FetchParams, session: FetchSession,
                     update_fetch_state: bool) -> list[tuple[TP, LogReadResult]]:
        """Read the changed partitions of ``session``; those the response had no room for (no
        records although the leader has some past the follower's offset, after earlier
        partitions used the response's bytes) stay marked for the next fetch."""
        infos = self.fetch_session_cache.take_changed(session)
        if not infos:
            return []
        results = self.read_from_local_log(params, infos, update_fetch_state)
        total = 0
        unread = []
        for (tp, r), (_, info) in zip(results, infos):   # one result per info, in order
            if r.records:
                total += len(r.records)
            elif total and r.error == Errors.NONE and r.log_end_offset > info.fetch_offset:
                unread.append(tp)
        if unread:
            self.fetch_session_cache.mark_unread(session, unread)
        return results

    def read_from_local_log(self, params: FetchParams, fetch_infos: list[tuple[TP, PartitionFetchInfo]],
                            update_fetch_state: bool) -> list[tuple[TP, LogReadResult]]:
        out: list[tuple[TP, LogReadResult]] = []
        remaining = params.max_bytes
        min_one = not params.hard_max_bytes_limit
        follower = params.replica_id
        now = self.time.milliseconds() if update_fetch_state else 0
        moved: list[TP] = []
        for tp, info in fetch_infos:
            partition = self.partitions.get(tp)
            if partition is None:
                out.append((tp, LogReadResult(b"", Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, -1)))
                continue
            if follower >= 0 and follower not in partition.replicas:
                code = Errors.UNKNOWN_LEADER_EPOCH if info.current_leader_epoch >= 0 else Errors.NOT_LEADER_OR_FOLLOWER
                out.append((tp, LogReadResult(b"", code, -1, -1, -1, -1)))
                continue
            result = partition.read_records(info.fetch_offset, max(min(info.max_bytes, remaining), 0),
                                            params.isolation, info.current_leader_epoch,
                                            info.last_fetched_epoch, min_one)
            if result.records:
                remaining -= len(result.records)
                min_one = False
                if follower < 0:
                    self.stats.record_bytes_out(tp[0], len(result.records))
            elif result.error != Errors.NONE:
                self.stats.record_failed_fetch(tp[0], result.error)
            out.append((tp, result))
            if update_fetch_state and result.error == Errors.NONE and result.diverging_epoch is None:
                if partition.update_follower_fetch_state(follower, info.fetch_offset, info.log_start_offset,
                                                         now, result.log_end_offset):
                    moved.append(tp)
        for tp in moved:  # outside partition locks (a follower fetch moved the HW)
            self.try_complete_delayed_requests(tp, wake_sessions=False)
            self._on_hw_moved(tp)
        if update_fetch_state and self.metadata is not None and self.metadata.reassignments_completable:
            self.metadata.complete_reassignments()   # a new replica joined the ISR
        return out

    # ------------------------------------------------------------------ ISR expiration
    def maybe_shrink_isr(self) -> int:
        """The ``isr-expiration`` task; returns how many partitions shrank their ISR."""
        shrunk = 0
        for p in self.leader_partitions():
            before = len(p.isr)
            try:
                self._record_session_fetches(p)
                if p.maybe_shrink_isr():
                    self.try_complete_delayed_requests(p.tp)
                    self._on_hw_moved(p.tp)
            except Exception:
                _log.exception("isr_expiration_failed", broker_id=self.broker_id, topic=p.topic,
                               partition=p.partition)
            if len(p.isr) < before:
                shrunk += 1
        return shrunk

    def _record_session_fetches(self, partition: Partition) -> None:
        """An incremental fetch leaves out partitions with nothing new, where Kafka's leader
        reads every partition of a session on every fetch: record, for each follower session
        holding this partition unchanged while the follower is at the leader's LEO, a fetch at
        the session's last fetch time, so the ISR check sees the follower as caught up."""
        leo = partition.log.log_end_offset
        for replica_id, info, fetch_ms in self.fetch_session_cache.quiescent(partition.tp):
            st = partition.followers.get(replica_id)
            if info.fetch_offset == leo and st is not None and fetch_ms > st.last_fetch_time_ms:
                if partition.update_follower_fetch_state(replica_id, leo, info.log_start_offset, fetch_ms, leo):
                    self.try_complete_delayed_requests(partition.tp, wake_sessions=False)

    # ------------------------------------------------------------------ metadata pushes
    def apply_partition_states(self, states: Iterable["PartitionState"],
                               removed: Iterable[TP] = ()) -> None:
        """Become leader or follower per ``states``; stop replicas in ``removed``."""
        if self.shutting_down:
            return
        events: list[tuple[str, int, bool, int]] = []
        complete: list[TP] = []
        for st in states:
            tp = (st.topic, st.partition)
            if self.broker_id not in st.replicas:
                # a reassignment moved this replica away: stop it and delete its log
                if self._stop_replica(tp, events):
                    complete.append(tp)
                continue
            existing = self.partitions.get(tp)
            if existing is not None and existing.log_dir_offline:
                continue   # Kafka ignores role changes of a partition whose log directory failed
            topic_info = self.metadata.topic(st.topic) if self.metadata is not None else None
            partition = self.create_partition(st.topic, st.partition, st.topic_id,
                                              topic_info.configs if topic_info is not None else None)
            was_leader = partition.is_leader
            if st.leader == self.broker_id:
                became, hw_moved = partition.make_leader(st)
                if became:
                    if self.fetcher_manager is not None:
                        self.fetcher_manager.remove_partitions([tp])
                    events.append((st.topic, st.partition, True, st.leader_epoch))
                    _log.info("became_leader", broker_id=self.broker_id, topic=st.topic,
                              partition=st.partition, leader_epoch=st.leader_epoch, isr=list(st.isr))
                if became or hw_moved:
                    complete.append(tp)
            else:
                changed = partition.make_follower(st)
                if changed:
                    if was_leader:
                        events.append((st.topic, st.partition, False, st.leader_epoch))
                    complete.append(tp)
                    if self.fetcher_manager is not None:
                        self.fetcher_manager.remove_partitions([tp])
                        if st.leader >= 0:
                            self.fetcher_manager.add_partition(tp, st.leader, st.topic_id,
                                                               partition.log.log_end_offset)
                    _log.info("became_follower", broker_id=self.broker_id, topic=st.topic,
                              partition=st.partition, leader=st.leader, leader_epoch=st.leader_epoch)
        for tp in removed:
            if self._stop_replica(tp, events):
                complete.append(tp)
        for tp in complete:
            self.try_complete_delayed_requests(tp)
            self._on_hw_moved(tp)
        for event in events:
            for listener in list(self.leadership_listeners):
                try:
                    listener(*event)
                except Exception:
                    _log.exception("leadership_listener_failed", broker_id=self.broker_id)

    def _stop_replica(self, tp: TP, events: list[tuple[str, int, bool, int]]) -> bool:
        """Kafka's StopReplica with deletion (a deleted topic, or a replica reassigned away):
        the replica goes offline, its fetcher stops, its log is deleted; false if not hosted."""
        partition = self.partitions.get(tp)
        if partition is None:
            return False
        was_leader = partition.is_leader
        partition.go_offline()
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partitions([tp])
        with self._lock:
            self.partitions.pop(tp, None)
        self.log_manager.delete_log(tp)
        if not any(t == tp[0] for t, _ in list(self.partitions)):
            self.stats.remove_topic(tp[0])
        if was_leader:
            events.append((tp[0], tp[1], False, partition.leader_epoch))
        return True

    def _on_hw_moved(self, tp: TP) -> None:
        """Hook for HW watchers (coordinator loading waits on it)."""
        for watcher in list(self.hw_watchers):
            try:
                watcher(tp)
            except Exception:
                _log.exception("hw_watcher_failed", broker_id=self.broker_id)

    # ------------------------------------------------------------------ log directory failure
    def start_log_dir_failure_handler(self) -> None:
        """Start the ``LogDirFailureHandler`` thread (with ``log.dirs``)."""
        if self.log_manager.live_log_dirs and self._log_dir_failure_handler is None:
            self._log_dir_failure_handler = LogDirFailureHandler(self)
            self._log_dir_failure_handler.start()

    def handle_log_dir_failure(self, log_dir: Path) -> None:
        """Kafka's ``ReplicaManager.handleLogDirFailure``: the partitions whose logs are in
        ``log_dir`` stop fetching and serving (KAFKA_STORAGE_ERROR), their parked requests are
        answered, the log manager drops the directory, the controller hears of the offline
        replicas (it moves their leaderships to replicas in healthy directories and takes them
        out of the ISRs), and with no directory left the broker stops, as Kafka halts it."""
        failed = [p for p in list(self.partitions.values())
                  if isinstance(p.log, PersistentLog) and p.log.dir.parent == log_dir]
        tps = [p.tp for p in failed]
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partitions(tps)
        events = [(p.topic, p.partition, False, p.leader_epoch) for p in failed if p.is_leader]
        for p in failed:
            p.mark_log_dir_offline()
        self.log_manager.handle_log_dir_failure(log_dir)
        for tp in tps:
            self.try_complete_delayed_requests(tp)
        for event in events:   # coordinators resign the partitions led here
            for listener in list(self.leadership_listeners):
                try:
                    listener(*event)
                except Exception:
                    _log.exception("leadership_listener_failed", broker_id=self.broker_id)
        if self.metadata is not None:
            self.metadata.handle_directories_offline(self.broker_id, tps)
        if not self.log_manager.live_log_dirs:
            _log.error("all_log_dirs_offline", broker_id=self.broker_id,
                       message=f"every log directory of broker {self.broker_id} is offline: it stops")
            if self.on_all_log_dirs_offline is not None:
                self.on_all_log_dirs_offline()

    # ------------------------------------------------------------------ config changes
    def update_log_configs(self, config: "KafkaConfig | None" = None, topic: str | None = None) -> None:
        """A topic's configs changed (``topic``; Kafka's ``LogManager.updateTopicConfig``) or the
        broker's dynamic config did (``config``, every log; Kafka's ``DynamicLogConfig.reconfigure``):
        each hosted log gets its recomputed ``LogConfig`` at once. The mechanisms read it as in
        Kafka (rolls at the next append, retention and compaction at their next run); a lower
        ``min.insync.replicas`` may move the HW, so delayed requests are checked."""
        if config is not None:
            self.config = config
            self.log_manager.config = config
        moved: list[TP] = []
        for tp, partition in list(self.partitions.items()):
            if topic is not None and tp[0] != topic:
                continue
            info = self.metadata.topic(tp[0]) if self.metadata is not None else None
            if partition.update_log_config(self.log_manager.log_config(info.configs if info else None)):
                moved.append(tp)
        for tp in moved:
            self.try_complete_delayed_requests(tp)
            self._on_hw_moved(tp)

    # ------------------------------------------------------------------ follower side
    def append_as_follower(self, tp: TP, data: bytes, leader_hw: int, leader_log_start_offset: int = -1) -> bool:
        """Called by the replica fetcher; returns whether the local HW moved."""
        partition = self.partitions.get(tp)
        if partition is None or partition.is_leader or not partition.online:
            return False
        n, moved = partition.append_records_to_follower(data, leader_hw, leader_log_start_offset)
        if moved:
            self._complete_fetches(tp)  # local consumers (KIP-392)
            self._on_hw_moved(tp)
        return moved

    # ------------------------------------------------------------------ shutdown
    def shutdown(self) -> None:
        """Crash-stop: every partition goes offline and its delayed operations complete
        (NOT_LEADER_OR_FOLLOWER); then the purgatories stop."""
        self.shutting_down = True
        if self._log_dir_failure_handler is not None:
            self._log_dir_failure_handler.shutdown()
        for session in self.fetch_session_cache.close_all():
            self.fetch_purgatory.check_and_complete(session)
        parts = list(self.partitions.values())
        for p in parts:
            p.go_offline()
        for p in parts:
            self.try_complete_delayed_requests(p.tp)
        self.action_queue.try_complete_actions()
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
        self.delete_records_purgatory.shutdown()
