"""Behaviour keyed to ``emulator.kafka.version``, over real sockets, one cluster per release.

Ported: Kafka's ``ApiVersionsRequestTest`` (the features a newly formatted cluster reports),
``ActivationRecordsGeneratorTest``/``QuorumControllerTest.testElrEnabledByDefault`` (KIP-966's
cluster-level ``min.insync.replicas`` on activation) as confluent-kafka-python's
``test_incremental_alter_configs`` observes it (every topic's ``min.insync.replicas`` is
DYNAMIC_DEFAULT_BROKER_CONFIG from 4.1 on), and kafka-python 3.0's broker version probe.
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType
from kafka import KafkaAdminClient
from kio.index import load_request_schema

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.common.kafka_releases import LATEST, RELEASE_NAMES
from wire_helpers import RawClient, unique

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module", params=RELEASE_NAMES)
def release_cluster(request: pytest.FixtureRequest) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, kafka_version=request.param,
                         config={"offsets.topic.replication.factor": 1}) as cluster:
        yield cluster


def _features(bootstrap: str) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    client = RawClient(bootstrap)
    try:
        resp: Any = client.send(load_request_schema(18, 4)(client_software_name="t", client_software_version="1"))
    finally:
        client.close()
    return ({f.name: (int(f.min_version), int(f.max_version)) for f in resp.supported_features},
            {f.name: int(f.max_version_level) for f in resp.finalized_features})


def test_features_are_the_release_s_with_what_the_emulator_lacks_off(release_cluster: EmbeddedCluster) -> None:
    release = release_cluster.kafka_version
    supported, finalized = _features(release_cluster.bootstrap_servers)
    assert supported == {name: (lv.min, lv.max) for name, lv in release.features.items() if lv.max > 0}
    expected = {"metadata.version": release.features["metadata.version"].default}
    if release.at_least("4.0"):
        expected["transaction.version"] = 2
        expected["group.version"] = 1   # KIP-848 consumer groups
    if release.features.get("share.version") and release.features["share.version"].default:
        expected["share.version"] = 1   # KIP-932 share groups, as a new 4.2 cluster formats them
    assert finalized == expected   # kraft 1, streams and ELR: off (level 0, left out)


def test_kafka_python_infers_the_release(release_cluster: EmbeddedCluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=release_cluster.bootstrap_servers, request_timeout_ms=5000)
    try:
        assert admin._manager.broker_version == tuple(int(p) for p in release_cluster.kafka_version.name.split("."))
    finally:
        admin.close()


def test_min_insync_replicas_is_a_cluster_default_from_4_1(release_cluster: EmbeddedCluster) -> None:
    """KIP-966: a release that formats with ELR on (4.1, 4.2) has the controller's activation
    record, so a topic's ``min.insync.replicas`` is DYNAMIC_DEFAULT_BROKER_CONFIG; before, DEFAULT_CONFIG."""
    topic = unique("mir")
    release_cluster.create_topic(topic, partitions=1, replication_factor=1)
    admin = AdminClient({"bootstrap.servers": release_cluster.bootstrap_servers, "log_level": 3})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entry = admin.describe_configs([resource])[resource].result(10)["min.insync.replicas"]
    elr_release = release_cluster.kafka_version.features.get("eligible.leader.replicas.version")
    on = elr_release is not None and elr_release.default > 0
    assert on == release_cluster.kafka_version.at_least("4.1")
    source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG if on else ConfigSource.DEFAULT_CONFIG
    assert (entry.value, entry.source) == ("1", source.value)
    release_cluster.reset()   # a reset cluster is a newly formatted one: the record stays
    assert ("min.insync.replicas" in release_cluster.metadata.broker_configs("")) == on


def test_the_default_release_is_the_newest() -> None:
    with EmbeddedCluster(brokers=1) as cluster:
        assert cluster.kafka_version.name == LATEST


@pytest.mark.kafka_cluster(brokers=1, kafka_version="4.0")
def test_the_fixture_marker_names_the_release(kafka_cluster: EmbeddedCluster) -> None:
    assert kafka_cluster.kafka_version.name == "4.0"
    assert _features(kafka_cluster.bootstrap_servers)[1]["metadata.version"] == \
        kafka_cluster.kafka_version.features["metadata.version"].default
