"""LogValidator: Kafka's LogValidatorTest scenarios (storage module, tag 4.0.0) ported: compressed
and uncompressed batches, corrupt payloads, size limits, timestamp types, recompression."""
import os
import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker.storage import compression
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_validator import TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, records_payload, walk_records
from kafka_emu.broker.storage.record_batch import HEADER_SIZE, parse_batches
from kafka_emu.timer.time import MockTime

from log_batches import compressed_batch, encode_records, make_batch

pytestmark = pytest.mark.timeout(30)

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]
NOW = MockTime().milliseconds()
RECORDS = [(b"k1", b"hello"), (b"k2", b"there"), (b"k3", b"beautiful")]
TIMESTAMPS = [NOW - 10, NOW - 5, NOW - 7]


def make_log(**configs):
    return UnifiedLog("t", 0, config=LogConfig.for_topic(configs), time=MockTime())


def stored(log):
    """(attributes, max timestamp, [(offset, key, value, timestamp)]) of every stored batch."""
    out = []
    for base, data in log.batches_from(log.log_start_offset):
        info = parse_batches(data)[0]
        payload = records_payload(data, info.attributes)
        base_ts = struct.unpack_from(">q", data, 27)[0]
        recs = []
        for r in walk_records(payload, info.record_count):
            body = bytes(payload[r.start:r.end])
            recs.append((base + r.offset_delta, r.key_length, base_ts + r.timestamp_delta, body))
        out.append((info.attributes, info.max_timestamp, recs))
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_valid_batches_kept_as_sent_with_offsets_assigned(codec):
    """LogValidatorTest.checkOffsets / testLogAppendTimeNonCompressedV2 (CreateTime): offsets from
    the LEO, the batch kept in place (same codec, same bytes after the header), max timestamp the
    largest record timestamp."""
    log = make_log()
    log.append_as_leader(compressed_batch(codec, [(b"a", b"0")], [NOW]), 0)
    data = compressed_batch(codec, RECORDS, TIMESTAMPS)
    info = log.append_as_leader(data, 5)
    assert (info.first_offset, info.last_offset, info.num_records) == (1, 3, 3)
    attrs, max_ts, recs = stored(log)[1]
    assert attrs & compression.CODEC_MASK == codec and max_ts == NOW - 5
    assert [r[0] for r in recs] == [1, 2, 3]
    raw = log.batches_from(1)[0][1]
    assert raw[HEADER_SIZE:] == data[HEADER_SIZE:] and parse_batches(raw)[0].leader_epoch == 5


@pytest.mark.parametrize("codec", CODECS[1:])
def test_corrupt_compressed_payload_is_corrupt_message(codec):
    """ProduceRequestTest.testCorruptLz4ProduceRequest / the issue's case: a compressed batch of
    random bytes with a valid CRC is CORRUPT_MESSAGE and nothing is appended."""
    log = make_log()
    bad = make_batch(os.urandom(200), 3, codec=codec, base_ts=NOW)
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(bad, 0)
    assert info.value.code == Errors.CORRUPT_MESSAGE
    assert log.log_end_offset == 0 and log.size_bytes == 0


@pytest.mark.parametrize("codec", CODECS)
def test_record_count_mismatch_is_invalid_record(codec):
    """LogValidatorTest.testInvalidRecordCount...: a batch whose records do not add up to its count."""
    section, base = encode_records(RECORDS, TIMESTAMPS)
    if codec:
        section = compression.compress(codec, section)
    for count in (2, 4):
        with pytest.raises(KafkaError) as info:
            make_log().append_as_leader(make_batch(section, count, codec=codec, base_ts=base), 0)
        assert info.value.code == Errors.INVALID_RECORD


def test_non_zero_base_offset_from_client_is_invalid_record():
    """UnifiedLog.analyzeAndValidateRecords: a client batch must have base offset 0."""
    with pytest.raises(KafkaError) as info:
        make_log().append_as_leader(compressed_batch(0, RECORDS, TIMESTAMPS, base_offset=7), 0)
    assert info.value.code == Errors.INVALID_RECORD


