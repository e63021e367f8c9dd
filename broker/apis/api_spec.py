"""ApiSpec: what a handler module declares about one API it serves.

Kafka states an API's key and name once, in ``ApiKeys``, and its version range in the message
JSON schemas; here the key and name are ``kafka_emu.common.api_keys.ApiKeys``'s, and each module
of ``broker.apis`` states the rest once, next to the handler, as ``APIS`` (a tuple of
``ApiSpec``). ``broker.apis.APIS`` gathers them, and everything that needs to know what the
broker speaks reads that table: KafkaApis' dispatch, the ApiVersions answer and the
network processors' version check (``api_versions.DefaultApiVersionManager``).

Releases (broker config ``emulator.kafka.version``): ``min_version..max_version`` is what the
handler implements, across every release the emulator can answer as; a broker serves the part of
it its release serves (``kafka_emu.common.kafka_releases``, read from Kafka's message schemas at
the release's tag). ``versions(release)`` and ``advertised(release)`` are the one place that turns
a release into a range: never above the release's, and below it only where the handler stops
earlier (docs/compatibility.md lists those gaps).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.kafka_releases import KafkaRelease, VersionRange

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

Handler = Callable[["KafkaApis", "Request"], None]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API: its key (``ApiKeys``), the versions the handler fills correctly, the handler.
    ``name`` is Kafka's (``ApiKeys.name``), for logs and metric labels; ``api_key`` is kept as
    a plain ``int``, the type a decoded header's key has, for the tables keyed by it.

    A version outside ``versions(release)`` never reaches the handler: the network processor
    closes the connection, as Kafka does (ApiVersions aside, see ``broker.network.processor``)."""

    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    name: str = field(init=False)

    def __post_init__(self) -> None:
        key = ApiKeys(self.api_key)   # ValueError for a key Kafka does not define
        object.__setattr__(self, "api_key", int(key))
        object.__setattr__(self, "name", key.name)

    def versions(self, release: KafkaRelease) -> VersionRange | None:
        """The versions served as ``release``: its range cut to what the handler implements;
        None where the release has no version of this API the handler implements."""
        theirs = release.api_versions(self.api_key)
        if theirs is None:
            return None
        low, high = max(theirs[0], self.min_version), min(theirs[1], self.max_version)
        return (low, high) if low <= high else None

    def advertised(self, release: KafkaRelease) -> VersionRange | None:
        """The range ApiVersions lists as ``release`` (Produce's minimum: KAFKA-18659)."""
        served = self.versions(release)
        if served is None:
            return None
        return release.advertised_min_version(self.api_key, served[0]), served[1]

    def supports(self, api_version: int, release: KafkaRelease) -> bool:
        served = self.versions(release)
        return served is not None and served[0] <= api_version <= served[1]
