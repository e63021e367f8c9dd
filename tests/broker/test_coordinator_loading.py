"""COORDINATOR_LOAD_IN_PROGRESS across a coordinator failover, in a real cluster.

Kafka's coordinator schedules the load of a ``__consumer_offsets`` partition the moment its
broker becomes leader, so group requests in between answer COORDINATOR_LOAD_IN_PROGRESS
(GroupCoordinatorTest.testRequestHandlingWhileLoadingInProgress). The emulator's new leader
waits for its HW to cover what the partition held before it loads; this test holds that wait
open (the new leader's HW trails its LEO, as right after a follower fetched records but not yet
the HW that commits them, and the one other replica does not fetch) and checks the answers."""
from __future__ import annotations

import pytest

from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.results import OffsetAndMetadata

from cluster_support import wait_until

pytestmark = pytest.mark.timeout(60)
GROUP = "loading-group"
TP = ("t", 0)


def test_offset_fetch_and_describe_answer_load_in_progress_until_loaded(make_cluster) -> None:
    cluster = make_cluster(brokers=2, offsets_topic=True,
                           config={"offsets.topic.replication.factor": 2, "offsets.topic.num.partitions": 1})
    cluster.ensure_offsets_topic()
    old = cluster.leader_of(OFFSETS_TOPIC, 0)
    new = 1 - old
    box: list[int] = []
    cluster.broker(old).group_coordinator.handle_commit_offsets(
        GROUP, "", None, -1, {TP: OffsetAndMetadata(42)}, lambda result: box.append(result[TP]))
    wait_until(lambda: box == [Errors.NONE], msg="commit")
    new_log = cluster.logs[new][(OFFSETS_TOPIC, 0)]
    wait_until(lambda: new_log.high_watermark == new_log.log_end_offset > 0, msg="replicated")
    # the old leader, about to follow, does not fetch: the new leader's HW cannot advance; the
    # new one stops fetching too, so no fetch brings it the HW back before the move
    cluster.broker(old).fetcher_manager.set_paused(True)
    cluster.broker(new).fetcher_manager.set_paused(True)
    with new_log.lock:
        new_log.high_watermark = new_log.log_start_offset
    cluster.move_group_coordinator(GROUP, new)
    cluster.broker(new).fetcher_manager.set_paused(False)
    coordinator = cluster.broker(new).group_coordinator
    assert coordinator.handle_fetch_offsets(GROUP, partitions=[TP])[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator.handle_describe_group(GROUP)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    cluster.broker(old).fetcher_manager.set_paused(False)
    wait_until(lambda: coordinator.handle_fetch_offsets(GROUP, partitions=[TP])[0] == Errors.NONE, msg="loaded")
    assert coordinator.handle_fetch_offsets(GROUP, partitions=[TP])[1][TP].offset == 42
    assert cluster.broker(old).group_coordinator.handle_fetch_offsets(GROUP, partitions=[TP])[0] == \
        Errors.NOT_COORDINATOR
