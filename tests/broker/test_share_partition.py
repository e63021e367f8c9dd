"""Ports of Kafka's ``SharePartitionTest`` (core/src/test/java/kafka/server/share): acquisition,
acknowledgement by type, delivery counts and the delivery limit, acquisition locks on the timer,
the in-flight limit, initialization from persisted state, read_committed filtering; and a
hypothesis property over any interleaving of fetches, acknowledgements, lock expiries and
crashes."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.server.share.share_partition import (
    AcknowledgeType, AcquiredRecords, FetchedBatch, RecordState, ShareSettings,
)
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.share.share_coordinator_records import StateBatch
from kafka_emu.timer import MockTime

from share_support import LOCK_MS, MEMBER, Box, InMemoryPersister, batches, share_partition

ACCEPT, RELEASE, REJECT, GAP, RENEW = (int(t) for t in (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                                                         AcknowledgeType.REJECT, AcknowledgeType.GAP,
                                                         AcknowledgeType.RENEW))
pytestmark = pytest.mark.timeout(60)


def test_acquire_single_record() -> None:
    """SharePartitionTest.testAcquireSingleRecord."""
    sp, _, _ = share_partition()
    assert sp.acquire(MEMBER, 500, batches((0, 0))) == [AcquiredRecords(0, 0, 1)]
    assert sp.next_fetch_offset() == 1 and sp.end_offset == 1
    assert sp.in_flight() == [(0, 0, RecordState.ACQUIRED, 1, MEMBER)]


def test_acquire_multiple_record_batches_and_max_fetch_records() -> None:
    """testAcquireMultipleRecords / testAcquireWithMaxFetchRecords: batch-aligned, so the
    limit may be exceeded by the last batch; record-limit mode (v2) acquires exactly."""
    sp, _, _ = share_partition()
    assert sp.acquire(MEMBER, 15, batches((0, 9), (10, 19), (20, 29))) == [AcquiredRecords(0, 19, 1)]
    assert sp.acquire(MEMBER, 5, batches((20, 29)), strict_limit=True) == [AcquiredRecords(20, 24, 1)]
    assert sp.next_fetch_offset() == 25


def test_acknowledge_accept_moves_the_start_offset() -> None:
    """testAcknowledgeSingleRecordBatch / testAcknowledgeMultipleRecordBatch."""
    sp, _, persister = share_partition()
    sp.acquire(MEMBER, 500, batches((0, 4), (5, 9)))
    done = Box()
    assert sp.acknowledge(MEMBER, [(0, 9, (ACCEPT,))], done)[0] == Errors.NONE
    assert done.values == [Errors.NONE]
    assert sp.start_offset == 10 and sp.in_flight() == []
    assert persister.start_offset == 10 and persister.batches == ()


def test_acknowledge_per_offset_types_split_the_batch() -> None:
    """testAcknowledgeMultipleRecordBatchWithGapOffsets: one type per offset."""
    sp, _, _ = share_partition()
    sp.acquire(MEMBER, 500, batches((0, 4)))
    types = (ACCEPT, RELEASE, REJECT, ACCEPT, GAP)
    assert sp.acknowledge(MEMBER, [(0, 4, types)], Box())[0] == Errors.NONE
    assert sp.start_offset == 1
    assert sp.in_flight() == [(1, 1, RecordState.AVAILABLE, 1, None), (2, 2, RecordState.ARCHIVED, 1, None),
                              (3, 3, RecordState.ACKNOWLEDGED, 1, None), (4, 4, RecordState.ARCHIVED, 1, None)]
    assert sp.next_fetch_offset() == 1
    assert sp.acquire("member-2", 500, batches((0, 4))) == [AcquiredRecords(1, 1, 2)]


def test_release_keeps_the_delivery_count_and_archives_at_the_limit() -> None:
    """testReleaseSingleRecordBatch / testReleaseAcquiredRecordsWithDeliveryLimit /
    testAcquireWithMaxDeliveryCountLimit (limit 2)."""
    sp, _, _ = share_partition(ShareSettings(record_lock_duration_ms=LOCK_MS, delivery_count_limit=2))
    sp.acquire(MEMBER, 500, batches((0, 1)))
    sp.acknowledge(MEMBER, [(0, 1, (RELEASE,))], Box())
    assert sp.in_flight() == [(0, 1, RecordState.AVAILABLE, 1, None)]
    assert sp.acquire(MEMBER, 500, batches((0, 1))) == [AcquiredRecords(0, 1, 2)]
    sp.acknowledge(MEMBER, [(0, 1, (RELEASE,))], Box())
    assert sp.in_flight() == [] and sp.start_offset == 2   # archived: delivered twice already


def test_acknowledge_errors_change_nothing() -> None:
    """testAcknowledgeInvalidMemberId (INVALID_RECORD_STATE), testAcknowledgeBatchWithoutRecords
    past the end offset (INVALID_REQUEST), an unknown type; a request's acknowledgements apply
    all or none."""
    sp, _, persister = share_partition()
    sp.acquire(MEMBER, 500, batches((0, 4)))
    before = sp.in_flight()
    assert sp.acknowledge("member-2", [(0, 1, (ACCEPT,))], Box())[0] == Errors.INVALID_RECORD_STATE
    assert sp.acknowledge(MEMBER, [(0, 1, (ACCEPT,)), (3, 9, (ACCEPT,))], Box())[0] == Errors.INVALID_REQUEST
    assert sp.acknowledge(MEMBER, [(0, 1, (9,))], Box())[0] == Errors.INVALID_REQUEST
    assert sp.acknowledge(MEMBER, [(0, 4, (ACCEPT, ACCEPT))], Box())[0] == Errors.INVALID_REQUEST
    assert sp.in_flight() == before and persister.writes == []
    sp.acknowledge(MEMBER, [(0, 0, (ACCEPT,))], Box())
    assert sp.acknowledge(MEMBER, [(0, 0, (ACCEPT,))], Box())[0] == Errors.INVALID_RECORD_STATE   # twice


def test_acquisition_lock_expires_at_the_duration_plus_one_tick() -> None:
    """testAcquisitionLockOnAcquiringSingleRecord / testAcquisitionLockTimeoutForBatches: the
    record stays acquired for the lock duration and is available one timer tick later, with its
    delivery count kept; a re-acquisition counts 2 (redelivery at the duration ± one tick)."""
    timeouts = Box()
    sp, timer, persister = share_partition()
    sp.on_lock_timeout = timeouts
    sp.acquire(MEMBER, 500, batches((0, 9)))
    timer.advance_clock(LOCK_MS)
    assert sp.in_flight() == [(0, 9, RecordState.ACQUIRED, 1, MEMBER)]
    timer.advance_clock(1)
    assert sp.in_flight() == [(0, 9, RecordState.AVAILABLE, 1, None)]
    assert timeouts.values == [10]
    assert persister.batches == (StateBatch(0, 9, 0, 1),)
    assert sp.acquire("member-2", 500, batches((0, 9))) == [AcquiredRecords(0, 9, 2)]


def test_lock_of_a_partly_acknowledged_batch_keeps_its_deadline() -> None:
    """testAcquisitionLockTimeoutForBatchesAfterReleasedRecordsAcquired: acknowledging part of a
    batch leaves the rest locked until the original deadline."""
    sp, timer, _ = share_partition()
    sp.acquire(MEMBER, 500, batches((0, 9)))
    timer.advance_clock(LOCK_MS // 2)
    sp.acknowledge(MEMBER, [(0, 4, (ACCEPT,))], Box())
    timer.advance_clock(LOCK_MS // 2 + 1)
    assert sp.in_flight() == [(5, 9, RecordState.AVAILABLE, 1, None)] and sp.start_offset == 5


def test_renew_rearms_the_lock() -> None:
    """KIP-1222: RENEW keeps the records acquired for another lock duration."""
    sp, timer, _ = share_partition()
    sp.acquire(MEMBER, 500, batches((0, 0)))
    timer.advance_clock(LOCK_MS - 1)
    sp.acknowledge(MEMBER, [(0, 0, (RENEW,))], Box())
    timer.advance_clock(LOCK_MS - 1)
    assert sp.in_flight() == [(0, 0, RecordState.ACQUIRED, 1, MEMBER)]
    timer.advance_clock(2)
    assert sp.in_flight()[0][2] is RecordState.AVAILABLE


def test_release_acquired_records_of_a_closed_session() -> None:
    """testReleaseAcquiredRecordsForMember: only that member's records go back."""
    sp, _, _ = share_partition()
    sp.acquire(MEMBER, 5, batches((0, 4)))
    sp.acquire("member-2", 5, batches((5, 9)))
    sp.release_acquired_records(MEMBER)
    assert sp.in_flight() == [(0, 4, RecordState.AVAILABLE, 1, None), (5, 9, RecordState.ACQUIRED, 1, "member-2")]