def test_unverified_transactional_batch_is_invalid_txn_state():
    """UnifiedLog.analyzeAndValidateProducerState (KIP-890 part 1): a transactional batch that
    would open a transaction without the partition's verification guard is refused."""
    with pytest.raises(KafkaError) as info:
        make_log().append_as_leader(compressed_batch(0, RECORDS, TIMESTAMPS, attributes=TRANSACTIONAL_BIT,
                                                     producer_id=1, producer_epoch=0, base_sequence=0), 0)
    assert info.value.code == Errors.INVALID_TXN_STATE


def test_producer_id_without_sequence_is_invalid_record():
    """LogValidatorTest: producer id set with base sequence < 0."""
    with pytest.raises(KafkaError) as info:
        make_log().append_as_leader(compressed_batch(0, RECORDS, TIMESTAMPS, producer_id=1, producer_epoch=0), 0)
    assert info.value.code == Errors.INVALID_RECORD


@pytest.mark.parametrize("codec", [compression.NONE, compression.LZ4])
def test_log_append_time_sets_batch_timestamp(codec):
    """LogValidatorTest.testLogAppendTimeNonCompressedV2 / testLogAppendTimeWithoutRecompressionV2:
    a LogAppendTime topic stamps now with the timestamp-type bit (CRC recomputed)."""
    log = make_log(**{"message.timestamp.type": "LogAppendTime"})
    info = log.append_as_leader(compressed_batch(codec, RECORDS, TIMESTAMPS), 0)
    assert info.log_append_time == NOW
    attrs, max_ts, _ = stored(log)[0]
    assert attrs & TIMESTAMP_TYPE_BIT and max_ts == NOW
    parse_batches(log.read(0, 1 << 20))   # the CRC still checks


def test_client_claiming_log_append_time_is_invalid_timestamp():
    """LogValidatorTest.testInvalidCreateTimeCompressedV2-ish: clients may not set LogAppendTime."""
    bad = compressed_batch(0, [(b"k", b"v")], [-1], attributes=TIMESTAMP_TYPE_BIT)
    with pytest.raises(KafkaError) as info:
        make_log().append_as_leader(bad, 0)
    assert info.value.code == Errors.INVALID_TIMESTAMP
    with pytest.raises(KafkaError) as info:
        make_log(**{"message.timestamp.type": "LogAppendTime"}).append_as_leader(
            compressed_batch(0, [(b"k", b"v")], [NOW], attributes=TIMESTAMP_TYPE_BIT), 0)
    assert info.value.code == Errors.INVALID_TIMESTAMP


@pytest.mark.parametrize("source", CODECS)
@pytest.mark.parametrize("target", ["gzip", "snappy", "lz4", "zstd", "uncompressed"])
def test_recompression_to_topic_compression_type(source, target):
    """LogValidatorTest.testRecompression...: the batch is stored with the topic's codec, records,
    keys and timestamps unchanged, producer fields kept."""
    log = make_log(**{"compression.type": target})
    data = compressed_batch(source, RECORDS, TIMESTAMPS, producer_id=9, producer_epoch=2, base_sequence=0)
    info = log.append_as_leader(data, 0)
    assert info.num_records == 3
    attrs, max_ts, recs = stored(log)[0]
    assert attrs & compression.CODEC_MASK == compression.BY_TOPIC_CONFIG[target]
    original = stored_records(data)
    assert [r[3] for r in recs] == [r[3] for r in original] and max_ts == NOW - 5
    b = parse_batches(log.read(0, 1 << 20))[0]
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (9, 2, 0)


def stored_records(data):
    info = parse_batches(data)[0]
    payload = records_payload(data, info.attributes)
    return [(r.offset_delta, r.key_length, r.timestamp_delta, bytes(payload[r.start:r.end]))
            for r in walk_records(payload, info.record_count)]


