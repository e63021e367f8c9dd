"""Ports of the transactional cases of Kafka's GroupCoordinatorTest and GroupMetadataTest
(TxnOffsetCommit, pending transactional offsets completed by COMMIT/ABORT markers), and of the
load of transactional offsets (GroupMetadataManagerTest's transactional loads)."""
from __future__ import annotations

from coordinator_harness import GROUP_ID, LEADER_INSTANCE, NUM_PARTITIONS, Box, Harness

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import GroupMetadata
from kafka_emu.coordinator.group.records import offset_commit_key, offset_commit_value, partition_for
from kafka_emu.coordinator.group.results import OffsetAndMetadata

TP = ("topic", 0)
PID, EPOCH = 1000, 2
TXN_ID = "txn"


def txn_commit(h: Harness, offsets: dict, group_id: str = GROUP_ID, producer_id: int = PID,
               member_id: str = "", generation: int = -1, instance_id: str | None = None) -> dict:
    box = Box()
    h.coordinator.handle_txn_commit_offsets(group_id, TXN_ID, producer_id, EPOCH, member_id, instance_id,
                                            generation, offsets, box)
    return box.value


def complete(h: Harness, commit: bool, group_id: str = GROUP_ID, producer_id: int = PID) -> None:
    h.coordinator.schedule_handle_txn_completion(producer_id, [partition_for(group_id, NUM_PARTITIONS)], commit)


def fetched(h: Harness, tp=TP, group_id: str = GROUP_ID, require_stable: bool = False) -> tuple[int, int]:
    error, data = h.fetch(group_id, [tp], require_stable)
    assert error == Errors.NONE
    return data[tp].error, data[tp].offset


def test_basic_fetch_txn_offsets(h: Harness) -> None:
    """GroupCoordinatorTest.testBasicFetchTxnOffsets"""
    assert txn_commit(h, {TP: OffsetAndMetadata(25)}) == {TP: Errors.NONE}
    assert fetched(h) == (Errors.NONE, -1)      # not visible before the marker
    complete(h, True)
    assert fetched(h) == (Errors.NONE, 25)


def test_fetch_txn_offsets_with_abort(h: Harness) -> None:
    """GroupCoordinatorTest.testFetchTxnOffsetsWithAbort"""
    txn_commit(h, {TP: OffsetAndMetadata(25)})
    complete(h, False)
    assert fetched(h) == (Errors.NONE, -1)
    assert not h.group().has_pending_offset_commits()


def test_fetch_pending_txn_offsets_with_abort(h: Harness) -> None:
    """GroupCoordinatorTest.testFetchPendingTxnOffsetsWithAbort"""
    txn_commit(h, {TP: OffsetAndMetadata(25)})
    assert fetched(h, require_stable=True) == (Errors.UNSTABLE_OFFSET_COMMIT, -1)
    complete(h, False)
    assert fetched(h, require_stable=True) == (Errors.NONE, -1)


def test_fetch_pending_txn_offsets_with_commit(h: Harness) -> None:
    """GroupCoordinatorTest.testFetchPendingTxnOffsetsWithCommit"""
    txn_commit(h, {TP: OffsetAndMetadata(25)})
    assert fetched(h, require_stable=True) == (Errors.UNSTABLE_OFFSET_COMMIT, -1)
    complete(h, True)
    assert fetched(h, require_stable=True) == (Errors.NONE, 25)


def test_fetch_txn_offsets_ignore_spurious_commit(h: Harness) -> None:
    """GroupCoordinatorTest.testFetchTxnOffsetsIgnoreSpuriousCommit"""
    txn_commit(h, {TP: OffsetAndMetadata(25)})
    complete(h, False)
    complete(h, True)   # a spurious COMMIT of the same producer: nothing pending any more
    assert fetched(h) == (Errors.NONE, -1)


def test_fetch_txn_offsets_one_producer_multiple_groups(h: Harness) -> None:
    """GroupCoordinatorTest.testFetchTxnOffsetsOneProducerMultipleGroups: markers of one offsets
    partition complete only the groups that live there."""
    other = next(g for g in (f"group-{i}" for i in range(100))
                 if partition_for(g, NUM_PARTITIONS) != partition_for(GROUP_ID, NUM_PARTITIONS))
    h.coordinator.group_manager.add_owned_partition(partition_for(other, NUM_PARTITIONS))
    assert txn_commit(h, {TP: OffsetAndMetadata(25)}) == {TP: Errors.NONE}
    assert txn_commit(h, {TP: OffsetAndMetadata(30)}, group_id=other) == {TP: Errors.NONE}
    complete(h, False, group_id=other)
    complete(h, True)
    assert fetched(h) == (Errors.NONE, 25)
    assert fetched(h, group_id=other) == (Errors.NONE, -1)


