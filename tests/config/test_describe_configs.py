"""DescribeConfigs answers from the config tables; CreateTopics checks topic configs with them.

Ported scenarios: Kafka's ``PlaintextAdminIntegrationTest.testDescribeConfigsForTopic`` /
``testCreateTopicsReturnsConfigs`` (sources DEFAULT_CONFIG, STATIC_BROKER_CONFIG, TOPIC_CONFIG; read
only; is_default) and ``testInvalidCreateTopicsWithConfig`` (INVALID_CONFIG naming the key), over
confluent-kafka's AdminClient; ``ConfigHelper``'s synonym rules checked on the entries themselves.
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.server.dynamic_config import DynamicBrokerConfig
from kafka_emu.broker.server.config_helper import (
    SOURCE_DEFAULT_CONFIG,
    SOURCE_STATIC_BROKER_CONFIG,
    SOURCE_TOPIC_CONFIG,
    Synonym,
    describe_broker,
    describe_topic,
)

STATIC = {"message.max.bytes": 2000000, "num.partitions": 2}
pytestmark = [pytest.mark.timeout(60), pytest.mark.kafka_cluster(brokers=1, config=STATIC)]


@pytest.fixture()   # kafka_cluster is function-scoped (the cluster itself is the module's)
def admin(kafka_cluster: Any) -> Iterator[AdminClient]:
    yield AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers, "log_level": 3})


def _describe(admin: AdminClient, resource: ConfigResource) -> dict[str, Any]:
    return admin.describe_configs([resource])[resource].result(timeout=10)


def test_topic_sources_default_static_and_override(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("described", 1, 1, config={"min.insync.replicas": "1"})])["described"].result(10)
    entries = _describe(admin, ConfigResource(ResourceType.TOPIC, "described"))
    mir, mmb, cleanup = entries["min.insync.replicas"], entries["max.message.bytes"], entries["cleanup.policy"]
    assert (mir.value, mir.source, mir.is_default) == ("1", ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False)
    assert (mmb.value, mmb.source, mmb.is_default) == ("2000000", ConfigSource.STATIC_BROKER_CONFIG.value, False)
    assert "message.max.bytes" in mmb.synonyms
    assert (cleanup.value, cleanup.source, cleanup.is_default) == ("delete", ConfigSource.DEFAULT_CONFIG.value, True)
    assert entries["retention.ms"].value == "604800000" and not cleanup.is_read_only


def test_broker_entries_show_what_is_in_force(admin: AdminClient) -> None:
    entries = _describe(admin, ConfigResource(ResourceType.BROKER, "0"))
    num = entries["num.partitions"]
    assert (num.value, num.source, num.is_read_only) == ("2", ConfigSource.STATIC_BROKER_CONFIG.value, True)
    io = entries["num.io.threads"]    # lowered by EmbeddedCluster: a static config of the cluster
    assert (io.value, io.source) == ("4", ConfigSource.STATIC_BROKER_CONFIG.value)
    queued = entries["queued.max.requests"]
    assert (queued.value, queued.source, queued.is_default) == ("500", ConfigSource.DEFAULT_CONFIG.value, True)
    assert entries["log.retention.ms"].value is None        # Kafka's null default, as Kafka shows it
    assert "kafka.emu.listener.port.reused" not in entries  # internal keys are not described


def test_create_topics_with_a_bad_config_is_invalid_config(admin: AdminClient) -> None:
    futures = admin.create_topics([NewTopic("bad-cfg", 1, 1, config={"min.insync.replicas": "0"}),
                                   NewTopic("typo-cfg", 1, 1, config={"retention.msx": "1"}),
                                   NewTopic("unimpl-cfg", 1, 1, config={"preallocate": "true"})])
    messages = {}
    for name, future in futures.items():
        with pytest.raises(KafkaException) as info:
            future.result(10)
        error = info.value.args[0]
        assert error.code() == KafkaError.INVALID_CONFIG
        messages[name] = error.str()
    assert messages["bad-cfg"] == "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"
    assert messages["typo-cfg"] == "Unknown topic config name: retention.msx"
    assert "preallocate" in messages["unimpl-cfg"] and "emulator.strict.config=true" in messages["unimpl-cfg"]


def test_topic_synonyms_follow_config_helper() -> None:
    """ConfigHelper: override first, then static broker synonyms, then non-null defaults, cut at
    the primary synonym; the source is the first synonym's."""
    config = DynamicBrokerConfig(KafkaConfig({"log.retention.minutes": 5, "message.max.bytes": 2000}), {}, {})
    topic = {e.name: e for e in describe_topic(config, {"max.message.bytes": 100}, None)}
    assert topic["max.message.bytes"].synonyms == (
        Synonym("max.message.bytes", "100", SOURCE_TOPIC_CONFIG),
        Synonym("message.max.bytes", "2000", SOURCE_STATIC_BROKER_CONFIG),
        Synonym("message.max.bytes", "1048588", SOURCE_DEFAULT_CONFIG))
    # log.retention.ms is not set: Kafka drops minutes/hours entries before the primary synonym
    retention = topic["retention.ms"]
    assert (retention.value, retention.source, retention.synonyms) == ("300000", SOURCE_DEFAULT_CONFIG, ())
    assert topic["segment.ms"].synonyms == () and topic["segment.ms"].value == "604800000"
    assert topic["segment.bytes"].synonyms == (Synonym("log.segment.bytes", "1073741824", SOURCE_DEFAULT_CONFIG),)
    assert topic["min.insync.replicas"].documentation.startswith("The minimum")
    assert topic["retention.ms"].documentation.startswith("How long")
    assert topic["preallocate"].documentation.startswith("Not implemented by the emulator")
    broker = {e.name: e for e in describe_broker(config, ["log.retention.minutes", "nope"])}
    assert list(broker) == ["log.retention.minutes"]
    assert broker["log.retention.minutes"].synonyms == (
        Synonym("log.retention.minutes", "5", SOURCE_STATIC_BROKER_CONFIG),
        Synonym("log.retention.hours", "168", SOURCE_DEFAULT_CONFIG))
