"""ReplicaManager/DelayedProduce/DelayedFetch scenarios after Kafka's ``ReplicaManagerTest``,
``DelayedProduceTest`` and ``DelayedFetchTest`` (MockTimer)."""
import pytest

from kafka_emu.broker.server.fetch_params import ISOLATION_TXN_COMMITTED
from kafka_emu.broker.storage.record_batch import iter_records
from kafka_emu.common.errors import Errors
from broker_harness import TP, Harness

pytestmark = pytest.mark.timeout(20)


def offsets(records: bytes):
    return [o for o, _, _ in iter_records(records)]


def test_illegal_required_acks():
    h = Harness()
    st = h.produce(acks=3)
    assert st[TP].error == Errors.INVALID_REQUIRED_ACKS
    assert h.partition.log.log_end_offset == 0


def test_acks_all_completes_only_when_last_isr_follower_fetches_the_offset():
    """Example A.3."""
    h = Harness()
    h.follower_fetch(1, 0)
    h.follower_fetch(2, 0)
    st = h.produce(5)
    assert st == {} and h.produce_purgatory.num_delayed() == 1
    h.drain()
    r = h.follower_fetch(1, 0)
    assert offsets(r[0][1].records) == [0, 1, 2, 3, 4]
    h.follower_fetch(1, 5)
    assert st == {} and h.partition.log.high_watermark == 0
    h.follower_fetch(2, 5)
    assert h.partition.log.high_watermark == 5
    assert st[TP].error == Errors.NONE and st[TP].base_offset == 0
    assert h.produce_purgatory.num_delayed() == 0


def test_acks_all_times_out_with_request_timed_out():
    h = Harness()
    st = h.produce(1, timeout_ms=1000)
    h.advance(999)
    assert st == {}
    h.advance(2)
    assert st[TP].error == Errors.REQUEST_TIMED_OUT
    assert h.produce_purgatory.expiration_count == 1
    assert h.rm.stats.snapshot().produce_expirations == 1


def test_acks_all_completes_after_isr_shrink():
    h = Harness(lag_ms=10000)
    h.follower_fetch(1, 0)
    h.follower_fetch(2, 0)
    st = h.produce(2, timeout_ms=60000)
    h.follower_fetch(1, 2)  # follower 1 caught up; follower 2 stalls
    h.time.advance(5000)
    assert h.rm.maybe_shrink_isr() == 0  # still within the lag time
    h.follower_fetch(1, 2)
    h.time.advance(5001)
    assert h.rm.maybe_shrink_isr() == 1
    assert h.partition.isr == (0, 1)
    assert h.metadata.partition_state("t", 0).isr == (0, 1)
    assert st[TP].error == Errors.NONE
    assert h.rm.stats.snapshot().isr_shrinks == 1 and h.rm.under_replicated_partitions() == 1


def test_isr_expansion_when_follower_catches_up():
    h = Harness(lag_ms=1000)
    h.follower_fetch(1, 0)
    h.produce(1, acks=1)
    h.time.advance(1001)
    h.follower_fetch(1, 1)
    h.rm.maybe_shrink_isr()
    assert h.partition.isr == (0, 1)  # follower 2 never fetched
    h.follower_fetch(2, 0)
    assert h.partition.isr == (0, 1)  # behind the HW? HW is 1 now (ISR {0,1} at 1): not yet
    h.follower_fetch(2, 1)
    assert h.partition.isr == (0, 1, 2) and h.rm.stats.snapshot().isr_expands == 1


def test_follower_fetch_parked_then_released_by_append():
    h = Harness()
    r = h.follower_fetch(1, 0, max_wait_ms=500)
    assert r == [] and h.fetch_purgatory.num_delayed() == 1
    h.produce(3, acks=1)
    assert r == []  # completion is deferred to the action queue
    h.drain()
    assert offsets(r[0][1].records) == [0, 1, 2]
    assert h.fetch_purgatory.num_delayed() == 0


def test_follower_fetch_parked_expires_with_updated_hw():
    """testFollowerFetchWithDefaultSelectorNoForcedHwPropagation."""
    h = Harness(replicas=(0, 1))
    h.follower_fetch(1, 0)
    st = h.produce(1)
    first = h.follower_fetch(1, 1, min_bytes=0, max_wait_ms=1000)
    assert first[0][1].high_watermark == 0  # HW from before this fetch moved it
    assert st[TP].error == Errors.NONE  # ... but the producer is acked
    r = h.follower_fetch(1, 1, max_wait_ms=1000, min_bytes=1000)
    assert r == []
    h.advance(1001)
    assert r[0][1].error == Errors.NONE and r[0][1].high_watermark == 1
    h2 = h
    assert h2.rm.stats.snapshot().fetch_expirations_follower == 1


