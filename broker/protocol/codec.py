"""Framing, headers and bodies: bytes <-> kio entities.

Why not kio end to end: the request header is parsed by hand (a struct unpack is ~10x cheaper
than a kio entity and the header is read for every frame, including the ones we reject before
touching the body), and kio raises ``KeyError`` on a tagged field it does not know where the
protocol says to ignore it. ``decode_request`` catches that and re-decodes after
:func:`strip_unknown_tags` has rewritten the body without the unknown tags, so a newer client's
optional extras are skipped exactly as Kafka skips them.

Header rules (Kafka's ``ApiMessageType``): a flexible request version uses request header v2
(v1 plus a tagged-field section), others v1; a flexible response uses response header v1
(correlation id plus an empty tagged-field section), others v0; ApiVersions responses always use
v0 so a client can parse them before it knows which versions the broker speaks. kio encodes
these choices in each class's ``__header_schema__``; the encoder reads them from the response
entity's class, so a KIP-511 v0 answer to a v3 ApiVersions request is framed as v0.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, Mapping, TypeAlias

from kio.index import UnknownEntity, load_request_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import DecodeError, SerialError
from kio.static.protocol import RequestPayload, ResponsePayload

from kafka_emu.broker.protocol.adapter import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_reader,
    get_field_tag,
    is_optional,
    response_schema,
)
from kafka_emu.broker.protocol.legacy_schema import legacy_request
from kafka_emu.broker.protocol.fast_fetch import FETCH, FetchRequestData, decode_fetch_request
from kafka_emu.broker.protocol.fast_produce import (
    PRODUCE,
    ProduceRequestData,
    decode_produce_request,
    encode_produce_response,
)
from kafka_emu.common.varint import InvalidRequestError
from kafka_emu.common.varint import read_uvarint as _read_uvarint
from kafka_emu.common.varint import skip_tagged_fields
from kafka_emu.common.varint import write_uvarint as _write_uvarint

_HEADER = struct.Struct(">hhih")   # api_key, api_version, correlation_id, client_id length
_INT32 = struct.Struct(">i")
_SIZE_CORR = struct.Struct(">ii")


class UnknownApiKeyError(InvalidRequestError):
    """The header names an API key kio (and therefore Kafka 4.x) does not define."""


class UnsupportedVersionError(InvalidRequestError):
    """The header names a version kio cannot decode for this API."""


@dataclass(frozen=True, slots=True)
class RequestHeaderData:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int  # bytes the header occupies, the body starts here


@dataclass(frozen=True, slots=True)
class EncodedResponse:
    """A response body written by a hand-written encoder (``broker.protocol.fast_produce``,
    ``fast_fetch``):
    the bytes after the response header, whether that header is v1 (flexible), and the
    response's error counts (Kafka's ``AbstractResponse.errorCounts``: code -> occurrences),
    which metrics can no longer read from an entity."""

    data: bytes
    flexible_header: bool
    error_counts: Mapping[int, int]


# What travels behind the network layer: a request body as kio decodes it or as a fast decoder
# does (same field names), and a response body as an entity or as a fast encoder's bytes.
RequestBody: TypeAlias = RequestPayload | ProduceRequestData | FetchRequestData
ResponseBody: TypeAlias = ResponsePayload | EncodedResponse


@dataclass(frozen=True, slots=True)
class ApiCodec:
    """Cached classes, reader and writer of one (api_key, api_version)."""

    api_key: int
    api_version: int
    request_cls: type
    response_cls: type
    read_request: Any
    flexible_request: bool


@lru_cache(maxsize=None)
def get_codec(api_key: int, api_version: int) -> ApiCodec:
    """Raises UnknownApiKeyError / UnsupportedVersionError for what neither kio nor
    ``broker.protocol.legacy_schema`` (versions Kafka 4.0 removed) can decode."""
    name = api_key_map.get(api_key)
    if name is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}")
    legacy = legacy_request(api_key, api_version)
    if legacy is not None:
        return ApiCodec(api_key, api_version, legacy, response_schema(api_key, api_version),
                        entity_reader(legacy), False)
    if api_version not in schema_name_map[name]:
        raise UnsupportedVersionError(f"api key {api_key} has no version {api_version}")
    try:
        req = load_request_schema(api_key, api_version)
        resp = response_schema(api_key, api_version)
    except UnknownEntity as exc:
        raise UnsupportedVersionError(str(exc)) from None
    return ApiCodec(api_key, api_version, req, resp, entity_reader(req), bool(req.__flexible__))


def decode_request_header(frame: memoryview | bytes) -> RequestHeaderData:
    """Parse request header v1/v2 from a frame (without its 4-byte size prefix).

    The header version depends on whether the request version is flexible, so the API key and
    version are validated here too: an unknown key or version raises before any body byte is
    read. Tagged fields in a v2 header are skipped (Kafka defines none it needs from clients).
    """
    if len(frame) < _HEADER.size:
        raise InvalidRequestError(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id, client_len = _HEADER.unpack_from(frame, 0)
    offset = _HEADER.size
    client_id: str | None = None
    if client_len >= 0:
        end = offset + client_len
        if end > len(frame):
            raise InvalidRequestError("truncated client id")
        try:
            client_id = bytes(frame[offset:end]).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequestError("client id is not valid UTF-8") from None
        offset = end
    elif client_len != -1:
        raise InvalidRequestError(f"negative client id length {client_len}")
    codec = get_codec(api_key, api_version)
    if codec.flexible_request:
        # no tagged fields (one zero byte) is what every client sends
        offset = offset + 1 if offset < len(frame) and frame[offset] == 0 else skip_tagged_fields(frame, offset)
    return RequestHeaderData(api_key, api_version, correlation_id, client_id, offset)


def decode_request(header: RequestHeaderData, frame: memoryview | bytes) -> Any:
    """Decode the body after ``header``; raises InvalidRequestError on any malformed body.

    Trailing bytes after a complete body are tolerated, as Kafka's parser does.
    """
    codec = get_codec(header.api_key, header.api_version)
    check_array_bounds(codec.request_cls, frame, header.size)
    try:
        entity, _ = codec.read_request(frame, header.size)
        _check_nulls(entity)
        return entity
    except InvalidRequestError:
        raise
    except KeyError:
        pass  # an unknown tagged field: strip and retry below
    except (SerialError, ValueError, TypeError, OverflowError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"cannot decode {codec.request_cls.__name__} v{header.api_version}: {exc}") from None
    try:
        cleaned = strip_unknown_tags(codec.request_cls, frame, header.size)
        entity, _ = codec.read_request(cleaned, 0)
        _check_nulls(entity)
        return entity
    except InvalidRequestError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything kio raises here means a malformed body
        raise InvalidRequestError(f"cannot decode {codec.request_cls.__name__} v{header.api_version} "
                                  f"after skipping unknown tagged fields: {exc!r}") from None


def decode_request_fast(header: RequestHeaderData, frame: bytes) -> RequestBody:
    """``decode_request``, except that a Produce request may come back as
    ``fast_produce.ProduceRequestData`` and a Fetch request (v4+) as
    ``fast_fetch.FetchRequestData`` (same field names, decoded without kio). Anything the fast
    decoders are unsure of goes through kio, so errors are exactly ``decode_request``'s."""
    api_key = header.api_key
    if api_key == PRODUCE:
        body = decode_produce_request(header.api_version, frame, header.size)
        if body is not None:
            return body
    elif api_key == FETCH:
        body = decode_fetch_request(header.api_version, frame, header.size)
        if body is not None:
            return body
    return decode_request(header, frame)


