"""The Kafka releases the emulator can answer as (broker config ``emulator.kafka.version``).

A broker of one release serves, per API, the versions that release's message schemas declare,
reports the features a newly formatted cluster of that release finalizes, and starts from that
release's config defaults. Those facts are read from Kafka's sources at each release tag by
``scripts/derive_kafka_releases.py`` into ``kafka_release_data`` (generated, checked in); this
module gives them types. What the emulator serves of them is decided where the behaviour lives:
``ApiSpec.versions`` intersects a release's range with what a handler implements, and
``broker.apis.api_versions`` caps each feature at the level the emulator implements.

Immutable after import; safe from any thread.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.kafka_release_data import RELEASE_DATA

VersionRange = tuple[int, int]   # (min, max), both served


@dataclass(frozen=True, slots=True)
class FeatureLevels:
    """One feature of a release: the levels a broker reports as supported (``min..max``; Kafka's
    ``BrokerFeatures.defaultSupportedFeatures`` without unstable levels) and the level a newly
    formatted cluster finalizes (``default``, Kafka's ``Feature.defaultVersion`` of the release's
    production ``metadata.version``)."""

    min: int
    max: int
    default: int


@dataclass(frozen=True, slots=True, eq=False)
class KafkaRelease:
    """What one Kafka release serves. ``name`` is the minor release (``4.1``); ``tag`` the
    source tag its facts were read at (the newest patch release of that minor). One instance per
    release (``RELEASES``), compared and hashed by identity."""

    name: str
    tag: str
    apis: Mapping[int, tuple[str, int, int]]
    produce_advertised_min_version: int | None
    features: Mapping[str, FeatureLevels]
    metadata_release_version: str
    config_defaults: Mapping[str, object]

    def api_versions(self, api_key: int) -> VersionRange | None:
        """The versions a broker of this release serves for ``api_key``; None if none."""
        entry = self.apis.get(api_key)
        return None if entry is None else (entry[1], entry[2])

    def advertised_min_version(self, api_key: int, served_min: int) -> int:
        """The minimum ApiVersions lists: the served one, except Produce's (KAFKA-18659: Kafka 4
        advertises Produce from v0 although it closes the connection on v0-v2)."""
        if api_key == ApiKeys.PRODUCE and self.produce_advertised_min_version is not None:
            return min(served_min, self.produce_advertised_min_version)
        return served_min

    def at_least(self, name: str) -> bool:
        """Whether this release is ``name`` or newer."""
        return release_key(self.name) >= release_key(name)

    def __str__(self) -> str:
        return f"Kafka {self.name} ({self.tag})"


def release_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split("."))


def _load(name: str, data: Mapping[str, object]) -> KafkaRelease:
    features = {f: FeatureLevels(int(v["min"]), int(v["max"]), int(v["default"]))  # type: ignore[index]
                for f, v in data["features"].items()}  # type: ignore[union-attr]
    return KafkaRelease(
        name=name, tag=str(data["tag"]),
        apis=MappingProxyType(dict(data["apis"])),  # type: ignore[call-overload]
        produce_advertised_min_version=data["produce_advertised_min_version"],  # type: ignore[arg-type]
        features=MappingProxyType(features),
        metadata_release_version=str(data["features"]["metadata.version"]["release_version"]),  # type: ignore[index]
        config_defaults=MappingProxyType(dict(data["config_defaults"])),  # type: ignore[call-overload]
    )


RELEASES: Mapping[str, KafkaRelease] = MappingProxyType(
    {name: _load(name, data) for name, data in sorted(RELEASE_DATA.items(), key=lambda kv: release_key(kv[0]))})
RELEASE_NAMES: tuple[str, ...] = tuple(RELEASES)
LATEST: str = RELEASE_NAMES[-1]


def release(name: str) -> KafkaRelease:
    """The release called ``name`` (one of ``RELEASE_NAMES``); KeyError otherwise."""
    return RELEASES[name]


__all__ = ["FeatureLevels", "KafkaRelease", "LATEST", "RELEASES", "RELEASE_NAMES", "VersionRange", "release",
           "release_key"]
