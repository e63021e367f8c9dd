"""Request timings, request counts and request-path gauges against known activity.

Timestamps are set by hand (the only thing mocked is time), so every histogram sum and bucket
can be checked exactly: these histograms are what people alert on (p99 produce latency), and a
phase attributed to the wrong histogram sends them looking at the wrong component.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_emu.metrics import ClusterMetrics
from kafka_emu.metrics.request_metrics import phase_times_ms, request_metric_names

from metrics_support import FakeChannel, FakeRequest, broker_namespace

pytestmark = pytest.mark.timeout(30)

MS = 1_000_000
PRODUCE, FETCH, JOIN_GROUP = 0, 1, 11


def stamped(api_key: int, version: int = 9, body: object = None, *, queue: int, local: int,
            remote: int, resp_queue: int = 0, send: int = 0, t0: int = 10_000 * MS) -> FakeRequest:
    """A request whose phases last the given numbers of milliseconds."""
    r = FakeRequest(api_key=api_key, api_version=version, body=body, start_time_ns=t0)
    r.dequeue_time_ns = t0 + queue * MS
    r.api_local_complete_time_ns = r.dequeue_time_ns + local * MS
    r.response_complete_time_ns = r.api_local_complete_time_ns + remote * MS
    if resp_queue or send:
        r.response_dequeue_time_ns = r.response_complete_time_ns + resp_queue * MS
        r.end_time_ns = r.response_dequeue_time_ns + send * MS
    return r


def test_phase_times_follow_kafkas_definitions() -> None:
    r = stamped(PRODUCE, queue=2, local=3, remote=40, resp_queue=1, send=4)
    assert phase_times_ms(r) == (50.0, 2.0, 3.0, 40.0, 1.0, 4.0)
    # In-process request answered from its handler: no remote phase, no response queue or send.
    r = FakeRequest(api_key=PRODUCE, start_time_ns=5 * MS, dequeue_time_ns=6 * MS,
                    response_complete_time_ns=9 * MS)
    assert phase_times_ms(r) == (4.0, 1.0, 3.0, 0.0, 0.0, 0.0)
    assert phase_times_ms(FakeRequest(api_key=PRODUCE)) is None  # never stamped: count only


def test_fetch_is_recorded_as_follower_or_consumer_and_as_fetch() -> None:
    follower = SimpleNamespace(replica_id=2)
    follower_v15 = SimpleNamespace(replica_state=SimpleNamespace(replica_id=1))
    consumer = SimpleNamespace(replica_id=-1)
    assert request_metric_names(FakeRequest(FETCH, body=follower)) == ("FetchFollower", "Fetch")
    assert request_metric_names(FakeRequest(FETCH, body=follower_v15)) == ("FetchFollower", "Fetch")
    assert request_metric_names(FakeRequest(FETCH, body=consumer)) == ("FetchConsumer", "Fetch")
    assert request_metric_names(FakeRequest(JOIN_GROUP)) == ("JoinGroup",)


def test_histograms_and_counts_from_request_listener() -> None:
    channel = FakeChannel()
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(1, request_channel=channel))
        assert len(channel.request_listeners) == 1
        channel.complete(stamped(PRODUCE, queue=1, local=2, remote=30))
        channel.complete(stamped(PRODUCE, queue=1, local=2, remote=300))
        channel.complete(stamped(FETCH, 12, SimpleNamespace(replica_id=0), queue=0, local=1, remote=500))
        b = {"broker_id": "1"}

        produce = {**b, "request": "Produce"}
        assert metrics.sample("kafka_network_requestmetrics_requestspersec_total",
                              {**produce, "version": "9"}) == 2
        assert metrics.sample("kafka_network_requestmetrics_totaltimems_count", produce) == 2
        assert metrics.sample("kafka_network_requestmetrics_totaltimems_sum", produce) == 33 + 303
        assert metrics.sample("kafka_network_requestmetrics_remotetimems_sum", produce) == 330
        assert metrics.sample("kafka_network_requestmetrics_localtimems_sum", produce) == 4
        assert metrics.sample("kafka_network_requestmetrics_requestqueuetimems_sum", produce) == 2
        # Bucket boundaries in ms: 33 ms falls at or below 50, 303 ms does not.
        assert metrics.sample("kafka_network_requestmetrics_totaltimems_bucket", {**produce, "le": "50.0"}) == 1
        assert metrics.sample("kafka_network_requestmetrics_totaltimems_bucket", {**produce, "le": "500.0"}) == 2

        for name in ("FetchFollower", "Fetch"):
            labels = {**b, "request": name}
            assert metrics.sample("kafka_network_requestmetrics_remotetimems_sum", labels) == 500
            assert metrics.sample("kafka_network_requestmetrics_requestspersec_total",
                                  {**labels, "version": "12"}) == 1
        assert metrics.sample("kafka_network_requestmetrics_totaltimems_count",
                              {**b, "request": "FetchConsumer"}) is None


def test_listener_follows_a_restarted_brokers_new_channel_and_detaches_on_close() -> None:
    old, new = FakeChannel(), FakeChannel()
    broker = broker_namespace(0, request_channel=old)
    metrics = ClusterMetrics()
    metrics.register_broker(broker)
    broker.request_channel = new  # the broker restarted and built a new channel
    metrics.exposition()
    assert old.request_listeners == [] and len(new.request_listeners) == 1
    new.complete(stamped(PRODUCE, queue=0, local=1, remote=0))
    assert metrics.sample("kafka_network_requestmetrics_totaltimems_count",
                          {"broker_id": "0", "request": "Produce"}) == 1
    metrics.close()
    assert new.request_listeners == []


def test_a_failing_listener_input_never_raises_into_the_request_path() -> None:
    channel = FakeChannel()
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(0, request_channel=channel))
        channel.complete(SimpleNamespace(api_key="not-a-number"))  # must not raise
        assert metrics.request_metrics.listener_errors == 1


def test_request_channel_and_handler_pool_gauges() -> None:
    clock = [1_000 * MS]
    handlers = [SimpleNamespace(idle_ns=0, busy_ns=0) for _ in range(4)]
    pool = SimpleNamespace(handlers=handlers)
    channel = FakeChannel(queued=7)
    processors = [SimpleNamespace(idle_ns=0, response_queue_size=lambda: 2),
                  SimpleNamespace(idle_ns=0, response_queue_size=lambda: 1)]
    broker = broker_namespace(3, request_channel=channel, request_handler_pool=pool,
                              socket_server=SimpleNamespace(processors=processors))
    with ClusterMetrics() as metrics:
        bm = metrics.register_broker(broker)
        bm._clock_ns = lambda: clock[0]
        b = {"broker_id": "3"}
        assert metrics.sample("kafka_network_requestchannel_requestqueuesize", b) == 7
        assert metrics.sample("kafka_emu_requesthandlerpool_threads", b) == 4
        assert metrics.sample("kafka_network_requestchannel_responsequeuesize", b) == 3
        assert metrics.sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", b) is None

        # One second later: handlers idle 3 of 4 thread-seconds; processors idle 1.5 of 2.
        clock[0] += 1_000 * MS
        for h in handlers[:3]:
            h.idle_ns = 1_000 * MS
        handlers[3].busy_ns = 1_000 * MS
        processors[0].idle_ns = 1_000 * MS
        processors[1].idle_ns = 500 * MS
        assert metrics.sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", b) == 0.75
        assert metrics.sample("kafka_network_socketserver_networkprocessoravgidlepercent", b) == 0.75
        assert metrics.sample("kafka_emu_requesthandlerpool_idle_seconds_total", b) == 3.0

        # A scrape 100 ms later reuses the value rather than measuring a 100 ms window.
        clock[0] += 100 * MS
        for h in handlers:
            h.busy_ns += 100 * MS
        assert metrics.sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", b) == 0.75
        clock[0] += 900 * MS
        for h in handlers:
            h.busy_ns += 900 * MS
        assert metrics.sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", b) == 0.0


def test_replica_manager_gauges_and_meters() -> None:
    from kafka_emu.broker.stats import BrokerTopicStats

    stats = BrokerTopicStats()
    rm = SimpleNamespace(stats=stats, under_replicated_partitions=lambda: 2, leader_count=lambda: 5,
                         partition_count=lambda: 9, under_min_isr_partitions=lambda: 1)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(0, replica_manager=rm))
        stats.record_bytes_in("a", messages=10, nbytes=1000)
        stats.record_bytes_in("b", messages=5, nbytes=24)
        stats.record_bytes_out("a", 700)
        stats.record_isr_shrink()
        stats.record_isr_shrink()
        stats.record_isr_expand()
        b = {"broker_id": "0"}
        expected = {
            "kafka_server_replicamanager_underreplicatedpartitions": 2,
            "kafka_server_replicamanager_leadercount": 5,
            "kafka_server_replicamanager_partitioncount": 9,
            "kafka_server_replicamanager_underminisrpartitioncount": 1,
            "kafka_server_replicamanager_isrshrinkspersec_total": 2,
            "kafka_server_replicamanager_isrexpandspersec_total": 1,
            "kafka_server_brokertopicmetrics_messagesinpersec_total": 15,
            "kafka_server_brokertopicmetrics_bytesinpersec_total": 1024,
            "kafka_server_brokertopicmetrics_bytesoutpersec_total": 700,
        }
        assert {name: metrics.sample(name, b) for name in expected} == expected


def test_a_broken_hook_loses_its_section_not_the_scrape() -> None:
    def boom() -> int:
        raise RuntimeError("hook failed")

    rm = SimpleNamespace(under_replicated_partitions=boom)
    channel = FakeChannel(queued=1)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker_namespace(0, replica_manager=rm, request_channel=channel))
        assert metrics.sample("kafka_network_requestchannel_requestqueuesize", {"broker_id": "0"}) == 1
        assert metrics.sample("kafka_server_replicamanager_underreplicatedpartitions", {"broker_id": "0"}) is None


def test_a_restarted_broker_counts_from_zero_and_a_stopped_one_disappears() -> None:
    old_channel, new_channel = FakeChannel(), FakeChannel()
    cluster = SimpleNamespace(servers={0: broker_namespace(0, request_channel=old_channel),
                                       1: broker_namespace(1, request_channel=FakeChannel())})
    with ClusterMetrics(cluster) as metrics:
        produce = {"broker_id": "0", "request": "Produce", "version": "9"}
        old_channel.complete(stamped(PRODUCE, queue=0, local=1, remote=0))
        assert metrics.sample("kafka_network_requestmetrics_requestspersec_total", produce) == 1
        # Broker 0 restarts: a new server object with a new channel.
        cluster.servers[0] = broker_namespace(0, request_channel=new_channel)
        assert metrics.sample("kafka_network_requestmetrics_requestspersec_total", produce) is None
        assert old_channel.request_listeners == [] and len(new_channel.request_listeners) == 1
        new_channel.complete(stamped(PRODUCE, queue=0, local=1, remote=0))
        assert metrics.sample("kafka_network_requestmetrics_requestspersec_total", produce) == 1
        # Broker 0 stops: all its series go in the same scrape.
        cluster.servers[0].stopped = True
        assert 'broker_id="0"' not in metrics.exposition()
        assert new_channel.request_listeners == []