def test_consumer_fetch_bounded_by_hw():
    """testFetchBeyondHighWatermark: followers read to the LEO, consumers to the HW."""
    h = Harness()
    h.produce(2, acks=1)
    assert h.partition.log.high_watermark == 0
    f = h.follower_fetch(1, 0)
    assert offsets(f[0][1].records) == [0, 1]
    c = h.consumer_fetch(0)
    assert c[0][1].error == Errors.NONE and c[0][1].records == b"" and c[0][1].high_watermark == 0
    c = h.consumer_fetch(1)  # above the HW, within the LEO: empty, no error
    assert c[0][1].error == Errors.NONE and c[0][1].records == b""
    rc = h.consumer_fetch(0, isolation=ISOLATION_TXN_COMMITTED)
    assert rc[0][1].records == b"" and rc[0][1].last_stable_offset == 0
    assert h.consumer_fetch(3)[0][1].error == Errors.OFFSET_OUT_OF_RANGE


def test_consumer_fetch_parked_until_hw_moves():
    h = Harness()
    h.follower_fetch(1, 0)
    h.follower_fetch(2, 0)
    c = h.consumer_fetch(0, max_wait_ms=1000)
    h.produce(1, acks=1)
    h.drain()
    assert c == []  # an append without HW move does not satisfy a consumer
    h.follower_fetch(1, 1)
    h.follower_fetch(2, 1)  # HW moves: Fetch checked directly
    assert offsets(c[0][1].records) == [0]


def test_min_insync_replicas_not_enough_replicas():
    h = Harness(min_isr=3, lag_ms=100)
    h.follower_fetch(1, 0)
    h.time.advance(101)
    h.follower_fetch(1, 0)
    h.rm.maybe_shrink_isr()
    assert h.partition.isr == (0, 1)
    st = h.produce(1)
    assert st[TP].error == Errors.NOT_ENOUGH_REPLICAS
    assert h.partition.log.log_end_offset == 0
    assert h.produce(1, acks=1)[TP].error == Errors.NONE  # acks=1 ignores min ISR


def test_not_enough_replicas_after_append_and_hw_frozen_under_min_isr():
    h = Harness(min_isr=2, lag_ms=100)
    h.follower_fetch(1, 0)
    h.follower_fetch(2, 0)
    st = h.produce(1, timeout_ms=5000)
    h.follower_fetch(1, 1)
    h.time.advance(101)
    h.follower_fetch(1, 1)
    h.rm.maybe_shrink_isr()  # follower 2 dropped: ISR {0,1} still meets min ISR 2, HW -> 1
    assert h.partition.log.high_watermark == 1 and st[TP].error == Errors.NONE
    # now drop follower 1 too: under min ISR the HW no longer moves
    st2 = h.produce(1, acks=1)
    h.time.advance(101)
    h.rm.maybe_shrink_isr()
    assert h.partition.isr == (0,)
    assert h.partition.log.high_watermark == 1
    assert h.produce(1)[TP].error == Errors.NOT_ENOUGH_REPLICAS
    # a produce that reached the HW while the ISR shrank below min ISR gets _AFTER_APPEND
    done, err = h.partition.check_enough_replicas_reach_offset(1)
    assert done and err == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert st2[TP].error == Errors.NONE


def test_clear_purgatories_on_becoming_follower():
    h = Harness()
    st = h.produce(1)
    f = h.consumer_fetch(0, max_wait_ms=1000)
    assert st == {} and f == []
    h.become_follower(leader=1)
    assert st[TP].error == Errors.NOT_LEADER_OR_FOLLOWER
    assert f[0][1].error == Errors.NOT_LEADER_OR_FOLLOWER


def test_become_follower_while_new_client_fetch_in_purgatory_is_fenced():
    h = Harness()
    f = h.consumer_fetch(0, max_wait_ms=1000, leader_epoch=0)
    h.become_follower(leader=1)
    assert f[0][1].error == Errors.FENCED_LEADER_EPOCH


def test_fetch_for_partition_follower_is_not_replica_of():
    h = Harness()
    h.metadata.register_broker(__import__("kafka_emu.broker.server.metadata_store", fromlist=["BrokerInfo"]).BrokerInfo(5))
    r = h.follower_fetch(5, 0, leader_epoch=0)
    assert r[0][1].error == Errors.UNKNOWN_LEADER_EPOCH
    r = h.follower_fetch(5, 0)
    assert r[0][1].error == Errors.NOT_LEADER_OR_FOLLOWER


def test_delayed_fetch_diverging_epoch_and_truncation():
    h = Harness()
    h.produce(2, acks=1)
    # follower claims epoch 3 which the leader (epoch 0) never had: diverging answer at once
    r = h.follower_fetch(1, 2, max_wait_ms=500, last_fetched_epoch=3)
    assert r[0][1].diverging_epoch is not None
    # fetch offset beyond the end offset: completes (truncation case F)
    r = h.follower_fetch(1, 5, max_wait_ms=500)
    assert r[0][1].error == Errors.OFFSET_OUT_OF_RANGE


def test_delayed_fetch_completes_when_log_truncated_under_it():
    h = Harness()
    h.produce(2, acks=1)
    f = h.follower_fetch(1, 2, max_wait_ms=500)
    assert f == []
    with h.partition.lock:
        h.partition.log.truncate_to(1)
    h.rm.try_complete_delayed_requests(TP)
    assert f and f[0][1].error == Errors.OFFSET_OUT_OF_RANGE


