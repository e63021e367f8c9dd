"""Ports of Kafka's TransactionMetadataTest and TransactionLogTest (TV1 cases), plus property tests
of the state machine and the record format."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.transaction_log import (
    key_bytes, partition_for, read_key, read_value, value_bytes,
)
from kafka_emu.coordinator.transaction.transaction_metadata import (
    NO_PRODUCER_EPOCH, SHORT_MAX, IllegalTransactionStateError, TransactionMetadata, TransactionState,
    TxnTransitMetadata,
)

S = TransactionState
PID = 23
TIME = 1_700_000_000_000


def md(state: S = S.EMPTY, epoch: int = 0, last_epoch: int = NO_PRODUCER_EPOCH, partitions=(),
       start: int = -1, pid: int = PID) -> TransactionMetadata:
    return TransactionMetadata("txnlId", pid, -1, -1, epoch, last_epoch, 30000, state, set(partitions), start, TIME)


def test_initialize_epoch():
    """TransactionMetadataTest.testInitializeEpoch"""
    m = md(epoch=NO_PRODUCER_EPOCH)
    error, transit = m.prepare_increment_producer_epoch(30000, None, TIME + 1)
    assert error == Errors.NONE
    m.complete_transition_to(transit)
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch, m.txn_last_update_timestamp) == (PID, 0, -1, TIME + 1)


def test_normal_epoch_bump():
    """TransactionMetadataTest.testNormalEpochBump"""
    m = md(epoch=735, last_epoch=734)
    error, transit = m.prepare_increment_producer_epoch(30000, None, TIME + 1)
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch) == (736, NO_PRODUCER_EPOCH)


def test_bump_epoch_not_allowed_if_epochs_exhausted():
    """TransactionMetadataTest.testBumpEpochNotAllowedIfEpochsExhausted"""
    m = md(epoch=SHORT_MAX - 1, last_epoch=SHORT_MAX - 2)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransactionStateError):
        m.prepare_increment_producer_epoch(30000, None, TIME + 1)


@pytest.mark.parametrize("shift", [1, -1])
def test_tolerate_time_shift_during_epoch_bump(shift):
    """TransactionMetadataTest.testTolerateUpdateTimeShiftDuringEpochBump"""
    m = md(epoch=1)
    _, transit = m.prepare_increment_producer_epoch(30000, None, TIME + shift)
    m.complete_transition_to(transit)
    assert m.txn_last_update_timestamp == TIME + shift and m.producer_epoch == 2


def test_tolerate_time_shift_during_add_partitions_and_end():
    """TransactionMetadataTest.testTolerateTimeShiftDuringAddPartitions / DuringPrepareCommit /
    DuringCompleteCommit: the timestamps come from the transition, whatever the clock did."""
    m = md(epoch=1, start=TIME)
    m.complete_transition_to(m.prepare_add_partitions({("topic1", 0)}, TIME - 1))
    assert m.txn_start_timestamp == TIME - 1 and m.state is S.ONGOING
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, TIME - 2))
    assert m.state is S.PREPARE_COMMIT and m.txn_last_update_timestamp == TIME - 2
    m.complete_transition_to(m.prepare_complete(TIME - 3))
    assert m.state is S.COMPLETE_COMMIT and m.topic_partitions == set() and m.txn_start_timestamp == TIME - 1


def test_tolerate_time_shift_during_prepare_abort_and_complete_abort():
    """TransactionMetadataTest.testTolerateTimeShiftDuringPrepareAbort / DuringCompleteAbort"""
    m = md(S.ONGOING, epoch=1, partitions={("t", 0)}, start=TIME)
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, TIME - 1))
    m.complete_transition_to(m.prepare_complete(TIME - 2))
    assert m.state is S.COMPLETE_ABORT and m.txn_last_update_timestamp == TIME - 2


def test_fence_producer_after_epochs_exhausted():
    """TransactionMetadataTest.testFenceProducerAfterEpochsExhausted"""
    m = md(S.ONGOING, epoch=SHORT_MAX - 1, partitions={("t", 0)}, start=TIME)
    transit = m.prepare_fence_producer_epoch()
    assert transit.producer_epoch == SHORT_MAX and transit.txn_state is S.PREPARE_EPOCH_FENCE
    assert m.pending_state is S.PREPARE_EPOCH_FENCE


@pytest.mark.parametrize("state", [S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_invalid_transition_from_complete_to_fence(state):
    """TransactionMetadataTest.testInvalidTransitionFromCompleteCommitToFence / FromCompleteAbortToFence"""
    m = md(state, epoch=1, start=TIME)
    with pytest.raises(IllegalTransactionStateError):
        m.prepare_fence_producer_epoch()


def test_fence_producer_not_allowed_if_it_would_overflow():
    """TransactionMetadataTest.testFenceProducerNotAllowedIfItWouldOverflow"""
    m = md(S.ONGOING, epoch=SHORT_MAX, start=TIME)
    with pytest.raises(IllegalTransactionStateError):
        m.prepare_fence_producer_epoch()


def test_rotate_producer_id():
    """TransactionMetadataTest.testRotateProducerId"""
    m = md(epoch=SHORT_MAX - 1)
    transit = m.prepare_producer_id_rotation(PID + 1, 30000, TIME + 1, record_last_epoch=True)
    m.complete_transition_to(transit)
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch, m.previous_producer_id) == (
        PID + 1, 0, SHORT_MAX - 1, PID)


@pytest.mark.parametrize("state", [S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT])
def test_rotate_producer_id_in_pending_states(state):
    """TransactionMetadataTest.testRotateProducerIdInOngoingState / InPrepareAbortState / InPrepareCommitState"""
    m = md(state, epoch=SHORT_MAX - 1, start=TIME)
    with pytest.raises(IllegalTransactionStateError):
        m.prepare_producer_id_rotation(PID + 1, 30000, TIME, record_last_epoch=False)


def test_attempted_epoch_bump_with_newly_created_metadata():
    """TransactionMetadataTest.testAttemptedEpochBumpWithNewlyCreatedMetadata"""
    m = md(epoch=NO_PRODUCER_EPOCH)
    error, transit = m.prepare_increment_producer_epoch(30000, 3, TIME)
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch) == (0, NO_PRODUCER_EPOCH)


def test_epoch_bump_with_current_epoch_provided():
    """TransactionMetadataTest.testEpochBumpWithCurrentEpochProvided"""
    m = md(epoch=735, last_epoch=734)
    _, transit = m.prepare_increment_producer_epoch(30000, 735, TIME)
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch) == (736, 735)


def test_attempted_epoch_bump_with_last_epoch():
    """TransactionMetadataTest.testAttemptedEpochBumpWithLastEpoch: a retried bump keeps the epoch."""
    m = md(epoch=735, last_epoch=734)
    _, transit = m.prepare_increment_producer_epoch(30000, 734, TIME)
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch) == (735, 734)


def test_attempted_epoch_bump_with_fenced_epoch():
    """TransactionMetadataTest.testAttemptedEpochBumpWithFencedEpoch"""
    m = md(epoch=735, last_epoch=734)
    error, transit = m.prepare_increment_producer_epoch(30000, 733, TIME)
    assert error == Errors.PRODUCER_FENCED and transit is None and m.pending_state is None


def test_transaction_state_id_and_name_mapping():
    """TransactionMetadataTest.testTransactionStateIdAndNameMapping / testAllTransactionStatesAreMapped"""
    assert [(s.id, s.state_name) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"), (4, "CompleteCommit"),
        (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence")]
    for s in S:
        assert S.from_id(s.id) is s and S.from_name(s.state_name) is s


def test_pending_state_blocks_a_second_transition():
    m = md(epoch=1)
    m.prepare_add_partitions({("t", 0)}, TIME)
    with pytest.raises(IllegalTransactionStateError):
        m.prepare_add_partitions({("t", 1)}, TIME)


# --------------------------------------------------------------------------- TransactionLogTest
def test_read_write_messages():
    """TransactionLogTest.shouldReadWriteMessages / testTransactionMetadataParsing"""
    cases = [
        ("zero", 0, S.EMPTY, frozenset()),
        ("one", 1, S.ONGOING, frozenset({("topic", 0), ("topic", 1)})),
        ("two", 2, S.PREPARE_COMMIT, frozenset({("topic", 0), ("other", 3)})),
        ("three", 3, S.COMPLETE_COMMIT, frozenset()),
        ("four", 4, S.COMPLETE_ABORT, frozenset()),
        ("five", 5, S.PREPARE_ABORT, frozenset({("topic", 7)})),
    ]
    for tid, pid, state, parts in cases:
        transit = TxnTransitMetadata(pid, -1, -1, pid % 3, -1, 1000, state, parts, TIME - 5, TIME)
        assert read_key(key_bytes(tid)) == tid
        back = read_value(tid, value_bytes(transit))
        assert (back.producer_id, back.producer_epoch, back.txn_timeout_ms, back.state, back.topic_partitions,
                back.txn_start_timestamp, back.txn_last_update_timestamp, back.last_producer_epoch) == (
            pid, pid % 3, 1000, state, set(parts), TIME - 5, TIME, NO_PRODUCER_EPOCH)


def test_should_throw_exception_write_invalid_txn():
    """TransactionLogTest.shouldThrowExceptionWriteInvalidTxn: Empty with partitions is refused."""
    with pytest.raises(ValueError):
        value_bytes(TxnTransitMetadata(1, -1, -1, 0, -1, 1000, S.EMPTY, frozenset({("t", 0)}), -1, TIME))


def test_serialize_value_to_flexible_version_with_tagged_fields():
    """TransactionLogTest.testSerializeTransactionLogValueToFlexibleVersion /
    testDeserializeHighestSupportedTransactionLogValue: tagged previous/next producer id."""
    transit = TxnTransitMetadata(5, 4, 6, 1, -1, 1000, S.ONGOING, frozenset({("t", 0)}), TIME, TIME, 0)
    raw = value_bytes(transit)
    assert raw[:2] == b"\x00\x01"
    back = read_value("x", raw)
    assert (back.previous_producer_id, back.next_producer_id) == (4, 6)


def test_deserialize_v0_value():
    """TransactionLogTest.testSerializeTransactionLogValueToHighestNonFlexibleVersion (read side)."""
    import struct
    raw = (struct.pack(">hqhib", 0, 7, 2, 1000, S.ONGOING.id) + struct.pack(">i", 1)
           + struct.pack(">h", 1) + b"t" + struct.pack(">ii", 1, 3) + struct.pack(">qq", TIME, TIME - 1))
    back = read_value("x", raw)
    assert (back.producer_id, back.producer_epoch, back.state, back.topic_partitions, back.txn_start_timestamp) == (
        7, 2, S.ONGOING, {("t", 3)}, TIME - 1)


def test_read_txn_record_key_can_read_unknown_message():
    """TransactionLogTest.testReadTxnRecordKeyCanReadUnknownMessage: unknown versions are refused
    (the loader skips them)."""
    with pytest.raises(ValueError):
        read_key(b"\x00\x05\x00\x01a")


def test_partition_for_matches_java_hash():
    """``Utils.abs("transactionalId".hashCode) % 50``; ``Integer.MIN_VALUE`` hash maps to 0."""
    from kafka_emu.coordinator.group.records import java_string_hashcode
    assert partition_for("transactionalId", 50) == abs(java_string_hashcode("transactionalId")) % 50
    assert partition_for("polygenelubricants", 50) == 0 and java_string_hashcode("polygenelubricants") == -2**31


@settings(max_examples=60, deadline=None)
@given(pid=st.integers(0, 2**63 - 1), epoch=st.integers(0, SHORT_MAX), timeout=st.integers(1, 2**31 - 1),
       state=st.sampled_from([s for s in S if s is not S.DEAD]),
       parts=st.frozensets(st.tuples(st.text(min_size=1, max_size=8), st.integers(0, 2**31 - 1)), max_size=6),
       prev=st.integers(-1, 2**40), nxt=st.integers(-1, 2**40))
def test_value_round_trip_property(pid, epoch, timeout, state, parts, prev, nxt):
    if state is S.EMPTY:
        parts = frozenset()
    transit = TxnTransitMetadata(pid, prev, nxt, epoch, -1, timeout, state, parts, TIME, TIME + 1)
    back = read_value("id", value_bytes(transit))
    assert (back.producer_id, back.previous_producer_id, back.next_producer_id, back.producer_epoch,
            back.txn_timeout_ms, back.state, back.topic_partitions) == (pid, prev, nxt, epoch, timeout, state, set(parts))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["add", "commit", "abort", "complete", "bump", "fence"]), max_size=30))
def test_state_machine_only_makes_valid_transitions(ops):
    """Whatever is attempted, every completed transition goes to a state whose valid previous
    states include the state it left, and Complete* states never hold partitions."""
    m = md(epoch=0)
    for op in ops:
        before = m.state
        try:
            if op == "add":
                t = m.prepare_add_partitions({("t", len(m.topic_partitions))}, TIME)
            elif op == "commit":
                t = m.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, TIME)
            elif op == "abort":
                t = m.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, TIME)
            elif op == "complete":
                if m.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                    continue
                t = m.prepare_complete(TIME)
            elif op == "bump":
                if m.is_producer_epoch_exhausted:
                    continue
                _, t = m.prepare_increment_producer_epoch(m.txn_timeout_ms, None, TIME)
            else:
                m.prepare_fence_producer_epoch()
                m.pending_state = None   # a fence is never completed
                continue
        except IllegalTransactionStateError:
            assert m.pending_state is None
            continue
        m.complete_transition_to(t)
        assert before in m.state.valid_previous_states
        if m.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.EMPTY):
            assert not m.topic_partitions


# --------------------------------------------------------------------------- transaction version 2
def test_epoch_bump_on_end_txn():
    """TransactionMetadataTest.testEpochBumpOnEndTxn: PrepareCommit of a TV_2 client bumps the
    epoch (the last epoch is the old one) and records the client's transaction version; the
    completion keeps both."""
    m = md(S.ONGOING, epoch=10, start=TIME)
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, -1, TIME - 1))
    assert (m.producer_id, m.producer_epoch, m.last_producer_epoch, m.client_transaction_version) == (PID, 11, 10, 2)
    m.complete_transition_to(m.prepare_complete(TIME))
    assert (m.state, m.producer_id, m.producer_epoch, m.client_transaction_version) == (S.COMPLETE_COMMIT, PID, 11, 2)


def test_epoch_bump_on_end_txn_overflow():
    """TransactionMetadataTest.testEpochBumpOnEndTxnOverflow: at the last client epoch the
    PrepareCommit reaches Short.MaxValue with the next producer id; the completion moves to it
    at epoch 0, the last epoch staying the one the client saw."""
    m = md(S.ONGOING, epoch=SHORT_MAX - 1, start=TIME)
    assert m.is_producer_epoch_exhausted
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, 9893, TIME - 1))
    assert (m.producer_id, m.producer_epoch, m.next_producer_id) == (PID, SHORT_MAX, 9893)
    m.complete_transition_to(m.prepare_complete(TIME))
    assert (m.producer_id, m.producer_epoch, m.previous_producer_id, m.next_producer_id, m.last_producer_epoch) == \
        (9893, 0, PID, -1, SHORT_MAX - 1)


@pytest.mark.parametrize("tv", [0, 2])
@pytest.mark.parametrize("prepared,completed", [(S.PREPARE_COMMIT, S.COMPLETE_COMMIT), (S.PREPARE_ABORT, S.COMPLETE_ABORT)])
def test_tolerate_time_shift_during_complete(tv, prepared, completed):
    """TransactionMetadataTest.testTolerateTimeShiftDuringCompleteCommit / ...CompleteAbort
    (TV_0 and TV_2): the completion keeps producer id and epoch and takes the transition's time."""
    m = md(prepared, epoch=1, start=1)
    m.client_transaction_version = tv
    m.complete_transition_to(m.prepare_complete(TIME - 1))
    assert (m.state, m.producer_id, m.producer_epoch, m.txn_start_timestamp, m.txn_last_update_timestamp) == \
        (completed, PID, 1, 1, TIME - 1)


