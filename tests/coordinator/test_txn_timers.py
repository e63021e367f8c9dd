"""The transaction coordinator's periodic tasks on the broker's scheduler, driven by MockTime:
``transaction-abort`` (TransactionCoordinatorTest.shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch
through the scheduler) and ``transactionalId-expiration``
(TransactionStateManagerTest.shouldRemoveCompleteCommitExpiredTransactionalIds through the scheduler)."""
from __future__ import annotations

from typing import Iterator

import pytest
from txn_harness import TP1, TXN_TIMEOUT, TxnHarness

from kafka_emu.timer.scheduler import KafkaScheduler
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.transaction_metadata import TransactionState

ABORT_INTERVAL = 500
EXPIRATION_INTERVAL = 2000
EXPIRATION = 60_000


@pytest.fixture
def t() -> Iterator[TxnHarness]:
    h = TxnHarness(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": ABORT_INTERVAL,
                      "transaction.remove.expired.transaction.cleanup.interval.ms": EXPIRATION_INTERVAL,
                      "transactional.id.expiration.ms": EXPIRATION})
    scheduler = KafkaScheduler(0, h.time)   # not started: MockTime runs its due tasks
    h.coordinator.startup(scheduler, start_marker_thread=False)
    h.sender.auto = True   # markers are acknowledged at once
    yield h
    scheduler.shutdown()
    h.shutdown()


def test_abort_task_fences_and_aborts_a_timed_out_transaction(t: TxnHarness) -> None:
    r = t.init_pid()
    assert t.add_partitions(r.producer_id, r.producer_epoch, {TP1}) == Errors.NONE
    t.time.advance(ABORT_INTERVAL)
    t.time.run_due()
    assert t.metadata().state is TransactionState.ONGOING          # not past its timeout yet
    t.time.advance(TXN_TIMEOUT)
    t.time.run_due()
    assert t.metadata().state is TransactionState.PREPARE_ABORT
    assert t.metadata().producer_epoch == r.producer_epoch + 1
    t.channel.send_pending()
    assert t.metadata().state is TransactionState.COMPLETE_ABORT
    assert t.end_txn(r.producer_id, r.producer_epoch, True) == Errors.PRODUCER_FENCED


def test_expiration_task_removes_idle_transactional_ids(t: TxnHarness) -> None:
    t.init_pid()
    t.time.advance(EXPIRATION_INTERVAL)
    t.time.run_due()
    assert t.metadata() is not None                                 # idle, but not for long enough
    t.time.advance(EXPIRATION)
    t.time.run_due()
    assert t.metadata() is None
    assert t.records()[-1][2] is None                               # the tombstone
    assert t.init_pid().error == Errors.NONE                        # the id starts over