def test_consumer_fetch_expiration_counted_by_type():
    h = Harness()
    f = h.consumer_fetch(0, max_wait_ms=100)
    h.advance(101)
    assert f[0][1].records == b""
    stats = h.rm.stats.snapshot()
    assert (stats.fetch_expirations_follower, stats.fetch_expirations_consumer) == (0, 1)


def test_idempotent_duplicate_is_success_with_original_offset():
    h = Harness()
    kw = dict(producer_id=11, producer_epoch=0, base_sequence=0)
    assert h.produce(1, acks=1, **kw)[TP].base_offset == 0
    h.produce(1, acks=1, producer_id=11, producer_epoch=0, base_sequence=1)
    st = h.produce(1, acks=1, **kw)
    assert st[TP].error == Errors.NONE and st[TP].base_offset == 0
    assert h.partition.log.log_end_offset == 2
    st = h.produce(1, acks=1, producer_id=11, producer_epoch=0, base_sequence=5)
    assert st[TP].error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # not among appendToLocalLog's known exceptions: Kafka counts it as a failed produce
    assert h.rm.stats.snapshot().topics["t"].failed_produce_requests == 1


def test_bad_batches_get_error_codes_and_nothing_is_written():
    h = Harness()
    from kafka_emu.broker.storage.record_batch import build_batch
    bad = bytearray(build_batch([(b"k", b"v")]))
    bad[-1] ^= 1
    box = {}
    h.rm.append_records(1000, 1, {TP: bytes(bad)}, box.update)
    assert box[TP].error == Errors.CORRUPT_MESSAGE
    box.clear()
    h.rm.append_records(1000, 1, {TP: build_batch([(b"k", b"v" * 2_000_000)])}, box.update)
    assert box[TP].error == Errors.MESSAGE_TOO_LARGE
    box.clear()
    h.rm.append_records(1000, -1, {("nope", 0): build_batch([(b"k", b"v")])}, box.update)
    assert box[("nope", 0)].error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    # routine refusals, not broker failures: Kafka's ReplicaManager leaves FailedProduceRequestsPerSec alone
    assert h.partition.log.log_end_offset == 0 and h.rm.stats.snapshot().topics.keys() <= {"t"}
    assert sum(t.failed_produce_requests for t in h.rm.stats.snapshot().topics.values()) == 0


def test_stats_count_messages_and_bytes():
    h = Harness()
    h.produce(3, acks=1)
    stats = h.rm.stats.snapshot().topics["t"]
    assert stats.messages_in == 3 and stats.bytes_in > 0
    h.follower_fetch(1, 0)
    h.follower_fetch(2, 0)
    h.follower_fetch(1, 3)
    h.follower_fetch(2, 3)
    h.consumer_fetch(0)
    assert h.rm.stats.snapshot().topics["t"].bytes_out > 0


def test_delayed_fetch_cases_directly():
    """DelayedFetchTest: fenced epoch, not leader, diverging epoch complete the operation."""
    from kafka_emu.broker.server.delayed_fetch import DelayedFetch
    from kafka_emu.broker.server.fetch_params import FetchParams, PartitionFetchInfo

    h = Harness()
    h.produce(2, acks=1)
    out = []
    follower = FetchParams(replica_id=1, max_wait_ms=500, min_bytes=1, isolation=0)
    # diverging: the follower claims epoch 9 while the leader is at epoch 0 (never had 9)
    op = DelayedFetch(500, follower, [(TP, PartitionFetchInfo(2, 1000, 0, -1, 9))], h.rm, out.extend)
    assert op.safe_try_complete() and out[0][1].diverging_epoch is not None
    # not completed while nothing new (fetch at the LEO), then fenced by an epoch change
    out.clear()
    op = DelayedFetch(500, follower, [(TP, PartitionFetchInfo(2, 1000, 0, 0, -1))], h.rm, out.extend)
    assert not op.safe_try_complete()
    h.partition.leader_epoch = 1
    assert op.safe_try_complete() and out[0][1].error == Errors.FENCED_LEADER_EPOCH
    h.partition.leader_epoch = 0
    out.clear()
    op = DelayedFetch(500, follower, [(TP, PartitionFetchInfo(2, 1000, 0, -1, -1))], h.rm, out.extend)
    h.partition.is_leader = False
    assert op.safe_try_complete() and out[0][1].error == Errors.NOT_LEADER_OR_FOLLOWER


def test_stale_metadata_push_does_not_undo_an_isr_change():
    from dataclasses import replace
    h = Harness(lag_ms=100)
    stale = h.metadata.partition_state("t", 0)
    h.follower_fetch(1, 0)
    h.time.advance(101)
    h.follower_fetch(1, 0)
    h.rm.maybe_shrink_isr()
    assert h.partition.isr == (0, 1)
    h.rm.apply_partition_states([replace(stale)])  # an older push of the same leader epoch
    assert h.partition.isr == (0, 1)
