"""Request timings, request and error counts, and request-path gauges against known activity.

Timestamps are set by hand (the only thing mocked is time), so every histogram sum and bucket
can be checked exactly: these histograms are what people alert on (p99 produce latency), and a
phase attributed to the wrong histogram sends them looking at the wrong component.
"""
from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9 import response as produce_v9

from kafka_emu.broker.storage.unified_log import LogSnapshot
from kafka_emu.broker.network.socket_server import SocketServerSnapshot
from kafka_emu.broker.server.request_handler import HandlerPoolSnapshot
from kafka_emu.metrics import ClusterMetrics
from kafka_emu.metrics.error_counts import error_counts
from kafka_emu.metrics.request_metrics import phase_times_ms, request_metric_names

from metrics_support import FakeBroker, FakeCluster, FakeRequest

pytestmark = pytest.mark.timeout(30)

MS = 1_000_000


def stamped(api_name: str, version: int = 9, *, queue: int, local: int, remote: int,
            resp_queue: int = 0, send: int = 0, t0: int = 10_000 * MS, **fields: object) -> FakeRequest:
    """A request whose phases last the given numbers of milliseconds."""
    r = FakeRequest(api_name=api_name, api_version=version, start_time_ns=t0, **fields)  # type: ignore[arg-type]
    r.dequeue_time_ns = t0 + queue * MS
    r.api_local_complete_time_ns = r.dequeue_time_ns + local * MS
    r.response_complete_time_ns = r.api_local_complete_time_ns + remote * MS
    if resp_queue or send:
        r.response_dequeue_time_ns = r.response_complete_time_ns + resp_queue * MS
        r.end_time_ns = r.response_dequeue_time_ns + send * MS
    return r


def produce_response(*codes: ErrorCode) -> produce_v9.ProduceResponse:
    """A Produce v9 response with one partition per error code, spread over two topics."""
    parts = [produce_v9.PartitionProduceResponse(
        index=i, error_code=code, base_offset=-1, log_append_time=None, log_start_offset=-1,
        record_errors=(), error_message=None) for i, code in enumerate(codes)]
    half = len(parts) // 2
    topics = (produce_v9.TopicProduceResponse(name="a", partition_responses=tuple(parts[:half])),
              produce_v9.TopicProduceResponse(name="b", partition_responses=tuple(parts[half:])))
    return produce_v9.ProduceResponse(responses=topics, throttle_time=0)  # type: ignore[arg-type]


def test_phase_times_follow_kafkas_definitions() -> None:
    r = stamped("Produce", queue=2, local=3, remote=40, resp_queue=1, send=4)
    assert phase_times_ms(r) == (50.0, 2.0, 3.0, 40.0, 1.0, 4.0)
    # In-process request answered from its handler: no remote phase, no response queue or send.
    r = FakeRequest("Produce", start_time_ns=5 * MS, dequeue_time_ns=6 * MS, response_complete_time_ns=9 * MS)
    assert phase_times_ms(r) == (4.0, 1.0, 3.0, 0.0, 0.0, 0.0)
    assert phase_times_ms(FakeRequest("Produce")) is None  # never stamped: count only


def test_fetch_is_recorded_as_follower_or_consumer_and_as_fetch() -> None:
    """Kafka's RequestChannel.Request.updateRequestMetrics records a Fetch twice."""
    assert request_metric_names(FakeRequest("Fetch", is_from_follower=True)) == ("FetchFollower", "Fetch")
    assert request_metric_names(FakeRequest("Fetch")) == ("FetchConsumer", "Fetch")
    assert request_metric_names(FakeRequest("JoinGroup")) == ("JoinGroup",)


def test_histograms_and_counts_from_request_listener() -> None:
    broker = FakeBroker(1)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        assert len(broker.request_listeners) == 1
        broker.complete(stamped("Produce", queue=1, local=2, remote=30))
        broker.complete(stamped("Produce", queue=1, local=2, remote=300))
        broker.complete(stamped("Fetch", 12, queue=0, local=1, remote=500, is_from_follower=True))
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


