"""UnifiedLog (segments, rolling, retention, log start offset, truncation): Kafka's UnifiedLogTest and
LocalLogTest scenarios (tag 4.0.0) ported, on MockTime."""
import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_manager import LogManager
from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.storage.record_batch import build_batch, iter_records
from kafka_emu.timer.time import MockTime

pytestmark = pytest.mark.timeout(30)


def make_log(time=None, **configs):
    return UnifiedLog("t", 0, config=LogConfig.for_topic(configs), time=time or MockTime())


NOW = MockTime().milliseconds()


def batch(*values, ts=NOW, key=b"k", **kw):
    return build_batch([(key, v) for v in values], timestamp_ms=ts, **kw)


def offsets(data):
    return [o for o, _, _ in iter_records(data)]


def commit(log):
    log.high_watermark = log.log_end_offset


def test_size_based_log_roll():
    """UnifiedLogTest.testSizeBasedLogRoll: a segment rolls when the next append would pass segment.bytes."""
    size = len(batch(b"x" * 100))
    log = make_log(**{"segment.bytes": size * 3})
    for _ in range(7):
        log.append_as_leader(batch(b"x" * 100), 0)
    assert log.num_segments() == 3
    assert [s.base_offset for s in log.segments] == [0, 3, 6]


def test_time_based_log_roll_during_append():
    """UnifiedLogTest.testTimeBasedLogRollDuringAppend: a record newer than segment.ms after the
    segment's first record rolls it (record time, not wall time)."""
    time = MockTime()
    log = make_log(time, **{"segment.ms": 1000})
    log.append_as_leader(batch(b"a", ts=5000), 0)
    log.append_as_leader(batch(b"b", ts=5999), 0)
    assert log.num_segments() == 1
    log.append_as_leader(batch(b"c", ts=6001), 0)
    assert log.num_segments() == 2
    time.advance(10_000)
    log.append_as_leader(batch(b"d", ts=6002), 0)   # wall time alone does not roll
    assert log.num_segments() == 2


def test_time_based_log_roll_jitter():
    """UnifiedLogTest.testTimeBasedLogRollJitter: the jitter is below min(segment.jitter.ms, segment.ms)."""
    log = make_log(**{"segment.ms": 1000, "segment.jitter.ms": 500})
    assert 0 <= log.active_segment.roll_jitter_ms < 500


def test_message_set_size_check():
    """UnifiedLogTest.testMessageSetSizeCheck: a batch larger than max.message.bytes is refused."""
    big = batch(b"x" * 1000)
    log = make_log(**{"max.message.bytes": len(big) - 1})
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(big, 0)
    assert info.value.code == Errors.MESSAGE_TOO_LARGE and log.log_end_offset == 0


def test_record_list_larger_than_segment_is_refused():
    """UnifiedLog.append: a record set larger than segment.bytes is RECORD_LIST_TOO_LARGE."""
    big = batch(b"x" * 1000)
    log = make_log(**{"segment.bytes": len(big) - 1})
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(big, 0)
    assert info.value.code == Errors.RECORD_LIST_TOO_LARGE


def test_compacted_topic_constraints():
    """UnifiedLogTest.testCompactedTopicConstraints: keyless records refused on a compacted topic."""
    log = make_log(**{"cleanup.policy": "compact"})
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(batch(b"v", key=None), 0)
    assert info.value.code == Errors.INVALID_RECORD and "without key" in info.value.message
    log.append_as_leader(batch(b"v"), 0)


def test_append_and_read_with_sequential_offsets_across_segments():
    """UnifiedLogTest.testAppendAndReadWithSequentialOffsets: every offset readable in any segment."""
    size = len(batch(b"x" * 50))
    log = make_log(**{"segment.bytes": size * 4, "index.interval.bytes": 1})
    for _ in range(50):
        log.append_as_leader(batch(b"x" * 50), 0)
    assert log.num_segments() > 10
    for off in range(50):
        assert offsets(log.read(off, 1))[0] == off
    assert offsets(log.read(10, 10 * size)) == [10, 11]   # one segment per read: [8, 12)


