"""The schema types the registry understands, each behind one small interface.

A provider turns a submitted schema string (and its resolved references) into a
``ParsedSchema``: the canonical string the registry stores and compares, the normalized one
(``normalize=true``), and the backward-compatibility check the compatibility levels are built
from (Confluent's ``ParsedSchema.isBackwardCompatible``: can ``self`` read what ``previous``
wrote). A type the registry does not implement is not in ``SCHEMA_TYPES`` and is refused with
Confluent's "Invalid schema type" error; a schema its provider cannot parse raises
``InvalidSchema`` with the parser's message.

The providers import their libraries (the ``registry`` extra) on first use.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Protocol

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
_MODULES = {"AVRO": "avro_schema", "JSON": "json_schema", "PROTOBUF": "protobuf_schema"}


class InvalidSchema(ValueError):
    """A schema its type's parser refused; the message is the parser's."""


@dataclass(frozen=True)
class Reference:
    """One entry of a schema's ``references``: the name it is imported by, and where it lives."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class Dependency:
    """A referenced schema, resolved: its import name, schema text and its own dependencies."""

    name: str
    schema: str
    dependencies: tuple["Dependency", ...] = field(default=())


class ParsedSchema(Protocol):
    schema_type: str

    def canonical(self) -> str:
        """The string stored and returned (the type's canonical rendering of the schema)."""

    def normalized(self) -> "ParsedSchema":
        """The schema in the type's normalized form (``normalize=true``)."""

    def backward_messages(self, previous: "ParsedSchema") -> list[str]:
        """Why ``self`` cannot read data written with ``previous``; empty when it can. ``%s``
        placeholders stand for the reader's and the writer's role (Confluent's format)."""

    def formatted(self, fmt: str) -> str:
        """The schema in an output ``format`` (``serialized`` for Protobuf); InvalidSchema if
        the type has no such format."""


def parse(schema_type: str, schema: str, dependencies: tuple[Dependency, ...]) -> ParsedSchema:
    """Parse ``schema`` of ``schema_type``; InvalidSchema (or KeyError for an unknown type)."""
    module = importlib.import_module(f"{__name__}.{_MODULES[schema_type]}")
    return module.parse(schema, dependencies)


def flatten(dependencies: tuple[Dependency, ...]) -> list[Dependency]:
    """Every dependency once, the ones depended on first (the order their parsers need)."""
    seen: dict[str, Dependency] = {}

    def visit(dep: Dependency) -> None:
        if dep.name in seen:
            return
        for inner in dep.dependencies:
            visit(inner)
        seen[dep.name] = dep

    for dep in dependencies:
        visit(dep)
    return list(seen.values())
