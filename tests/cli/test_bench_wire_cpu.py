"""``bench wire``'s CPU per request: the broker's thread CPU split by Kafka's thread roles
(network processor, request handler), divided by every request the load generator had answered."""
import pytest

from kafka_emu.bench.bench_util import cpu_per_request, thread_cpu_ticks
from kafka_emu.bench.bench_wire import _rate_targets, broker_thread_role, measure_rate_cpu
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

pytestmark = pytest.mark.timeout(60)


def test_cpu_per_request_splits_by_role_and_totals_user_and_system(monkeypatch):
    monkeypatch.setattr("kafka_emu.bench.bench_util._TICKS_PER_S", 100)   # 1 tick = 10 ms
    before = {"processor": [10, 5], "handler": [20, 0]}
    after = {"processor": [12, 6], "handler": [24, 1], "other": [1, 0]}   # a thread started between
    cpu = cpu_per_request(before, after, requests=1000)
    assert cpu == {"handler": 50.0, "other": 10.0, "processor": 30.0, "total": 90.0, "user": 70.0, "system": 20.0}


def test_broker_threads_are_told_apart_by_their_kafka_names():
    assert broker_thread_role("data-plane-kafka-network-thread-0-PLAINTEXT-1") == "processor"
    assert broker_thread_role("data-plane-kafka-request-handler-3") == "handler"
    assert broker_thread_role("ExpirationReaper-0-Produce") == "other"


def test_a_measured_rate_comes_with_the_brokers_cpu_per_request():
    with EmbeddedCluster(brokers=1) as cluster:
        cluster.metadata.create_topic("cpu", 1, 1)
        rate, cpu = measure_rate_cpu(_rate_targets(cluster, "cpu", 1), 0.1, 0.4,
                                     lambda: thread_cpu_ticks(broker_thread_role))
    assert rate > 100
    # both roles did work for the requests; the total is their sum with the rest, and user + system
    assert cpu["processor"] > 0 and cpu["handler"] > 0
    assert cpu["total"] == pytest.approx(cpu["processor"] + cpu["handler"] + cpu.get("other", 0.0), abs=0.3)
    assert cpu["total"] == pytest.approx(cpu["user"] + cpu["system"], abs=0.3)
