"""LeaderEpochFileCache: Kafka's LeaderEpochFileCacheTest cases (storage module, tag 4.0.0) ported,
plus the log's use of the cache on truncation and log-start moves (UnifiedLogTest)."""
import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.storage.leader_epoch_cache import LeaderEpochFileCache
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.record_batch import build_batch

pytestmark = pytest.mark.timeout(30)
UNDEFINED = (-1, -1)


def cache(*entries):
    return LeaderEpochFileCache(entries)


def test_should_add_epoch_and_message_offset_to_cache():
    """testShouldAddEpochAndMessageOffsetToCache"""
    c = cache((2, 10))
    assert c.latest_epoch() == 2
    assert c.end_offset_for(2, 11) == (2, 11)


def test_should_return_log_end_offset_if_latest_epoch_requested():
    """shouldReturnLogEndOffsetIfLatestEpochRequested"""
    assert cache((2, 5), (3, 6), (4, 7)).end_offset_for(4, 12) == (4, 12)


def test_should_return_undefined_offset_if_undefined_epoch_requested():
    """shouldReturnUndefinedOffsetIfUndefinedEpochRequested"""
    assert cache((2, 5)).end_offset_for(-1, 10) == UNDEFINED


def test_should_not_overwrite_offset_for_a_leader_epoch_once_it_has_been_assigned():
    """shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned"""
    c = cache((2, 6))
    assert not c.assign(2, 10)
    assert c.entries() == [(2, 6)]


def test_should_enforce_monotonically_increasing_start_offsets():
    """shouldEnforceMonotonicallyIncreasingStartOffsets: a newer epoch at a lower offset removes the older."""
    c = cache((2, 6))
    c.assign(3, 5)
    assert c.entries() == [(3, 5)]


def test_should_not_update_epoch_and_start_offset_if_it_did_not_change():
    """shouldNotUpdateEpochAndStartOffsetIfItDidNotChange"""
    c = cache((2, 6))
    assert not c.assign(2, 6)
    assert c.entries() == [(2, 6)]


def test_should_return_unsupported_if_no_epoch_recorded():
    """shouldReturnUnsupportedIfNoEpochRecorded"""
    assert cache().end_offset_for(0, 0) == UNDEFINED


def test_should_return_unsupported_if_no_epoch_recorded_and_undefined_epoch_requested():
    """shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested"""
    assert cache().end_offset_for(-1, 73) == UNDEFINED


def test_should_return_first_epoch_if_requested_epoch_less_than_first_epoch():
    """shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch"""
    assert cache((5, 11), (6, 12)).end_offset_for(4, 0) == (4, 11)


def test_should_get_first_offset_of_subsequent_epoch_when_offset_requested_for_previous_epoch():
    """shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch"""
    c = cache((1, 0), (1, 1), (1, 2), (2, 3), (2, 4))
    assert c.end_offset_for(1, 5) == (1, 3)


def test_should_return_next_available_epoch_if_there_is_no_exact_epoch_for_the_one_requested():
    """shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested"""
    c = cache((0, 10), (2, 13), (4, 17))
    assert c.end_offset_for(0, 0) == (0, 13)
    assert c.end_offset_for(1, 0) == (0, 13)
    assert c.end_offset_for(2, 0) == (2, 17)
    assert c.end_offset_for(3, 0) == (2, 17)


def test_should_return_invalid_offset_if_epoch_is_requested_which_is_not_currently_tracked():
    """shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked"""
    assert cache((2, 100)).end_offset_for(3, 100) == UNDEFINED


def test_should_support_epochs_that_do_not_start_from_zero():
    """shouldSupportEpochsThatDoNotStartFromZero"""
    assert cache((2, 6)).end_offset_for(2, 7) == (2, 7)


def test_should_drop_entries_on_epoch_boundary_when_removing_latest_entries():
    """shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(8)
    assert c.entries() == [(2, 6)]


def test_should_drop_entries_between_epoch_boundary_when_removing_newest():
    """shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(9)
    assert c.entries() == [(2, 6), (3, 8)]


def test_should_not_reset_epoch_history_tail_if_undefined_passed():
    """shouldNotResetEpochHistoryTailIfUndefinedPassed"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(-1)
    assert c.entries() == [(2, 6), (3, 8), (4, 11)]


def test_should_not_update_epoch_and_start_offset_if_end_offset_beyond():
    """shouldNotResetEpochHistoryTailIfUndefinedPassed's sibling: truncating past the last start keeps all"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_end(12)
    assert c.entries() == [(2, 6), (3, 8), (4, 11)]


def test_should_update_saved_offset_when_offset_to_clear_to_is_between_epochs():
    """shouldUpdateSavedOffsetWhenOffsetToClearToIsBetweenEpochs"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(9)
    assert c.entries() == [(3, 9), (4, 11)]


def test_should_retain_latest_epoch_on_clear_all_earliest_and_update_its_offset():
    """shouldRetainLatestEpochOnClearAllEarliestAndUpdateItsOffset"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(12)
    assert c.entries() == [(4, 12)]


