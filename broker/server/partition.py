"""Partition: one partition replica on one broker, as leader or follower.

Leader side: leader epoch, assigned replicas, ISR, the leader's view of every follower
(``FollowerState``: LEO, log start, last fetch and last caught-up times), the high watermark
(HW = min LEO over the ISR, not advanced while the ISR is below ``min.insync.replicas``), ISR
shrink for followers lagging more than ``replica.lag.time.max.ms`` and ISR expansion when a
follower catches up, and ``check_enough_replicas_reach_offset`` for acks=all.

Locking: ``lock`` (an RLock, Kafka's ``leaderIsrUpdateLock``; it is the ``UnifiedLog``'s lock, so
retention and compaction exclude appends and reads) guards the role, epochs, ISR, the follower
states and the ``UnifiedLog``. It is never held while a purgatory is triggered: methods return
whether the HW moved and the caller (ReplicaManager) triggers ``check_and_complete`` after the
lock is released. ``alter_isr`` on the metadata store is called with the lock held (the store
takes only its own short lock). Plain int reads (HW, LEO, leader flag) are done without the lock
where a stale value only delays a completion check that the next trigger repeats.

Differences from Kafka on purpose: ISR changes are committed synchronously through the shared
metadata store (no pending AlterPartition, so the "maximal ISR" is the ISR); caught-up
non-members do not hold back the HW.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import structlog

from kafka_emu.broker.server.fetch_params import ISOLATION_LOG_END, ISOLATION_TXN_COMMITTED
from kafka_emu.broker.storage.unified_log import UNDEFINED_EPOCH, UnifiedLog, LogAppendInfo
from kafka_emu.broker.storage.log_segment import iter_headers
from kafka_emu.broker.storage.producer_state import AppendOrigin, VerificationGuard
from kafka_emu.broker.storage.record_batch import new_tuple
from kafka_emu.broker.storage.transaction_index import AbortedTxn
from kafka_emu.common.errors import Errors, KafkaError

if TYPE_CHECKING:
    from kafka_emu.broker.storage.log_config import LogConfig
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.broker.server.partition_state import PartitionState
    from kafka_emu.broker.server.stats import BrokerTopicStats
    from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.partition")
_NONE = Errors.NONE   # read once: an Enum member read costs about a function call (3.11)

@dataclass
class FollowerState:
    broker_id: int
    log_end_offset: int = -1
    log_start_offset: int = -1
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0
    last_fetch_leader_leo: int = -1
    prev_fetch_time_ms: int = 0


class LogReadResult(NamedTuple):
    records: bytes
    error: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    diverging_epoch: tuple[int, int] | None = None
    leader_id: int = -1
    leader_epoch: int = -1
    aborted_transactions: tuple[AbortedTxn, ...] | None = None   # read_committed reads only


def _end_offset_of(records: bytes) -> int:
    """One past the last offset of the batches in ``records``."""
    end = -1
    for h in iter_headers(records):
        end = h.last_offset + 1
    return end


def _error_read(code: int, leader_id: int = -1, leader_epoch: int = -1) -> LogReadResult:
    return LogReadResult(b"", code, -1, -1, -1, -1, None, leader_id, leader_epoch)


class Partition:
    def __init__(self, topic: str, partition: int, topic_id: uuid.UUID | None, broker_id: int,
                 log: UnifiedLog, metadata: "MetadataStore | None", time: "Time",
                 stats: "BrokerTopicStats", replica_lag_time_max_ms: int = 30000) -> None:
        self.topic = topic
        self.partition = partition
        self.tp = (topic, partition)
        self.topic_id = topic_id
        self.broker_id = broker_id
        self.log = log
        self.metadata = metadata
        self.time = time
        self.stats = stats
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.lock = log.lock
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.followers: dict[int, FollowerState] = {}
        self.is_leader = False
        self.online = True
        # its log directory failed (Kafka's HostedPartition.Offline): KAFKA_STORAGE_ERROR from now on
        self.log_dir_offline = False

    # ------------------------------------------------------------------ role changes
    @property
    def effective_min_isr(self) -> int:
        """``min.insync.replicas`` from the log's config (as Kafka's ``Partition`` reads
        ``leaderLog.config.minInSyncReplicas``: a config change applies at once)."""
        return min(self.log.config.min_insync_replicas, max(len(self.replicas), 1))

    def make_leader(self, state: "PartitionState") -> tuple[bool, bool]:
        """Apply a leader state; returns (became leader now, HW increased)."""
        with self.lock:
            now = self.time.milliseconds()
            new_leader = not self.is_leader or state.leader_epoch != self.leader_epoch
            if not new_leader and state.partition_epoch < self.partition_epoch:
                return False, False  # older than an ISR change this leader already applied
            self.replicas = state.replicas
            self.isr = state.isr
            self.partition_epoch = state.partition_epoch
            self.topic_id = state.topic_id
            self.online = True
            if new_leader:
                self.leader_epoch = state.leader_epoch
                self.leader_id = self.broker_id
                self.is_leader = True
                self.log.assign_epoch_start_offset(state.leader_epoch)
                leo = self.log.log_end_offset
                self.followers = {
                    r: FollowerState(r, last_caught_up_time_ms=now if r in self.isr else 0,
                                     last_fetch_leader_leo=leo)
                    for r in self.replicas if r != self.broker_id}
            else:   # same leadership, new replica set (a reassignment) or ISR
                for r in self.replicas:
                    if r != self.broker_id and r not in self.followers:
                        self.followers[r] = FollowerState(r)
                for r in [r for r in self.followers if r not in self.replicas]:
                    del self.followers[r]
            hw_moved = self._maybe_increment_leader_hw()
            return new_leader, hw_moved

    def make_follower(self, state: "PartitionState") -> bool:
        """Apply a follower state; true if the leader or epoch changed (fetcher must restart)."""
        with self.lock:
            changed = self.is_leader or self.leader_epoch != state.leader_epoch or \
                self.leader_id != state.leader
            self.is_leader = False
            self.online = True
            self.leader_id = state.leader
            self.leader_epoch = state.leader_epoch
            self.partition_epoch = state.partition_epoch
            self.replicas = state.replicas
            self.isr = state.isr
            self.topic_id = state.topic_id
            self.followers = {}
            return changed

    def go_offline(self) -> None:
        """Crash or deletion: this replica no longer serves anything."""
        with self.lock:
            self.is_leader = False
            self.online = False
            self.leader_id = -1

    def mark_log_dir_offline(self) -> None:
        """Its log directory failed: no role change brings it back; appends and reads answer
        KAFKA_STORAGE_ERROR (Kafka's ``markPartitionOffline``)."""
        with self.lock:
            self.log_dir_offline = True
            self.is_leader = False
            self.online = False

    # ------------------------------------------------------------------ leader appends
    def append_records_to_leader(self, data: bytes, required_acks: int, single_batch: bool = True,
                                 origin: AppendOrigin = AppendOrigin.CLIENT,
                                 verification_guard: VerificationGuard | None = None
                                 ) -> tuple[LogAppendInfo, bool]:
        with self.lock:
            if not self.is_leader:
                if self.log_dir_offline:
                    raise KafkaError(Errors.KAFKA_STORAGE_ERROR,
                                     f"the log directory of {self.topic}-{self.partition} is offline")
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER,
                                 f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition}")
            if required_acks == -1 and len(self.isr) < self.effective_min_isr:
                raise KafkaError(Errors.NOT_ENOUGH_REPLICAS,
                                 f"ISR {list(self.isr)} is smaller than min.insync.replicas "
                                 f"{self.effective_min_isr}")
            info = self.log.append_as_leader(data, self.leader_epoch, single_batch, origin=origin,
                                             verification_guard=verification_guard)
            if info.duplicate:
                return info, False
            return info, self._maybe_increment_leader_hw()

    def maybe_start_transaction_verification(self, producer_id: int, producer_epoch: int,
                                             supports_epoch_bump: bool = False) -> VerificationGuard | None:
        """Kafka's ``Partition.maybeStartTransactionVerification``: None when the producer's
        transaction is open here already, else the guard its append must carry."""
        with self.lock:
            if not self.is_leader:
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER,
                                 f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition}")
            return self.log.maybe_start_transaction_verification(producer_id, producer_epoch, supports_epoch_bump)

    def _maybe_increment_leader_hw(self) -> bool:
        """Lock held. HW := min LEO over the ISR; frozen while under min ISR (KAFKA-15583).

        The ISR's followers are read first and the first one whose LEO is not past the HW ends
        the check: on a leader append that is every time (the followers have not fetched it
        yet), so the append pays for one follower, not for the ISR and the min-ISR rule."""
        log = self.log
        hw = log.high_watermark
        candidate = log.log_end_offset
        if candidate <= hw or not self.is_leader:
            return False
        followers = self.followers
        me = self.broker_id
        for r in self.isr:
            if r != me:
                st = followers.get(r)
                if st is None or st.log_end_offset <= hw:   # no fetch yet, or not past the HW
                    return False
                if st.log_end_offset < candidate:
                    candidate = st.log_end_offset
        if len(self.isr) < self.effective_min_isr:
            return False
        return log.maybe_increment_high_watermark(candidate)

    def update_log_config(self, config: "LogConfig") -> bool:
        """New topic configs for the log (Kafka's ``UnifiedLog.updateConfig``); returns whether
        the HW moved (a lower ``min.insync.replicas`` may unfreeze it)."""
        with self.lock:
            self.log.update_config(config)
            return self._maybe_increment_leader_hw()

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]:
        """(done, error) for a DelayedProduce waiting for ``required_offset``."""
        if not self.is_leader:
            return False, Errors.KAFKA_STORAGE_ERROR if self.log_dir_offline else Errors.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if self.effective_min_isr <= len(self.isr):
                return True, Errors.NONE
            return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, Errors.NONE

    # ------------------------------------------------------------------ OffsetForLeaderEpoch
    def last_offset_for_leader_epoch(self, current_leader_epoch: int, leader_epoch: int) -> tuple[int, int, int]:
        """Kafka's ``lastOffsetForLeaderEpoch`` (fetchOnlyFromLeader, as 4.0's broker always asks):
        (error, epoch, end offset). The caller's ``current_leader_epoch`` (-1: unchecked) older or
        newer than this replica's answers FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; a follower
        NOT_LEADER_OR_FOLLOWER; an epoch the cache cannot place NONE with (-1, -1)."""
        with self.lock:
            if current_leader_epoch >= 0 and self.online:
                if current_leader_epoch < self.leader_epoch:
                    return Errors.FENCED_LEADER_EPOCH, UNDEFINED_EPOCH, -1
                if current_leader_epoch > self.leader_epoch:
                    return Errors.UNKNOWN_LEADER_EPOCH, UNDEFINED_EPOCH, -1
            if not self.online or not self.is_leader:
                return Errors.NOT_LEADER_OR_FOLLOWER, UNDEFINED_EPOCH, -1
            epoch, end_offset = self.log.end_offset_for_epoch(leader_epoch)
            return Errors.NONE, epoch, end_offset

    # ------------------------------------------------------------------ DeleteRecords
    def delete_records_on_leader(self, offset: int) -> tuple[int, int]:
        """Kafka's ``deleteRecordsOnLeader``: raise the log start offset to ``offset`` (-1: the
        HW); returns (requested offset, low watermark). KafkaError NOT_LEADER_OR_FOLLOWER,
        POLICY_VIOLATION (a ``cleanup.policy`` without ``delete``) or OFFSET_OUT_OF_RANGE
        (negative, or above the HW)."""
        with self.lock:
            if not self.is_leader or not self.online:
                raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER,
                                 f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition}")
            log = self.log
            if not log.config.delete:
                raise KafkaError(Errors.POLICY_VIOLATION,
                                 f"Records of partition {self.topic}-{self.partition} can not be deleted "
                                 f"due to the configured policy")
            requested = log.high_watermark if offset == -1 else offset
            if requested < 0:
                raise KafkaError(Errors.OFFSET_OUT_OF_RANGE,
                                 f"The offset {offset} for partition {self.topic}-{self.partition} is "
                                 f"not valid")
            if requested > log.high_watermark:
                raise KafkaError(Errors.OFFSET_OUT_OF_RANGE,
                                 f"Cannot increment the log start offset to {requested} of partition "
                                 f"{self.topic}-{self.partition} since it is larger than the high "
                                 f"watermark {log.high_watermark}")
            log.maybe_increment_log_start_offset(requested)
            return requested, self._low_watermark()

    def low_watermark_if_leader(self) -> int | None:
        """Kafka's ``lowWatermarkIfLeader``: the smallest log start offset over this leader and
        its followers on live brokers (-1 for one that has not fetched yet); None if not leader."""
        with self.lock:
            if not self.is_leader or not self.online:
                return None
            return self._low_watermark()

    def _low_watermark(self) -> int:
        low = self.log.log_start_offset
        for st in self.followers.values():
            if st.log_start_offset < low and (self.metadata is None or self.metadata.is_live(st.broker_id)):
                low = st.log_start_offset
        return low

    # ------------------------------------------------------------------ follower fetch state
    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int, log_start_offset: int,
                                    fetch_time_ms: int, leader_leo: int) -> bool:
        """A follower fetched at ``fetch_offset``; returns whether the HW or the low watermark
        (DeleteRecords) moved, i.e. whether delayed operations may complete."""
        with self.lock:
            st = self.followers.get(replica_id)
            if st is None or not self.is_leader:
                return False
            old_leo = st.log_end_offset
            low_watermark_moved = log_start_offset > st.log_start_offset
            if fetch_offset >= leader_leo:
                st.last_caught_up_time_ms = max(st.last_caught_up_time_ms, fetch_time_ms)
            elif fetch_offset >= st.last_fetch_leader_leo:
                st.last_caught_up_time_ms = max(st.last_caught_up_time_ms, st.last_fetch_time_ms)
            st.log_end_offset = fetch_offset
            st.log_start_offset = log_start_offset
            st.prev_fetch_time_ms = st.last_fetch_time_ms
            st.last_fetch_time_ms = fetch_time_ms
            st.last_fetch_leader_leo = max(st.last_fetch_leader_leo, leader_leo)
            hw_moved = False
            if replica_id not in self.isr:
                hw_moved = self._maybe_expand_isr(st)
            if old_leo != fetch_offset:
                hw_moved = self._maybe_increment_leader_hw() or hw_moved
            return hw_moved or low_watermark_moved

    def _maybe_expand_isr(self, st: FollowerState) -> bool:
        leo = st.log_end_offset
        if leo < self.log.high_watermark or leo < self.log.epoch_start_offset(self.leader_epoch):
            return False
        if self.metadata is not None and not self.metadata.is_live(st.broker_id):
            return False
        new_isr = tuple(sorted(set(self.isr) | {st.broker_id}, key=self.replicas.index))
        if not self._alter_isr(new_isr):
            return False
        self.stats.record_isr_expand()
        _log.info("isr_expanded", broker_id=self.broker_id, topic=self.topic,
                  partition=self.partition, isr=list(new_isr), follower=st.broker_id)
        return self._maybe_increment_leader_hw()

    def _alter_isr(self, new_isr: tuple[int, ...]) -> bool:
        if self.metadata is None:
            self.isr = new_isr
            self.partition_epoch += 1
            return True
        new = self.metadata.alter_isr(self.topic, self.partition, self.broker_id, self.leader_epoch, new_isr)
        if new is None:
            return False
        self.isr = new.isr
        self.partition_epoch = new.partition_epoch
        return True

    def maybe_shrink_isr(self) -> bool:
        """Drop ISR followers not caught up within replica.lag.time.max.ms; true if HW moved."""
        with self.lock:
            if not self.is_leader:
                return False
            now = self.time.milliseconds()
            leo = self.log.log_end_offset
            out = []
            for r in self.isr:
                if r == self.broker_id:
                    continue
                st = self.followers.get(r)
                if st is None:
                    out.append(r)
                elif st.log_end_offset != leo and now - st.last_caught_up_time_ms > self.replica_lag_time_max_ms:
                    out.append(r)
            if not out:
                return False
            new_isr = tuple(r for r in self.isr if r not in out)
            if not self._alter_isr(new_isr):
                return False
            self.stats.record_isr_shrink()
            _log.info("isr_shrunk", broker_id=self.broker_id, topic=self.topic, partition=self.partition,
                      isr=list(new_isr), out_of_sync=out, leo=leo, hw=self.log.high_watermark)
            return self._maybe_increment_leader_hw()

    def is_under_replicated(self) -> bool:
        return self.is_leader and len(self.isr) < len(self.replicas)

    def is_under_min_isr(self) -> bool:
        return self.is_leader and len(self.isr) < self.effective_min_isr

    # ------------------------------------------------------------------ reads
    def read_records(self, fetch_offset: int, max_bytes: int, isolation: int,
                     current_leader_epoch: int = -1, last_fetched_epoch: int = -1,
                     min_one: bool = True, fetch_only_leader: bool = True) -> LogReadResult:
        with self.lock:
            if current_leader_epoch >= 0 and self.online:
                if current_leader_epoch < self.leader_epoch:
                    return _error_read(Errors.FENCED_LEADER_EPOCH, self.leader_id, self.leader_epoch)
                if current_leader_epoch > self.leader_epoch:
                    return _error_read(Errors.UNKNOWN_LEADER_EPOCH, self.leader_id, self.leader_epoch)
            if not self.online or (fetch_only_leader and not self.is_leader):
                if self.log_dir_offline:
                    return _error_read(Errors.KAFKA_STORAGE_ERROR)
                return _error_read(Errors.NOT_LEADER_OR_FOLLOWER, self.leader_id, self.leader_epoch)
            log = self.log
            hw = log.high_watermark
            leo = log.log_end_offset
            lso = log.last_stable_offset
            if last_fetched_epoch >= 0 and isolation == ISOLATION_LOG_END:
                epoch, end = log.end_offset_for_epoch(last_fetched_epoch)
                if epoch < last_fetched_epoch or end < fetch_offset or epoch == UNDEFINED_EPOCH:
                    return LogReadResult(b"", Errors.NONE, hw, lso, log.log_start_offset, leo,
                                         (epoch, end), self.leader_id, self.leader_epoch)
            if fetch_offset < log.log_start_offset or fetch_offset > leo:
                return LogReadResult(b"", Errors.OFFSET_OUT_OF_RANGE, hw, lso, log.log_start_offset, leo,
                                     None, self.leader_id, self.leader_epoch)
            limit = self.end_offset_for(isolation)
            records = log.read(fetch_offset, max_bytes, limit, min_one) if fetch_offset < limit else b""
            aborted = None
            if isolation == ISOLATION_TXN_COMMITTED:
                aborted = tuple(log.collect_aborted_transactions(fetch_offset, _end_offset_of(records))) \
                    if records else ()
            # the read every fetch makes: built as a tuple, past the NamedTuple's Python __new__
            return new_tuple(LogReadResult, (records, _NONE, hw, lso, log.log_start_offset, leo, None,
                                             self.leader_id, self.leader_epoch, aborted))

    def end_offset_for(self, isolation: int) -> int:
        """The offset reads stop at: LEO for followers, HW for read_uncommitted, LSO for
        read_committed (an int read each; callers may hold no lock)."""
        log = self.log
        if isolation == ISOLATION_LOG_END:
            return log.log_end_offset
        if isolation == ISOLATION_TXN_COMMITTED:
            return log.last_stable_offset
        return log.high_watermark

    # ------------------------------------------------------------------ follower side
    def append_records_to_follower(self, data: bytes, leader_hw: int,
                                   leader_log_start_offset: int = -1) -> tuple[int, bool]:
        """Append replicated batches, take min(leader HW, LEO) as the HW and the leader's log
        start offset (Kafka's ``processPartitionData``); returns (batches, HW moved)."""
        with self.lock:
            n = self.log.append_as_follower(data) if data else 0
            moved = self.log.update_high_watermark(leader_hw) if leader_hw >= 0 else False
            if leader_log_start_offset >= 0:
                self.log.maybe_increment_log_start_offset(leader_log_start_offset)
            return n, moved

    def truncate_fully_and_start_at(self, offset: int) -> None:
        with self.lock:
            self.log.truncate_fully_and_start_at(offset)

    def truncate_to(self, offset: int) -> bool:
        with self.lock:
            return self.log.truncate_to(offset)

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower(of {self.leader_id})"
        return (f"Partition({self.topic}-{self.partition} on {self.broker_id}: {role}, "
                f"epoch={self.leader_epoch}, isr={list(self.isr)}, {self.log})")