@lru_cache(maxsize=None)
def _null_plan(cls: type) -> tuple[tuple[str, bool, bool], ...]:
    """(field, nullable, holds entities) for every array and entity field of ``cls``."""
    plan = []
    for f in fields(cls):
        fc = classify_field(f)
        if fc.is_array or isinstance(fc, EntityField):
            plan.append((f.name, is_optional(f), isinstance(fc, (EntityTupleField, EntityField))))
    return tuple(plan)


def _check_nulls(entity: Any) -> None:
    """kio decodes a null array into a non-nullable field as None; Kafka's parser rejects it
    ("non-nullable field was serialized as null"), and so do we, before a handler sees it."""
    for name, nullable, nested in _null_plan(type(entity)):
        value = getattr(entity, name)
        if value is None:
            if not nullable:
                raise InvalidRequestError(f"non-nullable field {type(entity).__name__}.{name} was null")
            continue
        if nested:
            if isinstance(value, tuple):
                for item in value:
                    _check_nulls(item)
            else:
                _check_nulls(value)


# --- unknown tagged fields -------------------------------------------------------------------

@lru_cache(maxsize=None)
def _layout(cls: type) -> tuple[tuple[Any, ...], frozenset[int]]:
    """Per entity class: the positional fields (with how to walk them) and the known tags."""
    plain: list[tuple[str, Any, Any, bool]] = []
    tags: set[int] = set()
    for f in fields(cls):
        tag = get_field_tag(f)
        if tag is not None:
            tags.add(tag)
            continue
        fc = classify_field(f)
        if isinstance(fc, EntityTupleField):
            plain.append(("entities", fc.type_, None, False))
        elif isinstance(fc, EntityField):
            plain.append(("entity", fc.type_, None, is_optional(f)))
        elif isinstance(fc, PrimitiveTupleField):
            # An array of primitives: kio reads it whole, so its count is checked first.
            plain.append(("primitives", None, get_field_reader(cls, f, False, False), False))
        else:
            reader = get_field_reader(cls, f, False, False)
            plain.append(("primitive", None, reader, False))
    return tuple(plain), frozenset(tags)


