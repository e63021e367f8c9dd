"""Version-agnostic construction of kio entities.

kio has one frozen dataclass per (API, version), each with only the fields of that version.
Handlers describe a response once, with every field any version has, and :func:`build` keeps
the ones the target class defines and fills the rest with the schema default (or Kafka's -1 /
zero conventions, see ``error_response``). :func:`item_cls` finds the element class of an array
field, so nested items are built for the right version too.
"""
from __future__ import annotations

from dataclasses import MISSING, fields
from functools import lru_cache
from typing import Any

from kio.serial._introspect import EntityField, EntityTupleField, classify_field, get_field_tag, is_optional

from kafka_emu.broker.protocol.error_response import _primitive_default


@lru_cache(maxsize=None)
def _field_info(cls: type) -> dict[str, tuple[Any, Any]]:
    return {f.name: (f, classify_field(f)) for f in fields(cls)}


@lru_cache(maxsize=None)
def item_cls(cls: type, name: str) -> type:
    """The entity class of array (or nested entity) field ``name`` of ``cls``."""
    f, fc = _field_info(cls)[name]
    if isinstance(fc, (EntityTupleField, EntityField)):
        return fc.type_
    raise TypeError(f"{cls.__name__}.{name} is not an entity field")


def has_field(cls: type, name: str) -> bool:
    return name in _field_info(cls)


def build(cls: type, **values: Any) -> Any:
    """An instance of ``cls`` from ``values`` (extra names ignored, missing ones defaulted)."""
    info = _field_info(cls)
    kwargs: dict[str, Any] = {}
    for name, (f, fc) in info.items():
        if name in values:
            kwargs[name] = values[name]
            continue
        if f.default is not MISSING:
            continue
        if f.default_factory is not MISSING:  # type: ignore[misc]
            continue
        if fc.is_array:
            kwargs[name] = ()
        elif is_optional(f):
            kwargs[name] = None
        elif isinstance(fc, EntityField):
            kwargs[name] = build(fc.type_)
        elif get_field_tag(f) is not None:
            continue
        else:
            kwargs[name] = _primitive_default(f, fc.type_)
    return cls(**kwargs)


def field_value(entity: Any, name: str, default: Any = None) -> Any:
    """``entity.name`` if this version has the field, else ``default``."""
    return getattr(entity, name, default)


__all__ = ["build", "field_value", "has_field", "item_cls"]
