"""Client telemetry (KIP-714) over the wire: CLIENT_METRICS subscriptions, GetTelemetrySubscriptions,
PushTelemetry, and the pushed metrics on ``/metrics``.

Ported: Kafka's ``ClientMetricsManagerTest`` (testGetTelemetry*, testPushTelemetry*: the instance
id handed out, the subscription matched by client id, throttling of early requests, the unknown
subscription id, the unsupported compression type, the oversized payload, terminating),
``ClientMetricsConfigsTest`` (the validation errors through IncrementalAlterConfigs) and
librdkafka's test 0150-telemetry_mock (a producer with ``enable.metrics.push=true`` pushes what its
subscription asks for).
"""
from __future__ import annotations

import gzip
import time
import urllib.request
import uuid
from typing import Any, Iterator

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType
from kio.index import load_request_schema as req_cls
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.common.errors import Errors
from wire_helpers import RawClient, unique, wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, metrics_port=0, config={"offsets.topic.replication.factor": 1}) as c:
        yield c


def _subscribe(cluster: EmbeddedCluster, name: str, **configs: str) -> int:
    """IncrementalAlterConfigs SET on CLIENT_METRICS resource ``name``; its error code."""
    cls = req_cls(44, 1)
    res_cls = item_cls(cls, "resources")
    raw = RawClient(cluster.bootstrap_servers)
    try:
        resp = raw.send(build(cls, validate_only=False, resources=(build(res_cls, resource_type=16, resource_name=name,
                                                                         configs=tuple(
            build(item_cls(res_cls, "configs"), name=k.replace("_", "."), config_operation=0, value=v)
            for k, v in configs.items())),)))
    finally:
        raw.close()
    return int(resp.responses[0].error_code)


def _scrape(cluster: EmbeddedCluster) -> str:
    with urllib.request.urlopen(cluster.metrics_url, timeout=5) as resp:
        return resp.read().decode()


def test_a_librdkafka_producer_s_pushed_metrics_reach_metrics(cluster: EmbeddedCluster) -> None:
    client_id = unique("telemetry")
    assert _subscribe(cluster, unique("sub"), metrics="*", interval_ms="500", match=f"client_id={client_id}") == 0
    topic = unique("t")
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": client_id,
                         "enable.metrics.push": True, "log_level": 3, "linger.ms": 0})
    try:
        for i in range(20):
            producer.produce(topic, b"v%d" % i)
        producer.flush(10)
        wanted = f'client_id="{client_id}"'

        def pushed() -> bool:
            producer.poll(0.05)
            return any(line.startswith("kafka_emu_client_telemetry{") and wanted in line
                       for line in _scrape(cluster).splitlines())
        wait_until(pushed, 15, interval_s=0.2, what="the producer's pushed metrics on /metrics")
    finally:
        producer.flush(5)
    lines = [line for line in _scrape(cluster).splitlines() if wanted in line]
    assert any('metric="org.apache.kafka.producer.' in line for line in lines)
    instance = next(line for line in lines if line.startswith("kafka_emu_client_telemetry{"))
    instance_id = instance.split('client_instance_id="')[1].split('"')[0]
    assert uuid.UUID(instance_id).int != 0
    assert f'kafka_server_client_metrics_plugin_export_total{{broker_id="0",client_instance_id="{instance_id}"}}' in \
        _scrape(cluster)


def _get(raw: RawClient, instance_id: uuid.UUID | None = None) -> Any:
    return raw.send(build(req_cls(71, 0), client_instance_id=instance_id or uuid.UUID(int=0)))


def _push(raw: RawClient, instance_id: uuid.UUID, subscription_id: int, payload: bytes, compression: int = 0,
          terminating: bool = False) -> int:
    return int(raw.send(build(req_cls(72, 0), client_instance_id=instance_id, subscription_id=subscription_id,
                              terminating=terminating, compression_type=compression, metrics=payload)).error_code)


def _otlp(name: str, value: float, delta_sum: bool = False) -> bytes:
    point = metrics_pb2.NumberDataPoint(as_double=value, attributes=[
        common_pb2.KeyValue(key="node.id", value=common_pb2.AnyValue(string_value="0"))])
    metric = metrics_pb2.Metric(name=name)
    if delta_sum:
        metric.sum.CopyFrom(metrics_pb2.Sum(
            data_points=[point], aggregation_temporality=metrics_pb2.AGGREGATION_TEMPORALITY_DELTA))
    else:
        metric.gauge.CopyFrom(metrics_pb2.Gauge(data_points=[point]))
    data = metrics_pb2.MetricsData(resource_metrics=[metrics_pb2.ResourceMetrics(
        scope_metrics=[metrics_pb2.ScopeMetrics(metrics=[metric])])])
    return data.SerializeToString()


