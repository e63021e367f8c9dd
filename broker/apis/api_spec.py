"""ApiSpec: what a handler module declares about one API it serves.

Kafka states an API's key and name once, in ``ApiKeys``, and its version range in the message
JSON schemas; here the key and name are ``kafka_emu.common.api_keys.ApiKeys``'s, and each module
of ``broker.apis`` states the rest once, next to the handler, as ``APIS`` (a tuple of
``ApiSpec``). ``broker.apis.APIS`` gathers them, and everything that needs to know what the
broker speaks reads that table: KafkaApis' dispatch, the ApiVersions answer and the
network processors' version check (``api_versions.DefaultApiVersionManager``).

Compatibility modes (broker config ``emulator.api.compatibility``): ``min_version..max_version``
is what the broker serves as Kafka 4.x (KIP-896 removed the oldest versions of many APIs);
``kafka_3_9`` is the range served as Kafka 3.9.1, stated only where it differs (older versions
Kafka 4.0 removed, or a newer version 3.9 did not have yet). ``versions(mode)`` and
``advertised(mode)`` are the one place that turns a mode into a range.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from kafka_emu.broker.server.config import KAFKA_3_9, KAFKA_4X
from kafka_emu.common.api_keys import ApiKeys

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

Handler = Callable[["KafkaApis", "Request"], None]
VersionRange = tuple[int, int]   # (min, max), both served


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API: its key (``ApiKeys``), the versions the handler fills correctly, the handler.
    ``name`` is Kafka's (``ApiKeys.name``), for logs and metric labels; ``api_key`` is kept as
    a plain ``int``, the type a decoded header's key has, for the tables keyed by it.

    A version outside ``versions(mode)`` never reaches the handler: the network processor
    closes the connection, as Kafka does (ApiVersions aside, see ``broker.network.processor``).

    ``advertised_min_version``: the min version ApiVersions lists when it is below the served
    one. Only Produce has one: Kafka 4 advertises Produce from v0 although it closes the
    connection on v0-v2 (KAFKA-18659, ``ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION``:
    old librdkafka disables compression unless Produce v0 is listed)."""

    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    kafka_3_9: VersionRange | None = None
    advertised_min_version: int | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        key = ApiKeys(self.api_key)   # ValueError for a key Kafka does not define
        object.__setattr__(self, "api_key", int(key))
        object.__setattr__(self, "name", key.name)

    def versions(self, compatibility: str = KAFKA_4X) -> VersionRange:
        """The versions served in ``compatibility`` mode (``4.x`` or ``3.9``)."""
        if compatibility == KAFKA_3_9 and self.kafka_3_9 is not None:
            return self.kafka_3_9
        return self.min_version, self.max_version

    def advertised(self, compatibility: str = KAFKA_4X) -> VersionRange:
        """The range ApiVersions lists in ``compatibility`` mode."""
        low, high = self.versions(compatibility)
        if self.advertised_min_version is not None:
            low = min(low, self.advertised_min_version)
        return low, high

    def supports(self, api_version: int, compatibility: str = KAFKA_4X) -> bool:
        low, high = self.versions(compatibility)
        return low <= api_version <= high
