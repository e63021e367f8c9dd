"""The executors' live counts reach the driver over UDP and add up across partitions."""
from __future__ import annotations

import time

import pytest

from kafka_emu.loadgen.live_stats import StatsReceiver, StatsReporter, bucket_of, percentile_ms, upper_bound_ms
from kafka_emu.loadgen.samples import SampleSink

pytestmark = [pytest.mark.timeout(30)]


def _wait_for(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_two_partitions_counts_and_window_p99():
    receiver = StatsReceiver()
    try:
        sinks = [SampleSink("producer:a", "confluent"), SampleSink("member:g-m0", "confluent", "g", "g-m0")]
        for i in range(200):
            sinks[0].add("produce", 2.0 if i < 190 else 400.0, topic="t", partition=0, offset=i)
        sinks[0].add("produce", None, error="_MSG_TIMED_OUT")
        for i in range(150):
            sinks[1].add("consume", 5.0, topic="t", partition=0, offset=i)
        reporters = [StatsReporter(receiver.address, 0), StatsReporter(receiver.address, 1)]
        reporters[0].watch(sinks[:1])
        reporters[1].watch(sinks[1:])
        for r in reporters:
            r.start()
        sinks[1].add("consume", 5.0, topic="t", partition=0, offset=150)   # appended while it is watched
        for r in reporters:
            r.stop()                       # sends a last datagram with everything seen
        _wait_for(lambda: receiver.snapshot().partitions == 2 and receiver.snapshot().consumed == 151)
        snap = receiver.snapshot()
        assert (snap.acked, snap.failed, snap.consumed) == (200, 1, 151)
        # 10 of 200 at 400 ms: the p99 lies in the 400 ms bucket, reported as that bucket's upper bound
        assert snap.produce_p99_ms == pytest.approx(upper_bound_ms(bucket_of(400.0)))
        assert 400.0 <= snap.produce_p99_ms <= 400.0 * 1.13
        # the latency window ages out; the cumulative counts stay
        later = receiver.snapshot(now=time.time() + 60)
        assert later.produce_p99_ms is None and later.acked == 200
    finally:
        receiver.close()


def test_garbage_datagrams_are_ignored():
    receiver = StatsReceiver()
    try:
        receiver.accept(b"not json", time.time())
        receiver.accept(b'{"p": 0}', time.time())
        assert receiver.snapshot().partitions == 0
    finally:
        receiver.close()


def test_percentile_of_buckets():
    assert percentile_ms({}, 0.99) is None
    hist = {bucket_of(1.0): 99, bucket_of(1000.0): 1}
    assert percentile_ms(hist, 0.99) == pytest.approx(upper_bound_ms(bucket_of(1.0)))
    assert percentile_ms(hist, 1.0) == pytest.approx(upper_bound_ms(bucket_of(1000.0)))
