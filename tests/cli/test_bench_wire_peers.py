"""``bench wire``'s peers: librdkafka's mock cluster through the librdkafka bundled with
confluent-kafka, started, given a topic and asked for its leaders as the load generator is."""
import pytest

pytest.importorskip("confluent_kafka", reason="the mock cluster is the librdkafka bundled with confluent-kafka")

from kafka_emu.bench.bench_wire_peers import noida_binary, peer  # noqa: E402

pytestmark = pytest.mark.timeout(60)


def test_librdkafka_mock_cluster_serves_a_created_topic():
    with peer("librdkafka-mock", 3) as cluster:
        assert cluster.bootstrap_servers.count(",") == 2
        cluster.create_topic("bench-peer", 4, 3)
        leaders = cluster.leaders("bench-peer", 4)
        assert len(leaders) == 4 and all(host and port > 0 for host, port in leaders)


def test_missing_noida_db_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert noida_binary() is None
    with pytest.raises(RuntimeError, match="noida-db is not installed"):
        with peer("noida-db", 1):
            pass


def test_flush_loop_counts_round_trips_on_a_peer():
    """``bench wire``'s produce-and-flush loop: a child confluent-kafka producer waits for each
    record's acknowledgement before the next, so the rate is the round trip's inverse."""
    from kafka_emu.bench.bench_wire_fetch import measure_flush_loop

    with peer("librdkafka-mock", 1) as cluster:
        rate = measure_flush_loop(cluster, warmup=0.1, seconds=0.3)
    assert 100 < rate < 1_000_000


def test_flush_loop_refuses_to_report_a_rate_when_a_record_is_refused():
    """A round trip whose record was not acknowledged is no round trip: the loop raises instead
    of counting it (the broker answers the first Produce with a non-retriable error)."""
    from kafka_emu.bench.bench_wire_fetch import measure_flush_loop
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    with EmbeddedCluster(brokers=1) as cluster:
        cluster.inject_errors("Produce", ["INVALID_RECORD"])
        with pytest.raises(RuntimeError, match="produce-and-flush loop on .*INVALID_RECORD"):
            measure_flush_loop(cluster, warmup=0.1, seconds=0.3)
