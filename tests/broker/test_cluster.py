"""In-process 3-broker replication through request channels, handlers and fetcher threads."""
import threading
from datetime import timedelta

import pytest

from kafka_emu.broker.cluster.inprocess_client import fetch_request, produce_request, send, send_async
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.broker.network.request_channel import Request, RequestChannel
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from cluster_support import broker_threads, wait_until

pytestmark = pytest.mark.timeout(30)


def test_acks_all_replicates_to_every_replica(make_cluster):
    c = make_cluster()
    c.create_topic("t", partitions=2, replication_factor=3)
    for i in range(20):
        assert c.produce("t", i % 2, [(b"k", b"v%d" % i)]) == (Errors.NONE, i // 2)
    for p in (0, 1):
        leader = c.leader_of("t", p)
        assert c.broker(leader).partition("t", p).log.high_watermark == 10
        for b in range(3):
            wait_until(lambda: len(c.read_all("t", p, broker_id=b)) == 10, msg=f"replica {b}")
        data = c.fetch("t", p, 0)
        assert data.error_code == 0 and data.high_watermark == 10 and data.last_stable_offset == 10


def test_acks_1_and_0(make_cluster):
    c = make_cluster()
    c.create_topic("t", 1, 3)
    assert c.produce("t", 0, [(b"k", b"v")], acks=1) == (Errors.NONE, 0)
    assert c.produce("t", 0, [(b"k", b"v")], acks=0) == (Errors.NONE, -1)
    assert c.produce("t", 0, [(b"k", b"v")], acks=2)[0] == Errors.INVALID_REQUIRED_ACKS
    wait_until(lambda: c.broker(c.leader_of("t")).partition("t", 0).log.high_watermark == 2)


def test_stalled_follower_is_dropped_from_isr_and_produce_completes(make_cluster):
    c = make_cluster(config={"replica.lag.time.max.ms": 300, "replica.fetch.wait.max.ms": 100})
    c.create_topic("t", 1, 3)
    assert c.produce("t", 0, [(b"k", b"v")]) == (0, 0)
    leader = c.leader_of("t")
    stalled = [b for b in range(3) if b != leader][0]
    c.broker(stalled).fetcher_manager.set_paused(True)
    err, off = c.produce("t", 0, [(b"k", b"w")], timeout_ms=5000)
    assert (err, off) == (Errors.NONE, 1)
    assert stalled not in c.partition_state("t").isr
    assert c.broker(leader).replica_manager.stats.snapshot().isr_shrinks >= 1
    c.broker(stalled).fetcher_manager.set_paused(False)
    wait_until(lambda: stalled in c.partition_state("t").isr, msg="ISR expansion")
    assert c.broker(leader).replica_manager.stats.snapshot().isr_expands >= 1


def test_stop_leader_completes_inflight_produce_and_moves_leadership(make_cluster):
    c = make_cluster()
    c.create_topic("t", 1, 3)
    assert c.produce("t", 0, [(b"k", b"a")]) == (0, 0)
    leader = c.leader_of("t")
    epoch = c.partition_state("t").leader_epoch
    for b in range(3):
        if b != leader:
            c.broker(b).fetcher_manager.set_paused(True)
    box, done = [], threading.Event()
    body = produce_request("t", 0, build_batch([(b"k", b"b")]), acks=-1, timeout_ms=30000)
    send_async(c.broker(leader).request_channel, 0, 9, body, lambda r: (box.append(r), done.set()))
    wait_until(lambda: c.broker(leader).replica_manager.produce_purgatory.num_delayed() == 1)
    c.stop_broker(leader)
    assert done.wait(5)
    assert box[0].body.responses[0].partition_responses[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER
    st = c.partition_state("t")
    assert st.leader != leader and st.leader_epoch == epoch + 1 and leader not in st.isr
    for b in range(3):
        if b != leader:
            c.broker(b).fetcher_manager.set_paused(False)
    assert c.produce("t", 0, [(b"k", b"c")])[0] == Errors.NONE
    values = [v for _, _, v in c.read_all("t", 0)]
    assert values[0] == b"a" and values[-1] == b"c"
    assert not any(t.startswith(f"ReplicaFetcherThread-0-{leader}") for t in broker_threads())


def test_restart_truncates_to_hw_and_rejoins_isr(make_cluster):
    c = make_cluster()
    c.create_topic("t", 1, 3)
    for i in range(5):
        c.produce("t", 0, [(b"k", b"%d" % i)])
    leader = c.leader_of("t")
    victim = [b for b in range(3) if b != leader][0]
    c.stop_broker(victim)
    assert victim not in c.partition_state("t").isr
    for i in range(5, 10):
        assert c.produce("t", 0, [(b"k", b"%d" % i)])[0] == Errors.NONE
    c.start_broker(victim)
    wait_until(lambda: victim in c.partition_state("t").isr, msg="restarted broker back in ISR")
    wait_until(lambda: len(c.read_all("t", 0, broker_id=victim)) == 10)
    assert [v for _, _, v in c.read_all("t", 0, broker_id=victim)] == [b"%d" % i for i in range(10)]


def test_diverged_follower_truncates_to_new_leader(make_cluster):
    c = make_cluster(config={"replica.lag.time.max.ms": 60000})
    c.create_topic("t", 1, 3)
    assert c.produce("t", 0, [(b"k", b"a")]) == (0, 0)
    leader = c.leader_of("t")
    f1, f2 = [b for b in range(3) if b != leader]
    c.broker(f2).fetcher_manager.set_paused(True)
    # f1 gets 'b' (unacked: f2 is stalled), then the leader dies; f1 leads (first in ISR) or f2 does
    box = []
    send_async(c.broker(leader).request_channel, 0, 9,
               produce_request("t", 0, build_batch([(b"k", b"b")]), acks=-1, timeout_ms=30000), box.append)
    wait_until(lambda: len(c.read_all("t", 0, broker_id=f1)) == 2)
    c.stop_broker(leader)
    c.broker(f2).fetcher_manager.set_paused(False)
    assert c.produce("t", 0, [(b"k", b"c")])[0] == Errors.NONE
    new_leader = c.leader_of("t")
    other = f2 if new_leader == f1 else f1
    expected = [v for _, _, v in c.read_all("t", 0, broker_id=new_leader)]
    assert expected[0] == b"a" and expected[-1] == b"c"
    wait_until(lambda: [v for _, _, v in c.read_all("t", 0, broker_id=other)] == expected,
               msg="follower converges on the leader's log")


def test_thread_names_and_nothing_survives_close(make_cluster):
    before = set(broker_threads())
    c = make_cluster()
    c.create_topic("t", 3, 3)
    names = set(broker_threads())
    for i in range(4):
        assert any(n == f"data-plane-kafka-request-handler-{i}" for n in names)
    for b in range(3):
        assert f"ExpirationReaper-{b}-Produce" in names and f"ExpirationReaper-{b}-Fetch" in names
        assert f"ReplicaFetcherThread-0-{b}" in names
        assert f"kafka-scheduler-{b}" in names
    c.close()
    assert set(broker_threads()) <= before


@pytest.mark.parametrize("version", range(3, 14))
def test_produce_versions(make_cluster, version):
    c = make_cluster(brokers=1)
    c.create_topic("t", 1, 1)
    cls_mod = __import__(f"kio.schema.produce.v{version}.request", fromlist=["x"])
    td = {"topic_id": c.metadata.topic_id("t")} if version >= 13 else {"name": "t"}
    body = cls_mod.ProduceRequest(transactional_id=None, acks=-1, timeout=timedelta(seconds=5),
                                  topic_data=(cls_mod.TopicProduceData(partition_data=(
                                      cls_mod.PartitionProduceData(index=0, records=build_batch([(b"k", b"v")])),),
                                      **td),))
    resp = send(c.broker(0).request_channel, 0, version, body).body
    assert type(resp).__version__ == version
    p = resp.responses[0].partition_responses[0]
    assert p.error_code == 0 and p.base_offset == 0
    import io
    from kio.serial import entity_writer
    entity_writer(type(resp))(io.BytesIO(), resp)


@pytest.mark.parametrize("version", range(4, 19))
def test_fetch_versions(make_cluster, version):
    c = make_cluster(brokers=1)
    c.create_topic("t", 1, 1)
    c.produce("t", 0, [(b"k", b"v")])
    mod = __import__(f"kio.schema.fetch.v{version}.request", fromlist=["x"])
    part_kw = dict(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    part = mod.FetchPartition(**{k: v for k, v in part_kw.items()})
    topic = mod.FetchTopic(partitions=(part,), **({"topic_id": c.metadata.topic_id("t")} if version >= 13
                                                   else {"topic": "t"}))
    fields = {f for f in mod.FetchRequest.__dataclass_fields__}
    kw = dict(max_wait=timedelta(milliseconds=100), min_bytes=1, topics=(topic,))
    for name, value in (("forgotten_topics_data", ()), ("max_bytes", 1 << 20), ("isolation_level", 1)):
        if name in fields:
            kw[name] = value
    resp = send(c.broker(0).request_channel, 1, version, mod.FetchRequest(**kw)).body
    assert type(resp).__version__ == version
    pd = resp.responses[0].partitions[0]
    assert pd.error_code == 0 and pd.high_watermark == 1 and len(pd.records) > 0
    import io
    from kio.serial import entity_writer
    entity_writer(type(resp))(io.BytesIO(), resp)


def test_fetch_unknown_topic_id(make_cluster):
    import uuid
    c = make_cluster(brokers=1)
    mod = __import__("kio.schema.fetch.v13.request", fromlist=["x"])
    body = mod.FetchRequest(max_wait=timedelta(0), min_bytes=1, topics=(mod.FetchTopic(
        topic_id=uuid.uuid4(), partitions=(mod.FetchPartition(partition=0, fetch_offset=0,
                                                              partition_max_bytes=100),)),),
                            forgotten_topics_data=())
    resp = send(c.broker(0).request_channel, 1, 13, body).body
    assert resp.responses[0].partitions[0].error_code == Errors.UNKNOWN_TOPIC_ID


def test_unknown_api_closes_and_listeners_see_timings(make_cluster):
    c = make_cluster(brokers=1)
    seen = []
    ch = c.broker(0).request_channel
    ch.request_listeners.append(seen.append)
    resp = send(ch, 9999, 0, None)
    assert resp.body is None and resp.close_connection
    c.create_topic("t", 1, 1)
    send(ch, ApiKeys.FETCH, 12, fetch_request("t", 0, 0))
    r = seen[-1]
    assert r.start_time_ns <= r.dequeue_time_ns <= r.api_local_complete_time_ns <= r.response_complete_time_ns
    pool = c.broker(0).handler_pool.snapshot()
    assert pool.threads >= 1 and pool.idle_ns > 0 and pool.busy_ns > 0
    assert c.broker(0).request_channel.snapshot().request_queue_size == 0


def test_request_channel_is_bounded():
    ch = RequestChannel(queue_size=2)
    mk = lambda: Request(0, 0, 0, None, None, lambda r: None, "Produce")
    assert ch.send_request(mk()) and ch.send_request(mk())
    assert not ch.send_request(mk(), timeout_s=0.01)
    assert ch.size() == 2
    answered = []
    ch._queue.get_nowait()
    req = Request(0, 0, 0, None, None, answered.append, "Produce")
    ch.send_request(req)
    ch.close()
    assert answered and answered[0].close_connection and not ch.send_request(mk())


def test_delete_topic_completes_parked_operations(make_cluster):
    c = make_cluster()
    c.create_topic("t", 1, 3)
    leader = c.leader_of("t")
    box, done = [], threading.Event()
    send_async(c.broker(leader).request_channel, 1, 12, fetch_request("t", 0, 0, max_wait_ms=20000),
               lambda r: (box.append(r), done.set()))
    wait_until(lambda: c.broker(leader).replica_manager.fetch_purgatory.num_delayed() >= 1)
    c.delete_topic("t")
    assert done.wait(5)
    assert box[0].body.responses[0].partitions[0].error_code in (Errors.NOT_LEADER_OR_FOLLOWER,
                                                                  Errors.UNKNOWN_TOPIC_OR_PARTITION)
    assert all(("t", 0) not in c.logs[b] for b in range(3))


def test_former_empty_epoch_leader_catches_up(make_cluster):
    """Regression (found by the property test): a broker that led an epoch without appending,
    then restarted as follower, must not loop on a diverging epoch."""
    c = make_cluster(config={"replica.lag.time.max.ms": 150, "replica.fetch.wait.max.ms": 50})
    c.create_topic("p", 1, 3)
    c.stop_broker(0)                      # leader 1 at epoch 1 (nothing appended)
    c.broker(2).fetcher_manager.set_paused(True)
    c.stop_broker(2)                      # ISR {1}
    c.start_broker(0)
    c.stop_broker(1)                      # 0 may lead; 1 keeps its empty epoch 1 entry
    c.start_broker(1)
    c.start_broker(2)
    wait_until(lambda: c.leader_of("p") >= 0)
    assert c.produce("p", 0, [(b"k", b"x")], timeout_ms=5000)[0] == Errors.NONE
    for b in range(3):
        wait_until(lambda: c.read_all("p", 0, broker_id=b) == c.read_all("p", 0), timeout_s=5,
                   msg=f"replica {b} converges")