def test_error_counts_walk_every_error_code_of_a_response() -> None:
    """Kafka's ProduceResponse.errorCounts: one count per partition response."""
    body = produce_response(ErrorCode.none, ErrorCode.none, ErrorCode.not_leader_or_follower,
                            ErrorCode.not_enough_replicas)
    assert error_counts(body) == {0: 2, 6: 1, 19: 1}
    assert error_counts([("t", 0)]) == {}   # an in-process follower fetch's plain results


def test_errors_per_sec_by_request_and_error() -> None:
    broker = FakeBroker(0)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        body = produce_response(ErrorCode.none, ErrorCode.not_enough_replicas, ErrorCode.not_enough_replicas)
        broker.complete(stamped("Produce", queue=0, local=1, remote=0, response_body=body))
        broker.complete(stamped("Produce", queue=0, local=1, remote=0, response_body=produce_response(ErrorCode.none)))
        errors = "kafka_network_requestmetrics_errorspersec_total"
        produce = {"broker_id": "0", "request": "Produce"}
        assert metrics.sample(errors, {**produce, "error": "NOT_ENOUGH_REPLICAS"}) == 2
        assert metrics.sample(errors, {**produce, "error": "NONE"}) == 2


def test_a_failing_listener_input_never_raises_into_the_request_path() -> None:
    broker = FakeBroker(0)
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        broker.complete(FakeRequest("Produce", start_time_ns="not-a-number"))  # type: ignore[arg-type]
        assert metrics.request_metrics.listener_errors == 1


def test_request_channel_and_handler_pool_gauges() -> None:
    clock = [1_000 * MS]
    broker = FakeBroker(3, request_queue_size=7, handler_pool=HandlerPoolSnapshot(4, 0, 0),
                        socket_server=SocketServerSnapshot(2, 3, 0, 0))
    with ClusterMetrics() as metrics:
        bm = metrics.register_broker(broker)
        bm._clock_ns = lambda: clock[0]
        b = {"broker_id": "3"}
        idle = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent"
        network_idle = "kafka_network_socketserver_networkprocessoravgidlepercent"
        assert metrics.sample("kafka_network_requestchannel_requestqueuesize", b) == 7
        assert metrics.sample("kafka_emu_requesthandlerpool_threads", b) == 4
        assert metrics.sample("kafka_network_requestchannel_responsequeuesize", b) == 3
        # Threads that have not run yet are idle: the gauges are there from the first scrape.
        assert metrics.sample(idle, b) == 1.0 and metrics.sample(network_idle, b) == 1.0

        # One second later: handlers idle 3 of 4 thread-seconds; processors idle 1.5 of 2.
        clock[0] += 1_000 * MS
        broker.handler_pool = HandlerPoolSnapshot(4, 3_000 * MS, 1_000 * MS)
        broker.socket_server = SocketServerSnapshot(2, 0, 1_500 * MS, 2_000 * MS)
        assert metrics.sample(idle, b) == 0.75
        assert metrics.sample(network_idle, b) == 0.75
        assert metrics.sample("kafka_emu_requesthandlerpool_idle_seconds_total", b) == 3.0

        # A scrape 100 ms later reuses the value rather than measuring a 100 ms window.
        clock[0] += 100 * MS
        broker.handler_pool = HandlerPoolSnapshot(4, 3_000 * MS, 1_400 * MS)
        assert metrics.sample(idle, b) == 0.75
        clock[0] += 900 * MS
        broker.handler_pool = HandlerPoolSnapshot(4, 3_000 * MS, 5_000 * MS)
        assert metrics.sample(idle, b) == 0.0


def test_first_scrape_reports_idle_since_start() -> None:
    """The first value covers the time since the threads started, not "no value yet"."""
    broker = FakeBroker(0, handler_pool=HandlerPoolSnapshot(2, 900 * MS, 100 * MS),
                        socket_server=SocketServerSnapshot(1, 0, 400 * MS, 500 * MS))
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        b = {"broker_id": "0"}
        assert metrics.sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", b) == 0.9
        assert metrics.sample("kafka_network_socketserver_networkprocessoravgidlepercent", b) == 0.8


