"""LogSegment, OffsetIndex and TimeIndex: Kafka's LogSegmentTest, OffsetIndexTest and TimeIndexTest
scenarios (storage module, tag 4.0.0) ported to the in-memory segment."""
import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.storage.log_segment import IndexFullError, LogSegment, OffsetIndex, TimeIndex
from kafka_emu.broker.storage.record_batch import build_batch, iter_records

pytestmark = pytest.mark.timeout(30)


def records(offset, *values, ts=0):
    """A batch at ``offset`` holding ``values`` (Kafka's ``v2Records`` helper)."""
    return build_batch([(None, v) for v in values], base_offset=offset, timestamp_ms=ts)


def append(seg, offset, *values, ts=0):
    data = records(offset, *values, ts=ts)
    seg.append(offset + len(values) - 1, ts, offset + len(values) - 1, data)
    return data


def offsets(data):
    return [o for o, _, _ in iter_records(data)]


# ---------------------------------------------------------------- LogSegmentTest

def test_read_on_empty_segment():
    """LogSegmentTest.testReadOnEmptySegment: nothing to read."""
    seg = LogSegment(40)
    assert seg.read(40, 300) is None


def test_read_before_first_offset():
    """LogSegmentTest.testReadBeforeFirstOffset: a read before the first offset starts at it."""
    seg = LogSegment(40)
    append(seg, 50, b"hello", b"there", b"little", b"bee")
    assert offsets(seg.read(41, 300)) == [50, 51, 52, 53]


def test_read_from_middle_of_batch():
    """LogSegmentTest.testReadFromMiddleOfBatch: the whole batch holding the offset is returned."""
    seg = LogSegment(40)
    append(seg, 50, b"hello", b"there", b"little", b"bee")
    assert offsets(seg.read(52, 300)) == [50, 51, 52, 53]


def test_read_after_last():
    """LogSegmentTest.testReadAfterLast: past the last offset there is nothing."""
    seg = LogSegment(40)
    append(seg, 50, b"hello", b"there")
    assert seg.read(52, 200) is None


def test_read_from_gap():
    """LogSegmentTest.testReadFromGap: a read inside a gap returns the next batch."""
    seg = LogSegment(40)
    append(seg, 50, b"hello", b"there")
    append(seg, 60, b"alpha", b"beta")
    assert offsets(seg.read(55, 200)) == [60, 61]


def test_read_when_no_max_position_and_size_limits():
    """LogSegmentTest.testReadWhenNoMaxPosition: max size 0 gives nothing unless min one message."""
    seg = LogSegment(40)
    append(seg, 50, b"hello", b"there")
    assert seg.read(50, 0, min_one_message=False) == b""
    assert offsets(seg.read(50, 0, min_one_message=True)) == [50, 51]
    assert seg.read(50, 100, max_offset=50) == b""


def test_truncate():
    """LogSegmentTest.testTruncate: truncating removes the batch holding the offset and later ones."""
    seg = LogSegment(40)
    offset = 40
    for i in range(30):
        append(seg, offset, b"hello", b"there")
        assert seg.truncate_to(offset + 1) > 0   # the whole batch [offset, offset+1] goes
        assert seg.read(offset, 1000) is None
        append(seg, offset, b"hello", b"there")
        offset += 2
    assert seg.next_offset == offset


def test_truncate_empty_segment():
    """LogSegmentTest.testTruncateEmptySegment: truncating an empty segment is a no-op."""
    seg = LogSegment(0)
    assert seg.truncate_to(0) == 0 and seg.size == 0


def test_reload_largest_timestamp_and_next_offset_after_truncation():
    """LogSegmentTest.testReloadLargestTimestampAndNextOffsetAfterTruncation."""
    seg = LogSegment(40, index_interval_bytes=1)
    for i in range(10):
        append(seg, 40 + i * 2, b"a", b"b", ts=1000 + i)
    seg.truncate_to(50)
    assert seg.next_offset == 50
    assert seg.max_timestamp_so_far == 1004 and seg.offset_of_max_timestamp_so_far == 49


def test_truncate_full():
    """LogSegmentTest.testTruncateFull: truncating to the base offset empties the segment."""
    seg = LogSegment(40)
    append(seg, 40, b"hello", b"there")
    seg.truncate_to(0)
    assert seg.size == 0 and seg.read(0, 1024) is None and seg.rolling_based_timestamp is None
    append(seg, 40, b"hello", b"there")
    assert seg.next_offset == 42


