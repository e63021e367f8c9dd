"""TransactionStateManager: the transaction metadata cache, ``__transaction_state`` ownership,
persistence and loading (Kafka's ``kafka.coordinator.transaction.TransactionStateManager``).

Each ``__transaction_state`` partition this broker leads has a cache entry
``(coordinator_epoch, {transactional_id: TransactionMetadata})``; the coordinator epoch is the
partition's leader epoch when it was loaded. ``get_transaction_state`` answers
COORDINATOR_LOAD_IN_PROGRESS for ids of a partition being loaded and NOT_COORDINATOR for ids of
a partition this broker does not lead.

``append_transaction_to_log`` writes one record (key: transactional id, value: the transition)
through the ``CoordinatorLog`` on ``__transaction_state`` with acks=-1 and the transaction's
timeout as the append timeout; on success it applies the transition unless the partition was
reloaded (another coordinator epoch) meanwhile, on failure it clears the pending state (unless
the caller retries that error). Append errors are translated as Kafka does.

Loading (``load_transactions_for_txn_topic_partition``, on the load ``scheduler``): the whole
partition is replayed, the last value of each id wins and tombstones delete; the entry is
installed only if the partition is still loading at the same epoch; transactions found in
PrepareCommit/PrepareAbort are completed by sending their markers again.

Locking: ``_state_lock`` (reentrant) guards ``_cache`` and ``_loading`` (Kafka's stateLock; the
emulator takes it briefly for reads too and never calls the log or a callback while holding it).
Each metadata's ``lock`` guards that metadata; ``_state_lock`` may be taken inside it, never the
reverse while calling out. Callbacks queued with ``metadata.lock.defer`` run after that lock is
released.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterable

import structlog

from kafka_emu.common import errors
from kafka_emu.common.errors import Errors
from kafka_emu.common.re2 import compile_re2
from kafka_emu.coordinator.group_lock import GroupLock
from kafka_emu.coordinator.group.group_metadata_manager import InlineScheduler, Scheduler
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.transaction.config import TransactionConfig
from kafka_emu.coordinator.transaction.transaction_log import (
    key_bytes, partition_for, read_key, read_value, value_bytes,
)
from kafka_emu.coordinator.transaction.transaction_metadata import (
    TransactionMetadata, TransactionState, TxnTransitMetadata,
)
from kafka_emu.timer.time import Time

_log = structlog.get_logger("coordinator.transaction_state_manager")

ErrorCallback = Callable[[int], None]
# (coordinator epoch, commit?, metadata, transit to Complete*) of a transaction whose markers go out
SendTxnMarkers = Callable[[int, bool, TransactionMetadata, TxnTransitMetadata], None]


@dataclass(frozen=True, slots=True)
class CoordinatorEpochAndTxnMetadata:
    coordinator_epoch: int
    transaction_metadata: TransactionMetadata


@dataclass(frozen=True, slots=True)
class TransactionalIdAndProducerIdEpoch:
    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """One ListTransactions entry."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass
class _CacheEntry:
    coordinator_epoch: int
    metadata_per_transactional_id: dict[str, TransactionMetadata]


def map_append_error(code: int) -> int:
    """``appendTransactionToLog``'s translation of a produce error for the client."""
    if code in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_ENOUGH_REPLICAS,
                Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT):
        return Errors.COORDINATOR_NOT_AVAILABLE
    if code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.KAFKA_STORAGE_ERROR):
        return Errors.NOT_COORDINATOR
    if code in (Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE):
        return Errors.UNKNOWN_SERVER_ERROR
    return code