def test_request_memory_pool_gauges() -> None:
    """Kafka's MemoryPoolAvailable, MemoryPoolUsed and MemoryPoolDepletedTimeTotal, only where
    queued.max.request.bytes made a pool (an overdrawn pool shows a negative available)."""
    broker = FakeBroker(1, socket_server=SocketServerSnapshot(1, 0, 0, 0, memory_pool_size=100,
                                                              memory_pool_available=-20, memory_pool_depleted_ns=3 * MS))
    other = FakeBroker(2, socket_server=SocketServerSnapshot(1, 0, 0, 0))
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        metrics.register_broker(other)
        b = {"broker_id": "1"}
        assert metrics.sample("kafka_network_socketserver_memorypoolavailable", b) == -20
        assert metrics.sample("kafka_network_socketserver_memorypoolused", b) == 120
        assert metrics.sample("kafka_network_socket_server_metrics_memorypooldepletedtimetotal", b) == 3.0
        assert metrics.sample("kafka_network_socketserver_memorypoolused", {"broker_id": "2"}) is None


def test_client_quota_metrics() -> None:
    """Kafka's quota metrics from the managers' snapshots: byte-rate and throttle-time per
    client (user, client-id tags), queue-size per quota type, the controller mutation tokens and
    rate, the request manager's exempt time."""
    from kafka_emu.broker.server.quota.client_quota_manager import QuotaEntity
    from kafka_emu.broker.server.quota.quota_factory import QuotaManagers
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.timer.time import MockTime

    time = MockTime()
    quotas = QuotaManagers.instantiate(KafkaConfig(), time, 0)
    quotas.produce.update_quota(QuotaEntity(None, "app"), 1000)
    assert quotas.produce.maybe_record_and_get_throttle_time_ms("ANONYMOUS", "app", 5000, time.milliseconds()) == 0
    throttle = quotas.produce.maybe_record_and_get_throttle_time_ms("ANONYMOUS", "app", 20_000, time.milliseconds())
    quotas.produce.throttle("ANONYMOUS", "app", type("Cb", (), {"start_throttling": lambda self: None,
                                                              "end_throttling": lambda self: None})(), throttle)
    quotas.controller_mutation.update_quota(QuotaEntity(None, "app"), 5)
    quotas.controller_mutation.new_quota_for("ANONYMOUS", "app", 7, 6).record(3)
    broker = FakeBroker(0, quotas=quotas.snapshot())
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        app = {"broker_id": "0", "user": "", "client_id": "app"}
        assert metrics.sample("kafka_server_produce_byte_rate", app) == pytest.approx(2500)   # 25 kB over 10 s
        assert metrics.sample("kafka_server_produce_throttle_time", app) == throttle > 0
        assert metrics.sample("kafka_server_produce_queue_size", {"broker_id": "0"}) == 1
        assert metrics.sample("kafka_server_fetch_queue_size", {"broker_id": "0"}) == 0
        assert metrics.sample("kafka_server_controllermutation_tokens", app) == pytest.approx(11 * 5 - 3)
        assert metrics.sample("kafka_server_controllermutation_mutation_rate", app) > 0
        assert metrics.sample("kafka_server_fetch_byte_rate", app) is None   # no fetch quota: nothing recorded


