"""Message formats v0/v1 (``broker.storage.legacy_records``) against kafka-python's record classes.

kafka-python's ``LegacyRecordBatchBuilder`` writes v0/v1 message sets the way Kafka's clients
do and its ``DefaultRecordBatchBuilder`` v2 batches; its ``MemoryRecords`` reads both. The
conversions are checked byte for byte against them where the bytes are defined (uncompressed),
record by record where a codec library's stream sits in between (compressed), and the
scenarios of Kafka's ``LazyDownConversionRecordsTest`` and ``LogValidatorTest`` are ported."""
from __future__ import annotations

import struct
import zlib

import pytest
import xxhash
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kafka_emu.broker.storage import compression
from kafka_emu.broker.storage.legacy_records import (
    MAGIC_V0,
    MAGIC_V1,
    down_convert,
    lz4_header_checksum,
    up_convert,
    xxh32_short,
)
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.common.errors import Errors, KafkaError

pytestmark = pytest.mark.timeout(60)

MAX = 1 << 20
keys = st.one_of(st.none(), st.binary(max_size=12))
records_st = st.lists(st.tuples(st.integers(0, 2**41), keys, keys), min_size=1, max_size=8)


def legacy_set(magic: int, records: list[tuple[int, bytes | None, bytes | None]], codec: int = 0,
               first_offset: int = 0) -> bytes:
    b = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i, (ts, key, value) in enumerate(records):
        b.append(first_offset + i, ts, key, value)
    return bytes(b.build())


def v2_batch(records: list[tuple[int, bytes | None, bytes | None]], codec: int = 0, base_offset: int = 0) -> bytes:
    b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for i, (ts, key, value) in enumerate(records):
        b.append(i, ts, key, value, [])
    raw = bytearray(b.build())
    struct.pack_into(">q", raw, 0, base_offset)
    return bytes(raw)


def read(data: bytes) -> list[tuple[int, int, int, bytes | None, bytes | None]]:
    """(magic, offset, timestamp, key, value) of every record kafka-python reads in ``data``,
    every CRC checked."""
    out = []
    mr = MemoryRecords(data)
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        for r in batch:
            out.append((batch.magic, r.offset, r.timestamp, r.key, r.value))
    return out


def mask_epoch(batch: bytes) -> bytes:
    return batch[:12] + b"\0\0\0\0" + batch[16:]


# --- produce: up-conversion ---------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(records=records_st, magic=st.sampled_from([MAGIC_V0, MAGIC_V1]))
def test_uncompressed_up_conversion_is_the_v2_batch_a_java_builder_writes(records, magic) -> None:
    """``LogValidatorTest.testUncompressedBatchWithoutRecordsNotAllowed``'s sibling cases
    (``testCreateTimeUpConversionV0ToV2``/``V1ToV2``): one v2 batch, no producer id, the v1
    timestamps kept, -1 for v0's."""
    expected_ts = [(ts if magic == MAGIC_V1 else -1, k, v) for ts, k, v in records]
    got = up_convert(legacy_set(magic, records), MAX)
    assert mask_epoch(got) == mask_epoch(v2_batch(expected_ts))


@settings(max_examples=40, deadline=None)
@given(records=records_st, codec=st.sampled_from([compression.GZIP, compression.SNAPPY, compression.LZ4]),
       magic=st.sampled_from([MAGIC_V0, MAGIC_V1]))
def test_compressed_up_conversion_keeps_the_records_and_the_codec(records, codec, magic) -> None:
    """A compressed set becomes one v2 batch of the same codec holding the inner records
    (``LogValidatorTest``'s up-conversion cases); magic 0 LZ4 frames carry Kafka's broken header
    checksum, as kafka-python writes them."""
    got = up_convert(legacy_set(magic, records, codec), MAX)
    assert got[22] & 0x07 == codec
    ts = [(r[0] if magic == MAGIC_V1 else -1) for r in records]
    assert [(o, t, k, v) for _, o, t, k, v in read(got)] == \
        [(i, ts[i], k, v) for i, (_, k, v) in enumerate(records)]


def test_v2_batches_in_an_old_produce_pass_unchanged() -> None:
    batch = v2_batch([(5, b"k", b"v")])
    assert up_convert(batch, MAX) is batch


@pytest.mark.parametrize("case", ["crc", "too_large", "two_wrappers", "log_append_time", "mixed_magic",
                                  "compressed_inner", "inner_magic", "short_size"])