def test_max_in_flight_records_is_exact() -> None:
    """testCanAcquireRecordsWithMaxInFlightRecords: nothing more once the limit is in flight."""
    sp, _, _ = share_partition(ShareSettings(record_lock_duration_ms=LOCK_MS, max_in_flight_records=100))
    assert sp.acquire(MEMBER, 500, batches((0, 149))) == [AcquiredRecords(0, 99, 1)]
    assert not sp.can_acquire_records()
    sp.acknowledge(MEMBER, [(0, 49, (ACCEPT,))], Box())
    assert sp.can_acquire_records()
    assert sp.acquire(MEMBER, 500, batches((0, 149))) == [AcquiredRecords(100, 149, 1)]


def test_initialize_from_persisted_state() -> None:
    """testMaybeInitializeWithPersistedState: the persisted runs come back (available ones with
    their counts), acknowledged and archived ones are never delivered again."""
    persister = InMemoryPersister(5, (StateBatch(5, 9, 2, 1), StateBatch(10, 14, 0, 3), StateBatch(15, 19, 4, 5)))
    sp, _, _ = share_partition(persister=persister)
    assert (sp.start_offset, sp.end_offset) == (10, 20)
    assert sp.acquire(MEMBER, 500, batches((5, 19), (20, 24))) == [AcquiredRecords(10, 14, 4),
                                                                     AcquiredRecords(20, 24, 1)]


