"""Fast, version-aware construction of kio entities for the hot Produce/Fetch paths.

kio has one frozen dataclass per (API, version) with only that version's fields; the nested
classes live in the same module. ``shape(cls)`` caches the field names so handlers can pass
every field any version has and keep only the ones this class defines.
"""
from __future__ import annotations

import sys
from dataclasses import fields
from datetime import timedelta
from functools import lru_cache
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

_MS = timedelta(milliseconds=1)
_ERRORS: dict[int, ErrorCode] = {int(e.value): e for e in ErrorCode}


def duration_ms(value: Any) -> int:
    """A kio duration field (``timedelta``, or a plain int in hand-built entities) in ms."""
    if isinstance(value, timedelta):
        return value // _MS   # exact (total_seconds() * 1000 can be off by one)
    return int(value)


def topic_key_and_name(topic: Any, by_id: bool, metadata: Any, name_field: str) -> tuple[Any, str | None]:
    """(key as the client sent it, topic name or None if unknown) of a Produce/Fetch topic entry.

    From Produce v13 and Fetch v13 clients name topics by id; older versions by name."""
    if by_id:
        return topic.topic_id, (metadata.topic_name(topic.topic_id) if metadata is not None else None)
    name = getattr(topic, name_field)
    return name, name


def error_code(code: int) -> ErrorCode:
    return _ERRORS.get(code) or ErrorCode(code)


@lru_cache(maxsize=None)
def field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


@lru_cache(maxsize=None)
def nested(cls: type, name: str) -> type:
    """A nested entity class defined next to ``cls`` in its kio module."""
    return getattr(sys.modules[cls.__module__], name)


def make(cls: type, kw: dict[str, Any]) -> Any:
    names = field_names(cls)
    return cls(**{k: v for k, v in kw.items() if k in names})


@lru_cache(maxsize=None)
def response_class(api_key: int, version: int) -> type:
    return load_response_schema(api_key, version)
