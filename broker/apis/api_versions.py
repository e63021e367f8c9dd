"""ApiVersions: what the broker speaks, from the handler modules' declarations (``broker.apis.APIS``).

KIP-511: a request at a version newer than the broker knows (the network layer hands it on
with ``body=None``) gets UNSUPPORTED_VERSION in a **v0** body, framed with response header v0,
still listing the ApiVersions range so the client can retry at a version both sides speak.
ApiVersions v3+ carries the client's software name and version; Kafka validates them
(INVALID_REQUEST for names outside ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``). We do too.
The ranges listed are those of the broker's ``emulator.api.compatibility`` mode
(``ApiSpec.advertised``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

import kafka_emu.broker.apis as registry   # the package: APIS is read at call time, after it is built
from kafka_emu.broker.apis._common import ZERO_THROTTLE
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.config import API_COMPATIBILITY, KAFKA_4X
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.coordinator.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.kafka_apis import KafkaApis
    from kafka_emu.broker.request_channel import Request

API_KEY = 18
_SOFTWARE_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


@lru_cache(maxsize=None)
def build_api_versions_response(version: int, error_code: int = Errors.NONE,
                                compatibility: str = KAFKA_4X) -> object:
    """The (immutable, hence cached) response entity for ``version`` in ``compatibility`` mode."""
    cls = response_schema(API_KEY, version)
    entry_cls = item_cls(cls, "api_keys")
    specs = registry.APIS.values()
    if error_code == Errors.UNSUPPORTED_VERSION:
        specs = [registry.APIS[API_KEY]]
    keys = []
    for spec in specs:
        low, high = spec.advertised(compatibility)
        keys.append(build(entry_cls, api_key=spec.api_key, min_version=low, max_version=high))
    return build(cls, error_code=error_code, api_keys=tuple(keys), throttle_time=ZERO_THROTTLE)


def handle_api_versions(request: Request, compatibility: str = KAFKA_4X) -> object:
    """Return the response body for an ApiVersions request."""
    if request.body is None or not registry.is_supported(API_KEY, request.api_version, compatibility):
        return build_api_versions_response(0, Errors.UNSUPPORTED_VERSION, compatibility)
    body = request.body
    if request.api_version >= 3:
        name = body.client_software_name
        ver = body.client_software_version
        if not (_SOFTWARE_RE.match(name or "") and _SOFTWARE_RE.match(ver or "")):
            return build_api_versions_response(request.api_version, Errors.INVALID_REQUEST, compatibility)
    return build_api_versions_response(request.api_version, Errors.NONE, compatibility)


def _handle(apis: KafkaApis, request: Request) -> None:
    apis.request_channel.send_response(request, handle_api_versions(request, apis.config[API_COMPATIBILITY]))


APIS = (ApiSpec(API_KEY, "ApiVersions", 0, 4, _handle),)