def test_read_out_of_range_and_log_start_offset():
    """UnifiedLogTest.testReadOutOfRange / testThatGarbageCollectingSegmentsDoesntChangeOffset:
    deleting segments moves the log start offset; LEO and HW keep their values."""
    size = len(batch(b"x" * 50))
    log = make_log(**{"segment.bytes": size * 2, "retention.bytes": size * 4})
    for _ in range(10):
        log.append_as_leader(batch(b"x" * 50), 0)
    commit(log)
    deleted = log.delete_old_segments()
    assert deleted == 3 * size * 2
    assert log.log_start_offset == 6 and log.log_end_offset == 10 and log.high_watermark == 10
    assert offsets(log.read(6, 1)) == [6]


def test_retention_by_time_uses_largest_timestamp_and_keeps_uncommitted():
    """UnifiedLogTest time retention: segments whose largest timestamp is older than retention.ms
    go, oldest first, never beyond the HW."""
    time = MockTime(start_ms=1_000_000)
    log = make_log(time, **{"segment.ms": 100, "retention.ms": 1000})
    for ts in (1000, 1200, 1400, 1600):
        log.append_as_leader(batch(b"x", ts=ts), 0)
    assert log.num_segments() == 4
    log.high_watermark = 2
    assert log.delete_old_segments(now_ms=2500) > 0        # 1000 and 1200 are past 1000 ms
    assert log.log_start_offset == 2 and log.num_segments() == 2
    assert log.delete_old_segments(now_ms=100_000) == 0     # the rest is not below the HW
    commit(log)
    log.delete_old_segments(now_ms=100_000)
    # every segment was due: Kafka rolls an empty active segment at the LEO first
    assert log.log_start_offset == log.log_end_offset == 4 and log.num_segments() == 1
    assert log.active_segment.is_empty() and log.read(4, 100) == b""


def test_retention_disabled_with_minus_one():
    log = make_log(**{"segment.ms": 1, "retention.ms": -1, "retention.bytes": -1})
    for ts in (1, 2, 3):
        log.append_as_leader(batch(b"x", ts=ts), 0)
    commit(log)
    assert log.delete_old_segments(now_ms=10**12) == 0


def test_compact_only_log_keeps_segments_on_retention():
    """A compact-only log loses only segments below its log start offset to retention."""
    log = make_log(**{"cleanup.policy": "compact", "segment.ms": 1, "retention.ms": 1})
    for ts in (1, 2, 3):
        log.append_as_leader(batch(b"x", ts=ts), 0)
    commit(log)
    assert log.delete_old_segments(now_ms=10**12) == 0
    log.maybe_increment_log_start_offset(2)
    assert log.delete_old_segments(now_ms=10**12) > 0 and log.segments[0].base_offset == 2


def test_retention_idempotency():
    """UnifiedLogTest.testRetentionIdempotency: a second pass deletes nothing more."""
    size = len(batch(b"x"))
    log = make_log(**{"segment.bytes": size, "retention.bytes": size * 2})
    for _ in range(5):
        log.append_as_leader(batch(b"x"), 0)
    commit(log)
    assert log.delete_old_segments() > 0
    assert log.delete_old_segments() == 0


def test_producer_id_expiration_on_segment_deletion():
    """UnifiedLogTest.testProducerIdExpirationOnSegmentDeletion: a producer whose batches all
    lie below the new log start offset is forgotten."""
    size = len(batch(b"x", producer_id=1, producer_epoch=0, base_sequence=0))
    log = make_log(**{"segment.bytes": size, "retention.bytes": size})
    log.append_as_leader(batch(b"x", producer_id=1, producer_epoch=0, base_sequence=0), 0)
    log.append_as_leader(batch(b"x", producer_id=2, producer_epoch=0, base_sequence=0), 0)
    commit(log)
    log.delete_old_segments()
    assert set(log.producers) == {2}


def test_truncate_to_across_segments():
    """UnifiedLogTest.testTruncateTo: truncation removes later segments and part of one."""
    size = len(batch(b"x"))
    log = make_log(**{"segment.bytes": size * 2})
    for _ in range(10):
        log.append_as_leader(batch(b"x"), 0)
    assert log.num_segments() == 5
    assert log.truncate_to(5)
    assert log.log_end_offset == 5 and log.num_segments() == 3
    assert log.truncate_to(4)   # exactly at a segment base: that segment is emptied
    assert log.log_end_offset == 4 and log.active_segment.base_offset == 4 and log.active_segment.is_empty()
    log.append_as_leader(batch(b"y"), 0)
    assert offsets(log.read(4, 100)) == [4]


