"""End to end on an EmbeddedCluster: 3 members join, sync and commit on the group's coordinator;
the coordinator's broker stops; the new leader of the __consumer_offsets partition loads the
group and its offsets (through the replicated log); the members rejoin and resume from the
committed offsets."""
from __future__ import annotations

import importlib
import threading
import time as _time

import pytest

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.records import partition_for
from kafka_emu.coordinator.group.results import OffsetAndMetadata

broker_cluster = importlib.import_module("kafka_emu.broker.cluster.embedded_cluster")

GROUP = "e2e-group"
TOPIC = "orders"


def wait_for(cond, timeout: float = 30.0, what: str = "condition"):
    deadline = _time.monotonic() + timeout
    while _time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        _time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def call(fn, *args, timeout: float = 20.0):
    ev, slot = threading.Event(), []

    def cb(result):
        slot.append(result)
        ev.set()

    fn(*args, cb)
    assert ev.wait(timeout), f"{getattr(fn, '__name__', fn)} not answered"
    assert len(slot) == 1
    return slot[0]


def coordinator_for(cluster, partition: int):
    """The live coordinator that owns (has loaded) the partition."""
    leader = cluster.leader_of("__consumer_offsets", partition)
    if leader < 0:
        return None
    server = cluster.servers.get(leader)
    if server is None or server.stopped or server.group_coordinator is None:
        return None
    gc = server.group_coordinator
    return (leader, gc) if gc.is_partition_owned(partition) else None


def join_all(gc, member_ids: list[str]) -> list:
    results: list = [None] * len(member_ids)
    events = [threading.Event() for _ in member_ids]
    for i, mid in enumerate(member_ids):
        def cb(r, i=i):
            results[i] = r
            events[i].set()
        gc.handle_join_group(GROUP, mid, None, False, f"client-{i}", "localhost", 10000, 10000,
                             "consumer", [("range", b"meta-%d" % i)], cb)
    for ev in events:
        assert ev.wait(20), "join not answered"
    return results


def sync_all(gc, joins: list) -> list:
    leader = next(j for j in joins if j.leader_id == j.member_id)
    assignment = {j.member_id: b"%d" % i for i, j in enumerate(joins)}
    boxes = []
    threads = []
    for j in joins:
        box: list = []
        boxes.append(box)
        assign = assignment if j is leader else {}
        t = threading.Thread(target=lambda j=j, box=box, assign=assign: box.append(
            call(gc.handle_sync_group, GROUP, j.generation_id, j.member_id, "consumer", j.protocol_name, None, assign)))
        threads.append(t)
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    return [b[0] for b in boxes]


@pytest.mark.timeout(90)
def test_group_and_offsets_survive_coordinator_failover() -> None:
    config = {"listeners": "", "group.initial.rebalance.delay.ms": 50,
              "offsets.topic.replication.factor": 3}
    with broker_cluster.EmbeddedCluster(brokers=3, config=config) as cluster:
        num = cluster.broker_config(0)["offsets.topic.num.partitions"]
        p = partition_for(GROUP, num)
        first, gc = wait_for(lambda: coordinator_for(cluster, p), what="coordinator election")

        joins = join_all(gc, ["", "", ""])
        assert all(j.error == Errors.NONE and j.generation_id == 1 for j in joins)
        syncs = sync_all(gc, joins)
        assert all(s.error == Errors.NONE for s in syncs)
        assert sorted(s.member_assignment for s in syncs) == [b"0", b"1", b"2"]
        for i, j in enumerate(joins):
            res = call(gc.handle_commit_offsets, GROUP, j.member_id, None, j.generation_id,
                       {(TOPIC, i): OffsetAndMetadata(100 + i, None, f"m{i}", 0)})
            assert res == {(TOPIC, i): Errors.NONE}

        cluster.stop_broker(first)
        second, gc2 = wait_for(lambda: (lambda c: c if c and c[0] != first else None)(coordinator_for(cluster, p)),
                               what="new coordinator loaded")
        assert second != first
        group = gc2.group_manager.get_group(GROUP)
        assert group is not None and group.generation_id == 1 and group.size() == 3
        assert group.state.value == "Stable"

        # Members resume: heartbeat works at once, committed offsets are there.
        for j in joins:
            assert call(gc2.handle_heartbeat, GROUP, j.member_id, None, 1) == Errors.NONE
        err, data = gc2.handle_fetch_offsets(GROUP, True, None)
        assert err == Errors.NONE
        assert {tp: d.offset for tp, d in data.items()} == {(TOPIC, i): 100 + i for i in range(3)}

        # Members rejoin (the leader's rejoin forces a rebalance) and sync generation 2.
        joins2 = join_all(gc2, [j.member_id for j in joins])
        assert all(j.error == Errors.NONE and j.generation_id == 2 for j in joins2)
        syncs2 = sync_all(gc2, joins2)
        assert all(s.error == Errors.NONE for s in syncs2)
        for i, j in enumerate(joins2):
            res = call(gc2.handle_commit_offsets, GROUP, j.member_id, None, 2,
                       {(TOPIC, i): OffsetAndMetadata(200 + i)})
            assert res == {(TOPIC, i): Errors.NONE}
        err, data = gc2.handle_fetch_offsets(GROUP, True, [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)])
        assert [data[(TOPIC, i)].offset for i in range(3)] == [200, 201, 202]