@pytest.mark.parametrize("state", [S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT])
def test_abort_with_no_partition_added_needs_tv2(state):
    """TransactionMetadata.prepareAbortOrCommit with ``noPartitionAdded``: only a TV_2 abort may
    start outside Ongoing; it starts its transaction at the update time."""
    m = md(state, epoch=3)
    with pytest.raises(IllegalTransactionStateError):
        m.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, TIME, no_partition_added=True)
    with pytest.raises(IllegalTransactionStateError):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, -1, TIME, no_partition_added=True)
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_ABORT, 2, -1, TIME + 5, no_partition_added=True))
    assert (m.state, m.producer_epoch, m.txn_start_timestamp) == (S.PREPARE_ABORT, 4, TIME + 5)


def test_fence_without_bump_for_tv2():
    """TransactionMetadata.prepareFenceProducerEpoch under transaction version 2: the TV2 abort
    that follows bumps the epoch, so the fence keeps it (one bump in all)."""
    m = md(S.ONGOING, epoch=7, start=TIME)
    assert m.prepare_fence_producer_epoch(bump=False).producer_epoch == 7


def test_client_transaction_version_round_trip():
    """TransactionLogTest: the tagged ClientTransactionVersion survives the value format."""
    transit = TxnTransitMetadata(PID, 4, 5, 3, -1, 1000, S.PREPARE_COMMIT, frozenset({("t", 0)}), TIME, TIME, 2)
    back = read_value("id", value_bytes(transit))
    assert (back.client_transaction_version, back.previous_producer_id, back.next_producer_id) == (2, 4, 5)
