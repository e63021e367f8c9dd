"""JSON schemas: ``jsonschema`` checks them against their draft, Confluent's ``json/diff`` rules compare them.

Parsing: the text must be JSON (an object or a boolean) that its draft's meta-schema accepts
(``jsonschema.validators.validator_for(...).check_schema``: drafts 4, 6, 7, 2019-09 and 2020-12,
draft 7 when ``$schema`` is absent, as the serializers write). ``$ref`` resolves inside the schema
(``#/definitions/...``, ``#/$defs/...``) and to referenced schemas by their reference name.
The canonical string is the JSON re-serialised compactly with the submitted key order;
``normalize=true`` sorts the keys.

Compatibility is a port of Confluent's ``json.diff.SchemaDiff`` (STRICT policy): the previous
schema is the original, the new one the update; each change is a ``Difference.Type`` and the
ones outside ``COMPATIBLE_CHANGES_STRICT`` make the check fail, reported in Confluent's
``Difference`` format. Covered: type changes and unions (``type`` lists, ``oneOf``/``anyOf``/
``allOf``), ``$id``/``title``/``description``/``default``, string, number and integer bounds,
``enum``, ``const``, ``not``, objects (properties, ``required``, open/closed/partially open
content models through ``additionalProperties``, ``maxProperties``/``minProperties``) and arrays
(``items`` as one schema, ``maxItems``/``minItems``/``uniqueItems``).

A keyword whose Confluent rule is not ported (``patternProperties``, ``dependencies``,
``dependentRequired``/``dependentSchemas``, ``if``/``then``/``else``, ``unevaluated*``,
``prefixItems`` or ``items`` as a list, ``additionalItems``, ``contains``, ``propertyNames``) makes
a compatibility check refuse the registration with 42201 naming it, rather than pass it
unchecked; under compatibility NONE such schemas register.
"""
from __future__ import annotations

import json
from typing import Any

import jsonschema.exceptions
import jsonschema.validators

from kafka_emu.broker.cluster.schema_registry.schema_types import Dependency, InvalidSchema, flatten

SCHEMA_TYPE = "JSON"
UNPORTED_KEYWORDS = ("patternProperties", "dependencies", "dependentRequired", "dependentSchemas", "if", "then",
                     "else", "unevaluatedProperties", "unevaluatedItems", "prefixItems", "additionalItems",
                     "contains", "minContains", "maxContains", "propertyNames")

COMPATIBLE_STRICT = frozenset("""
ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED
MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED MAX_PROPERTIES_INCREASED
MAX_PROPERTIES_REMOVED MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED
ADDITIONAL_PROPERTIES_EXTENDED PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
MAX_ITEMS_INCREASED MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED UNIQUE_ITEMS_REMOVED
ENUM_ARRAY_EXTENDED COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED
""".split())

_ADDED_TO_OPEN = {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
                  "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
                  "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"}
_DESCRIPTIONS = {
    "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": "The %s schema has an unopen content model and has a "
    "required property at path '{path}' which is missing in the %s schema",
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL": "The %s has a closed content model and is missing a property "
    "or item present at path '{path}' in the %s schema",
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "A property or item is missing in the %s "
    "schema but present at path '{path}' in the %s schema and is not covered by its partially open content model",
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": "The %s schema has a property or item at path "
    "'{path}' which is missing in the %s schema and is not covered by its partially open content model",
}
_KEYWORD_CHANGES = ("MAX_LENGTH", "MIN_LENGTH", "PATTERN", "MAXIMUM", "MINIMUM", "EXCLUSIVE_MAXIMUM",
                    "EXCLUSIVE_MINIMUM", "MULTIPLE_OF", "MAX_PROPERTIES", "MIN_PROPERTIES", "MAX_ITEMS",
                    "MIN_ITEMS", "UNIQUE_ITEMS", "REQUIRED_ATTRIBUTE", "REQUIRED_ATTRIBUTE_WITH_DEFAULT",
                    "ADDITIONAL_PROPERTIES", "SCHEMA")