def test_compressed_batch_with_sparse_inner_offsets_is_rebuilt_dense():
    """LogValidator compressed path: inner offsets not 0,1,2 -> rebuilt with dense offsets."""
    log = make_log()
    log.append_as_leader(compressed_batch(compression.GZIP, RECORDS, TIMESTAMPS, offset_deltas=[0, 5, 9]), 0)
    _, _, recs = stored(log)[0]
    assert [r[0] for r in recs] == [0, 1, 2] and log.log_end_offset == 3


def test_recompressed_batch_rechecked_against_max_message_bytes():
    """UnifiedLog.append: after recompression the size is checked again (MESSAGE_TOO_LARGE)."""
    payload = [(b"k", b"x" * 5000)]
    zstd = compressed_batch(compression.ZSTD, payload, [NOW])
    log = make_log(**{"compression.type": "uncompressed", "max.message.bytes": 1000})
    assert len(zstd) < 1000
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(zstd, 0)
    assert info.value.code == Errors.MESSAGE_TOO_LARGE and log.log_end_offset == 0


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CODECS), st.lists(st.tuples(st.binary(min_size=1, max_size=20),
                                                   st.binary(max_size=200)), min_size=1, max_size=20))
def test_roundtrip_property(codec, records):
    """Property: whatever valid batch goes in, the same keys and values come out, offsets dense."""
    log = make_log(**{"compression.type": "lz4"})
    log.append_as_leader(compressed_batch(codec, records, [NOW] * len(records)), 0)
    _, _, recs = stored(log)[0]
    assert [r[0] for r in recs] == list(range(len(records)))
    assert [r[3] for r in recs] == [r[3] for r in stored_records(compressed_batch(0, records, [NOW] * len(records)))]


def _reference_walk(section: bytes, count: int) -> list[tuple[int, int, int, int, int, int, int]]:
    """The record walk written plainly (each varint read within its record, one field after
    the other, as Kafka's ``DefaultRecord.readFrom`` reads them): the reference the broker's
    inlined walker must agree with. Raises ``ValueError`` where a batch is refused."""

    def varint(pos: int, limit: int) -> tuple[int, int]:
        result = shift = 0
        while True:
            if pos >= limit:
                raise ValueError("varint past its record")
            b = section[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1), pos
            shift += 7
            if shift > 63:
                raise ValueError("varint longer than 10 bytes")

    out = []
    pos = 0
    for _ in range(count):
        length, body = varint(pos, len(section))
        end = body + length
        if length < 0 or end > len(section):
            raise ValueError("record overruns the batch")
        ts_delta, p = varint(body + 1, end)          # after the attributes byte
        offset_delta, p = varint(p, end)
        key_length, key_start = varint(p, end)
        p = key_start + max(key_length, 0)
        if p > end:
            raise ValueError("key overruns the record")
        value_length, p = varint(p, end)
        if max(value_length, 0) > end - p:
            raise ValueError("value overruns the record")
        out.append((pos, end, ts_delta, offset_delta, key_start, key_length, value_length))
        pos = end
    if pos != len(section):
        raise ValueError("bytes left after the records")
    return out


def _encode_record(out: bytearray, ts_delta: int, offset_delta: int, key, value, headers: bytes) -> None:
    from kafka_emu.common.varint import write_varint

    rec = bytearray(b"\x00")
    write_varint(rec, ts_delta)
    write_varint(rec, offset_delta)
    for field in (key, value):
        write_varint(rec, -1 if field is None else len(field))
        rec += field or b""
    rec += headers                     # header count and headers: bounded by the record length only
    write_varint(out, len(rec))
    out += rec


