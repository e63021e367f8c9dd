"""LogCleaner: Kafka's LogCleanerTest and LogCleanerManagerTest scenarios (tag 4.0.0) ported, on
MockTime: keys kept, tombstones, offsets preserved, dirty ratio, compaction lag, active segment."""
import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.storage import compression
from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.storage.log_cleaner import LogCleaner
from kafka_emu.broker.storage.log_manager import LogManager
from kafka_emu.broker.storage.record_batch import iter_records
from kafka_emu.timer.time import MockTime

from log_batches import compressed_batch

pytestmark = pytest.mark.timeout(60)


def setup(time=None, **configs):
    time = time or MockTime()
    manager = LogManager(KafkaConfig(), time=time)
    configs.setdefault("cleanup.policy", "compact")
    log = manager.get_or_create_log(("t", 0), configs)
    return manager, log, LogCleaner(manager, backoff_ms=15000, time=time), time


def put(log, key, value, time, codec=compression.NONE):
    k = None if key is None else str(key).encode()
    v = None if value is None else str(value).encode()
    log.append_as_leader(compressed_batch(codec, [(k, v)], [time.milliseconds()]), 0)


def contents(log):
    """[(offset, key, value)] of every record in the log, decompressing where needed."""
    out = []
    for seg in log.segments:
        for h in seg.batches():
            data = seg.batch_bytes(h)
            out.extend(_records(data))
    return out


def _records(data):
    import struct
    from kafka_emu.broker.storage.log_validator import records_payload, walk_records

    base = struct.unpack_from(">q", data, 0)[0]
    attrs = struct.unpack_from(">h", data, 21)[0]
    count = struct.unpack_from(">i", data, 57)[0]
    payload = records_payload(data, attrs)
    out = []
    for r in walk_records(payload, count):
        key = bytes(payload[r.key_start:r.key_start + r.key_length]) if r.key_length >= 0 else None
        vstart = r.end - 1 - max(r.value_length, 0)  # headers count (0) is the last byte
        value = bytes(payload[vstart:vstart + r.value_length]) if r.value_length >= 0 else None
        out.append((base + r.offset_delta, key, value))
    return out


def latest_per_key(records):
    out = {}
    for off, k, v in records:
        out[k] = (off, v)
    return out


def commit(log):
    log.high_watermark = log.log_end_offset


def test_clean_segments_keeps_latest_value_per_key_and_offsets():
    """LogCleanerTest.testCleanSegments: the latest record of every key survives with its offset;
    the active segment is not touched."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300})
    for i in range(60):
        put(log, i % 5, i, time)
    commit(log)
    before = contents(log)
    active_before = log.active_segment.batch_bytes(next(log.active_segment.batches()))
    assert cleaner.clean_filthiest_log()
    after = contents(log)
    assert latest_per_key(after) == latest_per_key(before)
    active_offsets = {h.base_offset for h in log.active_segment.batches()}
    cleaned = [r for r in after if r[0] not in active_offsets]
    assert len({k for _, k, _ in cleaned}) == len(cleaned)        # one per key below the active segment
    assert [o for o, _, _ in after] == sorted(o for o, _, _ in after)
    assert log.log_end_offset == 60
    assert log.active_segment.batch_bytes(next(log.active_segment.batches())) == active_before


def test_reads_after_compaction_skip_gaps():
    """Offsets keep their values: a fetch in a gap starts at the next kept record."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300})
    for i in range(30):
        put(log, i % 3, i, time)
    commit(log)
    cleaner.clean_filthiest_log()
    first = [o for o, _, _ in iter_records(log.read(0, 1 << 20))]
    assert first and first[0] > 0 and all(o < 30 for o in first)


def test_tombstones_removed_after_delete_retention():
    """LogCleanerTest.testDeleteRetention... : a tombstone survives delete.retention.ms after its
    segment was written, then goes with the key."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300, "delete.retention.ms": 1000,
                                           "min.cleanable.dirty.ratio": 0.01})
    for i in range(20):
        put(log, i % 2, i, time)
    put(log, 0, None, time)                     # delete key 0
    for i in range(20):
        put(log, 1, 100 + i, time)
    commit(log)
    assert cleaner.clean_filthiest_log()
    below_active = [r for r in contents(log) if r[0] < log.active_segment.base_offset]
    assert (b"0", None) in [(k, v) for _, k, v in below_active]   # still there
    time.advance(5000)
    for i in range(20):
        put(log, 1, 200 + i, time)
    commit(log)
    assert cleaner.clean_filthiest_log()
    assert b"0" not in {k for _, k, _ in contents(log)}


def test_dirty_ratio_and_min_cleanable_ratio():
    """LogCleanerManagerTest: the ratio is dirty / (clean + dirty); below min.cleanable.dirty.ratio
    nothing is cleaned."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300, "min.cleanable.dirty.ratio": 0.99})
    for i in range(40):
        put(log, i % 4, i, time)
    commit(log)
    c = cleaner.cleanable(log, time.milliseconds())
    assert c.clean_bytes == 0 and c.cleanable_bytes == sum(s.size for s in log.segments[:-1])
    assert c.cleanable_ratio == 1.0
    assert cleaner.clean_filthiest_log()      # 1.0 > 0.99
    for i in range(4):
        put(log, i, i, time)
    commit(log)
    c = cleaner.cleanable(log, time.milliseconds())
    assert c.first_dirty_offset > 0 and c.cleanable_ratio < 0.99
    assert not cleaner.clean_filthiest_log()


