"""ApiVersions (key 18): what the broker speaks, from ``broker.protocol.versions``.

KIP-511: a request at a version newer than the broker knows (the network layer hands it on
with ``body=None``) gets UNSUPPORTED_VERSION in a **v0** body, framed with response header v0,
still listing the ApiVersions range so the client can retry at a version both sides speak.
ApiVersions v3+ carries the client's software name and version; Kafka validates them
(INVALID_REQUEST for names outside ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``). We do too.
"""
from __future__ import annotations

import re
from datetime import timedelta
from functools import lru_cache
from typing import Any

from kafka_emu.broker.protocol.codec import response_schema
from kio.schema.errors import ErrorCode

from kafka_emu.broker.protocol.versions import API_VERSIONS, API_VERSIONS_KEY

API_KEY = API_VERSIONS_KEY
_SOFTWARE_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


@lru_cache(maxsize=None)
def build_api_versions_response(version: int, error_code: int = 0) -> Any:
    """The (immutable, hence cached) response entity for ``version``."""
    cls = response_schema(API_KEY, version)
    entry_cls = cls.__dataclass_fields__["api_keys"].type.__args__[0]
    if error_code == ErrorCode.unsupported_version:
        lo, hi = API_VERSIONS[API_KEY]
        keys = (entry_cls(api_key=API_KEY, min_version=lo, max_version=hi),)
    else:
        keys = tuple(entry_cls(api_key=k, min_version=lo, max_version=hi)
                     for k, (lo, hi) in sorted(API_VERSIONS.items()))
    kwargs: dict[str, Any] = {"error_code": ErrorCode(error_code), "api_keys": keys}
    if "throttle_time" in cls.__dataclass_fields__:
        kwargs["throttle_time"] = timedelta(0)
    return cls(**kwargs)


def handle_api_versions(request: Any) -> Any:
    """Return the response body for an ApiVersions request."""
    lo, hi = API_VERSIONS[API_KEY]
    if request.body is None or not lo <= request.api_version <= hi:
        return build_api_versions_response(0, int(ErrorCode.unsupported_version))
    body = request.body
    if request.api_version >= 3:
        name = getattr(body, "client_software_name", "")
        ver = getattr(body, "client_software_version", "")
        if not (_SOFTWARE_RE.match(name or "") and _SOFTWARE_RE.match(ver or "")):
            return build_api_versions_response(request.api_version, int(ErrorCode.invalid_request))
    return build_api_versions_response(request.api_version)


def _handle(apis: Any, request: Any) -> None:
    apis.request_channel.send_response(request, handle_api_versions(request))


def register(apis: Any) -> None:
    apis.register(API_KEY, _handle)