def test_get_and_push_answer_as_kafka_s_client_metrics_manager(cluster: EmbeddedCluster) -> None:
    """Raw requests through every rule, on the mock-free broker clock (100 ms interval)."""
    client_id = unique("raw-telemetry")
    _subscribe(cluster, unique("sub"), metrics="org.apache.kafka.producer.", interval_ms="100",
               match=f"client_id={client_id}")
    raw = RawClient(cluster.bootstrap_servers, client_id=client_id)
    try:
        first = _get(raw)
        instance_id = first.client_instance_id
        assert int(first.error_code) == 0 and instance_id.int != 0
        assert list(first.requested_metrics) == ["org.apache.kafka.producer."]
        assert first.push_interval.total_seconds() * 1000 == 100 and first.delta_temporality
        assert sorted(first.accepted_compression_types) == [1, 2, 3, 4]
        assert int(_get(raw, instance_id).error_code) == Errors.THROTTLING_QUOTA_EXCEEDED   # before the interval
        sub = int(first.subscription_id)
        assert _push(raw, instance_id, sub + 1, b"") == Errors.UNKNOWN_SUBSCRIPTION_ID
        time.sleep(0.11)
        assert _push(raw, instance_id, sub, b"", compression=9) == Errors.UNSUPPORTED_COMPRESSION_TYPE
        time.sleep(0.11)
        assert _push(raw, instance_id, sub, b"\x00" * (1024 * 1024 + 1)) == Errors.TELEMETRY_TOO_LARGE
        time.sleep(0.11)
        assert _push(raw, instance_id, sub, b"not otlp \xff\xff") == Errors.INVALID_RECORD
        time.sleep(0.11)
        payload = _otlp("org.apache.kafka.producer.record.queue.time.avg", 2.5)
        assert _push(raw, instance_id, sub, gzip.compress(payload), compression=1) == 0
        assert _push(raw, instance_id, sub, payload) == Errors.THROTTLING_QUOTA_EXCEEDED   # too soon
        assert _push(raw, instance_id, sub, _otlp("org.apache.kafka.producer.x", 1, True), terminating=True) == 0
        assert _push(raw, instance_id, sub, payload) == Errors.INVALID_REQUEST   # after terminating
        assert _push(raw, uuid.UUID(int=0), sub, payload) == Errors.INVALID_REQUEST
        manager = cluster.broker(0).client_metrics_manager
        assert manager.client_values(instance_id) == {
            ("org.apache.kafka.producer.record.queue.time.avg", (("node.id", "0"),)): 2.5,
            ("org.apache.kafka.producer.x", (("node.id", "0"),)): 1.0}
    finally:
        raw.close()


def test_subscriptions_are_validated_and_described(cluster: EmbeddedCluster) -> None:
    """ClientMetricsConfigs.validate through IncrementalAlterConfigs, and DescribeConfigs."""
    name = unique("sub")
    cases = [({"interval_ms": "50"}, Errors.INVALID_REQUEST), ({"match": "nope=x"}, Errors.INVALID_CONFIG),
             ({"match": "client_id=(?=x)"}, Errors.INVALID_CONFIG), ({"metrics": "a,a"}, Errors.INVALID_CONFIG),
             ({"interval_ms": "x"}, Errors.INVALID_CONFIG)]
    for configs, error in cases:
        assert _subscribe(cluster, name, **configs) == error, configs
    assert cluster.metadata.client_metrics_resources().count(name) == 0
    assert _subscribe(cluster, name, metrics="a,b", interval_ms="1000") == 0
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=5000)
    try:
        assert name in admin.list_config_resources(["CLIENT_METRICS"])["client_metrics"]
    finally:
        admin.close()
    raw = RawClient(cluster.bootstrap_servers)
    try:
        cls = req_cls(32, 4)
        resp = raw.send(build(cls, resources=(build(item_cls(cls, "resources"), resource_type=16, resource_name=name,
                                                    configuration_keys=None),), include_synonyms=True))
    finally:
        raw.close()
    entries = {e.name: (e.value, int(e.config_source)) for e in resp.results[0].configs}
    assert entries == {"metrics": ("a,b", 7), "interval.ms": ("1000", 7), "match": ("", 5)}   # CLIENT_METRICS_CONFIG
