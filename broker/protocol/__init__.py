"""Wire codec: the adapter between Kafka's framed bytes and kio entities.

Only the network layer (``broker.network``) touches bytes; everything behind the request
channel sees decoded kio entities, as the architecture contract asks. The storage layer uses
none of it (its varints are ``kafka_emu.common.varint``).

Importing the package loads none of its modules: the names below load their module (and kio)
on first use, so that importing one hand-written codec (``fast_wire``, ``fast_produce``) does
not load the generic codec and kio with it.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ApiCodec": "codec", "InvalidRequestError": "codec", "RequestHeaderData": "codec",
    "UnknownApiKeyError": "codec", "UnsupportedVersionError": "codec", "decode_request": "codec",
    "decode_request_header": "codec", "encode_request": "codec", "encode_response": "codec",
    "get_codec": "codec", "build_error_response": "error_response",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = sorted(_EXPORTS)
