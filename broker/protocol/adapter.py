"""The adapter between the broker and kio: the one module that uses kio beyond its public API.

kio has one frozen dataclass per (API, version), each with only the fields of that version, and
its own ``ErrorCode`` enum. Handlers describe a response once, with every field any version has
and error codes from ``common.errors.Errors``; :func:`build` keeps the fields the target
class defines, fills the missing required ones (schema default, or Kafka's conventions: -1 for
offsets, epochs, ids and timestamps, zero or empty otherwise) and turns error codes into kio's
enum. :func:`item_cls` finds the class of an array or nested-entity field, so nested items are
built for the right version too; :func:`response_schema` finds a response class.

kio's private field introspection (``kio.serial._introspect``, ``_parse``,
``_implicit_defaults``) is imported here and nowhere else; the codec and the generic error
responses take it from this module, so a kio upgrade that moves it touches one file.

Stateless apart from per-class caches; safe from any thread.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from datetime import timedelta
from functools import lru_cache
from keyword import iskeyword
from typing import Any
from uuid import UUID

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial._implicit_defaults import primitive_implicit_defaults
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    FieldClass,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)
from kio.serial._parse import get_field_reader

from kafka_emu.broker.protocol.legacy_schema import legacy_response

_KIO_ERRORS: dict[int, ErrorCode] = {int(e): e for e in ErrorCode}
# integer fields whose "no value" is -1 in Kafka's responses (the rest default to zero)
_MINUS_ONE_HINTS = ("offset", "epoch", "watermark", "timestamp", "producer_id", "node_id",
                    "generation_id", "leader_id", "port", "controller_id", "coordinator_id")


def kio_error(code: int) -> ErrorCode:
    """kio's enum member for an error code of ``Errors`` (both list Kafka 4's codes)."""
    return _KIO_ERRORS[code]


def is_error_code(f: Field) -> bool:
    return f.metadata.get("kafka_type") == "error_code"


def primitive_default(f: Field, type_: type) -> Any:
    """The value of primitive field ``f`` when a response does not set it."""
    kafka_type = f.metadata.get("kafka_type")
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type in ("int8", "int16", "int32", "int64") and any(h in f.name for h in _MINUS_ONE_HINTS):
        return type_(-1)
    for base in type_.__mro__:
        if base in primitive_implicit_defaults:
            return primitive_implicit_defaults[base]
    if type_ is bool:
        return False
    if type_ is UUID:
        return UUID(int=0)
    if type_ is timedelta:
        return timedelta(0)
    raise TypeError(f"no default for {f.name} of {type_}")


@lru_cache(maxsize=None)
def field_plan(cls: type) -> tuple[tuple[Field, FieldClass], ...]:
    """Every field of entity class ``cls`` with kio's classification of it."""
    return tuple((f, classify_field(f)) for f in fields(cls))


class _Shape:
    """What :func:`build` needs of one entity class: its field names, the required fields with
    their value when not given, the error-code fields."""

    __slots__ = ("names", "defaults", "error_fields")

    def __init__(self, cls: type) -> None:
        self.defaults: dict[str, Any] = {}   # required fields and their value when not given
        error_fields: list[str] = []
        for f, fc in field_plan(cls):
            if is_error_code(f):
                error_fields.append(f.name)
            if f.default is not MISSING or f.default_factory is not MISSING:  # type: ignore[misc]
                continue
            if fc.is_array:
                self.defaults[f.name] = ()
            elif is_optional(f):
                self.defaults[f.name] = None
            elif isinstance(fc, EntityField):
                self.defaults[f.name] = build(fc.type_)   # frozen, so one instance serves all
            elif get_field_tag(f) is None:
                self.defaults[f.name] = primitive_default(f, fc.type_)
        self.names = frozenset(f.name for f in fields(cls))
        self.error_fields = frozenset(error_fields)


@lru_cache(maxsize=None)
def _shape(cls: type) -> _Shape:
    return _Shape(cls)


# (class, given names in call order) -> its constructor (see ``constructor``)
_constructors: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}


def constructor(cls: type, names: tuple[str, ...]) -> Callable[..., Any]:
    """A function taking ``names`` (positionally or by name) that returns an instance of
    ``cls``: names ``cls`` lacks are ignored, its missing required fields defaulted, error codes
    turned into kio's enum.

    Generated once per (class, names), as ``dataclasses`` generates ``__init__``: a build then
    costs one call plus kio's own constructor, where sorting the given values out at every call
    cost as much again (a Produce response builds three entities). Callers pass the same names
    on every call of a code path, so the cache holds one entry per call site and version.
    Entries are added under the GIL and never change; a racing duplicate is harmless."""
    key = (cls, names)
    make = _constructors.get(key)
    if make is None:
        shape = _shape(cls)
        for n in names:
            if not n.isidentifier() or iskeyword(n) or n.startswith("_"):
                raise TypeError(f"{n!r} is not a field name")
        # the generated code's own names start with "_", which no field name does
        scope: dict[str, Any] = {"_cls": cls, "_errors": _KIO_ERRORS}
        args = [f"{n}=_errors[{n}]" if n in shape.error_fields else f"{n}={n}" for n in names if n in shape.names]
        for n, default in shape.defaults.items():
            if n not in names:
                scope[f"_default_{n}"] = _KIO_ERRORS[default] if n in shape.error_fields else default
                args.append(f"{n}=_default_{n}")
        source = f"def make({', '.join(names)}):\n    return _cls({', '.join(args)})\n"
        exec(source, scope)   # noqa: S102 - only checked identifiers become code, never values
        make = _constructors[key] = scope["make"]
    return make


def build(cls: type, **values: Any) -> Any:
    """An instance of ``cls`` from ``values`` (extra names ignored, missing ones defaulted,
    error codes converted to kio's enum)."""
    return constructor(cls, tuple(values))(**values)


def has_field(cls: type, name: str) -> bool:
    """Whether this version's class ``cls`` has field ``name``."""
    return name in _shape(cls).names


@lru_cache(maxsize=None)
def item_cls(cls: type, name: str) -> type:
    """The entity class of array (or nested entity) field ``name`` of ``cls``."""
    for f, fc in field_plan(cls):
        if f.name == name:
            if isinstance(fc, (EntityTupleField, EntityField)):
                return fc.type_
            break
    raise TypeError(f"{cls.__name__}.{name} is not an entity field")


@lru_cache(maxsize=None)
def response_schema(api_key: int, api_version: int) -> type:
    """The kio response class of (api_key, api_version), cached (kio's own lookup imports a
    module by name on every call); for a version Kafka 4.0 removed, the class
    ``broker.protocol.legacy_schema`` derives."""
    legacy = legacy_response(api_key, api_version)
    return legacy if legacy is not None else load_response_schema(api_key, api_version)


__all__ = [
    "EntityField", "EntityTupleField", "FieldClass", "PrimitiveTupleField", "build", "classify_field", "constructor",
    "field_plan", "get_field_reader", "get_field_tag", "has_field", "is_error_code", "is_optional", "item_cls",
    "kio_error", "primitive_default", "response_schema",
]
