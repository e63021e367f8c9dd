"""Keys without effect: warned once per key (as Kafka's ``AbstractConfig.logUnused`` does), refused
under ``emulator.strict.config``; topic configs checked like Kafka's ``LogConfig.validate``
(``LogConfigTest.testFromPropsInvalid``, ``testInvalidTopicConfigs``)."""
from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.server.config import ConfigException, KafkaConfig
from kafka_emu.broker.cluster.fixture import DEFAULT_TEST_CONFIG
from kafka_emu.broker.storage.log_config import validate_topic_configs

pytestmark = pytest.mark.timeout(60)

NO_SOCKETS = {"listeners": "", "emulator.cpu.affinity": "none"}


def _ignored_events(logs: list[dict]) -> dict[str, str]:
    return {e["key"]: e["reason"] for e in logs if e["event"] == "config_ignored"}


def test_unknown_and_unimplemented_keys_warn_once_per_key() -> None:
    with capture_logs() as logs:
        cluster = EmbeddedCluster(brokers=2, offsets_topic=False, config={
            **NO_SOCKETS, "foo.bar.baz": "1", "num.partitionz": "3", "num.recovery.threads.per.data.dir": "2",
            "replica.selector.class": "x", "log.preallocate": "true"})
        cluster.close()
    assert _ignored_events(logs) == {
        "foo.bar.baz": "unknown", "num.partitionz": "unknown",
        "num.recovery.threads.per.data.dir": "not implemented by the emulator",
        "replica.selector.class": "not implemented by the emulator",
        "log.preallocate": "not implemented by the emulator"}
    assert sum(e["event"] == "config_ignored" for e in logs) == 5      # once, not once per broker
    message = next(e["message"] for e in logs if e.get("key") == "num.partitionz")
    assert message == "The configuration 'num.partitionz' was supplied but isn't a known config."


def test_implemented_keys_do_not_warn() -> None:
    with capture_logs() as logs:
        KafkaConfig({"num.partitions": 3, "group.max.size": 10, "emulator.strict.config": True}).log_ignored()
    assert logs == []


@pytest.mark.parametrize("key, message", [
    ("num.partitionz", "The configuration 'num.partitionz' was supplied but isn't a known config. "
                       "(emulator.strict.config=true refuses it)"),
    ("num.recovery.threads.per.data.dir", "The configuration 'num.recovery.threads.per.data.dir' is defined by "
                                          "Kafka but not implemented by the emulator. "
                 "(emulator.strict.config=true refuses it)"),
])
def test_strict_mode_refuses_ignored_keys(key: str, message: str) -> None:
    with pytest.raises(ConfigException) as info:
        EmbeddedCluster(brokers=1, config={**NO_SOCKETS, key: "3", "emulator.strict.config": "true"})
    assert str(info.value) == message


def test_bad_value_stops_the_cluster_before_any_broker_starts() -> None:
    with pytest.raises(ConfigException, match="^Invalid value abc for configuration num.partitions: "):
        EmbeddedCluster(brokers=1, config={**NO_SOCKETS, "num.partitions": "abc"})


def test_pytest_fixture_config_is_strict() -> None:
    """The plugin's defaults turn on strict mode, so a typo in a test's config fails loudly."""
    assert KafkaConfig(DEFAULT_TEST_CONFIG)["emulator.strict.config"] is True
    with pytest.raises(ConfigException, match="num.partitionz"):
        KafkaConfig({**DEFAULT_TEST_CONFIG, "num.partitionz": 3})


def test_embedded_defaults_are_validated_and_overridable() -> None:
    with EmbeddedCluster(brokers=1, offsets_topic=False, config={**NO_SOCKETS, "num.io.threads": "2"}) as cluster:
        cfg = cluster.broker_config(0)
        assert cfg["num.io.threads"] == 2 and cfg["replica.fetch.backoff.ms"] == 50
        assert cfg.originals["replica.fetch.backoff.ms"] == 50    # an embedded default: a static config


def test_topic_configs_validated() -> None:
    """LogConfigTest.testFromPropsInvalid: unknown names and bad values refused, typed overrides kept."""
    assert validate_topic_configs("t", {"min.insync.replicas": "2"}, strict=True) == {"min.insync.replicas": 2}
    for configs, message in [
        ({"retention.msx": "1"}, "Unknown topic config name: retention.msx"),
        ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        ({"cleanup.policy": "forever"},
         "Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete"),
        ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
        ({"preallocate": "true"}, "The topic config 'preallocate' is defined by Kafka but not implemented by "
                                  "the emulator. (emulator.strict.config=true refuses it)"),
    ]:
        with pytest.raises(ConfigException) as info:
            validate_topic_configs("t", configs, strict=True)
        assert str(info.value) == message
    with capture_logs() as logs:
        assert validate_topic_configs("t", {"preallocate": "true"}, strict=False) == {"preallocate": True}
    assert [(e["event"], e["topic"], e["key"]) for e in logs] == [("topic_config_ignored", "t", "preallocate")]


def test_cluster_create_topic_goes_through_the_topic_table() -> None:
    with EmbeddedCluster(brokers=1, offsets_topic=False, config=NO_SOCKETS) as cluster:
        with pytest.raises(ConfigException, match="Unknown topic config name: min.isr"):
            cluster.create_topic("t", configs={"min.isr": "1"})
        info = cluster.create_topic("t", configs={"min.insync.replicas": "1"})
        assert info.configs == {"min.insync.replicas": 1}