def describe(kind: str, path: str) -> str:
    """Confluent's ``Difference.error()`` wording for ``kind`` at ``path``."""
    if kind in _DESCRIPTIONS:
        return _DESCRIPTIONS[kind].format(path=path)
    if kind in _ADDED_TO_OPEN:
        return (f"The %s schema has an open content model and has a property or item at path '{path}' which "
                "is missing in the %s schema")
    stem, _, change = kind.rpartition("_")
    if change in ("ADDED", "REMOVED") and stem in _KEYWORD_CHANGES:
        return f"The keyword at path '{path}' in the %s schema is not present in the %s schema"
    if change == "INCREASED":
        return f"The value at path '{path}' in the %s schema is more than its value in the %s schema"
    if change in ("DECREASED", "REDUCED"):
        return f"The value at path '{path}' in the %s schema is less than its value in the %s schema"
    if kind in ("TYPE_CHANGED", "COMBINED_TYPE_CHANGED", "COMBINED_TYPE_SUBSCHEMAS_CHANGED"):
        return f"A type at path '{path}' is different between the %s schema and the %s schema"
    if change == "NARROWED":
        return f"An array or combined type at path '{path}' has fewer elements in the %s schema than the %s schema"
    if change == "EXTENDED":
        return f"An array or combined type at path '{path}' has more elements in the %s schema than the %s schema"
    return f"The value at path '{path}' is different between the %s and %s schema"


class _Diff:
    """One comparison's differences (Confluent's ``Context``), with the path as it descends."""

    def __init__(self, resolve_original: Any, resolve_update: Any) -> None:
        self.differences: list[tuple[str, str]] = []
        self.path: list[str] = ["#"]
        self.resolve_original = resolve_original
        self.resolve_update = resolve_update
        self._stack: set[tuple[int, int]] = set()

    def add(self, kind: str, *extra: str) -> None:
        self.differences.append((kind, "/".join(self.path + list(extra))))

    def sub(self) -> "_Diff":
        sub = _Diff(self.resolve_original, self.resolve_update)
        sub.path = list(self.path)
        sub._stack = self._stack
        return sub

    @property
    def compatible(self) -> bool:
        return all(kind in COMPATIBLE_STRICT for kind, _ in self.differences)

    def enter(self, *parts: str) -> "_Path":
        return _Path(self, parts)


class _Path:
    def __init__(self, diff: _Diff, parts: tuple[str, ...]) -> None:
        self.diff, self.parts = diff, parts

    def __enter__(self) -> None:
        self.diff.path.extend(self.parts)

    def __exit__(self, *exc: object) -> None:
        del self.diff.path[-len(self.parts):]