def test_truncate_fully_and_start_at():
    """UnifiedLogTest.testTruncateFullyAndStart: everything goes, start, LEO and HW at the new offset."""
    log = make_log()
    log.append_as_leader(batch(b"x", b"y"), 0)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert log.num_segments() == 1 and log.active_segment.base_offset == 100


def test_follower_takes_leader_log_start_offset():
    """A follower's log start offset follows the leader's (never beyond its own HW) and its
    segments below it go at the next retention check."""
    size = len(batch(b"x"))
    leader = make_log(**{"segment.bytes": size})
    for _ in range(4):
        leader.append_as_leader(batch(b"x"), 0)
    follower = make_log(**{"segment.bytes": size})
    follower.append_as_follower(leader.read(0, 1 << 20, min_one_batch=True))
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 1 << 20))
    follower.high_watermark = 2
    assert follower.maybe_increment_log_start_offset(3)
    assert follower.log_start_offset == 2           # clamped to the HW
    follower.high_watermark = 4
    follower.maybe_increment_log_start_offset(3)
    assert follower.delete_old_segments() > 0 and follower.segments[0].base_offset == 3


def test_fetch_offset_by_timestamp_across_segments_and_compressed():
    """UnifiedLogTest.testFetchOffsetByTimestampIncludesLeaderEpoch (offsets part), with a
    compressed batch answered at record granularity."""
    from kafka_emu.broker.storage import compression
    from log_batches import compressed_batch

    log = make_log(**{"segment.ms": 10, "index.interval.bytes": 1})
    log.append_as_leader(batch(b"a", ts=100), 0)
    log.append_as_leader(compressed_batch(compression.GZIP, [(b"k", b"b"), (b"k", b"c")], [200, 300]), 0)
    log.append_as_leader(batch(b"d", ts=400), 0)
    commit(log)
    assert log.fetch_offset_by_timestamp(250, log.high_watermark) == (2, 300)
    assert log.fetch_offset_by_timestamp(50, log.high_watermark) == (0, 100)
    assert log.fetch_offset_by_timestamp(500, log.high_watermark) == (-1, -1)
    assert log.fetch_offset_of_max_timestamp(log.high_watermark) == (3, 400)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 100), min_size=1, max_size=60), st.integers(200, 2000), st.integers(0, 4000))
def test_invariants_under_appends_and_retention(sizes, segment_bytes, retention_bytes):
    """Property: log start <= HW <= LEO; every offset from the log start reads back; the bytes
    kept never exceed retention.bytes by more than one segment."""
    log = make_log(**{"segment.bytes": segment_bytes, "retention.bytes": retention_bytes})
    for n in sizes:
        log.append_as_leader(batch(b"x" * n), 0)
    commit(log)
    log.delete_old_segments()
    assert log.log_start_offset <= log.high_watermark <= log.log_end_offset
    assert log.size_bytes <= retention_bytes + segment_bytes
    for off in range(log.log_start_offset, log.log_end_offset):
        assert offsets(log.read(off, 1))[0] == off
    assert [s.base_offset for s in log.segments] == sorted(s.base_offset for s in log.segments)


def test_log_manager_memory_budget_deletes_from_largest_partitions(caplog):
    """The emulator's memory budget: the largest logs lose their oldest committed segments
    (rolled first when one full segment is all they have), with a WARN naming them."""
    from structlog.testing import capture_logs

    config = KafkaConfig({"emulator.log.memory.max.bytes": 5000})
    manager = LogManager(config, time=MockTime())
    big = manager.get_or_create_log(("big", 0))
    small = manager.get_or_create_log(("small", 0))
    for _ in range(40):
        big.append_as_leader(batch(b"x" * 200), 0)
    small.append_as_leader(batch(b"x" * 200), 0)
    commit(big)
    commit(small)
    with capture_logs() as logs:
        deleted = manager.enforce_memory_budget()
    assert deleted > 0 and manager.memory_budget_deleted_bytes == deleted
    assert manager.total_size_bytes() <= 5000
    assert big.log_start_offset == 40 and small.log_start_offset == 0
    warn = [e for e in logs if e["event"] == "log_memory_budget_exceeded"]
    assert warn and warn[0]["log_level"] == "warning" and "big-0" in warn[0]["partitions"]