def test_fetch_txn_offsets_multiple_producers_one_group(h: Harness) -> None:
    """GroupCoordinatorTest.testFetchTxnOffsetsMultipleProducersOneGroup"""
    tp2 = ("topic", 1)
    txn_commit(h, {TP: OffsetAndMetadata(25)}, producer_id=PID)
    txn_commit(h, {tp2: OffsetAndMetadata(40)}, producer_id=PID + 1)
    complete(h, False, producer_id=PID)
    assert fetched(h) == (Errors.NONE, -1) and fetched(h, tp2) == (Errors.NONE, -1)
    complete(h, True, producer_id=PID + 1)
    assert fetched(h) == (Errors.NONE, -1) and fetched(h, tp2) == (Errors.NONE, 40)


def test_txn_commit_offset_with_fenced_instance_id(h: Harness) -> None:
    """GroupCoordinatorTest.testTxnCommitOffsetWithFencedInstanceId"""
    leader, _ = h.static_members_join_and_rebalance()
    res = txn_commit(h, {TP: OffsetAndMetadata(1)}, member_id="unknown-member", generation=leader.generation_id,
                     instance_id=LEADER_INSTANCE)
    assert res == {TP: Errors.FENCED_INSTANCE_ID}


def test_txn_commit_offset_with_invalid_member_id(h: Harness) -> None:
    """GroupCoordinatorTest.testTxnCommitOffsetWithInvalidMemberId"""
    r = h.dynamic_join()
    assert txn_commit(h, {TP: OffsetAndMetadata(1)}, member_id="invalid", generation=r.generation_id) == {
        TP: Errors.UNKNOWN_MEMBER_ID}


def test_txn_commit_offset_with_known_member_id_and_generations(h: Harness) -> None:
    """GroupCoordinatorTest.testTxnCommitOffsetWithKnownMemberId / testTxnCommitOffsetWithLegalGeneration /
    testTxnCommitOffsetWithIllegalGeneration"""
    r = h.dynamic_join()
    h.sync(generation=r.generation_id, member_id=r.member_id, assignment={r.member_id: b""})
    assert txn_commit(h, {TP: OffsetAndMetadata(1)}, member_id=r.member_id, generation=r.generation_id) == {
        TP: Errors.NONE}
    assert txn_commit(h, {TP: OffsetAndMetadata(2)}, member_id=r.member_id, generation=r.generation_id + 1) == {
        TP: Errors.ILLEGAL_GENERATION}
    # older clients send neither member nor generation: accepted on a non-empty group
    assert txn_commit(h, {TP: OffsetAndMetadata(3)}) == {TP: Errors.NONE}


def test_txn_offset_metadata_too_large(h: Harness) -> None:
    """GroupCoordinatorTest.testTxnOffsetMetadataTooLarge"""
    res = txn_commit(h, {TP: OffsetAndMetadata(1, None, "x" * 4097)})
    assert res == {TP: Errors.OFFSET_METADATA_TOO_LARGE}
    complete(h, True)
    assert fetched(h) == (Errors.NONE, -1)


def test_txn_commit_append_failure_leaves_no_pending_state(h: Harness) -> None:
    """GroupMetadataTest.testFailedTxnOffsetCommitLeavesNoPendingState (through the manager)"""
    h.log.error = Errors.NOT_ENOUGH_REPLICAS
    assert txn_commit(h, {TP: OffsetAndMetadata(1)}) == {TP: Errors.COORDINATOR_NOT_AVAILABLE}
    assert not h.group().has_pending_offset_commits()


# --------------------------------------------------------------------------- GroupMetadataTest
def _group() -> GroupMetadata:
    return GroupMetadata("g")


def test_has_pending_txn_offsets() -> None:
    """GroupMetadataTest.testHasPendingTxnOffsets"""
    g = _group()
    g.prepare_txn_offset_commit(PID, {TP: OffsetAndMetadata(37)})
    assert g.has_pending_offset_commits_from_producer(PID) and g.has_pending_offset_commits_for_partition(TP)
    assert not g.has_pending_offset_commits_from_producer(PID + 1) and g.has_offsets()


def test_consumer_beats_transactional_offset_commit() -> None:
    """GroupMetadataTest.testConsumerBeatsTransactionalOffsetCommit: the consumer's record is
    appended after the transaction's, so it wins when the transaction commits."""
    g = _group()
    txn, consumer = OffsetAndMetadata(37), OffsetAndMetadata(40)
    g.prepare_txn_offset_commit(PID, {TP: txn})
    g.on_txn_offset_commit_append(PID, TP, 3, txn)
    g.prepare_offset_commit({TP: consumer})
    g.on_offset_commit_append(TP, consumer, 4)
    g.complete_pending_txn_offset_commit(PID, True)
    assert g.offset(TP) == consumer and not g.has_pending_offset_commits()


