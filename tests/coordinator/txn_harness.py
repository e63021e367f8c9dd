"""Test doubles for the transaction coordinator tests.

``FakeMarkerSender`` is the broker side of the marker channel: leaders come from ``leaders``
(missing: the partition does not exist), every ``send_markers`` call is recorded and answered
by ``respond`` (or at once with ``auto_errors`` when ``auto`` is set). ``TxnHarness`` mirrors the
fixture of Kafka's TransactionCoordinatorTest: MockTime, an in-memory ``__transaction_state``
(``InMemoryCoordinatorLog``), loading inline, the transactional id's partition owned at
coordinator epoch 0, producer ids from 1000 up.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

from coordinator_harness import Box, InMemoryCoordinatorLog

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.group_metadata_manager import InlineScheduler
from kafka_emu.coordinator.transaction import TransactionCoordinator
from kafka_emu.coordinator.transaction.transaction_metadata import TransactionMetadata, TransactionState
from kafka_emu.coordinator.txn_marker import TxnMarkerEntry
from kafka_emu.timer import MockTime

TXN_ID = "transactionalId"
TXN_TIMEOUT = 1000
NUM_TXN_PARTITIONS = 4
TP1, TP2 = ("topic1", 0), ("topic1", 1)


class FakeMarkerSender:
    def __init__(self) -> None:
        self.leaders: dict[tuple[str, int], int] = {}
        self.calls: list[tuple[int, list[TxnMarkerEntry], Callable[[list[dict] | None], None]]] = []
        self.auto = False
        self.auto_error = Errors.NONE

    def partition_leader(self, tp: tuple[str, int]) -> int | None:
        return self.leaders.get(tp)

    def send_markers(self, broker_id: int, entries: Sequence[TxnMarkerEntry],
                     callback: Callable[[list[dict] | None], None]) -> None:
        if self.auto:
            callback([{tp: self.auto_error for tp in e.partitions} for e in entries])
            return
        self.calls.append((broker_id, list(entries), callback))

    def respond_all(self, error: int = Errors.NONE) -> int:
        calls, self.calls = self.calls, []
        for _, entries, cb in calls:
            cb([{tp: error for tp in e.partitions} for e in entries])
        return len(calls)


class TxnHarness:
    def __init__(self, **config: Any) -> None:
        self.time = MockTime()
        self.log = InMemoryCoordinatorLog()
        self.sender = FakeMarkerSender()
        self.sender.leaders.update({TP1: 1, TP2: 2})
        ids = itertools.count(1000)
        cfg = {"transaction.state.log.num.partitions": NUM_TXN_PARTITIONS, **config}
        self.coordinator = TransactionCoordinator.create(0, cfg, self.log, self.sender, lambda: next(ids),
                                                         self.time, scheduler=InlineScheduler())
        self.coordinator.startup(start_marker_thread=False)
        self.txn_partition = self.coordinator.partition_for(TXN_ID)
        self.coordinator.on_elected(self.txn_partition, 0)

    @property
    def manager(self):
        return self.coordinator.txn_manager

    @property
    def channel(self):
        return self.coordinator.marker_channel

    def metadata(self, txn_id: str = TXN_ID) -> TransactionMetadata | None:
        error, em = self.manager.get_transaction_state(txn_id)
        assert error == Errors.NONE, error
        return em.transaction_metadata if em is not None else None

    def put(self, state: TransactionState, producer_id: int = 10, epoch: int = 1,
            partitions: set | None = None, txn_id: str = TXN_ID, start: int | None = None,
            last_epoch: int = -1) -> TransactionMetadata:
        now = self.time.milliseconds()
        md = TransactionMetadata(txn_id, producer_id, -1, -1, epoch, last_epoch, TXN_TIMEOUT, state,
                                 set(partitions or ()), now if start is None else start, now)
        error, em = self.manager.put_transaction_state_if_not_exists(md)
        assert error == Errors.NONE
        return em.transaction_metadata

    # ------------------------------------------------------------------ requests
    def init_pid(self, txn_id: str | None = TXN_ID, timeout: int = TXN_TIMEOUT,
                 expected: tuple[int, int] | None = None):
        box = Box()
        self.coordinator.handle_init_producer_id(txn_id, timeout, expected, box)
        return box.value

    def add_partitions(self, producer_id: int, epoch: int, partitions: set, txn_id: str | None = TXN_ID) -> int:
        box = Box()
        self.coordinator.handle_add_partitions_to_transaction(txn_id, producer_id, epoch, partitions, box)
        return box.value

    def end_txn(self, producer_id: int, epoch: int, commit: bool, txn_id: str | None = TXN_ID) -> int:
        return self.end_txn_answer(producer_id, epoch, commit, txn_id)[0]

    def end_txn_answer(self, producer_id: int, epoch: int, commit: bool, txn_id: str | None = TXN_ID,
                       client_transaction_version: int = 0) -> tuple[int, int, int]:
        """(error, producer id, producer epoch) of an EndTxn (v5 with ``client_transaction_version`` 2)."""
        box = Box()
        self.coordinator.handle_end_transaction(txn_id, producer_id, epoch, commit,
                                                lambda *answer: box(answer), client_transaction_version)
        return box.value

    def records(self) -> list:
        return self.log.read_records(self.txn_partition)

    def shutdown(self) -> None:
        self.coordinator.shutdown()