def test_log_manager_delete_log_drops_data():
    manager = LogManager(KafkaConfig(), time=MockTime())
    log = manager.get_or_create_log(("t", 0))
    log.append_as_leader(batch(b"x" * 1000), 0)
    assert manager.delete_log(("t", 0)) is log
    assert log.size_bytes == 0 and manager.get_log(("t", 0)) is None


def test_deleted_topic_metrics_series_go():
    """Topic deletion removes the topic's BrokerTopicStats series (Kafka's removeMetrics)."""
    from kafka_emu.broker.server.stats import BrokerTopicStats

    stats = BrokerTopicStats()
    stats.record_bytes_in("gone", 3, 300)
    stats.record_bytes_in("kept", 1, 100)
    stats.record_bytes_out("gone", 50)
    stats.remove_topic("gone")
    assert set(stats.snapshot().topics) == {"kept"}


def test_in_memory_log_runs_retention_at_each_roll():
    """Memory that follows retention (issue 29): an in-memory log of a LogManager deletes what
    retention.bytes allows at each roll, without waiting for the kafka-log-retention task, and
    the manager counts the bytes; idempotent producer state survives the deletions (a retried
    last batch is still a duplicate)."""
    size = len(batch(b"x" * 100, producer_id=7, producer_epoch=0, base_sequence=0))
    manager = LogManager(KafkaConfig(), time=MockTime())
    log = manager.get_or_create_log(("t", 0), {"segment.bytes": size * 2, "retention.bytes": size * 4})
    for seq in range(40):
        log.append_as_leader(batch(b"x" * 100, producer_id=7, producer_epoch=0, base_sequence=seq), 0)
        commit(log)
    assert log.size_bytes <= size * 4 + size * 2 * 2
    assert log.log_start_offset > 0 and manager.retention_deleted_bytes == 40 * size - log.size_bytes
    retried = log.append_as_leader(batch(b"x" * 100, producer_id=7, producer_epoch=0, base_sequence=39), 0)
    assert retried.duplicate and retried.first_offset == 39


def test_roll_retention_keeps_what_is_not_committed():
    """Retention at a roll deletes only segments wholly below the HW, as the task does."""
    size = len(batch(b"x" * 100))
    manager = LogManager(KafkaConfig(), time=MockTime())
    log = manager.get_or_create_log(("t", 0), {"segment.bytes": size * 2, "retention.bytes": size * 2})
    for _ in range(20):
        log.append_as_leader(batch(b"x" * 100), 0)
    assert log.log_start_offset == 0 and log.size_bytes == 20 * size
    commit(log)
    log.append_as_leader(batch(b"x" * 100), 0)   # rolls: now the committed segments may go
    assert log.log_start_offset > 0 and log.size_bytes <= size * 2 + size * 2


def test_restarted_log_manager_takes_over_roll_retention():
    """A restarted broker's LogManager, handed the logs kept in memory, counts their roll-time
    deletions (the old manager no longer does)."""
    size = len(batch(b"x" * 100))
    logs = {}
    first = LogManager(KafkaConfig(), logs, time=MockTime())
    log = first.get_or_create_log(("t", 0), {"segment.bytes": size, "retention.bytes": size})
    second = LogManager(KafkaConfig(), logs, time=MockTime())
    for _ in range(5):
        log.append_as_leader(batch(b"x" * 100), 0)
        commit(log)
    assert second.retention_deleted_bytes > 0 and first.retention_deleted_bytes == 0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 100), min_size=1, max_size=60), st.integers(200, 2000), st.integers(0, 4000))
def test_roll_retention_bounds_the_log(sizes, segment_bytes, retention_bytes):
    """Property: with every append committed, an in-memory log of a LogManager never holds more
    than retention.bytes plus two segments, whatever it was sent; every offset from the log
    start reads back."""
    manager = LogManager(KafkaConfig(), time=MockTime())
    log = manager.get_or_create_log(("t", 0), {"segment.bytes": segment_bytes, "retention.bytes": retention_bytes})
    for n in sizes:
        log.append_as_leader(batch(b"x" * n), 0)
        commit(log)
        assert log.size_bytes <= retention_bytes + 2 * segment_bytes
    for off in range(log.log_start_offset, log.log_end_offset):
        assert offsets(log.read(off, 1))[0] == off
