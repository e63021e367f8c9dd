"""TransactionCoordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
DescribeTransactions and ListTransactions (Kafka's ``kafka.coordinator.transaction.TransactionCoordinator``).

Every handler looks the transactional id up in the ``TransactionStateManager``, decides under the
metadata's lock (``prepare_*`` sets the pending state), appends the transition to
``__transaction_state`` and answers from the append's callback. EndTxn answers the client as soon
as PrepareCommit/PrepareAbort is in the log, then hands the transaction to the
``TransactionMarkerChannelManager``, which writes the markers and the Complete* record.
InitProducerId during an Ongoing transaction fences the current epoch (PrepareEpochFence), aborts
the transaction as the coordinator itself and answers CONCURRENT_TRANSACTIONS so the producer
retries and then gets the bumped epoch.

Timers: ``startup(scheduler)`` registers Kafka's two periodic tasks on the broker's scheduler
(``transaction-abort`` every ``transaction.abort.timed.out.transaction.cleanup.interval.ms``,
``transactionalId-expiration`` every ``transaction.remove.expired.transaction.cleanup.interval.ms``);
on a MockTime they run when the test advances the clock.

Transaction version 2 (KIP-890 part 2) is chosen per request, as Kafka does: EndTxn v5 and the
implicit adds of Produce v12 / TxnOffsetCommit v5 take the TV2 path whatever level is finalized
(the level only steers clients, through ApiVersions); the coordinator's own aborts (fencing by
InitProducerId, timeouts) follow the finalized level (``TransactionConfig.transaction_version_level``,
Kafka's ``txnManager.transactionVersionLevel()``). Under level 2 the fence itself leaves the epoch
and the TV2 abort bumps it, one bump as under TV1 (Kafka 4.0 bumped twice, overflowing an epoch of
32766; later Kafka bumps once, which is what is done here).

Deliberate differences from Kafka:
* no authorisation (the emulator has no ACLs);
* callbacks run after the metadata lock is released (``GroupLock.defer``).

Locking: see ``TransactionStateManager``; handlers hold one metadata lock at a time and never
call the log or the marker channel while holding it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

import structlog

from kafka_emu.common import errors
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.group_metadata_manager import InlineScheduler, Scheduler
from kafka_emu.coordinator.coordinator_log import CoordinatorLog
from kafka_emu.coordinator.transaction.config import TransactionConfig
from kafka_emu.coordinator.transaction.transaction_marker_channel_manager import (
    TransactionMarkerChannelManager, TxnMarkerSender,
)
from kafka_emu.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, SHORT_MAX, IllegalTransactionStateError, TransactionMetadata,
    TransactionState, TxnTransitMetadata, is_epoch_exhausted, supports_epoch_bump,
)
from kafka_emu.coordinator.transaction.transaction_state_manager import (
    CoordinatorEpochAndTxnMetadata, TransactionalIdAndProducerIdEpoch, TransactionListing, TransactionStateManager, listings_by_state,
)
from kafka_emu.timer.time import Time

_log = structlog.get_logger("coordinator.transaction_coordinator")

S = TransactionState
TopicPartition = tuple[str, int]
ErrorCallback = Callable[[int], None]
EndTxnCallback = Callable[[int, int, int], None]   # error, producer id, producer epoch
TV_2 = 2   # the client transaction version of EndTxn v5, Produce v12 and TxnOffsetCommit v5


class PeriodicScheduler(Protocol):
    """The broker's scheduler (``kafka_emu.timer.scheduler.KafkaScheduler``)."""

    def schedule(self, name: str, fn: Callable[[], None], period_ms: int, delay_ms: int | None = None) -> None:
        ...


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    producer_id: int
    producer_epoch: int
    error: int


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """One DescribeTransactions entry."""

    transactional_id: str
    error: int
    state: str = ""
    timeout_ms: int = 0
    start_time_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    topic_partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class TransactionCoordinatorSnapshot:
    """The transaction coordinator's gauges: partition load time (Kafka's ``partition-load-time-max``
    / ``-avg``), the marker channel's queue, transactions per state."""

    transactions_by_state: Mapping[str, int]
    partitions_owned: int
    partition_load_time_ms_max: int
    partition_load_time_ms_total: int
    partition_loads: int
    marker_queue_size: int
    transactions_pending_completion: int
    markers_sent: int


