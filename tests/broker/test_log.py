import pytest

from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.record_batch import build_batch, iter_records
from kafka_emu.common.errors import Errors, KafkaError

pytestmark = pytest.mark.timeout(10)


def batch(n=1, **kw):
    return build_batch([(b"k", b"v")] * n, **kw)


def test_append_assigns_offsets_and_reads_by_offset():
    log = UnifiedLog("t", 0)
    assert log.append_as_leader(batch(3), 0).first_offset == 0
    info = log.append_as_leader(batch(2), 0)
    assert (info.first_offset, info.last_offset) == (3, 4)
    assert log.log_end_offset == 5 and log.high_watermark == 0
    assert [o for o, _, _ in iter_records(log.read(0, 1 << 20))] == [0, 1, 2, 3, 4]
    assert [o for o, _, _ in iter_records(log.read(4, 1 << 20))] == [3, 4]  # whole batch holding 4
    assert [o for o, _, _ in iter_records(log.read(0, 1 << 20, max_offset=3))] == [0, 1, 2]
    assert [o for o, _, _ in iter_records(log.read(0, 1))] == [0, 1, 2]  # at least one batch (KIP-74)
    assert log.read(5, 100) == b""


def test_bad_batch_in_multi_batch_append_writes_nothing():
    log = UnifiedLog("t", 0)
    bad = bytearray(batch(1))
    bad[-1] ^= 1
    with pytest.raises(KafkaError) as ei:
        log.append_as_leader(batch(2) + bytes(bad), 0)
    assert ei.value.code == Errors.CORRUPT_MESSAGE
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_single_batch_required_for_produce():
    log = UnifiedLog("t", 0)
    with pytest.raises(KafkaError) as ei:
        log.append_as_leader(batch(1) + batch(1), 0, single_batch=True)
    assert ei.value.code == Errors.INVALID_RECORD


def test_idempotent_sequences():
    log = UnifiedLog("t", 0)
    p = dict(producer_id=7, producer_epoch=0)
    assert log.append_as_leader(batch(2, base_sequence=0, **p), 0).first_offset == 0
    assert log.append_as_leader(batch(2, base_sequence=2, **p), 0).first_offset == 2
    dup = log.append_as_leader(batch(2, base_sequence=0, **p), 0)
    assert dup.duplicate and dup.first_offset == 0 and log.log_end_offset == 4
    with pytest.raises(KafkaError) as ei:
        log.append_as_leader(batch(1, base_sequence=7, **p), 0)
    assert ei.value.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # a bumped epoch must restart at 0; then the old epoch is fenced
    with pytest.raises(KafkaError) as ei:
        log.append_as_leader(batch(1, producer_id=7, producer_epoch=1, base_sequence=4), 0)
    assert ei.value.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.append_as_leader(batch(1, producer_id=7, producer_epoch=1, base_sequence=0), 0).first_offset == 4
    with pytest.raises(KafkaError) as ei:
        log.append_as_leader(batch(1, base_sequence=4, **p), 0)
    assert ei.value.code == Errors.INVALID_PRODUCER_EPOCH
    # an unknown producer may start at any sequence (Kafka accepts it)
    assert not log.append_as_leader(batch(1, producer_id=9, producer_epoch=0, base_sequence=5), 0).duplicate


def test_truncate_epochs_and_producer_state_rebuild():
    log = UnifiedLog("t", 0)
    log.append_as_leader(batch(2, producer_id=1, producer_epoch=0, base_sequence=0), 0)
    log.append_as_leader(batch(2, producer_id=1, producer_epoch=0, base_sequence=2), 3)
    log.high_watermark = 4
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(3) == (3, 4)
    assert log.end_offset_for_epoch(1) == (0, 2)
    assert log.truncate_to(2)
    assert log.log_end_offset == 2 and log.high_watermark == 2 and log.latest_epoch() == 0
    # the truncated batch's sequence is accepted again, not treated as a duplicate
    assert not log.append_as_leader(batch(2, producer_id=1, producer_epoch=0, base_sequence=2), 4).duplicate


def test_follower_append_keeps_offsets():
    leader, follower = UnifiedLog("t", 0), UnifiedLog("t", 0)
    leader.append_as_leader(batch(3), 2)
    leader.append_as_leader(batch(1), 2)
    assert follower.append_as_follower(leader.read(0, 1 << 20)) == 2
    assert follower.log_end_offset == 4 and follower.latest_epoch() == 2
    assert follower.update_high_watermark(10) and follower.high_watermark == 4


def test_truncate_at_log_end_drops_empty_epochs():
    """A replica that led an epoch without appending must not keep diverging forever."""
    log = UnifiedLog("t", 0)
    log.assign_epoch_start_offset(1)  # became leader of epoch 1 at offset 0, appended nothing
    assert log.latest_epoch() == 1
    assert not log.truncate_to(0)
    assert log.latest_epoch() == -1