def test_find_offset_by_timestamp_uses_time_index():
    """LogSegmentTest.testFindOffsetByTimestamp (index part): the time index points near the answer."""
    seg = LogSegment(40, index_interval_bytes=1)
    for i in range(10):
        append(seg, 40 + i, b"x", ts=100 + i * 10)
    ts, off = seg.time_index.lookup(125)
    assert ts <= 125 and off <= 42
    assert seg.time_index.lookup(10) == (-1, 40)


def test_next_offset_calculation():
    """LogSegmentTest.testNextOffsetCalculation."""
    seg = LogSegment(40)
    assert seg.next_offset == 40
    append(seg, 50, b"hello", b"there", b"you")
    assert seg.next_offset == 53


def test_get_first_batch_timestamp():
    """LogSegmentTest.testGetFirstBatchTimestamp: the rolling timestamp is the first append's."""
    seg = LogSegment(1)
    assert seg.first_batch_timestamp() is None
    append(seg, 1, b"a", ts=1000)
    append(seg, 2, b"b", ts=2000)
    assert seg.first_batch_timestamp() == 1000


def test_index_entries_every_interval_bytes():
    """LogSegment.append: an index entry once more than index.interval.bytes were appended."""
    batch_size = len(records(0, b"x" * 100))
    seg = LogSegment(0, index_interval_bytes=batch_size * 2)
    for i in range(10):
        append(seg, i, b"x" * 100)
    # first entry at the 4th append (3 batches > 2 batch sizes), then every 3rd
    assert seg.offset_index.entries == 3
    for i in range(10):
        assert offsets(seg.read(i, 1, min_one_message=True)) == [i]


def test_should_roll_on_size_time_and_offset_overflow():
    """LogSegment.shouldRoll: size, age by record time (minus jitter), offset overflow."""
    seg = LogSegment(0, roll_jitter_ms=10, created_ms=0)
    assert not seg.should_roll(100, 0, 0, now_ms=10**9, segment_bytes=1000, segment_ms=50)  # empty
    append(seg, 0, b"x", ts=1000)
    assert seg.should_roll(seg.size + 1, 1000, 1, 0, segment_bytes=2 * seg.size, segment_ms=10**9)
    assert not seg.should_roll(1, 1039, 1, 0, segment_bytes=10**6, segment_ms=50)
    assert seg.should_roll(1, 1041, 1, 0, segment_bytes=10**6, segment_ms=50)
    assert seg.should_roll(1, 1000, 1 << 31, 0, segment_bytes=10**6, segment_ms=10**9)


# ---------------------------------------------------------------- OffsetIndexTest

def test_offset_index_lookup_extreme_cases():
    """OffsetIndexTest.lookupExtremeCases: below the first entry -> (base, 0); above -> last."""
    idx = OffsetIndex(45, 30 * 8)
    assert idx.lookup(idx.base_offset) == (45, 0)
    for i in range(idx.max_entries):
        idx.append(idx.base_offset + i + 1, i)
    assert idx.lookup(idx.base_offset) == (45, 0)
    assert idx.lookup(idx.base_offset + idx.max_entries + 5) == (45 + idx.max_entries, idx.max_entries - 1)


def test_offset_index_append_too_many_and_out_of_order():
    """OffsetIndexTest.appendTooMany and appendOutOfOrder."""
    idx = OffsetIndex(0, 3 * 8)
    for i in range(3):
        idx.append(i + 1, i)
    with pytest.raises(IndexFullError):
        idx.append(10, 10)
    idx2 = OffsetIndex(0, 100)
    idx2.append(51, 0)
    with pytest.raises(ValueError):
        idx2.append(50, 1)


def test_offset_index_truncate():
    """OffsetIndexTest.truncate: an exact match and everything after it goes."""
    idx = OffsetIndex(0, 10 * 8)
    for i in range(1, 10):
        idx.append(i, i)
    idx.truncate_to(12)
    assert idx.lookup(10) == (9, 9)
    idx.truncate_to(9)
    assert idx.lookup(10) == (8, 8)
    idx.truncate_to(5)
    assert idx.lookup(10) == (4, 4)
    idx.truncate_to(0)
    assert idx.lookup(10) == (0, 0) and idx.entries == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=1, max_size=200, unique=True))
def test_offset_index_random_lookup(offs):
    """OffsetIndexTest.randomLookupTest: lookup gives the largest entry <= target."""
    offs = sorted(offs)
    idx = OffsetIndex(0, 10000)
    for i, o in enumerate(offs):
        idx.append(o, i * 10)
    for target in range(0, 1002, 7):
        smaller = [(o, i * 10) for i, o in enumerate(offs) if o <= target]
        assert idx.lookup(target) == (smaller[-1] if smaller else (0, 0))


