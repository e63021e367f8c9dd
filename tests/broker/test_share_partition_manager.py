"""Ports of Kafka's ``SharePartitionManagerTest`` (share sessions: new, incremental, final,
errors, the session limit, records released when a session closes) and ``DelayedShareFetchTest``
(a ShareFetch parked in the ShareFetch purgatory completes when records arrive, when released
records become available again, or empty at its max wait), on one in-process broker."""
from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from kafka_emu.broker.server.share.share_partition import RecordState
from kafka_emu.broker.server.share.share_partition_manager import ShareFetchRequestState
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(60)
GROUP = "sg"


@pytest.fixture
def broker(make_cluster: Any) -> Any:
    cluster = make_cluster(brokers=1, config={"group.share.max.share.sessions": 1000,
                                               "share.coordinator.state.topic.num.partitions": 1})
    cluster.create_topic("t", 1, 1)
    cluster.metadata.alter_group_configs(GROUP, lambda c: {**c, "share.auto.offset.reset": "earliest"})
    return cluster


def fetch(manager: Any, topic_id: uuid.UUID, member: str = "m1", wait_ms: int = 0, max_records: int = 500) -> Any:
    done = threading.Event()
    out: dict = {}

    def respond(results: dict) -> None:
        out.update(results)
        done.set()

    manager.fetch(ShareFetchRequestState(GROUP, member, [(topic_id, 0)], 1 << 20, max_records, False), wait_ms,
                  respond)
    return done, out


def test_share_session_epochs(broker: Any) -> None:
    """testNewContextReturnsFinalContextWithoutRequestData / testNewContext /
    testShareSessionExpiryAndLimit: epoch 0 opens, the next epoch continues, a wrong epoch or an
    unknown session is refused, acknowledgements cannot open a session, -1 closes it."""
    m = broker.servers[0].share_partition_manager
    tid = broker.metadata.topic_id("t")
    assert m.new_context(GROUP, "m1", 1, [], [], False) == (Errors.SHARE_SESSION_NOT_FOUND, None)
    assert m.new_context(GROUP, "m1", 0, [(tid, 0)], [], True) == (Errors.INVALID_REQUEST, None)
    error, session = m.new_context(GROUP, "m1", 0, [(tid, 0)], [], False)
    assert error == Errors.NONE and session.epoch == 1 and list(session.partitions) == [(tid, 0)]
    assert m.new_context(GROUP, "m1", 2, [], [], False)[0] == Errors.INVALID_SHARE_SESSION_EPOCH
    error, session = m.new_context(GROUP, "m1", 1, [], [(tid, 0)], False)
    assert error == Errors.NONE and session.epoch == 2 and not session.partitions
    assert m.session_epoch_ok(GROUP, "m1", 0) == Errors.INVALID_SHARE_SESSION_EPOCH
    assert m.session_epoch_ok(GROUP, "m1", 2) == Errors.NONE
    assert m.new_context(GROUP, "m1", -1, [], [], False)[0] == Errors.NONE
    assert m.session_epoch_ok(GROUP, "m1", 3) == Errors.SHARE_SESSION_NOT_FOUND


def test_share_session_limit(make_cluster: Any) -> None:
    """testShareSessionCacheFull: SHARE_SESSION_LIMIT_REACHED past group.share.max.share.sessions."""
    cluster = make_cluster(brokers=1, config={"group.share.max.share.sessions": 1000})
    m = cluster.servers[0].share_partition_manager
    for i in range(1000):
        assert m.new_context(GROUP, f"m{i}", 0, [], [], False)[0] == Errors.NONE
    assert m.new_context(GROUP, "one-more", 0, [], [], False)[0] == Errors.SHARE_SESSION_LIMIT_REACHED
    assert m.new_context(GROUP, "m0", 0, [], [], False)[0] == Errors.NONE   # a member reopening its own