def strip_unknown_tags(cls: type, buf: memoryview | bytes, offset: int = 0) -> bytes:
    """Re-emit an encoded entity of ``cls`` without the tagged fields ``cls`` does not define.

    Walks the schema (kio's readers give each primitive's size), copying known bytes and
    dropping unknown tags at every nesting level. Raises InvalidRequestError on truncation.
    """
    out = bytearray()
    if isinstance(buf, bytearray):
        buf = bytes(buf)   # kio's readers take read-only buffers only
    try:
        _strip(cls, memoryview(buf), offset, out)
    except (SerialError, DecodeError, IndexError, ValueError) as exc:
        raise InvalidRequestError(f"malformed body: {exc!r}") from None
    return bytes(out)


def check_array_bounds(cls: type, buf: memoryview | bytes, offset: int = 0) -> None:
    """Walk an encoded ``cls`` and reject any array whose count exceeds the bytes left.

    kio's native reader sizes an array's storage from its count before reading an element, so a
    forged count (a 20-byte frame claiming 2**31 items) makes it request tens of gigabytes, and
    a failed allocation in Rust aborts the whole process. Kafka's own parser refuses such
    counts; this pre-check does the same before kio sees the body. Raises InvalidRequestError.
    """
    if isinstance(buf, bytearray):
        buf = bytes(buf)
    try:
        _strip(cls, memoryview(buf), offset, None)
    except (SerialError, DecodeError, IndexError, ValueError) as exc:
        raise InvalidRequestError(f"malformed body: {exc!r}") from None


def _strip(cls: type, buf: memoryview, offset: int, out: bytearray | None) -> int:
    """Walk one entity, copying it without unknown tags into ``out`` (None: only validate)."""
    if out is None:
        return _walk(cls, buf, offset)
    plain, known_tags = _layout(cls)
    flexible = bool(cls.__flexible__)
    for kind, sub, reader, nullable in plain:
        if kind == "primitive" or kind == "primitives":
            if kind == "primitives":
                _check_primitive_array(buf, offset, flexible)
            _, size = reader(buf, offset)
            out += buf[offset:offset + size]
            offset += size
        elif kind == "entity":
            if nullable:
                marker = buf[offset]
                out.append(marker)
                offset += 1
                if marker == 0xFF:
                    continue
            offset = _strip(sub, buf, offset, out)
        else:
            if flexible:
                start = offset
                n, offset = _read_uvarint(buf, offset)
                out += buf[start:offset]
                count = n - 1
            else:
                if offset + 4 > len(buf):
                    raise InvalidRequestError("truncated array length")
                count = _INT32.unpack_from(buf, offset)[0]
                out += buf[offset:offset + 4]
                offset += 4
            if count > len(buf) - offset:
                raise InvalidRequestError(f"array of {count} items exceeds the frame")
            for _ in range(max(count, 0)):
                offset = _strip(sub, buf, offset, out)
    if flexible:
        n, offset = _read_uvarint(buf, offset)
        kept: list[bytes] = []
        for _ in range(n):
            start = offset
            tag, offset = _read_uvarint(buf, offset)
            size, offset = _read_uvarint(buf, offset)
            if offset + size > len(buf):
                raise InvalidRequestError("truncated tagged field")
            offset += size
            if tag in known_tags:
                kept.append(bytes(buf[start:offset]))
        _write_uvarint(out, len(kept))
        for chunk in kept:
            out += chunk
    return offset