def test_transaction_beats_consumer_offset_commit() -> None:
    """GroupMetadataTest.testTransactionBeatsConsumerOffsetCommit"""
    g = _group()
    txn, consumer = OffsetAndMetadata(37), OffsetAndMetadata(40)
    g.prepare_offset_commit({TP: consumer})
    g.on_offset_commit_append(TP, consumer, 3)
    g.prepare_txn_offset_commit(PID, {TP: txn})
    g.on_txn_offset_commit_append(PID, TP, 4, txn)
    g.complete_pending_txn_offset_commit(PID, True)
    assert g.offset(TP) == txn


def test_transactional_commit_is_aborted_and_consumer_commit_wins() -> None:
    """GroupMetadataTest.testTransactionalCommitIsAbortedAndConsumerCommitWins"""
    g = _group()
    txn, consumer = OffsetAndMetadata(37), OffsetAndMetadata(40)
    g.prepare_offset_commit({TP: consumer})
    g.prepare_txn_offset_commit(PID, {TP: txn})
    g.on_txn_offset_commit_append(PID, TP, 3, txn)
    g.on_offset_commit_append(TP, consumer, 4)
    g.complete_pending_txn_offset_commit(PID, False)
    assert g.offset(TP) == consumer and not g.has_pending_offset_commits()


def test_failed_txn_offset_commit_leaves_no_pending_state() -> None:
    """GroupMetadataTest.testFailedTxnOffsetCommitLeavesNoPendingState"""
    g = _group()
    g.prepare_txn_offset_commit(PID, {TP: OffsetAndMetadata(37)})
    g.fail_pending_txn_offset_commit(PID, TP)
    assert not g.has_offsets() and not g.has_pending_offset_commits_from_producer(PID)


def test_removed_offsets_drop_pending_transactional_ones() -> None:
    """OffsetMetadataManagerTest.testOnPartitionsDeleted (classic form): a deleted partition's
    pending transactional offset goes too."""
    g = _group()
    g.prepare_txn_offset_commit(PID, {TP: OffsetAndMetadata(37)})
    g.on_txn_offset_commit_append(PID, TP, 1, OffsetAndMetadata(37))
    g.remove_offsets([TP])
    g.complete_pending_txn_offset_commit(PID, True)
    assert g.offset(TP) is None


# --------------------------------------------------------------------------- load
def _offsets_partition() -> int:
    return partition_for(GROUP_ID, NUM_PARTITIONS)


def _record(offset: int) -> tuple[bytes, bytes]:
    return (offset_commit_key(GROUP_ID, TP[0], TP[1]), offset_commit_value(offset, None, "", 1))


def test_load_transactional_offsets(h: Harness) -> None:
    """GroupMetadataManagerTest.testLoadTransactionalOffsetsWithoutGroup /
    testDoNotLoadAbortedTransactionalOffsetCommits / testGroupLoadedWithPendingCommits /
    testLoadWithCommittedAndAbortedTransactionalOffsetCommits: committed transactions count, aborted
    ones do not, open ones stay pending; a later plain commit beats an earlier transactional one."""
    p = _offsets_partition()
    h.log.append_batch(p, [_record(10)], producer_id=PID)
    h.log.append_marker(p, PID, True)
    h.log.append_batch(p, [(offset_commit_key(GROUP_ID, "other", 0), offset_commit_value(5, None, "", 1))],
                       producer_id=PID + 1)
    h.log.append_marker(p, PID + 1, False)
    h.log.append_batch(p, [(offset_commit_key(GROUP_ID, "open", 0), offset_commit_value(7, None, "", 1))],
                       producer_id=PID + 2)
    h.coordinator.on_resigned(p, 0)
    h.coordinator.on_elected(p, 1)
    assert fetched(h) == (Errors.NONE, 10)
    assert fetched(h, ("other", 0)) == (Errors.NONE, -1)
    assert fetched(h, ("open", 0), require_stable=True) == (Errors.UNSTABLE_OFFSET_COMMIT, -1)
    complete(h, True, producer_id=PID + 2)
    assert fetched(h, ("open", 0)) == (Errors.NONE, 7)


def test_load_consumer_commit_after_transactional_one_wins(h: Harness) -> None:
    """GroupMetadataManagerTest.testLoadOffsetsWithTombstones-style ordering: the log order of the
    records decides, not the order of the markers."""
    p = _offsets_partition()
    h.log.append_batch(p, [_record(10)], producer_id=PID)
    h.log.append_batch(p, [_record(20)])
    h.log.append_marker(p, PID, True)
    h.coordinator.on_resigned(p, 0)
    h.coordinator.on_elected(p, 1)
    assert fetched(h) == (Errors.NONE, 20)
    # after the load, a new transactional commit still orders after everything loaded
    txn_commit(h, {TP: OffsetAndMetadata(30)}, producer_id=PID + 5)
    complete(h, True, producer_id=PID + 5)
    assert fetched(h) == (Errors.NONE, 30)