def test_closing_a_session_releases_the_members_records(broker: Any) -> None:
    """testReleaseSessionSuccess: the closed session's acquired records become available."""
    m = broker.servers[0].share_partition_manager
    tid = broker.metadata.topic_id("t")
    broker.produce("t", 0, [(None, b"v")] * 5)
    m.new_context(GROUP, "m1", 0, [(tid, 0)], [], False)
    done, out = fetch(m, tid, wait_ms=2000)
    assert done.wait(10) and [tuple(a) for a in out[(tid, 0)].acquired] == [(0, 4, 1)]
    m.close_session(GROUP, "m1")
    sp = m._partitions[(GROUP, tid, 0)]
    assert sp.in_flight() == [(0, 4, RecordState.AVAILABLE, 1, None)]


def test_delayed_share_fetch_completes_when_records_arrive(broker: Any) -> None:
    """DelayedShareFetchTest.testTryCompleteWhenMinBytesNotSatisfiedOnFirstFetch then
    testForceCompleteTriggersDelayedActionsQueue: parked until the produce moves the HW."""
    m = broker.servers[0].share_partition_manager
    tid = broker.metadata.topic_id("t")
    done, out = fetch(m, tid, wait_ms=30_000)
    assert not done.wait(0.3)
    assert m.purgatory.snapshot().num_delayed == 1
    broker.produce("t", 0, [(None, b"a"), (None, b"b")])
    assert done.wait(10)
    r = out[(tid, 0)]
    assert r.error == Errors.NONE and [tuple(a) for a in r.acquired] == [(0, 1, 1)] and r.records


def test_delayed_share_fetch_completes_when_records_are_released(broker: Any) -> None:
    """DelayedShareFetchTest: a fetch parked while every record is held by another member
    completes once they are released."""
    m = broker.servers[0].share_partition_manager
    tid = broker.metadata.topic_id("t")
    broker.produce("t", 0, [(None, b"a")])
    first, _ = fetch(m, tid, member="m1", wait_ms=2000)
    assert first.wait(10)
    done, out = fetch(m, tid, member="m2", wait_ms=30_000)
    assert not done.wait(0.3)
    acked = threading.Event()
    m.acknowledge(GROUP, "m1", {(tid, 0): [(0, 0, (2,))]}, lambda errors: acked.set())
    assert acked.wait(10) and done.wait(10)
    assert [tuple(a) for a in out[(tid, 0)].acquired] == [(0, 0, 2)]


def test_delayed_share_fetch_expires_empty(broker: Any) -> None:
    """DelayedShareFetchTest.testDelayedShareFetchOnComplete with nothing to acquire: the answer
    at max wait has no records."""
    m = broker.servers[0].share_partition_manager
    tid = broker.metadata.topic_id("t")
    done, out = fetch(m, tid, wait_ms=100)
    assert done.wait(10) and out == {}
    assert m.purgatory.snapshot().expirations >= 1


def test_acknowledged_records_stay_acknowledged_after_a_restart_with_log_dirs(tmp_path: Any) -> None:
    """The share coordinator loads __share_group_state on restart (ShareCoordinatorShard replay of
    a log written in Kafka's record formats): a new cluster on the same log.dirs restores the
    share partition, so accepted records are not delivered again and released ones are, with
    their delivery count."""
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    config = {"listeners": "", "log.dirs": str(tmp_path), "share.coordinator.state.topic.num.partitions": 1}
    with EmbeddedCluster(brokers=1, config=config) as first:
        first.create_topic("t", 1, 1)
        first.metadata.alter_group_configs(GROUP, lambda c: {**c, "share.auto.offset.reset": "earliest"})
        first.produce("t", 0, [(None, b"v")] * 10)
        m = first.servers[0].share_partition_manager
        tid = first.metadata.topic_id("t")
        done, out = fetch(m, tid, wait_ms=5000)
        assert done.wait(10) and [tuple(a) for a in out[(tid, 0)].acquired] == [(0, 9, 1)]
        acked = threading.Event()
        m.acknowledge(GROUP, "m1", {(tid, 0): [(0, 5, (1,)), (6, 9, (2,))]}, lambda errors: acked.set())
        assert acked.wait(10)
    with EmbeddedCluster(brokers=1, config=config) as second:
        m = second.servers[0].share_partition_manager
        tid = second.metadata.topic_id("t")
        done, out = fetch(m, tid, member="m2", wait_ms=5000)
        assert done.wait(10) and [tuple(a) for a in out[(tid, 0)].acquired] == [(6, 9, 2)]