def test_replica_manager_gauges_meters_and_per_topic_metrics() -> None:
    broker = FakeBroker(0, partition_counts=(9, 5, 2, 1),
                        logs=(LogSnapshot("a", 0, 0, 10, 8, 1000, 2, 3), LogSnapshot("b", 3, 2, 5, 5, 24, 1)))
    stats = broker.stats
    stats.record_bytes_in("a", messages=10, nbytes=1000)
    stats.record_bytes_in("b", messages=5, nbytes=24)
    stats.record_bytes_out("a", 700)
    stats.record_failed_produce("a", 19)     # NOT_ENOUGH_REPLICAS: counted
    stats.record_failed_produce("a", 6)      # NOT_LEADER_OR_FOLLOWER: routine, not counted
    stats.record_failed_fetch("b", 1)        # OFFSET_OUT_OF_RANGE: routine, not counted
    stats.record_failed_fetch("b", -1)       # UNKNOWN_SERVER_ERROR: counted
    stats.record_isr_shrink()
    stats.record_isr_shrink()
    stats.record_isr_expand()
    with ClusterMetrics() as metrics:
        metrics.register_broker(broker)
        b = {"broker_id": "0"}
        expected = {
            "kafka_server_replicamanager_underreplicatedpartitions": 2,
            "kafka_server_replicamanager_leadercount": 5,
            "kafka_server_replicamanager_partitioncount": 9,
            "kafka_server_replicamanager_underminisrpartitioncount": 1,
            "kafka_server_replicamanager_isrshrinkspersec_total": 2,
            "kafka_server_replicamanager_isrexpandspersec_total": 1,
        }
        assert {name: metrics.sample(name, b) for name in expected} == expected
        per_topic = {
            ("kafka_server_brokertopicmetrics_messagesinpersec_total", "a"): 10,
            ("kafka_server_brokertopicmetrics_messagesinpersec_total", "b"): 5,
            ("kafka_server_brokertopicmetrics_bytesinpersec_total", "a"): 1000,
            ("kafka_server_brokertopicmetrics_bytesinpersec_total", "b"): 24,
            ("kafka_server_brokertopicmetrics_bytesoutpersec_total", "a"): 700,
            ("kafka_server_brokertopicmetrics_bytesoutpersec_total", "b"): 0,
            ("kafka_server_brokertopicmetrics_failedproducerequestspersec_total", "a"): 1,
            ("kafka_server_brokertopicmetrics_failedfetchrequestspersec_total", "b"): 1,
        }
        assert {key: metrics.sample(key[0], {**b, "topic": key[1]}) for key in per_topic} == per_topic
        log_b = {**b, "topic": "b", "partition": "3"}
        assert metrics.sample("kafka_log_log_logendoffset", log_b) == 5
        assert metrics.sample("kafka_log_log_logstartoffset", log_b) == 2
        assert metrics.sample("kafka_log_log_size", {**b, "topic": "a", "partition": "0"}) == 1000
        assert metrics.sample("kafka_log_log_numlogsegments", {**b, "topic": "a", "partition": "0"}) == 2
        assert metrics.sample("kafka_cluster_partition_laststableoffsetlag", {**b, "topic": "a", "partition": "0"}) == 3
        assert metrics.sample("kafka_cluster_partition_laststableoffsetlag", log_b) == 0


def test_a_restarted_broker_counts_from_zero_and_a_stopped_one_disappears() -> None:
    cluster = FakeCluster({0: FakeBroker(0), 1: FakeBroker(1)})
    old = cluster.servers[0]
    with ClusterMetrics(cluster) as metrics:
        produce = {"broker_id": "0", "request": "Produce", "version": "9"}
        old.complete(stamped("Produce", queue=0, local=1, remote=0))
        assert metrics.sample("kafka_network_requestmetrics_requestspersec_total", produce) == 1
        # Broker 0 restarts: a new server object.
        new = cluster.servers[0] = FakeBroker(0)
        assert metrics.sample("kafka_network_requestmetrics_requestspersec_total", produce) is None
        assert old.request_listeners == [] and len(new.request_listeners) == 1
        new.complete(stamped("Produce", queue=0, local=1, remote=0))
        assert metrics.sample("kafka_network_requestmetrics_requestspersec_total", produce) == 1
        # Broker 0 stops: all its series go in the same scrape.
        new.stopped = True
        assert 'broker_id="0"' not in metrics.exposition()
        assert new.request_listeners == []


def test_a_broker_registered_before_start_up_is_measured_once_started() -> None:
    broker = FakeBroker(0, started=False)
    with ClusterMetrics(FakeCluster({0: broker})) as metrics:
        assert 'broker_id="0"' not in metrics.exposition()
        broker.started = True
        assert metrics.sample("kafka_network_requestchannel_requestqueuesize", {"broker_id": "0"}) == 0
