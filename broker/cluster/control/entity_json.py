"""kio entities <-> JSON values, for test control from Python and over HTTP.

``to_json_value`` turns a decoded request or response (a kio entity, or the fast codec's
``ProduceRequestData``) into JSON-ready dicts and lists: field names are kio's (Kafka's, in
snake_case), durations become milliseconds, UUIDs strings, error codes ints, byte strings
base64. ``from_json_value`` goes the other way for a response class: a dict with some of the
class's fields (nested dicts and lists for arrays) becomes an entity, missing fields take
their schema default (-1 for offsets, ids and epochs, as ``protocol.adapter.build`` fills them).
A key the class does not have is an error, never silently dropped.
"""
from __future__ import annotations

import base64
import dataclasses
import uuid
from datetime import timedelta
from enum import Enum
from typing import TypeAlias, TypeVar

from kafka_emu.broker.protocol.adapter import EntityField, EntityTupleField, PrimitiveTupleField, build, field_plan
from kafka_emu.broker.protocol.codec import EncodedResponse

# What json.loads returns and json.dumps takes.
JsonValue: TypeAlias = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
E = TypeVar("E")


def to_json_value(value: object) -> JsonValue:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, timedelta):
        return int(value / timedelta(milliseconds=1))
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, EncodedResponse):
        return {"encoded_bytes": len(value.data)}
    if dataclasses.is_dataclass(value):
        return {f.name: to_json_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list, frozenset, set)):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    return repr(value)


def from_json_value(cls: type[E], value: E | dict[str, object]) -> E:
    """An entity of ``cls`` from a dict (an entity of ``cls`` is returned as it is). From Python
    the dict's values may already be what the entity holds (an entity, a ``timedelta``, a UUID)."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(value).__name__}")
    info = {f.name: (f, fc) for f, fc in field_plan(cls)}
    unknown = sorted(set(value) - set(info))
    if unknown:
        raise ValueError(f"{cls.__name__} has no field {', '.join(unknown)} "
                         f"(fields: {', '.join(info)})")
    values: dict[str, object] = {}
    for name, raw in value.items():
        f, fc = info[name]
        if isinstance(fc, EntityTupleField):
            values[name] = tuple(from_json_value(fc.type_, item) for item in _as_list(cls, name, raw))
        elif isinstance(fc, EntityField):
            values[name] = None if raw is None else from_json_value(fc.type_, raw)
        elif isinstance(fc, PrimitiveTupleField):
            values[name] = tuple(_primitive(fc.type_, item) for item in _as_list(cls, name, raw))
        else:
            values[name] = _primitive(fc.type_, raw)
    return build(cls, **values)


def _as_list(cls: type, name: str, raw: object) -> list[object]:
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"{cls.__name__}.{name} is an array, got {type(raw).__name__}")
    return list(raw)


def _primitive(type_: type, raw: object) -> object:
    if raw is None:
        return None
    if issubclass(type_, timedelta) and not isinstance(raw, timedelta):
        raw = timedelta(milliseconds=raw)
    elif issubclass(type_, uuid.UUID) and isinstance(raw, str):
        raw = uuid.UUID(raw)
    elif issubclass(type_, bytes) and isinstance(raw, str):
        raw = base64.b64decode(raw)
    parse = getattr(type_, "parse", None)
    if parse is not None:
        return parse(raw)
    return raw if type(raw) is type_ else type_(raw)