def test_up_conversion_refuses_what_kafka_refuses(case: str) -> None:
    """Kafka's checks and codes: CRC (``UnifiedLog.analyzeAndValidateRecords``: CORRUPT_MESSAGE),
    size (MESSAGE_TOO_LARGE), one wrapper per compressed set, the first message's magic for
    all, no compressed inner message, the wrapper's magic inside it (INVALID_RECORD), no
    client-set LogAppendTime (INVALID_TIMESTAMP); ported from ``LogValidatorTest``."""
    one = [(7, b"k", b"v")]
    code = Errors.INVALID_RECORD
    if case == "crc":
        data = bytearray(legacy_set(MAGIC_V1, one))
        data[-1] ^= 1
        code = Errors.CORRUPT_MESSAGE
    elif case == "too_large":
        data, code = legacy_set(MAGIC_V1, [(7, b"k", b"v" * 100)]), Errors.MESSAGE_TOO_LARGE
    elif case == "two_wrappers":
        data = legacy_set(MAGIC_V1, one, compression.GZIP) + legacy_set(MAGIC_V1, one, compression.GZIP)
    elif case == "log_append_time":
        data, code = _with_attributes(legacy_set(MAGIC_V1, one), 0x08), Errors.INVALID_TIMESTAMP
    elif case == "mixed_magic":
        data = legacy_set(MAGIC_V1, one) + legacy_set(MAGIC_V0, one)
    elif case == "compressed_inner":
        inner = _with_attributes(legacy_set(MAGIC_V1, one), compression.GZIP)
        data = _wrapper(MAGIC_V1, compression.GZIP, inner)
    elif case == "inner_magic":
        data = _wrapper(MAGIC_V1, compression.GZIP, legacy_set(MAGIC_V0, one))
    else:
        data, code = struct.pack(">qi", 0, 3) + b"\0" * 17, Errors.CORRUPT_MESSAGE
    with pytest.raises(KafkaError) as err:
        up_convert(bytes(data), 100)
    assert err.value.code == code


def _with_attributes(message: bytes, attributes: int) -> bytes:
    """A single-message set with its attributes byte replaced and the CRC recomputed."""
    raw = bytearray(message)
    raw[17] = attributes
    struct.pack_into(">I", raw, 12, zlib.crc32(bytes(raw[16:])))
    return bytes(raw)


def _wrapper(magic: int, codec: int, inner: bytes) -> bytes:
    value = compression.compress(codec, inner)
    if codec == compression.LZ4 and magic == MAGIC_V0:
        value = lz4_header_checksum(value, broken=True)
    body = bytes((magic, codec)) + (struct.pack(">q", 0) if magic else b"") + struct.pack(">i", -1) + \
        struct.pack(">i", len(value)) + value
    return struct.pack(">qi", 0, len(body) + 4) + struct.pack(">I", zlib.crc32(body)) + body


def test_a_partial_trailing_message_is_dropped() -> None:
    full = legacy_set(MAGIC_V1, [(1, b"a", b"b"), (2, b"c", b"d")])
    got = up_convert(full[:-3], MAX)
    assert [(k, v) for *_, k, v in read(got)] == [(b"a", b"b")]


# --- fetch: down-conversion ---------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(records=records_st, magic=st.sampled_from([MAGIC_V0, MAGIC_V1]), base=st.integers(0, 2**40),
       skip=st.integers(0, 8))
def test_uncompressed_down_conversion_is_the_message_set_a_legacy_builder_writes(records, magic, base, skip) -> None:
    """``RecordsUtil.downConvert`` of an uncompressed v2 batch: one message per record at or
    after the fetch offset, absolute offsets, the records' timestamps (none for v0)."""
    stored = v2_batch(records, base_offset=base)
    kept = records[min(skip, len(records) - 1):]
    first = base + len(records) - len(kept)
    expected = legacy_set(magic, kept, first_offset=first)
    got = down_convert(stored, magic, first)
    size = max(len(stored), len(expected))
    assert got[:len(expected)] == expected[:size] and len(got) == size
    pad = size - len(expected)
    if pad > 0:   # filled up with the overflow batch Kafka sends (offset -1, a length past the end)
        overflow = struct.pack(">qi", -1, max(pad + 1, 61)) + b"\0" * max(pad + 1 - 12, 0)
        assert got[len(expected):] == overflow[:pad]
    assert read(got) == read(expected)