def _init_error(error: int) -> InitProducerIdResult:
    return InitProducerIdResult(NO_PRODUCER_ID, NO_PRODUCER_EPOCH, error)


class TransactionCoordinator:
    def __init__(self, broker_id: int, config: TransactionConfig, state_manager: TransactionStateManager,
                 marker_channel: TransactionMarkerChannelManager, generate_producer_id: Callable[[], int],
                 time: Time) -> None:
        self.broker_id = broker_id
        self.config = config
        self.txn_manager = state_manager
        self.marker_channel = marker_channel
        self.generate_producer_id = generate_producer_id
        self.time = time
        self._active = False

    @classmethod
    def create(cls, broker_id: int, config: Mapping[str, Any] | None, log: CoordinatorLog,
               sender: TxnMarkerSender, generate_producer_id: Callable[[], int], time: Time | None = None,
               scheduler: Scheduler | InlineScheduler | None = None,
               marker_retry_backoff_ms: int = 100) -> "TransactionCoordinator":
        time = time or Time.SYSTEM
        cfg = TransactionConfig.from_mapping(config)
        manager = TransactionStateManager(broker_id, cfg, log, time, scheduler)
        channel = TransactionMarkerChannelManager(broker_id, manager, sender, time, marker_retry_backoff_ms)
        return cls(broker_id, cfg, manager, channel, generate_producer_id, time)

    # ------------------------------------------------------------------ lifecycle
    def startup(self, scheduler: PeriodicScheduler | None = None, start_marker_thread: bool = True) -> None:
        _log.info("transaction_coordinator_starting", broker_id=self.broker_id)
        if scheduler is not None:
            scheduler.schedule("transaction-abort", self.abort_timed_out_transactions,
                               self.config.abort_timed_out_transactions_interval_ms)
            scheduler.schedule("transactionalId-expiration", self.txn_manager.remove_expired_transactional_ids,
                               self.config.remove_expired_transactional_ids_interval_ms)
        if start_marker_thread:
            self.marker_channel.start()
        self._active = True

    def shutdown(self) -> None:
        _log.info("transaction_coordinator_shutting_down", broker_id=self.broker_id)
        self._active = False
        self.marker_channel.shutdown()
        self.txn_manager.shutdown()

    def is_active(self) -> bool:
        return self._active

    def partition_for(self, transactional_id: str) -> int:
        return self.txn_manager.partition_for(transactional_id)

    def on_loading(self, txn_partition: int, coordinator_epoch: int) -> None:
        """This broker leads ``__transaction_state-<txn_partition>`` but cannot read it yet (its
        HW trails what the previous leader had); ``on_elected`` follows once it can. Meanwhile the
        partition's ids answer COORDINATOR_LOAD_IN_PROGRESS, as from Kafka's coordinator, which
        starts loading the moment it becomes leader."""
        self.txn_manager.mark_loading(txn_partition, coordinator_epoch)

    def on_elected(self, txn_partition: int, coordinator_epoch: int) -> None:
        """This broker leads ``__transaction_state-<txn_partition>``: load it."""
        _log.info("elected_transaction_coordinator", broker_id=self.broker_id, partition=txn_partition,
                  coordinator_epoch=coordinator_epoch)
        self.txn_manager.load_transactions_for_txn_topic_partition(
            txn_partition, coordinator_epoch, self.marker_channel.add_txn_markers_to_send)

    def on_resigned(self, txn_partition: int) -> None:
        _log.info("resigned_transaction_coordinator", broker_id=self.broker_id, partition=txn_partition)
        self.txn_manager.remove_transactions_for_txn_topic_partition(txn_partition)
        self.marker_channel.remove_markers_for_txn_topic_partition(txn_partition)

    # ------------------------------------------------------------------ InitProducerId
    def handle_init_producer_id(self, transactional_id: str | None, transaction_timeout_ms: int,
                                expected_producer_id_and_epoch: tuple[int, int] | None,
                                callback: Callable[[InitProducerIdResult], None]) -> None:
        if transactional_id is None:
            callback(InitProducerIdResult(self.generate_producer_id(), 0, Errors.NONE))
            return
        if not transactional_id:
            callback(_init_error(Errors.INVALID_REQUEST))
            return
        if not self.txn_manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            callback(_init_error(Errors.INVALID_TRANSACTION_TIMEOUT))
            return
        error, em = self.txn_manager.get_transaction_state(transactional_id)
        if error == Errors.NONE and em is None:
            created = TransactionMetadata(transactional_id, self.generate_producer_id(), NO_PRODUCER_ID,
                                          NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH,
                                          transaction_timeout_ms, S.EMPTY, set(), -1, self.time.milliseconds())
            error, em = self.txn_manager.put_transaction_state_if_not_exists(created)
        if error != Errors.NONE or em is None:
            callback(_init_error(error))
            return
        coordinator_epoch, md = em.coordinator_epoch, em.transaction_metadata
        with md.lock:
            error, transit = self._prepare_init_producer_id_transit(transactional_id, transaction_timeout_ms,
                                                                    md, expected_producer_id_and_epoch)
        if transit is None:
            callback(_init_error(error))
            return
        if transit.txn_state is S.PREPARE_EPOCH_FENCE:
            def after_abort(abort_error: int, _producer_id: int, _producer_epoch: int) -> None:
                callback(_init_error(abort_error if abort_error != Errors.NONE else Errors.CONCURRENT_TRANSACTIONS))

            # not from a client: the abort follows the cluster's finalized transaction version
            self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False,
                                  False, self.config.transaction_version_level, after_abort)
            return

        def on_append(append_error: int) -> None:
            if append_error == Errors.NONE:
                callback(InitProducerIdResult(transit.producer_id, transit.producer_epoch, Errors.NONE))
            else:
                callback(_init_error(append_error))

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, on_append)

    def _prepare_init_producer_id_transit(self, transactional_id: str, timeout_ms: int, md: TransactionMetadata,
                                          expected: tuple[int, int] | None) -> tuple[int, TxnTransitMetadata | None]:
        def is_valid_producer_id(pid: int, epoch: int) -> bool:
            # -1: the metadata was just created (a producer recovering from UNKNOWN_PRODUCER_ID);
            # the previous id with an exhausted epoch: a retry after a rotation it never heard of
            return (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
                    or (pid == md.previous_producer_id and is_epoch_exhausted(epoch)))

        if md.pending_transition_in_progress:
            return Errors.CONCURRENT_TRANSACTIONS, None
        if expected is not None and not is_valid_producer_id(*expected):
            return Errors.PRODUCER_FENCED, None
        state = md.state
        if state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return Errors.CONCURRENT_TRANSACTIONS, None
        now = self.time.milliseconds()
        if state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if md.is_producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                return Errors.NONE, md.prepare_producer_id_rotation(self.generate_producer_id(), timeout_ms, now,
                                                                    expected is not None)
            return md.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)
        if state is S.ONGOING:
            # fence the current producer and abort; the client retries after CONCURRENT_TRANSACTIONS
            return Errors.NONE, md.prepare_fence_producer_epoch(self._fence_bumps_epoch())
        raise IllegalTransactionStateError(
            f"Found transactionalId {transactional_id} with state {state.state_name}. This is illegal as "
            f"we should never have transitioned to this state.")

    def _existing_transaction(self, transactional_id: str | None) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        """The metadata of a transactional id the request expects to exist: INVALID_REQUEST for
        a null or empty id, the lookup's error, INVALID_PRODUCER_ID_MAPPING for an unknown id."""
        if not transactional_id:
            return Errors.INVALID_REQUEST, None
        error, em = self.txn_manager.get_transaction_state(transactional_id)
        if error == Errors.NONE and em is None:
            error = Errors.INVALID_PRODUCER_ID_MAPPING
        return error, em

    # ------------------------------------------------------------------ AddPartitionsToTxn
    def handle_add_partitions_to_transaction(self, transactional_id: str | None, producer_id: int,
                                             producer_epoch: int, partitions: set[TopicPartition],
                                             callback: ErrorCallback, client_transaction_version: int = 0) -> None:
        """AddPartitionsToTxn (``client_transaction_version`` 0), or the implicit add of
        transaction version 2 (2: Produce v12 / TxnOffsetCommit v5 through the partition leader,
        Kafka's AddPartitionsToTxn v4+ with ``VerifyOnly=false``)."""
        error, em = self._existing_transaction(transactional_id)
        if em is None:
            callback(error)
            return
        md = em.transaction_metadata
        transit: TxnTransitMetadata | None = None
        with md.lock:
            if md.pending_transition_in_progress:
                error = Errors.CONCURRENT_TRANSACTIONS
            elif md.producer_id != producer_id:
                error = Errors.INVALID_PRODUCER_ID_MAPPING
            elif md.producer_epoch != producer_epoch:
                error = Errors.PRODUCER_FENCED
            elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                error = Errors.CONCURRENT_TRANSACTIONS
            elif md.state is S.ONGOING and partitions <= md.topic_partitions:
                error = Errors.NONE   # nothing new: no write
            else:
                transit = md.prepare_add_partitions(partitions, self.time.milliseconds(), client_transaction_version)
        if error != Errors.NONE or transit is None:
            callback(error)
            return
        self.txn_manager.append_transaction_to_log(transactional_id, em.coordinator_epoch, transit, callback)

    def handle_verify_partitions_in_transaction(self, transactional_id: str | None, producer_id: int,
                                                producer_epoch: int, partitions: set[TopicPartition]
                                                ) -> dict[TopicPartition, int]:
        """KIP-890 part 1 verification (AddPartitionsToTxn ``VerifyOnly``): NONE per partition in
        the producer's ongoing transaction, TRANSACTION_ABORTABLE for the others."""
        def all_(code: int) -> dict[TopicPartition, int]:
            return {tp: code for tp in partitions}

        error, em = self._existing_transaction(transactional_id)
        if em is None:
            return all_(error)
        md = em.transaction_metadata
        with md.lock:
            if md.producer_id != producer_id:
                return all_(Errors.INVALID_PRODUCER_ID_MAPPING)
            if md.producer_epoch != producer_epoch:
                return all_(Errors.PRODUCER_FENCED)
            if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                return all_(Errors.CONCURRENT_TRANSACTIONS)
            return {tp: Errors.NONE if tp in md.topic_partitions else Errors.TRANSACTION_ABORTABLE
                    for tp in partitions}

    # ------------------------------------------------------------------ EndTxn
    def handle_end_transaction(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                               commit: bool, callback: EndTxnCallback, client_transaction_version: int = 0) -> None:
        """EndTxn; ``callback(error, producer_id, producer_epoch)`` gets the producer id and epoch
        the client continues with (transaction version 2: bumped; -1, -1 with an error).
        ``client_transaction_version``: 2 for EndTxn v5, else 0 (Kafka's
        ``TransactionVersion.transactionVersionForEndTxn``), whatever level is finalized."""
        self._end_transaction(transactional_id, producer_id, producer_epoch, commit, True,
                              client_transaction_version, callback)

    def _end_transaction(self, transactional_id: str | None, producer_id: int, producer_epoch: int,
                         commit: bool, is_from_client: bool, client_transaction_version: int,
                         callback: EndTxnCallback) -> None:
        """Kafka's ``endTransactionWithTV1`` and, for transaction version 2, ``endTransaction``:
        decide under the lock, append PrepareCommit/PrepareAbort, answer, send the markers."""
        error, em = self._existing_transaction(transactional_id)
        if em is None:
            callback(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
            return
        md, coordinator_epoch = em.transaction_metadata, em.coordinator_epoch
        with md.lock:
            is_epoch_fence = md.pending_state is S.PREPARE_EPOCH_FENCE
            current = (md.producer_id, md.producer_epoch)
            if supports_epoch_bump(client_transaction_version):
                error, transit = self._prepare_end_transaction_tv2(md, producer_id, producer_epoch, commit,
                                                                   is_from_client)
            else:
                error, transit = self._prepare_end_transaction_tv1(md, producer_id, producer_epoch, commit,
                                                                   is_from_client)
        if transit is None:
            # a retry of a completed EndTxn answers the current producer id and epoch
            callback(error, *(current if error == Errors.NONE else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)))
            return

        def send_txn_markers(append_error: int) -> None:
            if append_error != Errors.NONE:
                _log.info("end_txn_append_failed", transactional_id=transactional_id,
                          error=errors.name(append_error))
                if is_epoch_fence:
                    err, current_em = self.txn_manager.get_transaction_state(transactional_id)
                    if current_em is not None and current_em.coordinator_epoch == coordinator_epoch:
                        # the next fence must not bump the (already bumped) epoch again
                        current_em.transaction_metadata.has_failed_epoch_fence = True
                callback(append_error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                return
            err, current_em = self.txn_manager.get_transaction_state(transactional_id)
            if err != Errors.NONE or current_em is None or current_em.coordinator_epoch != coordinator_epoch:
                callback(err if err != Errors.NONE else Errors.NOT_COORDINATOR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                return
            cur = current_em.transaction_metadata
            complete: TxnTransitMetadata | None = None
            with cur.lock:
                if cur.producer_id != transit.producer_id:
                    pre_send_error = Errors.INVALID_PRODUCER_ID_MAPPING
                elif cur.producer_epoch != transit.producer_epoch:
                    pre_send_error = Errors.PRODUCER_FENCED
                elif cur.pending_transition_in_progress:
                    pre_send_error = Errors.CONCURRENT_TRANSACTIONS
                elif cur.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
                    pre_send_error = Errors.NONE
                    complete = cur.prepare_complete(self.time.milliseconds())
                else:
                    pre_send_error = self._invalid_state(transactional_id, cur.state, commit)
            if complete is None:
                callback(pre_send_error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                return
            # the decision is in the log: answer now (with the producer id and epoch the transaction
            # completes with), write the markers in the background
            callback(Errors.NONE, complete.producer_id, complete.producer_epoch)
            self.marker_channel.add_txn_markers_to_send(coordinator_epoch, commit, cur, complete)

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, send_txn_markers)

    def _prepare_end_transaction_tv1(self, md: TransactionMetadata, producer_id: int, producer_epoch: int,
                                     commit: bool, is_from_client: bool) -> tuple[int, TxnTransitMetadata | None]:
        """Kafka's ``endTransactionWithTV1`` checks; the caller holds ``md.lock``."""
        state = md.state
        if md.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING, None
        # clients never bump the epoch: strict equality; the coordinator's own abort carries a fenced epoch
        if (is_from_client and producer_epoch != md.producer_epoch) or producer_epoch < md.producer_epoch:
            return Errors.PRODUCER_FENCED, None
        if md.pending_transition_in_progress and md.pending_state is not S.PREPARE_EPOCH_FENCE:
            return Errors.CONCURRENT_TRANSACTIONS, None
        if state is S.ONGOING:
            next_state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            if next_state is S.PREPARE_ABORT and md.pending_state is S.PREPARE_EPOCH_FENCE:
                self._adopt_fenced_epoch(md, producer_epoch)
            return Errors.NONE, md.prepare_abort_or_commit(next_state, 0, NO_PRODUCER_ID, self.time.milliseconds())
        return self._end_state_answer(md, commit, is_retry=True), None

    def _prepare_end_transaction_tv2(self, md: TransactionMetadata, producer_id: int, producer_epoch: int,
                                     commit: bool, is_from_client: bool) -> tuple[int, TxnTransitMetadata | None]:
        """Kafka's (transaction version 2) ``endTransaction`` checks; the caller holds ``md.lock``.

        Every EndTxn bumps the epoch, so the epoch alone tells a retry (the epoch before the
        bump, ``retry_on_epoch_bump``; or the last epoch of the previous producer id after an
        overflow, ``retry_on_overflow``) from the next EndTxn (the current epoch). A fence
        (InitProducerId or timeout during Ongoing) adopts the fence's epoch, then bumps it; a bump
        to the last epoch allocates the producer id the transaction completes with."""
        is_epoch_fence = md.pending_state is S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not is_epoch_fence and md.previous_producer_id == producer_id
                             and producer_epoch == SHORT_MAX - 1 and md.producer_epoch == 0)
        retry_on_epoch_bump = not is_epoch_fence and md.producer_epoch == producer_epoch + 1
        state = md.state
        if is_epoch_fence:
            valid_epoch = (not is_from_client or producer_epoch == md.producer_epoch) and producer_epoch >= md.producer_epoch
        elif state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_epoch_bump
        elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == md.producer_epoch
        else:
            valid_epoch = producer_epoch == md.producer_epoch
        if md.producer_id != producer_id and not retry_on_overflow:
            return Errors.INVALID_PRODUCER_ID_MAPPING, None
        if not valid_epoch:
            return Errors.PRODUCER_FENCED, None
        if md.pending_transition_in_progress and not is_epoch_fence:
            return Errors.CONCURRENT_TRANSACTIONS, None
        is_retry = retry_on_epoch_bump or retry_on_overflow
        if state is S.ONGOING:
            next_state, no_partition_added = (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT), False
        elif not commit and (state is S.EMPTY or (state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and not is_retry)):
            next_state, no_partition_added = S.PREPARE_ABORT, True   # an abort with no partition added
        else:
            return self._end_state_answer(md, commit, is_retry), None
        # the epoch this bump reaches is the last one: the transaction completes on a new producer id
        next_producer_id = self.generate_producer_id() if md.is_producer_epoch_exhausted else NO_PRODUCER_ID
        if next_state is S.PREPARE_ABORT and is_epoch_fence:
            self._adopt_fenced_epoch(md, producer_epoch)
        return Errors.NONE, md.prepare_abort_or_commit(next_state, TV_2, next_producer_id, self.time.milliseconds(),
                                                       no_partition_added)

    def _fence_bumps_epoch(self) -> bool:
        """Whether PrepareEpochFence bumps the epoch: not when the coordinator's abort that
        follows takes the transaction version 2 path, which bumps it."""
        return not supports_epoch_bump(self.config.transaction_version_level)

    @staticmethod
    def _adopt_fenced_epoch(md: TransactionMetadata, fenced_epoch: int) -> None:
        """Make way for PrepareAbort after PrepareEpochFence: the abort carries the fenced epoch."""
        md.pending_state = None
        md.producer_epoch = fenced_epoch
        md.last_producer_epoch = NO_PRODUCER_EPOCH

    def _end_state_answer(self, md: TransactionMetadata, commit: bool, is_retry: bool) -> int:
        """The answer (no write) to an EndTxn outside Ongoing: a retry of the completed result is
        NONE, of the result being completed CONCURRENT_TRANSACTIONS, anything else INVALID_TXN_STATE."""
        state = md.state
        if state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            return Errors.NONE if is_retry else self._invalid_state(md.transactional_id, state, commit)
        if state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            return Errors.CONCURRENT_TRANSACTIONS
        if state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            raise IllegalTransactionStateError(
                f"Found transactionalId {md.transactional_id} with state {state.state_name}. This is "
                f"illegal as we should never have transitioned to this state.")
        return self._invalid_state(md.transactional_id, state, commit)

    @staticmethod
    def _invalid_state(transactional_id: str, state: TransactionState, commit: bool) -> int:
        _log.debug("invalid_end_txn_state", transactional_id=transactional_id, state=state.state_name,
                   result="COMMIT" if commit else "ABORT")
        return Errors.INVALID_TXN_STATE

    # ------------------------------------------------------------------ timeouts
    def abort_timed_out_transactions(self) -> int:
        """Fence and abort every Ongoing transaction past its timeout (Kafka's
        ``abortTimedOutTransactions``); returns how many aborts were started."""
        started = 0
        for t in self.txn_manager.timed_out_transactions():
            error, em = self.txn_manager.get_transaction_state(t.transactional_id)
            if error != Errors.NONE or em is None:
                continue
            md = em.transaction_metadata
            with md.lock:
                if md.producer_id != t.producer_id or md.pending_transition_in_progress:
                    continue
                transit = md.prepare_fence_producer_epoch(self._fence_bumps_epoch())
            started += 1
            self._end_transaction(t.transactional_id, transit.producer_id, transit.producer_epoch, False, False,
                                  self.config.transaction_version_level, self._on_timeout_abort_complete(t))
        return started

    @staticmethod
    def _on_timeout_abort_complete(t: TransactionalIdAndProducerIdEpoch) -> EndTxnCallback:
        def done(error: int, _producer_id: int, _producer_epoch: int) -> None:
            if error == Errors.NONE:
                _log.info("timed_out_transaction_aborted", transactional_id=t.transactional_id,
                          producer_id=t.producer_id, producer_epoch=t.producer_epoch)
            else:
                _log.warning("timed_out_transaction_abort_failed", transactional_id=t.transactional_id,
                             error=errors.name(error))
        return done

    # ------------------------------------------------------------------ admin
    def handle_describe_transactions(self, transactional_id: str) -> TransactionDescription:
        if not self._active:
            return TransactionDescription(transactional_id, Errors.COORDINATOR_NOT_AVAILABLE)
        if not transactional_id:
            return TransactionDescription(transactional_id, Errors.INVALID_REQUEST)
        error, em = self.txn_manager.get_transaction_state(transactional_id)
        if error != Errors.NONE:
            return TransactionDescription(transactional_id, error)
        if em is None:
            return TransactionDescription(transactional_id, Errors.TRANSACTIONAL_ID_NOT_FOUND)
        md = em.transaction_metadata
        with md.lock:
            if md.state is S.DEAD:
                return TransactionDescription(transactional_id, Errors.TRANSACTIONAL_ID_NOT_FOUND)
            return TransactionDescription(transactional_id, Errors.NONE, md.state.state_name, md.txn_timeout_ms,
                                          md.txn_start_timestamp, md.producer_id, md.producer_epoch,
                                          tuple(sorted(md.topic_partitions)))

    def handle_list_transactions(self, producer_id_filters: set[int], state_filters: set[str],
                                 duration_filter_ms: int = -1, transactional_id_pattern: str | None = None
                                 ) -> tuple[int, list[str], list[TransactionListing]]:
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE, [], []
        return self.txn_manager.list_transaction_states(producer_id_filters, state_filters, duration_filter_ms,
                                                        transactional_id_pattern)

    # ------------------------------------------------------------------ metrics
    def snapshot(self) -> TransactionCoordinatorSnapshot:
        m = self.txn_manager
        return TransactionCoordinatorSnapshot(
            listings_by_state(m.all_transactions()), len(m.owned_partitions()), m.load_time_ms_max,
            m.load_time_ms_total, m.loads, self.marker_channel.queue_size(),
            self.marker_channel.pending_completion_count(), self.marker_channel.markers_sent)
