"""PROTOBUF schemas: ``.proto`` text (proto-schema-parser) or a base64 ``FileDescriptorProto``.

Confluent accepts both forms (Java clients send ``.proto`` text, confluent-kafka's Python
serializer a base64 serialized descriptor) and so does this provider. Text is parsed with
``proto_schema_parser`` and turned into a ``FileDescriptorProto`` (messages, nested types, enums,
fields with proto2/proto3 labels and ``optional``, ``map<,>`` as map-entry messages, oneofs,
reserved ranges and names, imports); every schema is then built into a fresh protobuf
``DescriptorPool`` together with its references (each added under its reference name, the
``import`` path) and the well-known ``google/protobuf/*.proto`` files, so an unknown type, a
clash or a bad import is refused with the pool's message, as protoc would.

The resolved descriptor (type names fully qualified) is what the compatibility check compares
and what ``format=serialized`` returns (base64). Compatibility is a port of Confluent's
``protobuf.diff`` (``SchemaDiff``/``MessageSchemaDiff``/``FieldSchemaDiff``): package changes,
removed messages, fields by number (kind, scalar kind, named type, numeric labels, required
fields, oneof membership), with Confluent's ``COMPATIBLE_CHANGES`` and ``Difference`` wording.

Deliberate differences from Confluent: the schema is stored as submitted (Confluent re-renders
text with its own printer and converts descriptors to text), so GET returns the submitted form
and two submissions that differ only in formatting get different ids; ``normalize=true``
changes nothing. ``service``, ``extend`` and ``extensions`` are refused (42201) rather than
carried without their rules.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from kafka_emu.broker.cluster.schema_registry.schema_types import Dependency, InvalidSchema, flatten

SCHEMA_TYPE = "PROTOBUF"
FDP = descriptor_pb2.FileDescriptorProto
F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64,
            "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL,
            "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32,
            "sfixed32": F.TYPE_SFIXED32, "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32,
            "sint64": F.TYPE_SINT64}
# Confluent's FieldSchemaDiff.ScalarKind: types that read each other's wire data
_SCALAR_KIND = {F.TYPE_INT32: "GENERAL_NUMBER", F.TYPE_INT64: "GENERAL_NUMBER", F.TYPE_UINT32: "GENERAL_NUMBER",
                F.TYPE_UINT64: "GENERAL_NUMBER", F.TYPE_BOOL: "GENERAL_NUMBER", F.TYPE_ENUM: "GENERAL_NUMBER",
                F.TYPE_SINT32: "SIGNED_NUMBER", F.TYPE_SINT64: "SIGNED_NUMBER", F.TYPE_FIXED32: "FIXED32",
                F.TYPE_SFIXED32: "FIXED32", F.TYPE_FIXED64: "FIXED64", F.TYPE_SFIXED64: "FIXED64",
                F.TYPE_FLOAT: "FLOAT", F.TYPE_DOUBLE: "DOUBLE", F.TYPE_STRING: "STRING_OR_BYTES",
                F.TYPE_BYTES: "STRING_OR_BYTES"}
COMPATIBLE = frozenset(("MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED",
                        "ENUM_CONST_CHANGED", "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED",
                        "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED",
                        "ONEOF_FIELD_ADDED", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"))
_DESCRIPTIONS = {
    "PACKAGE_CHANGED": "The package at '{path}' in the %s schema does not match the package in the %s schema",
    "MESSAGE_REMOVED": "The %s schema is missing a MESSAGE type at path '{path}' in the %s schema",
    "FIELD_KIND_CHANGED": "The type of a field at path '{path}' in the %s schema does not match the %s schema",
    "FIELD_SCALAR_KIND_CHANGED": "The kind of a SCALAR field at path '{path}' in the %s schema does not match its "
                                 "kind in the %s schema",
    "FIELD_NAMED_TYPE_CHANGED": "The type of a MESSAGE field at path '{path}' in the %s schema does not match its "
                                "type in the %s schema",
    "FIELD_NUMERIC_LABEL_CHANGED": "The label for a NUMERIC field at path '{path}' in the %s schema does not match "
                                   "its label in the %s schema",
    "REQUIRED_FIELD_ADDED": "A required field  at path '{path}' in the %s schema is missing in the %s schema",
    "REQUIRED_FIELD_REMOVED": "The %s schema is missing a required field at path: '{path}' in the %s schema",
    "ONEOF_FIELD_REMOVED": "The %s schema is missing a oneof field at path '{path}' in the %s schema",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Multiple fields in the oneof at path '{path}' in the %s schema are outside "
                                      "a oneof in the %s schema",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "A field in the oneof at path '{path}' in the %s schema is outside an existing "
                                     "oneof in the %s schema",
}
_WELL_KNOWN = ("any_pb2", "api_pb2", "duration_pb2", "empty_pb2", "field_mask_pb2", "source_context_pb2",
               "struct_pb2", "timestamp_pb2", "type_pb2", "wrappers_pb2", "descriptor_pb2")


def _well_known() -> dict[str, FDP]:
    import importlib

    out = {}
    for module in _WELL_KNOWN:
        fd = importlib.import_module(f"google.protobuf.{module}").DESCRIPTOR
        proto = FDP()
        fd.CopyToProto(proto)
        out[fd.name] = proto
    return out


_WELL_KNOWN_FILES: dict[str, FDP] | None = None
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


# ------------------------------------------------------------------ text -> FileDescriptorProto
def _from_text(text: str, name: str) -> FDP:
    from proto_schema_parser import ast
    from proto_schema_parser.parser import Parser

    try:
        tree = Parser().parse(text)
    except Exception as exc:  # noqa: BLE001 - the parser raises its own exception types
        raise InvalidSchema(f"Could not parse .proto text: {exc}") from None
    fdp = FDP(name=name, syntax=tree.syntax or "proto2")
    if tree.edition:
        raise InvalidSchema("protobuf editions are not supported by kafka-emu's schema registry")
    proto3 = fdp.syntax == "proto3"
    for element in tree.file_elements:
        if isinstance(element, ast.Package):
            fdp.package = element.name
        elif isinstance(element, ast.Import):
            fdp.dependency.append(element.name)
        elif isinstance(element, ast.Message):
            _message(fdp.message_type.add(), element, proto3)
        elif isinstance(element, ast.Enum):
            _enum(fdp.enum_type.add(), element)
        elif isinstance(element, (ast.Option, ast.Comment)):
            continue
        else:
            raise InvalidSchema(f"{type(element).__name__} is not supported by kafka-emu's schema registry")
    return fdp


def _enum(out: Any, element: Any) -> None:
    from proto_schema_parser import ast

    out.name = element.name
    for value in element.elements:
        if isinstance(value, ast.EnumValue):
            out.value.add(name=value.name, number=int(value.number))


def _field(out: Any, element: Any, proto3: bool) -> None:
    from proto_schema_parser import ast

    out.name, out.number = element.name, int(element.number)
    cardinality = element.cardinality
    out.label = {ast.FieldCardinality.REPEATED: F.LABEL_REPEATED,
                 ast.FieldCardinality.REQUIRED: F.LABEL_REQUIRED}.get(cardinality, F.LABEL_OPTIONAL)
    if element.type in _SCALARS:
        out.type = _SCALARS[element.type]
    else:
        out.type_name = element.type
    for option in element.options:
        if option.name == "json_name":
            out.json_name = str(option.value)


def _message(out: Any, element: Any, proto3: bool) -> None:
    from proto_schema_parser import ast

    out.name = element.name
    synthetic = []
    for item in element.elements:
        if isinstance(item, ast.Field):
            field = out.field.add()
            _field(field, item, proto3)
            if proto3 and item.cardinality == ast.FieldCardinality.OPTIONAL:
                field.proto3_optional = True
                synthetic.append(field)
        elif isinstance(item, ast.MapField):
            entry_name = "".join(part[:1].upper() + part[1:] for part in item.name.split("_")) + "Entry"
            entry = out.nested_type.add(name=entry_name)
            entry.options.map_entry = True
            for number, name, type_name in ((1, "key", item.key_type), (2, "value", item.value_type)):
                f = entry.field.add(name=name, number=number, label=F.LABEL_OPTIONAL)
                if type_name in _SCALARS:
                    f.type = _SCALARS[type_name]
                else:
                    f.type_name = type_name
            out.field.add(name=item.name, number=int(item.number), label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
                          type_name=entry_name)
        elif isinstance(item, ast.OneOf):
            index = len(out.oneof_decl)
            out.oneof_decl.add(name=item.name)
            for member in item.elements:
                if isinstance(member, ast.Field):
                    field = out.field.add()
                    _field(field, member, proto3)
                    field.oneof_index = index
        elif isinstance(item, ast.Message):
            _message(out.nested_type.add(), item, proto3)
        elif isinstance(item, ast.Enum):
            _enum(out.enum_type.add(), item)
        elif isinstance(item, ast.Reserved):
            for text in item.ranges:
                start, _, end = str(text).partition(" to ")
                end = end.strip()
                last = 536870911 if end == "max" else int(end or start)
                out.reserved_range.add(start=int(start), end=last + 1)
            out.reserved_name.extend(item.names)
        elif isinstance(item, (ast.Option, ast.Comment)):
            continue
        else:
            raise InvalidSchema(f"{type(item).__name__} in message {element.name} is not supported by kafka-emu's "
                                "schema registry")
    for field in synthetic:   # proto3 optional: each in its own synthetic oneof, after the real ones
        field.oneof_index = len(out.oneof_decl)
        out.oneof_decl.add(name=f"_{field.name}")


# ------------------------------------------------------------------ either form
def _to_descriptor(schema: str, name: str) -> tuple[FDP, bool]:
    """The descriptor of ``schema`` and whether it was given as a base64 descriptor (tried first
    when the text is all base64 characters: ``.proto`` text never is, having spaces and ``;``)."""
    if _BASE64.fullmatch(schema.strip()):
        try:
            proto = FDP()
            proto.ParseFromString(base64.b64decode(schema.strip(), validate=True))
        except (binascii.Error, ValueError, DecodeError):
            raise InvalidSchema("neither .proto text nor a base64 FileDescriptorProto") from None
        if not proto.name:
            proto.name = name
        return proto, True
    return _from_text(schema, name), False


class ProtobufSchema:
    schema_type = SCHEMA_TYPE

    def __init__(self, text: str, resolved: FDP) -> None:
        self.text = text
        self.resolved = resolved

    def canonical(self) -> str:
        return self.text

    def normalized(self) -> "ProtobufSchema":
        return self

    def formatted(self, fmt: str) -> str:
        if fmt in ("", "default"):
            return self.text
        if fmt == "serialized":
            return base64.standard_b64encode(self.resolved.SerializeToString()).decode("ascii")
        raise InvalidSchema(f"Unsupported format {fmt} for schema type PROTOBUF")

    def backward_messages(self, previous: "ProtobufSchema") -> list[str]:  # type: ignore[override]
        diffs: list[tuple[str, str]] = []
        _diff_files(previous.resolved, self.resolved, diffs)
        return [f"{{errorType:\"{kind}\", description:\"{_DESCRIPTIONS.get(kind, '').format(path=path)}\"}}"
                for kind, path in diffs if kind not in COMPATIBLE]


# ------------------------------------------------------------------ Confluent's protobuf.diff
def _messages(fdp: FDP) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def visit(prefix: str, message: Any) -> None:
        name = f"{prefix}.{message.name}"
        out[name] = message
        for nested in message.nested_type:
            visit(name, nested)

    for message in fdp.message_type:
        visit("." + fdp.package if fdp.package else "", message)
    return out


def _diff_files(original: FDP, update: FDP, diffs: list[tuple[str, str]]) -> None:
    if original.package != update.package:
        diffs.append(("PACKAGE_CHANGED", "#/"))
    old, new = _messages(original), _messages(update)
    for name, message in old.items():
        if message.options.map_entry:
            continue
        path = "#/" + name.lstrip(".").removeprefix(original.package + ".") if original.package else "#/" + name[1:]
        if name not in new:
            diffs.append(("MESSAGE_REMOVED", path))
        else:
            _diff_messages(message, new[name], path, old, new, diffs)
    for name in new:
        if name not in old and not new[name].options.map_entry:
            diffs.append(("MESSAGE_ADDED", "#/" + name[1:]))


def _kind(field: Any, messages: dict[str, Any]) -> str:
    if field.type == F.TYPE_MESSAGE:
        target = messages.get(field.type_name)
        return "MAP" if target is not None and target.options.map_entry else "MESSAGE"
    return "SCALAR"


def _diff_messages(original: Any, update: Any, path: str, old_messages: dict[str, Any],
                   new_messages: dict[str, Any], diffs: list[tuple[str, str]]) -> None:
    old_fields = {f.number: f for f in original.field}
    new_fields = {f.number: f for f in update.field}

    def real_oneof(message: Any, field: Any) -> str | None:
        if not field.HasField("oneof_index") or field.proto3_optional:
            return None
        return message.oneof_decl[field.oneof_index].name

    for number, field in old_fields.items():
        fpath = f"{path}/{number}"
        other = new_fields.get(number)
        if other is None:
            if field.label == F.LABEL_REQUIRED:
                diffs.append(("REQUIRED_FIELD_REMOVED", fpath))
            elif real_oneof(original, field) is not None:
                diffs.append(("ONEOF_FIELD_REMOVED", fpath))
            else:
                diffs.append(("FIELD_REMOVED", fpath))
            continue
        if field.name != other.name:
            diffs.append(("FIELD_NAME_CHANGED", fpath))
        _diff_field(field, other, fpath, old_messages, new_messages, diffs)
    for number, field in new_fields.items():
        if number not in old_fields:
            fpath = f"{path}/{number}"
            if field.label == F.LABEL_REQUIRED:
                diffs.append(("REQUIRED_FIELD_ADDED", fpath))
            elif real_oneof(update, field) is not None:
                diffs.append(("ONEOF_FIELD_ADDED", fpath))
            else:
                diffs.append(("FIELD_ADDED", fpath))
    # oneof membership of fields present in both (MessageSchemaDiff's oneof rules)
    moved: dict[str, list[int]] = {}
    for number, field in old_fields.items():
        other = new_fields.get(number)
        if other is None:
            continue
        before, after = real_oneof(original, field), real_oneof(update, other)
        if before is not None and after is None:
            diffs.append(("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", f"{path}/{number}"))
        elif before is None and after is not None:
            moved.setdefault(after, []).append(number)
    old_oneofs = {o.name for o in original.oneof_decl}
    for oneof, numbers in moved.items():
        if oneof in old_oneofs:
            diffs.append(("FIELD_MOVED_TO_EXISTING_ONEOF", f"{path}/{oneof}"))
        elif len(numbers) > 1:
            diffs.append(("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"{path}/{oneof}"))


def _diff_field(original: Any, update: Any, path: str, old_messages: dict[str, Any], new_messages: dict[str, Any],
                diffs: list[tuple[str, str]]) -> None:
    okind, ukind = _kind(original, old_messages), _kind(update, new_messages)
    if okind != ukind:
        diffs.append(("FIELD_KIND_CHANGED", path))
    elif okind == "SCALAR":
        oscalar, uscalar = _SCALAR_KIND.get(original.type), _SCALAR_KIND.get(update.type)
        if oscalar != uscalar:
            diffs.append(("FIELD_SCALAR_KIND_CHANGED", path))
        elif original.label != update.label:
            diffs.append(("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if oscalar == "STRING_OR_BYTES"
                          else "FIELD_NUMERIC_LABEL_CHANGED", path))
    elif okind == "MESSAGE":
        if original.type_name.rsplit(".", 1)[-1] != update.type_name.rsplit(".", 1)[-1]:
            diffs.append(("FIELD_NAMED_TYPE_CHANGED", path))
    else:   # maps: key and value compared as fields
        old_entry, new_entry = old_messages[original.type_name], new_messages[update.type_name]
        for index in range(2):
            _diff_field(old_entry.field[index], new_entry.field[index], path, old_messages, new_messages, diffs)


def parse(schema: str, dependencies: tuple[Dependency, ...]) -> ProtobufSchema:
    global _WELL_KNOWN_FILES
    if _WELL_KNOWN_FILES is None:
        _WELL_KNOWN_FILES = _well_known()
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(proto: FDP) -> None:
        for dep in proto.dependency:
            if dep not in added and dep in _WELL_KNOWN_FILES:
                add(_WELL_KNOWN_FILES[dep])
        try:
            pool.Add(proto)
            pool.FindFileByName(proto.name)
        except (TypeError, KeyError, ValueError) as exc:
            raise InvalidSchema(str(exc)) from None
        added.add(proto.name)

    for dep in flatten(dependencies):
        proto, _ = _to_descriptor(dep.schema, dep.name)
        proto.name = dep.name
        add(proto)
    root, _ = _to_descriptor(schema, "default.proto")
    missing = [d for d in root.dependency if d not in added and d not in _WELL_KNOWN_FILES]
    if missing:
        raise InvalidSchema(f"import {missing[0]!r} has no reference (references name the imported files)")
    add(root)
    resolved = FDP()
    pool.FindFileByName(root.name).CopyToProto(resolved)
    return ProtobufSchema(schema, resolved)