@pytest.mark.parametrize("codec", [compression.NONE, compression.GZIP])
@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
def test_conversion_keeps_offsets_keys_values_and_timestamps(codec: int, magic: int) -> None:
    """``LazyDownConversionRecordsTest.testConversion`` (the records and headers of that test):
    three batches with offset gaps; offsets, keys and values unchanged, headers dropped; v1
    keeps timestamps (CreateTime), v0 has none; the codec is kept."""
    offsets = [0, 2, 3, 9, 11, 15, 16, 17, 22, 24]
    values = [b"hello", b"goodbye", b"hello again", b"goodbye for now", b"hello again", b"I sense indecision",
              b"what now", b"running out", b"ok, almost done", b"finally"]
    headers = [("headerKey1", b"headerValue1"), ("headerKey2", b"headerValue2"), ("headerKey3", b"headerValue3")]
    stored = b""
    for lo, hi in ((0, 3), (3, 6), (6, 10)):
        stored += _v2_with_offsets([(offsets[i], i + 1, b"k%d" % (i + 1), values[i], headers if i in (7, 9) else [])
                                    for i in range(lo, hi)], codec)
    got = down_convert(stored, magic, 0)
    recs = read(got)
    assert [(o, k, v) for _, o, _, k, v in recs] == [(o, b"k%d" % (i + 1), values[i]) for i, o in enumerate(offsets)]
    assert {m for m, *_ in recs} == {magic}
    assert [t for _, _, t, _, _ in recs] == ([i + 1 for i in range(10)] if magic == MAGIC_V1 else [None] * 10)
    assert got[17] & 0x07 == codec   # the first message's attributes


@pytest.mark.parametrize("codec", [compression.SNAPPY, compression.LZ4])
@pytest.mark.parametrize("magic", [MAGIC_V0, MAGIC_V1])
def test_a_conversion_longer_than_the_read_is_cut_at_its_size(codec: int, magic: int) -> None:
    """Small snappy/LZ4 batches grow when converted (one framed stream per wrapper): the answer
    keeps Kafka's size (the unconverted bytes, or the first converted batch if larger), so the
    records a client reads are a prefix, never fewer than the first batch's."""
    stored = b"".join(_v2_with_offsets([(10 * b + i, 1, b"k", b"v%d" % i, []) for i in range(3)], codec)
                      for b in range(4))
    got = down_convert(stored, magic, 0)
    recs = [(o, v) for _, o, _, _, v in read(got)]
    assert len(got) >= len(stored) and len(recs) >= 3
    assert recs == [(10 * b + i, b"v%d" % i) for b in range(4) for i in range(3)][:len(recs)]


def _v2_with_offsets(records: list[tuple[int, int, bytes, bytes, list[tuple[str, bytes]]]], codec: int) -> bytes:
    """A v2 batch whose records sit at the given (sparse) offsets, as a compacted log holds."""
    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    base = records[0][0]
    for offset, ts, key, value, headers in records:
        b.append(offset - base, ts, key, value, headers)
    raw = bytearray(b.build())
    if codec != compression.NONE:   # kafka-python leaves small batches uncompressed; Java does not
        raw[61:] = compression.compress(codec, bytes(raw[61:]))
        struct.pack_into(">i", raw, 8, len(raw) - 12)
        struct.pack_into(">h", raw, 21, codec)
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    struct.pack_into(">q", raw, 0, base)
    return bytes(raw)


def test_only_a_commit_marker_converts_to_an_overflow_batch() -> None:
    """``LazyDownConversionRecordsTest.testConversionOfCommitMarker``: control batches are
    dropped; with nothing left the answer is an overflow batch whose length runs past the end."""
    marker = build_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")], producer_id=1, producer_epoch=1,
                         attributes=0x30)
    got = down_convert(marker, MAGIC_V1, 0)
    offset, length = struct.unpack_from(">qi", got)
    assert len(got) == 12 and offset == -1 and length > len(got)
    assert read(got) == []


def test_no_batches_convert_to_nothing() -> None:
    """KAFKA-13116: an empty read stays empty (an old client would otherwise see its fetch size
    as too small)."""
    assert down_convert(b"", MAGIC_V1, 0) == b""


def test_first_batch_in_zstd_is_unsupported() -> None:
    with pytest.raises(KafkaError) as err:
        down_convert(_v2_with_offsets([(0, 1, b"k", b"v", [])], compression.ZSTD), MAGIC_V1, 0)
    assert err.value.code == Errors.UNSUPPORTED_COMPRESSION_TYPE


def test_log_append_time_batches_carry_their_append_time() -> None:
    batch = bytearray(v2_batch([(1, b"k", b"v"), (2, b"k2", b"v2")]))
    struct.pack_into(">h", batch, 21, 0x08)
    struct.pack_into(">q", batch, 35, 777)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    recs = read(down_convert(bytes(batch), MAGIC_V1, 0))
    assert [t for _, _, t, _, _ in recs] == [777, 777]


def test_lz4_header_checksum_kafka_magic_0_variant() -> None:
    """XXH32 against the xxhash library, and the two header checksums (KAFKA-3160)."""
    for data in (b"", b"a", b"abc", b"abcd", b"\x04\x22\x4d\x18\x60\x70", bytes(range(15))):
        assert xxh32_short(data) == xxhash.xxh32_intdigest(data)
    frame = compression.compress(compression.LZ4, b"payload" * 10)
    assert lz4_header_checksum(frame, broken=False) == frame
    broken = lz4_header_checksum(frame, broken=True)
    assert lz4_header_checksum(broken, broken=False) == frame
