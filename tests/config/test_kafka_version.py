"""``emulator.kafka.version``: one setting naming the Kafka release, its defaults, and the
deprecated ``emulator.api.compatibility`` alias."""
from __future__ import annotations

import pytest
import structlog

from kafka_emu.broker.server.config import ConfigException, KafkaConfig
from kafka_emu.common.kafka_releases import LATEST, RELEASE_NAMES

pytestmark = pytest.mark.timeout(30)


def test_the_default_is_the_newest_release_and_its_defaults() -> None:
    config = KafkaConfig()
    assert config["emulator.kafka.version"] == LATEST == RELEASE_NAMES[-1]
    assert config.kafka_release.name == LATEST and config.deprecated is None
    assert config["emulator.transaction.version"] == 2
    assert config["log.message.timestamp.after.max.ms"] == 3600000   # KIP-937's 4.0 default


def test_3_9_has_3_9_s_defaults_and_refuses_transaction_version_above_0() -> None:
    config = KafkaConfig({"emulator.kafka.version": "3.9"})
    assert config["emulator.transaction.version"] == 0
    assert config["log.message.timestamp.after.max.ms"] == 2**63 - 1
    assert KafkaConfig({"emulator.kafka.version": "3.9", "log.message.timestamp.after.max.ms": 5}
                       )["log.message.timestamp.after.max.ms"] == 5   # given values win
    with pytest.raises(ConfigException, match="emulator.transaction.version"):
        KafkaConfig({"emulator.kafka.version": "3.9", "emulator.transaction.version": 1})


def test_an_unknown_release_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ConfigException, match="emulator.kafka.version.*4.0"):
        KafkaConfig({"emulator.kafka.version": "3.8"})


@pytest.mark.parametrize("alias, release", [("4.x", LATEST), ("3.9", "3.9")])
def test_the_deprecated_compatibility_values_name_releases_and_warn(alias: str, release: str) -> None:
    config = KafkaConfig({"emulator.api.compatibility": alias})
    assert config.kafka_release.name == release
    with structlog.testing.capture_logs() as logs:
        config.log_ignored()
    assert [e["event"] for e in logs] == ["config_deprecated"]
    assert f"emulator.kafka.version={release}" in logs[0]["message"]
    assert KafkaConfig({"emulator.api.compatibility": alias, "emulator.kafka.version": release}).kafka_release.name \
        == release   # both, agreeing: fine
    other = "4.0" if release != "4.0" else "4.1"
    with pytest.raises(ConfigException, match="emulator.api.compatibility"):
        KafkaConfig({"emulator.api.compatibility": alias, "emulator.kafka.version": other})


@pytest.mark.parametrize("name, default, settable", [("3.9", 0, (0,)), ("4.0", 0, (0,)), ("4.1", 0, (0, 1)),
                                                     ("4.2", 1, (0, 1))])
def test_share_version_is_what_the_release_formats_and_allows(name: str, default: int, settable: tuple) -> None:
    """KIP-932's ``share.version``: a new 4.2 cluster finalizes 1, a 4.1 one 0 (share groups a
    preview, turned on by upgrading the feature); 3.9 and 4.0 have no such feature, so only 0."""
    assert KafkaConfig({"emulator.kafka.version": name})["emulator.share.version"] == default
    for level in (0, 1):
        props = {"emulator.kafka.version": name, "emulator.share.version": level}
        if level in settable:
            assert KafkaConfig(props)["emulator.share.version"] == level
        else:
            with pytest.raises(ConfigException, match=f"emulator.share.version.*Kafka {name} finalizes share.version"):
                KafkaConfig(props)