def test_should_drop_entries_on_epoch_boundary_when_removing_earliest_entries():
    """shouldDropEntriesOnEpochBoundaryWhenRemovingEarliestEntries"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(8)
    assert c.entries() == [(3, 8), (4, 11)]


def test_should_not_clear_anything_if_offset_to_early():
    """shouldNotClearAnythingIfOffsetToEarly"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(1)
    assert c.entries() == [(2, 6), (3, 8), (4, 11)]


def test_should_not_clear_anything_if_offset_to_first_offset():
    """shouldNotClearAnythingIfOffsetToFirstOffset"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(6)
    assert c.entries() == [(2, 6), (3, 8), (4, 11)]


def test_should_clear_all_entries():
    """shouldClearAllEntries"""
    c = cache((2, 6), (3, 8), (4, 11))
    c.clear()
    assert c.is_empty() and c.latest_epoch() == -1


def test_should_fetch_epoch_for_given_offset():
    """testEpochForOffset"""
    c = cache((0, 10), (1, 20), (5, 30))
    assert c.epoch_for_offset(9) == -1
    assert c.epoch_for_offset(10) == 0
    assert c.epoch_for_offset(25) == 1
    assert c.epoch_for_offset(30) == 5
    assert c.epoch_for_offset(1000) == 5


def test_negative_values_refused():
    """assign refuses negative epochs or offsets (Kafka's IllegalArgumentException)."""
    with pytest.raises(ValueError):
        cache().assign(-1, 0)
    with pytest.raises(ValueError):
        cache().assign(0, -1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 100)), max_size=30),
       st.integers(-1, 110), st.integers(0, 110))
def test_cache_invariants(assigns, end, start):
    """Property: epochs and start offsets strictly increase after any sequence of assigns and
    truncations, and the latest assign is always the last entry."""
    c = LeaderEpochFileCache()
    for epoch, offset in assigns:
        c.assign(epoch, offset)
        last = c.entries()[-1]
        assert last.epoch == epoch and last.start_offset <= offset
    c.truncate_from_end(end)
    c.truncate_from_start(start)
    entries = c.entries()
    assert all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in zip(entries, entries[1:]))
    if entries and end >= 0:
        assert entries[-1].start_offset < max(end, start + 1)


def _batch(n):
    return build_batch([(b"k", b"v")] * n, timestamp_ms=1)


def test_log_truncation_truncates_the_cache():
    """UnifiedLogTest.testTruncateToEndOffsetClearsEpochCache / LeaderEpochIntegrationTest: the log's
    truncate_to trims the cache from the end, truncate_fully_and_start_at clears it."""
    log = UnifiedLog("t", 0)
    log.append_as_leader(_batch(2), 0)
    log.append_as_leader(_batch(2), 1)
    log.append_as_leader(_batch(2), 3)
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 2), (3, 4)]
    log.truncate_to(4)
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 2)]
    assert log.end_offset_for_epoch(1) == (1, 4)
    assert log.end_offset_for_epoch(3) == (-1, -1)
    log.truncate_fully_and_start_at(10)
    assert log.leader_epoch_cache.is_empty()


def test_log_start_offset_moves_trim_the_cache():
    """UnifiedLogTest.testLogStartOffsetMovementDeletesSnapshots's epoch part: raising the log start
    offset keeps the epoch covering it, re-started at the new log start."""
    log = UnifiedLog("t", 0)
    log.append_as_leader(_batch(2), 0)
    log.append_as_leader(_batch(2), 1)
    log.append_as_leader(_batch(2), 3)
    log.high_watermark = log.log_end_offset
    assert log.maybe_increment_log_start_offset(3)
    assert log.leader_epoch_cache.entries() == [(1, 3), (3, 4)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3), st.integers(0, 2)),
    st.tuples(st.just("delete"), st.integers(0, 40), st.just(0)),
    st.tuples(st.just("truncate"), st.integers(0, 40), st.just(0))), max_size=25))
def test_cache_follows_the_log(ops):
    """Property (LeaderEpochFileCacheTest's invariants seen through the log): after any mix of
    appends under rising epochs, log-start moves (DeleteRecords) and truncations, every retained
    batch's offset maps to the epoch that wrote it, and no entry starts past the LEO (one may
    start at it: the epoch covering a log start moved up to the LEO)."""
    from kafka_emu.broker.storage.record_batch import parse_batches

    log = UnifiedLog("t", 0)
    epoch = 0
    for op, a, b in ops:
        if op == "append":
            epoch += b
            log.append_as_leader(_batch(a), epoch)
            log.high_watermark = log.log_end_offset
        elif op == "delete":
            log.maybe_increment_log_start_offset(min(a, log.high_watermark))
        else:
            log.truncate_to(max(a, log.log_start_offset))
        cache = log.leader_epoch_cache
        for base, data in log.batches_from(log.log_start_offset):
            if base >= log.log_start_offset:
                assert cache.epoch_for_offset(base) == parse_batches(data)[0].leader_epoch
        assert all(log.log_start_offset <= e.start_offset <= log.log_end_offset for e in cache.entries())
