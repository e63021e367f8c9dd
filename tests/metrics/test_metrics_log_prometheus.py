"""A real Prometheus scrapes the log layer's series: Kafka's per-partition ``kafka.log:type=Log``
gauges (Size, NumLogSegments, LogStartOffset, LogEndOffset) and the log cleaner's
(``type=LogCleaner`` cleaner-recopy-percent, max-clean-time-secs; ``type=LogCleanerManager``
max-dirty-percent, time-since-last-run-ms, uncleanable-partitions-count), after a compacted
topic was cleaned. Assertions are on Prometheus's answers (PromQL), against the logs' own state.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.cluster.inprocess_client import produce_request, send
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.metrics import serve_cluster_metrics

from metrics_support import eventually
from prometheus_server import PrometheusServer, prometheus_binary

pytestmark = pytest.mark.timeout(120)


def _produce(cluster: EmbeddedCluster, topic: str, key: bytes, value: bytes) -> None:
    channel = cluster.broker(cluster.leader_of(topic, 0)).request_channel
    resp = send(channel, ApiKeys.PRODUCE, 9, produce_request(topic, 0, build_batch([(key, value)]), acks=1),
                timeout_s=10)
    assert resp.body.responses[0].partition_responses[0].error_code.value == 0


def test_prometheus_scrapes_log_and_cleaner_series(tmp_path: Path) -> None:
    binary = prometheus_binary()
    cluster = EmbeddedCluster(brokers=1, config={"log.cleaner.backoff.ms": 50})
    metrics = serve_cluster_metrics(cluster, port=0)
    assert metrics.server is not None
    prometheus = PrometheusServer(binary, tmp_path, [f"127.0.0.1:{metrics.server.port}"]).start()
    try:
        cluster.create_topic("table", 1, 1, configs={"cleanup.policy": "compact", "segment.bytes": 1000,
                                                     "min.cleanable.dirty.ratio": 0.01})
        cluster.create_topic("plain", 1, 1, configs={"segment.bytes": 1000})
        eventually(lambda: cluster.leader_of("table") >= 0 and cluster.leader_of("plain") >= 0, what="leaders")
        for i in range(60):   # 5 keys, each rewritten 12 times: compaction keeps one record per key
            _produce(cluster, "table", b"key-%d" % (i % 5), b"v" * 100)
            _produce(cluster, "plain", b"key-%d" % i, b"v" * 100)
        cleaner = cluster.broker(0).log_cleaner
        assert cleaner is not None
        eventually(lambda: cleaner.logs_cleaned > 0, what="the compacted log cleaned")

        plain = cluster.logs[0][("plain", 0)]
        assert plain.num_segments() > 3
        labels = 'topic="plain",partition="0"'
        for series, expected in (("kafka_log_log_numlogsegments", plain.num_segments()),
                                 ("kafka_log_log_size", plain.size_bytes),
                                 ("kafka_log_log_logendoffset", 60),
                                 ("kafka_log_log_logstartoffset", 0)):
            prometheus.wait_for(f"{series}{{{labels}}}", lambda v, e=expected: v == [e], what=series)

        recopy = prometheus.wait_for("kafka_log_logcleaner_cleaner_recopy_percent",
                                     lambda v: len(v) == 1 and 0 < v[0] < 100, what="recopy percent")
        stats = cleaner.snapshot()
        assert recopy == [stats.cleaner_recopy_percent]
        prometheus.wait_for("kafka_log_logcleaner_max_clean_time_secs", lambda v: v == [0], what="clean time")
        prometheus.wait_for("kafka_log_logcleanermanager_max_dirty_percent",
                            lambda v: len(v) == 1 and 0 <= v[0] <= 100, what="max dirty percent")
        # the cleaner looks for work every log.cleaner.backoff.ms (50 ms): never long ago
        prometheus.wait_for("kafka_log_logcleanermanager_time_since_last_run_ms",
                            lambda v: len(v) == 1 and 0 <= v[0] < 5000, what="time since last run")
        prometheus.wait_for("kafka_log_logcleanermanager_uncleanable_partitions_count",
                            lambda v: v == [0], what="no uncleanable partition")
        table = cluster.logs[0][("table", 0)]
        prometheus.wait_for('kafka_log_log_numlogsegments{topic="table",partition="0"}',
                            lambda v: v == [table.num_segments()], what="compacted log segments")
    finally:
        prometheus.stop()
        metrics.close()
        cluster.close()
