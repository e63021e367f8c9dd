"""AVRO schemas: Apache Avro's Python library parses, renders and checks them.

Parsing is ``avro.schema`` with name and enum-symbol validation; field defaults are checked
against their field's type (``avro.io.validate``), as Java Avro's parser does when Confluent
validates defaults. Referenced schemas are parsed first into the same name table, so their
named types can be used by name, and are rendered back as names (not inlined).

The canonical string is the schema's JSON with Java Avro's ``Schema.toString`` key order
(``type``, ``name``, ``namespace``, ``doc``, then the type's own keys, then other properties), so
two submissions differing only in whitespace or key order get the same id, as with Confluent.
``normalize=true`` also sorts the remaining properties.

Compatibility is Avro's schema-resolution rules (``avro.compatibility``, a port of Java's
``SchemaCompatibility``), each incompatibility reported in Confluent's ``Difference`` format.
Difference from Confluent on purpose: the Python checker merges the locations and messages of
several incompatibilities of one check into sets, so with more than one the pairing of
``additionalInfo`` and path may differ from Java's.
"""
from __future__ import annotations

import json
from typing import Any

import avro.compatibility as compatibility
import avro.errors
import avro.io
import avro.name
import avro.schema

from kafka_emu.broker.cluster.schema_registry.schema_types import Dependency, InvalidSchema, flatten

SCHEMA_TYPE = "AVRO"
_KEY_ORDER = ("type", "name", "namespace", "doc", "fields", "symbols", "items", "values", "size",
              "default", "order", "aliases")
_FIELD_KEY_ORDER = ("name", "type", "doc", "default", "order", "aliases")

# Confluent's Difference descriptions (``%s``: reader and writer roles).
_DESCRIPTIONS = {
    "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{path}' in the %s schema does not match "
                           "with the %s schema",
    "TYPE_MISMATCH": "The type (path '{path}') of a field in the %s schema does not match with the %s schema",
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "MISSING_ENUM_SYMBOLS": "The %s schema is missing enum symbols '{info}' at path '{path}' in the %s schema",
    "MISSING_UNION_BRANCH": "The %s schema is missing a type inside a union field at path '{path}' in the "
                            "%s schema",
    "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{info}' at path '{path}' in the %s schema has no default "
                                          "value and is missing in the %s schema",
}


def _ordered(node: Any, sort_props: bool, order: tuple[str, ...] = _KEY_ORDER) -> Any:
    if isinstance(node, list):
        return [_ordered(item, sort_props, order) for item in node]
    if not isinstance(node, dict):
        return node
    known = [k for k in order if k in node]
    rest = [k for k in node if k not in order]
    if sort_props:
        rest.sort()
    return {k: node[k] if k == "default" else
            _ordered(node[k], sort_props, _FIELD_KEY_ORDER if k == "fields" else _KEY_ORDER)
            for k in known + rest}


def _check_defaults(schema: avro.schema.Schema, seen: set[int]) -> None:
    if id(schema) in seen:
        return
    seen.add(id(schema))
    if isinstance(schema, avro.schema.RecordSchema):
        for f in schema.fields:
            if f.has_default and not avro.io.validate(f.type, f.default):
                raise InvalidSchema(f"Invalid default for field {f.name}: {json.dumps(f.default)} "
                                    f"not a {json.dumps(f.type.to_json())}")
            _check_defaults(f.type, seen)
    elif isinstance(schema, avro.schema.UnionSchema):
        for branch in schema.schemas:
            _check_defaults(branch, seen)
    elif isinstance(schema, avro.schema.ArraySchema):
        _check_defaults(schema.items, seen)
    elif isinstance(schema, avro.schema.MapSchema):
        _check_defaults(schema.values, seen)


class AvroSchema:
    schema_type = SCHEMA_TYPE

    def __init__(self, schema: avro.schema.Schema, reference_names: dict[str, Any], sort_props: bool = False
                 ) -> None:
        self.schema = schema
        self._reference_names = reference_names
        self._sort_props = sort_props
        self._canonical: str | None = None

    def _names(self) -> avro.name.Names:
        names = avro.name.Names()
        names.names = dict(self._reference_names)
        return names

    def canonical(self) -> str:
        if self._canonical is None:
            self._canonical = json.dumps(_ordered(self.schema.to_json(self._names()), self._sort_props),
                                         separators=(",", ":"), ensure_ascii=False)
        return self._canonical

    def normalized(self) -> "AvroSchema":
        return AvroSchema(self.schema, self._reference_names, sort_props=True)

    def backward_messages(self, previous: "AvroSchema") -> list[str]:  # type: ignore[override]
        result = compatibility.ReaderWriterCompatibilityChecker().get_compatibility(self.schema, previous.schema)
        if result.compatibility is compatibility.SchemaCompatibilityType.compatible:
            return []
        path = ", ".join(sorted(result.locations))
        info = ", ".join(sorted(_java_message(m) for m in result.messages))
        out = []
        for kind in result.incompatibilities:
            error_type = kind.name.upper()
            description = _DESCRIPTIONS.get(error_type, "").format(path=path, info=info)
            out.append(f"{{errorType:'{error_type}', description:'{description}', additionalInfo:'{info}'}}")
        return out

    def formatted(self, fmt: str) -> str:
        if fmt in ("", "default", "resolved"):
            return self.canonical()
        raise InvalidSchema(f"Unsupported format {fmt} for schema type AVRO")


def _java_message(message: str) -> str:
    """Java Avro's wording of a message: type names upper case, symbol sets as lists."""
    if message.startswith("{") and message.endswith("}"):   # a Python set of missing symbols
        return "[" + ", ".join(s.strip().strip("'") for s in message[1:-1].split(",")) + "]"
    for name in ("null", "boolean", "int", "long", "float", "double", "bytes", "string", "record", "enum",
                 "array", "map", "union", "fixed"):
        message = message.replace(f"type: {name}", f"type: {name.upper()}")
    return message


def parse(schema: str, dependencies: tuple[Dependency, ...]) -> AvroSchema:
    names = avro.name.Names()
    try:
        for dep in flatten(dependencies):
            avro.schema.make_avsc_object(json.loads(dep.schema), names)
        reference_names = dict(names.names)
        parsed = avro.schema.make_avsc_object(json.loads(schema), names)
    except (json.JSONDecodeError, avro.errors.AvroException, TypeError, AttributeError, KeyError) as exc:
        raise InvalidSchema(str(exc) or type(exc).__name__) from None
    _check_defaults(parsed, set())
    return AvroSchema(parsed, reference_names)
