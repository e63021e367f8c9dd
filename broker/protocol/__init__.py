"""Wire codec: the adapter between Kafka's framed bytes and kio entities.

Only the network layer (``broker.network``) touches bytes; everything behind the request
channel sees decoded kio entities, as the architecture contract asks.
"""
from kafka_emu.broker.protocol.codec import (
    ApiCodec,
    InvalidRequestError,
    RequestHeaderData,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_request_header,
    encode_request,
    encode_response,
    get_codec,
)
from kafka_emu.broker.protocol.error_response import build_error_response

__all__ = [
    "ApiCodec", "InvalidRequestError", "RequestHeaderData", "UnknownApiKeyError",
    "UnsupportedVersionError", "build_error_response", "decode_request", "decode_request_header",
    "encode_request", "encode_response", "get_codec",
]
