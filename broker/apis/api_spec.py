"""ApiSpec: what a handler module declares about one API it serves.

Kafka states an API's key, name and version range once, in ``ApiKeys`` and the message JSON
schemas; here each module of ``broker.apis`` states them once, next to the handler, as ``APIS``
(a tuple of ``ApiSpec``). ``broker.apis.APIS`` gathers them, and everything that needs to know
what the broker speaks reads that table: KafkaApis' dispatch, the ApiVersions answer and the
network processors' version check (``broker.apis.is_supported``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from kafka_emu.broker.kafka_apis import KafkaApis
    from kafka_emu.broker.request_channel import Request

Handler = Callable[["KafkaApis", "Request"], None]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One API: Kafka's key and name, the versions the handler fills correctly, the handler.

    A version outside ``min_version..max_version`` is never advertised and never reaches the
    handler (the network processor answers it, see ``broker.network.socket_server``)."""

    api_key: int
    name: str
    min_version: int
    max_version: int
    handler: Handler

    def supports(self, api_version: int) -> bool:
        return self.min_version <= api_version <= self.max_version
