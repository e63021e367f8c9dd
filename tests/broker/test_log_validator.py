"""LogValidator: Kafka's LogValidatorTest scenarios (storage module, tag 4.0.0) ported: compressed
and uncompressed batches, corrupt payloads, size limits, timestamp types, recompression."""
import os
import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_emu.broker import compression
from kafka_emu.coordinator.errors import Errors, KafkaError
from kafka_emu.broker.log import Log
from kafka_emu.broker.log_config import LogConfig
from kafka_emu.broker.log_validator import TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, records_payload, walk_records
from kafka_emu.broker.record_batch import HEADER_SIZE, parse_batches
from kafka_emu.timer.time import MockTime

from log_batches import compressed_batch, encode_records, make_batch

pytestmark = pytest.mark.timeout(30)

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]
NOW = MockTime().milliseconds()
RECORDS = [(b"k1", b"hello"), (b"k2", b"there"), (b"k3", b"beautiful")]
TIMESTAMPS = [NOW - 10, NOW - 5, NOW - 7]


def make_log(**configs):
    return Log("t", 0, config=LogConfig.for_topic(configs), time=MockTime())


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