_RECORD = st.tuples(st.integers(-(1 << 40), 1 << 40) | st.integers(-3, 300), st.booleans(),
                    st.none() | st.binary(max_size=150), st.none() | st.binary(max_size=300),
                    st.sampled_from([b"\x00", b"\x02\x02k\x02v", b"\x01"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(_RECORD, min_size=1, max_size=30), st.data())
def test_record_walk_agrees_with_reference_property(records, data):
    """Property: the inlined record walk (``_walk``, used by every leader append, walking a batch
    where it lies in the request) accepts exactly what the plain reference walk accepts, on
    valid sections and on corrupted ones (bytes flipped, cut, inserted, a wrong record count),
    and reads the same records; a refused section is INVALID_RECORD, also through a leader append."""
    from kafka_emu.broker.storage.log_validator import _walk

    section = bytearray()
    for i, (ts_delta, sparse, key, value, headers) in enumerate(records):
        _encode_record(section, ts_delta, i * 3 + 1 if sparse else i, key, value, headers)
    count = len(records)
    corruption = data.draw(st.sampled_from(["none", "flip", "cut", "insert", "count"]))
    if corruption == "flip":
        for _ in range(data.draw(st.integers(1, 3))):
            section[data.draw(st.integers(0, len(section) - 1))] = data.draw(st.integers(0, 255))
    elif corruption == "cut":
        del section[data.draw(st.integers(0, len(section) - 1)):]
    elif corruption == "insert":
        at = data.draw(st.integers(0, len(section)))
        section[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    elif corruption == "count":
        count = data.draw(st.integers(1, 40).filter(lambda n: n != len(records)))
    section = bytes(section)
    try:
        expected = _reference_walk(section, count)
    except ValueError:
        expected = None
    prefix = data.draw(st.binary(max_size=5))     # the walk reads in place: inside a larger buffer
    buf = prefix + section + data.draw(st.binary(max_size=5))
    try:
        got = walk_records(section, count)
        shifted = []
        summary = _walk(buf, len(prefix), len(prefix) + len(section), count, shifted)
    except KafkaError as exc:
        assert exc.code == Errors.INVALID_RECORD
        assert expected is None, f"refused a section the reference accepts: {exc.message}"
    else:
        assert expected is not None, "accepted a section the reference refuses"
        assert [tuple(r) for r in got] == expected
        assert [(r.start - len(prefix), r.end - len(prefix), r.timestamp_delta, r.offset_delta,
                 r.key_start - len(prefix), r.key_length, r.value_length) for r in shifted] == expected
        assert summary == (max(r[2] for r in expected),
                           all(r[3] == i for i, r in enumerate(expected)),
                           any(r[5] < 0 for r in expected))
    if section:
        log = make_log()
        batch = make_batch(section, count, base_ts=NOW)
        try:
            log.append_as_leader(batch, 0)
        except KafkaError as exc:
            assert exc.code == Errors.INVALID_RECORD and expected is None and log.log_end_offset == 0
        else:
            assert expected is not None and log.log_end_offset == count


def test_record_walk_edge_cases():
    """The walker's shortcuts at their edges: offset deltas from 64 on take two bytes (the first
    is 0x80 for 64, the one-byte form of no delta), and a record ending right after its key
    must not take its value length from the bytes after it (INVALID_RECORD, as the reference)."""
    from kafka_emu.broker.storage.log_validator import _walk

    section = bytearray()
    for i in range(200):
        _encode_record(section, 0, i, b"k", b"v", b"\x00")
    assert _walk(bytes(section), 0, len(section), 200, None) == (0, True, False)
    sparse = bytearray()
    for i in range(70):
        _encode_record(sparse, 0, i if i != 66 else 64, b"k", b"v", b"\x00")
    assert _walk(bytes(sparse), 0, len(sparse), 70, None)[1] is False
    cut = bytearray(b"\x0a\x00\x00\x00\x02k")    # length 5: attributes, deltas, key length 1, the key
    with pytest.raises(ValueError):
        _reference_walk(bytes(cut), 1)
    buf = bytes(cut) + b"\x01"                  # what follows (the next batch) reads as value length -1
    with pytest.raises(KafkaError) as info:
        _walk(buf, 0, len(cut), 1, None)
    assert info.value.code == Errors.INVALID_RECORD
