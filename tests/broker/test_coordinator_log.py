"""The ReplicaManager-backed CoordinatorLog and the coordinator election bridge."""
import threading

import pytest

from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.common.errors import Errors
from cluster_support import wait_until

pytestmark = pytest.mark.timeout(30)


def test_append_with_acks_all_and_read_up_to_hw(make_cluster):
    c = make_cluster(config={"offsets.topic.num.partitions": 2}, offsets_topic=True)
    st = c.partition_state(OFFSETS_TOPIC, 1)
    assert len(st.replicas) == 3
    server = c.broker(st.leader)
    clog = server.coordinator_log
    done = threading.Event()
    codes = []
    group_lock = threading.RLock()
    with group_lock:  # the coordinator appends under its group lock
        clog.append_records(1, [(b"k1", b"v1"), (b"k2", None)], 5000, group_lock,
                            lambda code: (codes.append(code), done.set()))
    assert done.wait(5) and codes == [Errors.NONE]
    assert list(clog.read_records(1)) == [(0, b"k1", b"v1"), (1, b"k2", None)]
    for b in range(3):
        wait_until(lambda: len(c.read_all(OFFSETS_TOPIC, 1, broker_id=b)) == 2)


def test_append_on_non_leader_fails(make_cluster):
    c = make_cluster(config={"offsets.topic.num.partitions": 1}, offsets_topic=True)
    st = c.partition_state(OFFSETS_TOPIC, 0)
    follower = [b for b in st.replicas if b != st.leader][0]
    codes = []
    c.broker(follower).coordinator_log.append_records(0, [(b"k", b"v")], 1000, threading.RLock(), codes.append)
    assert codes == [Errors.NOT_LEADER_OR_FOLLOWER]


def test_coordinator_elected_on_leaders_and_moves_on_stop(make_cluster):
    c = make_cluster(config={"offsets.topic.num.partitions": 3}, offsets_topic=True)
    for p in range(3):
        leader = c.leader_of(OFFSETS_TOPIC, p)
        gc = c.broker(leader).group_coordinator
        assert gc is not None, f"broker {leader} runs no group coordinator"
        wait_until(lambda: gc.is_partition_owned(p) or gc.is_partition_loading(p), msg="elected")
    leader = c.leader_of(OFFSETS_TOPIC, 0)
    c.stop_broker(leader)
    new = c.leader_of(OFFSETS_TOPIC, 0)
    assert new != leader
    gc = c.broker(new).group_coordinator
    wait_until(lambda: gc.is_partition_owned(0), msg="new coordinator loaded")
