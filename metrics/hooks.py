"""Reading component hooks defensively.

Components expose their counters as plain attributes or cheap zero-argument methods
(docs/architecture.md, "Metrics hooks"). The collectors read them through these helpers so that
a hook a component does not (yet) provide yields "no sample" rather than a failed scrape, and a
hook may be either an attribute or a method without the collector caring which.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

_MISSING = object()


def component(obj: Any, *names: str) -> Any:
    """The first attribute of ``obj`` among ``names`` that is present and not None."""
    if obj is None:
        return None
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return None


def read(obj: Any, *names: str) -> Any:
    """The first hook among ``names``: an attribute's value, or a method's result; else None."""
    if obj is None:
        return None
    for name in names:
        value = getattr(obj, name, _MISSING)
        if value is _MISSING or value is None:
            continue
        if callable(value):
            value = value()
        return value
    return None


def read_number(obj: Any, *names: str) -> float | None:
    """A numeric hook as float; a mapping (e.g. per-topic counts) reads as the sum of its values."""
    value = read(obj, *names)
    if value is None:
        return None
    if isinstance(value, Mapping):
        try:
            return float(sum(list(value.values())))
        except (TypeError, ValueError):
            return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def attribute_values(obj: Any) -> list[Any]:
    """A snapshot of an object's instance attributes (``__dict__`` and ``__slots__``)."""
    if obj is None:
        return []
    values: list[Any] = []
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        values.extend(list(d.values()))  # list() of a dict view is one C call: atomic under the GIL
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()) or ():
            if isinstance(slot, str):
                value = getattr(obj, slot, None)
                if value is not None:
                    values.append(value)
    return values


def mapping_values(value: Any) -> Iterable[Any]:
    """Values of a dict-like or the items of a list-like hook (snapshotted)."""
    if value is None:
        return ()
    if isinstance(value, Mapping):
        return list(value.values())
    if callable(value):
        return mapping_values(value())
    try:
        return list(value)
    except TypeError:
        return ()