class TransactionStateManager:
    def __init__(self, broker_id: int, config: TransactionConfig, log: CoordinatorLog, time: Time,
                 scheduler: Scheduler | InlineScheduler | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.log = log
        self.time = time
        self.scheduler = scheduler if scheduler is not None else Scheduler(f"transaction-state-manager-{broker_id}")
        self._state_lock = threading.RLock()
        self._cache: dict[int, _CacheEntry] = {}
        self._loading: set[tuple[int, int]] = set()   # (partition, coordinator epoch)
        self._shutting_down = False
        # metrics (read at scrape time): partition load times in ms
        self.load_time_ms_max = 0
        self.load_time_ms_total = 0
        self.loads = 0

    # ------------------------------------------------------------------ partitions
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.transaction_log_num_partitions)

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    def is_loading(self) -> bool:
        with self._state_lock:
            return bool(self._loading)

    def owned_partitions(self) -> dict[int, int]:
        """{partition: coordinator epoch} of the loaded partitions."""
        with self._state_lock:
            return {p: e.coordinator_epoch for p, e in self._cache.items()}

    # ------------------------------------------------------------------ cache
    def _cache_entry(self, transactional_id: str) -> tuple[int, _CacheEntry | None]:
        """(NONE, the id's partition's entry) or (COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR,
        None). ``_state_lock`` held."""
        partition = self.partition_for(transactional_id)
        if any(p == partition for p, _ in self._loading):
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, None
        entry = self._cache.get(partition)
        return (Errors.NONE, entry) if entry is not None else (Errors.NOT_COORDINATOR, None)

    def get_transaction_state(self, transactional_id: str) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        """(NONE, entry or None if unknown) or (COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR, None)."""
        with self._state_lock:
            error, entry = self._cache_entry(transactional_id)
            if entry is None:
                return error, None
            md = entry.metadata_per_transactional_id.get(transactional_id)
            return Errors.NONE, (CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, md)
                                 if md is not None else None)

    def put_transaction_state_if_not_exists(self, metadata: TransactionMetadata
                                            ) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        with self._state_lock:
            error, entry = self._cache_entry(metadata.transactional_id)
            if entry is None:
                return error, None
            current = entry.metadata_per_transactional_id.setdefault(metadata.transactional_id, metadata)
            return Errors.NONE, CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, current)

    def all_transactions(self) -> list[TransactionMetadata]:
        with self._state_lock:
            return [md for e in self._cache.values() for md in e.metadata_per_transactional_id.values()]

    # ------------------------------------------------------------------ persistence
    def append_transaction_to_log(self, transactional_id: str, coordinator_epoch: int,
                                  new_metadata: TxnTransitMetadata, response_callback: ErrorCallback,
                                  retry_on_error: Callable[[int], bool] = lambda _e: False) -> None:
        """Persist a prepared transition; ``response_callback(error)`` runs once, outside the
        metadata lock, after the transition was applied (NONE) or abandoned."""
        error, em = self.get_transaction_state(transactional_id)
        if error != Errors.NONE:
            response_callback(error)
            return
        if em is None:
            response_callback(Errors.NOT_COORDINATOR)
            return
        metadata = em.transaction_metadata
        with metadata.lock:
            if em.coordinator_epoch != coordinator_epoch:
                metadata.lock.defer(lambda: response_callback(Errors.NOT_COORDINATOR))
                return
        records: list[tuple[bytes, bytes | None]] = [(key_bytes(transactional_id), value_bytes(new_metadata))]

        def update_cache(produce_error: int) -> None:
            response_error = Errors.NONE if produce_error == Errors.NONE else map_append_error(produce_error)
            err, current = self.get_transaction_state(transactional_id)
            if response_error == Errors.NONE:
                if err != Errors.NONE:
                    response_error = err
                elif current is None:
                    response_error = Errors.NOT_COORDINATOR
            md = current.transaction_metadata if current is not None else None
            if md is None:
                response_callback(response_error)
                return
            with md.lock:
                if response_error == Errors.NONE:
                    if current.coordinator_epoch != coordinator_epoch:
                        response_error = Errors.NOT_COORDINATOR
                    else:
                        md.complete_transition_to(new_metadata)
                elif current.coordinator_epoch == coordinator_epoch:
                    if retry_on_error(response_error):
                        _log.info("append_will_be_retried", transactional_id=transactional_id,
                                  error=errors.name(response_error))
                    else:
                        md.pending_state = None
                if response_error != Errors.NONE:
                    _log.info("append_failed", transactional_id=transactional_id,
                              state=new_metadata.txn_state.state_name, error=errors.name(response_error))
                md.lock.defer(lambda: response_callback(response_error))

        self.log.append_records(self.partition_for(transactional_id), records, new_metadata.txn_timeout_ms,
                                metadata.lock, update_cache)

    # ------------------------------------------------------------------ timeouts / expiration
    def timed_out_transactions(self) -> list[TransactionalIdAndProducerIdEpoch]:
        """Ongoing transactions without a pending transition started more than their timeout ago."""
        now = self.time.milliseconds()
        out = []
        for md in self.all_transactions():
            with md.lock:
                if (md.pending_state is None and md.state is TransactionState.ONGOING
                        and md.txn_start_timestamp + md.txn_timeout_ms < now):
                    out.append(TransactionalIdAndProducerIdEpoch(md.transactional_id, md.producer_id,
                                                                 md.producer_epoch))
        return out

    def remove_expired_transactional_ids(self) -> None:
        """Write a tombstone for each id idle in an expirable state for
        ``transactional.id.expiration.ms``, and drop it from the cache once written."""
        now = self.time.milliseconds()
        with self._state_lock:
            entries = [(p, e.coordinator_epoch, list(e.metadata_per_transactional_id.values()))
                       for p, e in self._cache.items()]
        for partition, coordinator_epoch, metadatas in entries:
            expired: list[tuple[TransactionMetadata, TxnTransitMetadata]] = []
            for md in metadatas:
                with md.lock:
                    if (md.state.is_expiration_allowed and md.pending_state is None
                            and md.txn_last_update_timestamp <= now - self.config.transactional_id_expiration_ms):
                        expired.append((md, md.prepare_dead()))
            if expired:
                self._write_tombstones(partition, coordinator_epoch, expired)

    def _write_tombstones(self, partition: int, coordinator_epoch: int,
                          expired: list[tuple[TransactionMetadata, TxnTransitMetadata]]) -> None:
        def remove_from_cache(error: int) -> None:
            with self._state_lock:
                entry = self._cache.get(partition)
            if entry is None:
                return
            for md, transit in expired:
                with md.lock:
                    if (entry.coordinator_epoch == coordinator_epoch and md.pending_state is TransactionState.DEAD
                            and md.producer_epoch == transit.producer_epoch and error == Errors.NONE):
                        with self._state_lock:
                            if entry.metadata_per_transactional_id.get(md.transactional_id) is md:
                                del entry.metadata_per_transactional_id[md.transactional_id]
                    else:
                        _log.warning("transactional_id_expiration_failed", transactional_id=md.transactional_id,
                                     error=errors.name(error))
                        md.pending_state = None
            if error == Errors.NONE:
                _log.info("expired_transactional_ids_removed", partition=partition, count=len(expired))

        self.log.append_records(partition, [(key_bytes(md.transactional_id), None) for md, _ in expired],
                                self.config.transaction_max_timeout_ms, GroupLock(), remove_from_cache)

    # ------------------------------------------------------------------ listing
    def list_transaction_states(self, producer_id_filters: set[int], state_filters: set[str],
                                duration_filter_ms: int, transactional_id_pattern: str | None = None
                                ) -> tuple[int, list[str], list[TransactionListing]]:
        """(error, unknown state names, listings) of the loaded partitions (ListTransactions);
        ``transactional_id_pattern`` (v2, KIP-1152) keeps the ids it matches whole, an invalid
        one is INVALID_REGULAR_EXPRESSION (``kafka_emu.common.re2``)."""
        with self._state_lock:
            if self._loading:
                return Errors.COORDINATOR_LOAD_IN_PROGRESS, [], []
        pattern = None
        if transactional_id_pattern:
            pattern = compile_re2(transactional_id_pattern)
            if pattern is None:
                return Errors.INVALID_REGULAR_EXPRESSION, [], []
        unknown = [s for s in state_filters if TransactionState.from_name(s) is None]
        now = self.time.milliseconds()
        out = []
        for md in self.all_transactions():
            with md.lock:
                if md.state is TransactionState.DEAD:
                    continue
                if producer_id_filters and md.producer_id not in producer_id_filters:
                    continue
                if state_filters and md.state.state_name not in state_filters:
                    continue
                if duration_filter_ms >= 0 and (md.txn_start_timestamp < 0
                                                or now - md.txn_start_timestamp <= duration_filter_ms):
                    continue
                if pattern is not None and not pattern.fullmatch(md.transactional_id):
                    continue
                out.append(TransactionListing(md.transactional_id, md.producer_id, md.state.state_name))
        return Errors.NONE, unknown, out

    # ------------------------------------------------------------------ loading
    def mark_loading(self, partition: int, coordinator_epoch: int) -> None:
        """The partition's ids answer COORDINATOR_LOAD_IN_PROGRESS from now until its load (or
        a resignation) ends."""
        with self._state_lock:
            self._loading = {k for k in self._loading if k[0] != partition or k[1] > coordinator_epoch}
            self._loading.add((partition, coordinator_epoch))

    def load_transactions_for_txn_topic_partition(self, partition: int, coordinator_epoch: int,
                                                  send_txn_markers: SendTxnMarkers) -> None:
        self.mark_loading(partition, coordinator_epoch)
        start = self.time.milliseconds()
        _log.info("scheduling_load", partition=partition, coordinator_epoch=coordinator_epoch,
                  broker_id=self.broker_id)
        self.scheduler.schedule(f"__transaction_state-{partition}",
                                lambda: self._load(partition, coordinator_epoch, send_txn_markers, start))

    def _load(self, partition: int, coordinator_epoch: int, send_txn_markers: SendTxnMarkers,
              start_ms: int) -> None:
        key = (partition, coordinator_epoch)
        try:
            loaded = self._read_partition(partition)
        except Exception:
            _log.exception("load_failed", partition=partition, coordinator_epoch=coordinator_epoch)
            loaded = None
        elapsed = self.time.milliseconds() - start_ms
        self.loads += 1
        self.load_time_ms_total += elapsed
        self.load_time_ms_max = max(self.load_time_ms_max, elapsed)
        pending: list[tuple[bool, TransactionMetadata, TxnTransitMetadata]] = []
        with self._state_lock:
            if key not in self._loading:
                return   # resigned (or re-elected at a newer epoch) meanwhile
            if loaded is not None:
                self._cache[partition] = _CacheEntry(coordinator_epoch, loaded)
                for md in loaded.values():
                    with md.lock:
                        if md.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
                            pending.append((md.state is TransactionState.PREPARE_COMMIT, md,
                                            md.prepare_complete(self.time.milliseconds())))
            # out of loading first, then the markers: only the marker channel writes them from here
            self._loading.discard(key)
        _log.info("load_finished", partition=partition, coordinator_epoch=coordinator_epoch,
                  transactions=len(loaded or {}), ms=elapsed)
        for commit, md, transit in pending:
            send_txn_markers(coordinator_epoch, commit, md, transit)

    def _read_partition(self, partition: int) -> dict[str, TransactionMetadata]:
        loaded: dict[str, TransactionMetadata] = {}
        for _offset, key, value in self.log.read_records(partition):
            if self._shutting_down:
                break
            try:
                transactional_id = read_key(key)
            except (ValueError, IndexError):
                _log.warning("unknown_key_skipped", partition=partition)
                continue
            if value is None:
                loaded.pop(transactional_id, None)
            else:
                loaded[transactional_id] = read_value(transactional_id, value)
        return loaded

    def remove_transactions_for_txn_topic_partition(self, partition: int) -> None:
        with self._state_lock:
            self._loading = {k for k in self._loading if k[0] != partition}
            entry = self._cache.pop(partition, None)
        if entry is not None:
            _log.info("unloaded_partition", partition=partition,
                      transactions=len(entry.metadata_per_transactional_id))

    def shutdown(self) -> None:
        self._shutting_down = True
        self.scheduler.shutdown()
        with self._state_lock:
            self._loading.clear()
            self._cache.clear()


def listings_by_state(metadatas: Iterable[TransactionMetadata]) -> dict[str, int]:
    """Transactions per state name, every state present (the metrics gauge)."""
    counts = {s.state_name: 0 for s in TransactionState}
    for md in metadatas:
        counts[md.state.state_name] += 1
    return counts
