"""Broker time travel: offset and manual clocks, ``run_due``, and a DelayedProduce that expires
only when a manual cluster's clock is advanced.

The cluster case is Kafka's ``ReplicaManagerTest.testProduceRequestTimeout``-style scenario
(an acks=all produce waiting on a stalled follower times out with REQUEST_TIMED_OUT after its
timeout), driven by broker time instead of the wall clock.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.cluster.control.time_control import ManualTime, OffsetTime, advance, make_time
from kafka_emu.timer.scheduler import KafkaScheduler
from kafka_emu.common.errors import Errors
from kafka_emu.timer import SystemTimer, Time, TimerTask

pytestmark = pytest.mark.timeout(60)


class _Task(TimerTask):
    def __init__(self, delay_ms: int, ran: list[int], value: int) -> None:
        super().__init__(delay_ms)
        self.ran, self.value = ran, value

    def run(self) -> None:
        time.sleep(0.05)   # a slow expiration: advance must still wait for it
        self.ran.append(self.value)


@pytest.mark.parametrize("clock", [OffsetTime, ManualTime])
def test_advance_returns_after_due_timer_tasks_have_run(clock: type) -> None:
    t = clock()
    timer = SystemTimer("tc-test", time=t)
    try:
        ran: list[int] = []
        timer.add(_Task(60_000, ran, 1))
        timer.add(_Task(120_000, ran, 2))
        advance(t, 60_000)
        assert ran == [1]          # due: ran before advance returned; the later one did not
        advance(t, 60_000)
        assert ran == [1, 2]
    finally:
        timer.close()


def test_offset_time_flows_with_the_wall_clock_and_jumps() -> None:
    t = OffsetTime()
    wall0, mono0 = t.milliseconds(), t.hi_res_clock_ms()
    assert abs(wall0 - Time.SYSTEM.milliseconds()) < 50
    t.advance(3_600_000)
    assert t.milliseconds() - wall0 >= 3_600_000
    assert t.hi_res_clock_ms() - mono0 >= 3_600_000
    with pytest.raises(ValueError):
        t.advance(-1)


def test_manual_time_stands_still_until_advanced() -> None:
    t = ManualTime()
    start = t.hi_res_clock_ms()
    time.sleep(0.02)
    assert t.hi_res_clock_ms() == start
    assert abs(t.milliseconds() - Time.SYSTEM.milliseconds()) < 1000


def test_scheduler_task_runs_on_advance() -> None:
    t = ManualTime()
    sched = KafkaScheduler(99, t)
    ran: list[int] = []
    sched.schedule("probe", lambda: ran.append(t.hi_res_clock_ms()), period_ms=30_000)
    sched.start()
    try:
        time.sleep(0.05)
        assert ran == []
        advance(t, 30_000)
        assert len(ran) == 1
    finally:
        sched.shutdown()


def test_make_time_rejects_unknown_modes_and_real_time_cannot_move() -> None:
    assert make_time("real") is Time.SYSTEM
    with pytest.raises(ValueError, match="time must be one of"):
        make_time("fast")
    with pytest.raises(RuntimeError, match="advance_time needs"):
        advance(Time.SYSTEM, 10)


def test_manual_cluster_expires_delayed_produce_only_on_advance() -> None:
    with EmbeddedCluster(brokers=2, time="manual", config={"listeners": ""}) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=2)
        leader = cluster.leader_of("t", 0)
        follower = 1 - leader
        cluster.broker(follower).fetcher_manager.set_paused(True)
        result: list[Any] = []
        sender = threading.Thread(target=lambda: result.append(
            cluster.produce("t", 0, [(b"k", b"v")], acks=-1, timeout_ms=5000)))
        sender.start()
        sender.join(0.5)   # half a second of real time: broker time has not moved
        assert sender.is_alive() and result == []
        assert cluster.broker(leader).replica_manager.produce_purgatory.num_delayed() == 1
        cluster.advance_time(4_999)
        assert sender.is_alive()
        cluster.advance_time(1)
        sender.join(5)
        assert [code for code, _ in result] == [Errors.REQUEST_TIMED_OUT]
        assert cluster.control.counts["time_advanced"] == 2


def test_manual_cluster_shrinks_the_isr_when_the_lag_time_passes_on_advance() -> None:
    """Kafka's ``PartitionTest.testMaybeShrinkIsr`` over a cluster: a follower that stopped
    fetching leaves the ISR once ``replica.lag.time.max.ms`` has passed on the broker's clock,
    at the ``advance_time`` that passes it, not before."""
    with EmbeddedCluster(brokers=2, time="manual", config={"listeners": ""}) as cluster:
        cluster.create_topic("t", partitions=1, replication_factor=2)
        leader = cluster.leader_of("t", 0)
        follower = 1 - leader
        cluster.broker(follower).fetcher_manager.set_paused(True)
        assert cluster.produce("t", 0, [(b"k", b"v")], acks=1)[0] == Errors.NONE
        cluster.advance_time(29_000)
        assert set(cluster.partition_state("t", 0).isr) == {leader, follower}
        cluster.advance_time(16_000)   # past the lag time, and an isr-expiration run is due
        assert cluster.partition_state("t", 0).isr == (leader,)