def _check_primitive_array(buf: memoryview, offset: int, flexible: bool) -> None:
    """Every element of a primitive array takes at least one byte: bound the count by that."""
    if flexible:
        n, after = _read_uvarint(buf, offset)
        count = n - 1
    else:
        if offset + 4 > len(buf):
            raise InvalidRequestError("truncated array length")
        count = _INT32.unpack_from(buf, offset)[0]
        after = offset + 4
    if count > len(buf) - after:
        raise InvalidRequestError(f"array of {count} items exceeds the frame")


def _walk(cls: type, buf: memoryview, offset: int) -> int:
    """``_strip`` without the copy: the bounds check on every array count is the point."""
    plain, _ = _layout(cls)
    flexible = bool(cls.__flexible__)
    end = len(buf)
    for kind, sub, reader, nullable in plain:
        if kind == "primitive":
            offset += reader(buf, offset)[1]
        elif kind == "primitives":
            _check_primitive_array(buf, offset, flexible)
            offset += reader(buf, offset)[1]
        elif kind == "entity":
            if nullable:
                marker = buf[offset]
                offset += 1
                if marker == 0xFF:
                    continue
            offset = _walk(sub, buf, offset)
        else:
            if flexible:
                n, offset = _read_uvarint(buf, offset)
                count = n - 1
            else:
                if offset + 4 > end:
                    raise InvalidRequestError("truncated array length")
                count = _INT32.unpack_from(buf, offset)[0]
                offset += 4
            if count > end - offset:
                raise InvalidRequestError(f"array of {count} items exceeds the frame")
            for _ in range(count):
                offset = _walk(sub, buf, offset)
    if flexible:
        offset = skip_tagged_fields(buf, offset, end)
    return offset


# --- encoding --------------------------------------------------------------------------------

def encode_response(correlation_id: int, body: Any) -> bytes:
    """Frame a response: 4-byte size, response header (v0 or v1 per the body's class), body.

    An ``EncodedResponse`` is framed as it is; ProduceResponse entities go through
    ``broker.protocol.fast_produce`` (same bytes, far cheaper) when their shape allows;
    everything else through kio's writer."""
    cls = type(body)
    if cls is EncodedResponse:
        header = b"\0" if body.flexible_header else b""
        return _SIZE_CORR.pack(len(body.data) + len(header) + 4, correlation_id) + header + body.data
    if getattr(cls, "__api_key__", None) == 0:
        fast = encode_produce_response(body)
        if fast is not None:
            header = b"\0" if cls.__header_schema__.__flexible__ else b""
            return _SIZE_CORR.pack(len(fast) + len(header) + 4, correlation_id) + header + fast
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0\0\0\0\0")
    if cls.__header_schema__.__flexible__:
        buf.write(b"\0")  # response header v1: no tagged fields
    entity_writer(cls)(buf, body)
    data = buf.getbuffer()
    _SIZE_CORR.pack_into(data, 0, len(data) - 4, correlation_id)
    del data
    return buf.getvalue()


def encode_request(body: Any, correlation_id: int, client_id: str | None = "kafka-emu") -> bytes:
    """Frame a request (for tests and the wire benchmark): size, header v1/v2, body."""
    cls = type(body)
    buf = io.BytesIO()
    raw_client = None if client_id is None else client_id.encode()
    buf.write(b"\0\0\0\0")
    buf.write(_HEADER.pack(cls.__api_key__, cls.__version__, correlation_id,
                           -1 if raw_client is None else len(raw_client)))
    if raw_client:
        buf.write(raw_client)
    if cls.__flexible__:
        buf.write(b"\0")
    entity_writer(cls)(buf, body)
    data = buf.getbuffer()
    _INT32.pack_into(data, 0, len(data) - 4)
    del data
    return buf.getvalue()


def decode_response(frame: bytes, cls: type) -> tuple[int, Any]:
    """(correlation_id, entity) from a frame without its size prefix (tests and benchmarks)."""
    corr = _INT32.unpack_from(frame, 0)[0]
    offset = 4
    if cls.__header_schema__.__flexible__:
        offset = skip_tagged_fields(frame, offset)
    entity, _ = entity_reader(cls)(frame, offset)
    return corr, entity