def test_uncommitted_segments_are_not_cleaned():
    """LogCleanerManagerTest.testCleanableOffsetsForShortTime..: nothing at or above the HW."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300})
    for i in range(40):
        put(log, i % 4, i, time)
    c = cleaner.cleanable(log, time.milliseconds())
    assert c.cleanable_bytes == 0 and not cleaner.clean_filthiest_log()


def test_min_compaction_lag():
    """LogCleanerManagerTest.testCleanableOffsetsForTime: segments newer than min.compaction.lag.ms wait."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300, "min.compaction.lag.ms": 10_000})
    for i in range(40):
        put(log, i % 4, i, time)
    commit(log)
    assert not cleaner.clean_filthiest_log()
    time.advance(20_000)
    put(log, 9, 9, time)
    commit(log)
    assert cleaner.clean_filthiest_log()


def test_max_compaction_lag_forces_cleaning_below_min_ratio():
    """LogCleanerManagerTest: a dirty segment older than max.compaction.lag.ms is cleaned even
    below min.cleanable.dirty.ratio."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300, "min.cleanable.dirty.ratio": 1.0,
                                           "max.compaction.lag.ms": 1000})
    for i in range(40):
        put(log, i % 4, i, time)
    commit(log)
    assert not cleaner.clean_filthiest_log()   # ratio 1.0 is not > 1.0
    time.advance(5000)
    assert cleaner.clean_filthiest_log()


def test_delete_only_logs_are_not_cleaned():
    manager, log, cleaner, time = setup(**{"segment.bytes": 300, "cleanup.policy": "delete"})
    for i in range(40):
        put(log, i % 4, i, time)
    commit(log)
    assert not cleaner.clean_filthiest_log()


@pytest.mark.parametrize("codec", [compression.GZIP, compression.LZ4])
def test_compressed_batches_rebuilt_with_their_codec(codec):
    """LogCleanerTest (compressed messages): partially removed batches keep their codec."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 600})
    for i in range(20):
        log.append_as_leader(compressed_batch(codec, [(b"a", b"%d" % i), (b"b%d" % i, b"x")],
                                              [time.milliseconds()] * 2), 0)
    commit(log)
    before = contents(log)
    cleaner.clean_filthiest_log()
    assert latest_per_key(contents(log)) == latest_per_key(before)
    for seg in log.segments:
        for h in seg.batches():
            assert seg.batch_bytes(h)[22] & 7 == codec


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.one_of(st.none(), st.integers(0, 1000))), min_size=1, max_size=120),
       st.integers(150, 800))
def test_latest_value_of_every_key_survives(ops, segment_bytes):
    """Property (LogCleanerIntegrationTest's invariant): after any number of cleanings, reading
    the log gives the same latest value per key as before (tombstones within delete.retention.ms
    still count as values), offsets are increasing, LEO and HW unchanged."""
    manager, log, cleaner, time = setup(**{"segment.bytes": segment_bytes, "min.cleanable.dirty.ratio": 0.01})
    for key, value in ops:
        put(log, key, value, time)
    commit(log)
    expected = {k: v for k, (_, v) in latest_per_key(contents(log)).items()}
    for _ in range(3):
        cleaner.clean_filthiest_log()
    got = contents(log)
    assert {k: v for k, (_, v) in latest_per_key(got).items()} == expected
    assert [o for o, _, _ in got] == sorted({o for o, _, _ in got})
    assert log.log_end_offset == len(ops) == log.high_watermark


def test_failed_cleaning_marks_partition_uncleanable_and_metrics():
    """LogCleanerManagerTest.testMarkPartitionUncleanable / LogCleanerTest metrics: a log whose
    cleaning raises is skipped from then on (``uncleanable-partitions-count``) until it is
    deleted; a good cleaning reports ``cleaner-recopy-percent`` and ``max-dirty-percent``."""
    manager, log, cleaner, time = setup(**{"segment.bytes": 300})
    for i in range(30):
        put(log, i % 3, i, time)
    commit(log)
    assert cleaner.snapshot().uncleanable_partitions_count == 0
    time.advance(5000)
    assert cleaner.clean_filthiest_log()
    snap = cleaner.snapshot()
    assert 0 < snap.cleaner_recopy_percent < 100 and snap.max_dirty_percent > 50
    assert snap.time_since_last_run_ms == 0 and snap.max_clean_time_secs == 0
    time.advance(5000)
    assert cleaner.snapshot().time_since_last_run_ms == 5000

    for i in range(30):
        put(log, i % 3, i, time)
    commit(log)
    dirty = log.segments[-2]
    dirty.records[61] = 0x7F        # first record of its first batch: length -64, cleaning raises
    before = [bytes(s.records) for s in log.segments]
    assert not cleaner.clean_filthiest_log()
    assert cleaner.snapshot().uncleanable_partitions_count == 1
    assert [bytes(s.records) for s in log.segments] == before       # left as it was
    assert cleaner.grab_filthiest_compacted_log(time.milliseconds()) is None   # skipped from now on
    cleaner.remove_log(("t", 0))
    assert cleaner.snapshot().uncleanable_partitions_count == 0