def test_initialize_without_state_uses_the_reset_offset() -> None:
    """testMaybeInitializeWithEmptyStateBatches: no state yet: share.auto.offset.reset's offset."""
    persister = InMemoryPersister()
    sp, _, _ = share_partition(persister=persister, start=42)
    assert (sp.start_offset, sp.end_offset, persister.start_offset) == (42, 42, 42)
    assert sp.acquire(MEMBER, 500, batches((40, 45))) == [AcquiredRecords(42, 45, 1)]


def test_read_committed_archives_aborted_and_control_batches() -> None:
    """testAcquireWithReadCommittedIsolationLevel / filterAbortedTransactionalAcquiredRecords."""
    sp, _, _ = share_partition()
    fetched = [FetchedBatch(0, 4, 7, False), FetchedBatch(5, 5, 7, True), FetchedBatch(6, 9, 8, False)]
    acquired = sp.acquire(MEMBER, 500, fetched, aborted_producers=lambda b: b.producer_id == 7)
    assert acquired == [AcquiredRecords(6, 9, 1)]
    assert sp.start_offset == 6


# ---------------------------------------------------------------------------------- property
STEPS = st.lists(st.one_of(
    st.tuples(st.just("fetch"), st.integers(0, 2), st.integers(1, 12)),
    st.tuples(st.just("ack"), st.integers(0, 2), st.sampled_from([ACCEPT, RELEASE, REJECT])),
    st.tuples(st.just("expire"), st.integers(1, 2), st.just(0)),
    st.tuples(st.just("crash"), st.integers(0, 2), st.just(0)),
    st.tuples(st.just("produce"), st.integers(1, 6), st.just(0)),
), max_size=40)


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_property_every_record_acknowledged_once_archived_or_deliverable(steps: list[tuple[str, int, int]]) -> None:
    """Over any interleaving of fetches by three members, acknowledgements of each type, lock
    expiries and member crashes (their records left to expire): a record is never acquired by
    two members at once, never acknowledged twice, archived only at the delivery limit (or by
    REJECT), and every record below the log end is acknowledged, archived or still deliverable."""
    time = MockTime()
    limit = 3
    sp, timer, _ = share_partition(ShareSettings(record_lock_duration_ms=100, delivery_count_limit=limit,
                                                 max_in_flight_records=200), time=time)
    log_end = 0
    holders: dict[int, str] = {}           # offset -> member holding it (model)
    accepted: set[int] = set()
    rejected: set[int] = set()
    deliveries: dict[int, int] = {}
    crashed: set[str] = set()

    def fetched() -> list[FetchedBatch]:
        return [FetchedBatch(o, min(o + 2, log_end - 1), -1, False) for o in range(0, log_end, 3)]

    for kind, a, b in steps:
        member = f"m{a}"
        if kind == "produce":
            log_end += a
        elif kind == "fetch" and member not in crashed:
            for rec in sp.acquire(member, b, [f for f in fetched() if f.last_offset >= sp.next_fetch_offset()]):
                for o in range(rec.first_offset, rec.last_offset + 1):
                    assert o not in holders, f"offset {o} acquired by {member} while {holders[o]} holds it"
                    assert o not in accepted and o not in rejected
                    holders[o] = member
                    deliveries[o] = deliveries.get(o, 0) + 1
                    assert rec.delivery_count == deliveries[o] <= limit
        elif kind == "ack" and member not in crashed:
            mine = sorted(o for o, m in holders.items() if m == member)
            if mine:
                error, _ = sp.acknowledge(member, [(o, o, (b,)) for o in mine], Box())
                assert error == Errors.NONE
                for o in mine:
                    del holders[o]
                    if b == ACCEPT:
                        assert o not in accepted
                        accepted.add(o)
                    elif b == REJECT:
                        rejected.add(o)
        elif kind == "expire":
            timer.advance_clock(101)
            holders.clear()
        elif kind == "crash":
            crashed.add(member)
    states = {o: s for first, last, s, _c, _m in sp.in_flight() for o in range(first, last + 1)}
    for o in range(log_end):
        if o in accepted:
            assert o < sp.start_offset or states.get(o) is RecordState.ACKNOWLEDGED
        elif o in rejected or deliveries.get(o, 0) >= limit and o not in holders:
            assert o < sp.start_offset or states.get(o) in (RecordState.ARCHIVED, RecordState.ACQUIRED,
                                                           RecordState.AVAILABLE) and (
                states.get(o) is not RecordState.AVAILABLE or deliveries.get(o, 0) < limit)
        else:   # still deliverable: available, acquired by a holder, or never fetched yet
            assert o >= sp.start_offset, f"offset {o} left the share partition without being acknowledged"
            assert states.get(o, RecordState.AVAILABLE) in (RecordState.AVAILABLE, RecordState.ACQUIRED)
