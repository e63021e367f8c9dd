"""Error counts of a response, as Kafka's ``AbstractResponse.errorCounts`` gives them.

Kafka's responses each implement ``errorCounts``: in practice the top-level error code (when the
response has one) plus the error code of every topic, partition, group or member entry. A kio
response entity is a tree of frozen dataclasses whose error fields are typed ``ErrorCode``, so
one generic walk gives the same counts for every API. The walk plan (which fields hold error
codes, which hold entities that may) is computed once per entity class; subtrees without any
error field (records, assignments, members' metadata) are never visited. A response the broker
encoded by hand (``codec.EncodedResponse``, fast Produce) states its counts itself.

kio's ``ErrorCode`` is only how a field is recognised as an error code; the codes are named by
the project's one error table, ``kafka_emu.common.errors``.
"""
from __future__ import annotations

import dataclasses
import typing
from operator import attrgetter
from typing import Any, Callable, Mapping, Protocol, runtime_checkable

from kio.schema.errors import ErrorCode

from kafka_emu.common.errors import Errors

# entity class -> readers of (error fields, fields holding one entity, fields holding a tuple of
# entities), built from the class's declared fields
_Reader = Callable[[Any], Any]
_Plan = tuple[tuple[_Reader, ...], tuple[_Reader, ...], tuple[_Reader, ...]]
_PLANS: dict[type, _Plan] = {}


def _entity_of(annotation: Any) -> tuple[type | None, bool]:
    """(dataclass type, is a tuple of them) for a field annotation, (None, False) otherwise."""
    origin = typing.get_origin(annotation)
    if origin is tuple:
        args = typing.get_args(annotation)
        if args and isinstance(args[0], type) and dataclasses.is_dataclass(args[0]):
            return args[0], True
        return None, False
    if origin is not None:   # X | None
        for arg in typing.get_args(annotation):
            if isinstance(arg, type) and dataclasses.is_dataclass(arg):
                return arg, False
        return None, False
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation, False
    return None, False


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        _PLANS[cls] = ((), (), ())   # a self-referencing entity ends its own recursion
        errors: list[_Reader] = []
        singles: list[_Reader] = []
        tuples: list[_Reader] = []
        for f in dataclasses.fields(cls):
            if f.type is ErrorCode:
                errors.append(attrgetter(f.name))
                continue
            entity, many = _entity_of(f.type)
            if entity is not None and any(_plan(entity)):
                (tuples if many else singles).append(attrgetter(f.name))
        plan = _PLANS[cls] = (tuple(errors), tuple(singles), tuple(tuples))
    return plan


@runtime_checkable
class CountedErrors(Protocol):
    """A pre-encoded response carrying Kafka's errorCounts (``broker.protocol.codec.EncodedResponse``)."""

    @property
    def error_counts(self) -> Mapping[int, int]: ...


# What a response type is, decided once per type (isinstance on a runtime Protocol is slow):
# carries its counts, is an entity to walk, or neither.
_COUNTED, _ENTITY, _OTHER = 0, 1, 2
_KINDS: dict[type, int] = {}


def error_counts(body: Any) -> dict[int, int]:
    """Error code → occurrences in a response: a kio entity's error fields, or the counts a
    pre-encoded response carries; {} for anything else (an in-process follower fetch is
    answered with the replica manager's results, not a response)."""
    kind = _KINDS.get(type(body))
    if kind is None:
        kind = _KINDS[type(body)] = (
            _COUNTED if isinstance(body, CountedErrors)
            else _ENTITY if dataclasses.is_dataclass(body) and not isinstance(body, type) else _OTHER)
    if kind == _COUNTED:
        return dict(body.error_counts)
    counts: dict[int, int] = {}
    if kind == _ENTITY:
        _count(body, counts)
    return counts


def _count(entity: Any, counts: dict[int, int]) -> None:
    errors, singles, tuples = _plan(type(entity))
    for read in errors:
        code = int(read(entity))
        counts[code] = counts.get(code, 0) + 1
    for read in singles:
        child = read(entity)
        if child is not None:
            _count(child, counts)
    for read in tuples:
        for child in read(entity):
            _count(child, counts)


def error_name(code: int) -> str:
    """Kafka's name of an error code (``NOT_LEADER_OR_FOLLOWER``); unknown codes are named as
    Kafka's ``Errors.forCode`` names them, ``UNKNOWN_SERVER_ERROR``."""
    try:
        return Errors(code).name
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR.name