def _kind(schema: Any) -> str:
    """everit's schema class of a (resolved) schema node."""
    if schema is True or schema == {}:
        return "empty"
    if schema is False:
        return "false"
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            return "combined"
    types = schema.get("type")
    if isinstance(types, list):
        return "combined" if len(types) != 1 else _TYPE_KINDS.get(types[0], "other")
    if types is not None:
        return _TYPE_KINDS.get(types, "other")
    if "enum" in schema:
        return "enum"
    if "const" in schema:
        return "const"
    if "not" in schema:
        return "not"
    if any(k in schema for k in ("properties", "required", "additionalProperties", "maxProperties",
                                 "minProperties")):
        return "object"
    if any(k in schema for k in ("items", "maxItems", "minItems", "uniqueItems")):
        return "array"
    if any(k in schema for k in ("maxLength", "minLength", "pattern")):
        return "string"
    if any(k in schema for k in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf")):
        return "number"
    return "empty"


_TYPE_KINDS = {"string": "string", "number": "number", "integer": "number", "object": "object", "array": "array",
               "boolean": "boolean", "null": "null"}


def _subschemas(schema: dict[str, Any]) -> tuple[str, list[Any]]:
    for key, criterion in (("allOf", "allOf"), ("anyOf", "anyOf"), ("oneOf", "oneOf")):
        if key in schema:
            return criterion, list(schema[key])
    rest = {k: v for k, v in schema.items() if k != "type"}
    return "anyOf", [{**rest, "type": t} for t in schema["type"]]


def compare(diff: _Diff, original: Any, update: Any) -> None:
    """SchemaDiff.compare: the differences from ``original`` to ``update`` at the current path."""
    if original is None and update is None:
        return
    if original is None:
        diff.add("SCHEMA_ADDED")
        return
    if update is None:
        diff.add("SCHEMA_REMOVED")
        return
    original, update = diff.resolve_original(original), diff.resolve_update(update)
    pair = (id(original), id(update))
    if pair in diff._stack:   # a recursive schema: the pair is being compared further up
        return
    diff._stack.add(pair)
    try:
        _compare(diff, original, update)
    finally:
        diff._stack.discard(pair)


def _compare(diff: _Diff, original: Any, update: Any) -> None:
    for schema in (original, update):
        if isinstance(schema, dict):
            for keyword in UNPORTED_KEYWORDS:
                if keyword in schema:
                    raise InvalidSchema(f"kafka-emu does not implement Confluent's JSON Schema compatibility rules "
                                        f"for the keyword {keyword!r}")
            if isinstance(schema.get("items"), list):
                raise InvalidSchema("kafka-emu does not implement Confluent's JSON Schema compatibility rules "
                                    "for 'items' as a list of schemas")
    okind, ukind = _kind(original), _kind(update)
    if okind != "combined" and ukind == "combined":
        criterion, subs = _subschemas(update)
        if len(subs) == 1 or criterion in ("anyOf", "oneOf"):
            for sub in subs:
                sub_diff = diff.sub()
                compare(sub_diff, original, sub)
                if sub_diff.compatible:
                    diff.differences += sub_diff.differences
                    if len(subs) > 1:
                        diff.add("SUM_TYPE_EXTENDED")
                    return
    elif okind == "combined" and ukind != "combined":
        criterion, subs = _subschemas(original)
        if len(subs) == 1 or criterion == "allOf":
            for sub in subs:
                sub_diff = diff.sub()
                compare(sub_diff, sub, update)
                if sub_diff.compatible:
                    diff.differences += sub_diff.differences
                    if len(subs) > 1:
                        diff.add("PRODUCT_TYPE_NARROWED")
                    return
    if okind != ukind:
        if okind == "false" or ukind == "empty":
            return
        diff.add("TYPE_CHANGED")
        return
    if okind in ("empty", "false"):
        return
    for key, kind in (("$id", "ID_CHANGED"), ("title", "TITLE_CHANGED"), ("description", "DESCRIPTION_CHANGED"),
                      ("default", "DEFAULT_CHANGED")):
        if original.get(key) != update.get(key):
            diff.add(kind)
    {"string": _compare_string, "number": _compare_number, "const": _compare_const, "enum": _compare_enum,
     "combined": _compare_combined, "not": _compare_not, "object": _compare_object,
     "array": _compare_array}.get(okind, lambda *_: None)(diff, original, update)


def _bound(diff: _Diff, original: dict[str, Any], update: dict[str, Any], key: str, stem: str,
           less: str = "DECREASED") -> None:
    old, new = original.get(key), update.get(key)
    if old == new:
        return
    with diff.enter(key):
        if old is None:
            diff.add(f"{stem}_ADDED")
        elif new is None:
            diff.add(f"{stem}_REMOVED")
        elif new > old:
            diff.add(f"{stem}_INCREASED")
        else:
            diff.add(f"{stem}_{less}")


def _compare_string(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    _bound(diff, original, update, "maxLength", "MAX_LENGTH")
    _bound(diff, original, update, "minLength", "MIN_LENGTH")
    if original.get("pattern") != update.get("pattern"):
        with diff.enter("pattern"):
            if original.get("pattern") is None:
                diff.add("PATTERN_ADDED")
            elif update.get("pattern") is None:
                diff.add("PATTERN_REMOVED")
            else:
                diff.add("PATTERN_CHANGED")


def _compare_number(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    for key, stem in (("maximum", "MAXIMUM"), ("minimum", "MINIMUM"), ("exclusiveMaximum", "EXCLUSIVE_MAXIMUM"),
                      ("exclusiveMinimum", "EXCLUSIVE_MINIMUM")):
        if isinstance(original.get(key), bool) or isinstance(update.get(key), bool):   # draft 4 flags
            if original.get(key) != update.get(key):
                with diff.enter(key):
                    diff.add(f"{stem}_ADDED" if update.get(key) else f"{stem}_REMOVED")
        else:
            _bound(diff, original, update, key, stem)
    old, new = original.get("multipleOf"), update.get("multipleOf")
    if old != new:
        with diff.enter("multipleOf"):
            if old is None:
                diff.add("MULTIPLE_OF_ADDED")
            elif new is None:
                diff.add("MULTIPLE_OF_REMOVED")
            elif new % old == 0:
                diff.add("MULTIPLE_OF_EXPANDED")
            elif old % new == 0:
                diff.add("MULTIPLE_OF_REDUCED")
            else:
                diff.add("MULTIPLE_OF_CHANGED")
    old_int, new_int = original.get("type") == "integer", update.get("type") == "integer"
    if old_int != new_int:
        diff.add("TYPE_NARROWED" if new_int else "TYPE_EXTENDED")


def _compare_const(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    if original.get("const") != update.get("const"):
        with diff.enter("const"):
            diff.add("ENUM_ARRAY_CHANGED")


def _compare_enum(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    old, new = list(original.get("enum") or []), list(update.get("enum") or [])
    if old == new:
        return
    with diff.enter("enum"):
        if all(v in new for v in old):
            diff.add("ENUM_ARRAY_EXTENDED")
        elif all(v in old for v in new):
            diff.add("ENUM_ARRAY_NARROWED")
        else:
            diff.add("ENUM_ARRAY_CHANGED")


def _compare_not(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    sub_diff = diff.sub()
    with sub_diff.enter("not"):
        compare(sub_diff, update["not"], original["not"])   # reversed: a narrower "not" accepts more
    if sub_diff.compatible:
        if sub_diff.differences:
            with diff.enter("not"):
                diff.add("NOT_TYPE_NARROWED")
    else:
        with diff.enter("not"):
            diff.add("NOT_TYPE_EXTENDED")


def _compare_combined(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    ocrit, osubs = _subschemas(original)
    ucrit, usubs = _subschemas(update)
    if ocrit != ucrit:
        diff.add("COMBINED_TYPE_CHANGED")
        return
    if len(usubs) != len(osubs):
        more = len(usubs) > len(osubs)
        if ocrit == "allOf":
            diff.add("PRODUCT_TYPE_EXTENDED" if more else "PRODUCT_TYPE_NARROWED")
        else:
            diff.add("SUM_TYPE_EXTENDED" if more else "SUM_TYPE_NARROWED")
    unmatched = list(range(len(usubs)))
    for i, old in enumerate(osubs):
        with diff.enter(ocrit, str(i)):
            for j in unmatched:
                sub_diff = diff.sub()
                compare(sub_diff, old, usubs[j])
                if sub_diff.compatible:
                    diff.differences += sub_diff.differences
                    unmatched.remove(j)
                    break
            else:
                if ocrit != "allOf" or len(usubs) >= len(osubs):
                    diff.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _open(schema: dict[str, Any]) -> bool:
    return schema.get("additionalProperties", True) in (True, {})


def _partial(schema: dict[str, Any]) -> Any:
    extra = schema.get("additionalProperties", True)
    return None if isinstance(extra, bool) or extra == {} else extra


def _has_default(diff: _Diff, schema: Any, resolve: Any) -> bool:
    schema = resolve(schema)
    return isinstance(schema, dict) and "default" in schema


def _compare_object(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    oprops, uprops = original.get("properties") or {}, update.get("properties") or {}
    oreq, ureq = set(original.get("required") or ()), set(update.get("required") or ())
    with diff.enter("required"):
        for key in oprops:
            if key in uprops:
                if key in oreq and key not in ureq:
                    diff.add("REQUIRED_ATTRIBUTE_REMOVED", key)
                elif key not in oreq and key in ureq:
                    diff.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                             if _has_default(diff, uprops[key], diff.resolve_update) else "REQUIRED_ATTRIBUTE_ADDED",
                             key)
    with diff.enter("properties"):
        for key in list(dict.fromkeys([*oprops, *uprops])):
            with diff.enter(key):
                old, new = oprops.get(key), uprops.get(key)
                if new is None:
                    if _open(update):
                        diff.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
                    elif _partial(update) is not None:
                        sub_diff = diff.sub()
                        compare(sub_diff, old, _partial(update))
                        diff.differences += sub_diff.differences
                        diff.add("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" if sub_diff.compatible
                                 else "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
                    elif old is False:
                        diff.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
                    else:
                        diff.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
                elif old is None:
                    default = _has_default(diff, new, diff.resolve_update)
                    if _open(original):
                        if _kind(diff.resolve_update(new)) == "empty":
                            diff.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
                        elif key in ureq:
                            diff.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if default
                                     else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
                        else:
                            diff.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
                    else:
                        if _partial(original) is not None:
                            sub_diff = diff.sub()
                            compare(sub_diff, _partial(original), new)
                            diff.differences += sub_diff.differences
                            diff.add("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                                     if sub_diff.compatible
                                     else "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL")
                        if key in ureq:
                            diff.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if default
                                     else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
                        else:
                            diff.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
                else:
                    compare(diff, old, new)
    with diff.enter("additionalProperties"):
        if _open(original) != _open(update) and (_partial(original) is None) == (_partial(update) is None):
            diff.add("ADDITIONAL_PROPERTIES_ADDED" if _open(update) else "ADDITIONAL_PROPERTIES_REMOVED")
        elif _partial(original) is None and _partial(update) is not None:
            diff.add("ADDITIONAL_PROPERTIES_NARROWED")
        elif _partial(update) is None and _partial(original) is not None:
            diff.add("ADDITIONAL_PROPERTIES_EXTENDED")
        elif _partial(original) is not None:
            compare(diff, _partial(original), _partial(update))
    _bound(diff, original, update, "maxProperties", "MAX_PROPERTIES")
    _bound(diff, original, update, "minProperties", "MIN_PROPERTIES")


def _compare_array(diff: _Diff, original: dict[str, Any], update: dict[str, Any]) -> None:
    _bound(diff, original, update, "maxItems", "MAX_ITEMS")
    _bound(diff, original, update, "minItems", "MIN_ITEMS")
    if bool(original.get("uniqueItems")) != bool(update.get("uniqueItems")):
        with diff.enter("uniqueItems"):
            diff.add("UNIQUE_ITEMS_ADDED" if update.get("uniqueItems") else "UNIQUE_ITEMS_REMOVED")
    with diff.enter("items"):
        compare(diff, original.get("items", True), update.get("items", True))


class JsonSchema:
    schema_type = SCHEMA_TYPE

    def __init__(self, document: Any, dependencies: dict[str, Any], sort_keys: bool = False) -> None:
        self.document = document
        self.dependencies = dependencies
        self._sort_keys = sort_keys

    def canonical(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), sort_keys=self._sort_keys, ensure_ascii=False)

    def normalized(self) -> "JsonSchema":
        return JsonSchema(self.document, self.dependencies, sort_keys=True)

    def resolver(self) -> Any:
        root = self.document

        def resolve(node: Any, depth: int = 0) -> Any:
            while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 64:
                node = _lookup(node["$ref"], root, self.dependencies)
                depth += 1
            return node

        return resolve

    def backward_messages(self, previous: "JsonSchema") -> list[str]:  # type: ignore[override]
        diff = _Diff(previous.resolver(), self.resolver())
        compare(diff, previous.document, self.document)
        return [f"{{errorType:\"{kind}\", description:\"{describe(kind, path)}'}}"
                for kind, path in diff.differences if kind not in COMPATIBLE_STRICT]

    def formatted(self, fmt: str) -> str:
        if fmt in ("", "default"):
            return self.canonical()
        raise InvalidSchema(f"Unsupported format {fmt} for schema type JSON")


def _lookup(ref: str, root: Any, dependencies: dict[str, Any]) -> Any:
    base, _, fragment = ref.partition("#")
    if base:
        if base not in dependencies:
            raise InvalidSchema(f"$ref '{ref}' is neither inside the schema nor a reference's name")
        root = dependencies[base]
    node = root
    for part in [p for p in fragment.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise InvalidSchema(f"Unresolved $ref '{ref}'")
    return node


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        for value in node.values():
            out += _refs(value)
        return out
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


def _load(text: str) -> Any:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidSchema(f"Invalid JSON: {exc}") from None
    if not isinstance(document, (dict, bool)):
        raise InvalidSchema("A JSON schema must be an object or a boolean")
    if isinstance(document, dict):
        validator = jsonschema.validators.validator_for(document, default=jsonschema.Draft7Validator)
        try:
            validator.check_schema(document)
        except jsonschema.exceptions.SchemaError as exc:
            raise InvalidSchema(exc.message) from None
    return document


def parse(schema: str, dependencies: tuple[Dependency, ...]) -> JsonSchema:
    deps = {dep.name: _load(dep.schema) for dep in flatten(dependencies)}
    document = _load(schema)
    parsed = JsonSchema(document, deps)
    for ref in _refs(document):
        _lookup(ref, document, deps)
    return parsed