# ---------------------------------------------------------------- TimeIndexTest

def test_time_index_lookup_and_append_rules():
    """TimeIndexTest.testLookUp and testAppend: equal timestamps ignored, decreasing refused."""
    idx = TimeIndex(45, 30 * 12)
    assert idx.lookup(100) == (-1, 45)
    for i in range(1, 10):
        idx.maybe_append(i * 10, i * 10 + 45)
    idx.maybe_append(90, 200)     # equal timestamp: ignored
    assert idx.entries == 9
    with pytest.raises(ValueError):
        idx.maybe_append(5, 300)
    assert idx.lookup(95) == (90, 135)
    assert idx.lookup(5) == (-1, 45)
    assert idx.last_entry() == (90, 135)


def test_time_index_is_full_keeps_last_slot():
    """TimeIndexTest.testIsFull: the last slot is reserved for the inactive-segment entry."""
    idx = TimeIndex(0, 3 * 12)
    idx.maybe_append(1, 1)
    assert not idx.is_full()
    idx.maybe_append(2, 2)
    assert idx.is_full()
    with pytest.raises(IndexFullError):
        idx.maybe_append(3, 3)
    idx.maybe_append(3, 3, skip_full_check=True)
    assert idx.last_entry() == (3, 3)


def test_time_index_truncate():
    """TimeIndexTest.testTruncate."""
    idx = TimeIndex(0, 100 * 12)
    for i in range(1, 10):
        idx.maybe_append(i * 10, i)
    idx.truncate_to(5)
    assert idx.last_entry() == (40, 4)
    idx.truncate_to(0)
    assert idx.last_entry() == (-1, 0)


def test_read_bounded_by_max_offset_at_an_index_entry():
    """A read whose upper bound (the HW or LEO) is exactly an indexed batch still returns the
    batches before it (the bound's index entry must not hide them)."""
    seg = LogSegment(0, index_interval_bytes=1)
    for i in range(10):
        append(seg, i, b"x" * 100)
    assert seg.offset_index.entries > 5
    for i in range(9):
        assert offsets(seg.read(i, 1 << 20, max_offset=i + 1)) == [i]
        assert offsets(seg.read(0, 1 << 20, max_offset=i + 1)) == list(range(i + 1))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=40), st.integers(0, 2000), st.data())
def test_read_returns_whole_batches_within_bounds(sizes, interval, data):
    """Property: a read from any offset with any size and upper bound returns exactly the whole
    batches from the one holding the offset, below the bound, within the size (at least one)."""
    seg = LogSegment(0, index_interval_bytes=interval)
    for i, n in enumerate(sizes):
        append(seg, i, b"x" * n)
    start = data.draw(st.integers(0, len(sizes) - 1))
    bound = data.draw(st.integers(start + 1, len(sizes)))
    max_size = data.draw(st.integers(0, 20_000))
    got = offsets(seg.read(start, max_size, max_offset=bound))
    expect, size = [], 0
    for i in range(start, bound):
        n = len(records(i, b"x" * sizes[i]))
        if expect and size + n > max_size:
            break
        expect.append(i)
        size += n
    assert got == expect


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 200)), min_size=1, max_size=160),
       st.integers(0, 3000), st.data())
def test_translate_offset_finds_the_holding_batch(batches, interval, data):
    """Property: whether the offset lies among the recent appends (a scan from that append) or
    further back (the sparse index, then a scan), ``translate_offset`` returns the batch holding
    it, also after a truncation, more appends and an index rebuild (compaction's)."""
    seg = LogSegment(0, index_interval_bytes=interval)
    spans = []   # (base, last) of every stored batch

    def add(count, size):
        base = spans[-1][1] + 1 if spans else 0
        seg.append(base + count - 1, 0, base + count - 1,
                   build_batch([(None, b"x" * size)] * count, base_offset=base))
        spans.append((base, base + count - 1))

    def check():
        for base, last in spans:
            offset = data.draw(st.integers(base, last))
            h = seg.translate_offset(offset)
            assert (h.base_offset, h.last_offset) == (base, last)
        assert seg.translate_offset(spans[-1][1] + 1 if spans else 0) is None

    for count, size in batches:
        add(count, size)
    check()
    cut = data.draw(st.integers(0, len(spans) - 1))
    seg.truncate_to(spans[cut][0])
    del spans[cut:]
    check()
    for count, size in batches[:data.draw(st.integers(0, len(batches)))]:
        add(count, size)
    check()
    seg.rebuild_indexes()
    check()
