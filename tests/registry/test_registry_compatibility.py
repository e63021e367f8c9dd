"""Ports of Confluent's AvroCompatibilityTest, JsonSchemaCompatibilityTest and ProtobufCompatibilityTest:
each schema type's backward rule (can the new schema read what the old one wrote) without a server."""
from __future__ import annotations

import json

import pytest

from kafka_emu.broker.cluster.schema_registry.schema_types import InvalidSchema, parse


def backward(schema_type: str, new: str, old: str) -> list[str]:
    return parse(schema_type, new, ()).backward_messages(parse(schema_type, old, ()))


F1 = {"name": "f1", "type": "string"}
SCHEMA1 = json.dumps({"type": "record", "name": "myrecord", "fields": [F1]})
SCHEMA2 = json.dumps({"type": "record", "name": "myrecord", "fields": [F1, {"name": "f2", "type": "string",
                                                                             "default": "foo"}]})
SCHEMA3 = json.dumps({"type": "record", "name": "myrecord", "fields": [F1, {"name": "f2", "type": "string"}]})
SCHEMA4 = json.dumps({"type": "record", "name": "myrecord",
                      "fields": [{"name": "f1_new", "type": "string", "aliases": ["f1"]}]})
SCHEMA6 = json.dumps({"type": "record", "name": "myrecord",
                      "fields": [{"name": "f1", "type": ["null", "string"], "doc": "doc of f1"}]})
SCHEMA7 = json.dumps({"type": "record", "name": "myrecord",
                      "fields": [{"name": "f1", "type": ["null", "string", "int"], "doc": "doc of f1"}]})
SCHEMA8 = json.dumps({"type": "record", "name": "myrecord", "fields": [F1, {"name": "f2", "type": "string",
                                                                             "default": "foo"},
                                                                        {"name": "f3", "type": "string",
                                                                         "default": "bar"}]})


def test_avro_basic_backwards_compatibility() -> None:
    """AvroCompatibilityTest.testBasicBackwardsCompatibility."""
    assert backward("AVRO", SCHEMA2, SCHEMA1) == []          # adding a field with a default
    assert backward("AVRO", SCHEMA3, SCHEMA1)                # adding a field without a default
    assert backward("AVRO", SCHEMA4, SCHEMA1) == []          # renaming with an alias
    assert backward("AVRO", SCHEMA6, SCHEMA1) == []          # string -> union containing it
    assert backward("AVRO", SCHEMA7, SCHEMA6) == []          # a union extended
    assert backward("AVRO", SCHEMA6, SCHEMA7)                # a union narrowed


def test_avro_basic_forwards_compatibility() -> None:
    """AvroCompatibilityTest.testBasicForwardsCompatibility (forward: the old schema reads the new)."""
    assert backward("AVRO", SCHEMA1, SCHEMA2) == []          # removing a field
    assert backward("AVRO", SCHEMA1, SCHEMA3) == []
    assert backward("AVRO", SCHEMA2, SCHEMA8) == []
    assert backward("AVRO", SCHEMA6, SCHEMA7)                # the old reader misses the new union branch


def test_avro_incompatibility_in_confluent_difference_format() -> None:
    message = backward("AVRO", SCHEMA3, SCHEMA1)
    assert message == ["{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'f2' at path "
                       "'/fields/1' in the %s schema has no default value and is missing in the %s schema', "
                       "additionalInfo:'f2'}"]


def test_avro_invalid_default_is_refused() -> None:
    """RestApiTest.testRegisterBadDefault: a default that is not of its field's type."""
    with pytest.raises(InvalidSchema, match="Invalid default for field f2"):
        parse("AVRO", json.dumps({"type": "record", "name": "r", "fields": [
            {"name": "f2", "type": "int", "default": "not an int"}]}), ())


def test_avro_canonical_form_ignores_whitespace_and_key_order() -> None:
    a = parse("AVRO", '{"type": "record", "name": "r", "fields": [{"name": "a", "type": "int"}]}', ())
    b = parse("AVRO", '{"fields":[{"type":"int","name":"a"}],"name":"r","type":"record"}', ())
    assert a.canonical() == b.canonical() == '{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}'


def _json(properties: dict, additional: bool | dict = False, required: list[str] | None = None) -> str:
    doc = {"type": "object", "properties": properties, "additionalProperties": additional}
    if required:
        doc["required"] = required
    return json.dumps(doc)


def test_json_schema_compatibility_closed_content_model() -> None:
    """JsonSchemaCompatibilityTest.testBasicBackwardsCompatibility (closed content model)."""
    old = _json({"foo": {"type": "string"}})
    added_optional = _json({"foo": {"type": "string"}, "bar": {"type": "string"}})
    added_required = _json({"foo": {"type": "string"}, "bar": {"type": "string"}}, required=["bar"])
    added_required_default = _json({"foo": {"type": "string"}, "bar": {"type": "string", "default": "x"}},
                                   required=["bar"])
    assert backward("JSON", added_optional, old) == []
    assert backward("JSON", added_required_default, old) == []
    assert any("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL" in m for m in backward("JSON", added_required, old))
    # removing a property from a closed model: the new reader rejects what the old one wrote
    assert any("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" in m for m in backward("JSON", old, added_optional))


def test_json_schema_compatibility_open_content_model() -> None:
    """JsonSchemaCompatibilityTest: open content models (additionalProperties true) under STRICT."""
    old = _json({"foo": {"type": "string"}}, additional=True)
    new = _json({"foo": {"type": "string"}, "bar": {"type": "string"}}, additional=True)
    assert any("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" in m for m in backward("JSON", new, old))
    assert backward("JSON", old, new) == []                   # PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL


def test_json_schema_types_and_bounds() -> None:
    string = json.dumps({"type": "string"})
    assert backward("JSON", json.dumps({"type": ["string", "null"]}), string) == []     # SUM_TYPE_EXTENDED
    assert backward("JSON", json.dumps({"type": "integer"}), string)                     # TYPE_CHANGED
    assert backward("JSON", json.dumps({"type": "number"}), json.dumps({"type": "integer"})) == []
    assert backward("JSON", json.dumps({"type": "integer"}), json.dumps({"type": "number"}))
    assert backward("JSON", json.dumps({"type": "string", "maxLength": 5}),
                    json.dumps({"type": "string", "maxLength": 10}))                     # MAX_LENGTH_DECREASED
    assert backward("JSON", json.dumps({"enum": ["a", "b"]}), json.dumps({"enum": ["a"]})) == []


def test_json_schema_unported_keyword_is_refused_not_passed() -> None:
    old = json.dumps({"type": "object", "patternProperties": {"^x": {"type": "string"}}})
    with pytest.raises(InvalidSchema, match="patternProperties"):
        backward("JSON", old, old)


def test_json_schema_invalid_against_meta_schema() -> None:
    with pytest.raises(InvalidSchema):
        parse("JSON", json.dumps({"type": "no-such-type"}), ())


PROTO = 'syntax = "proto3";\npackage pkg;\nmessage TestMessage {\n  string test_string = 1;\n  int32 test_int = 2;\n}\n'


def test_protobuf_field_changes() -> None:
    """ProtobufCompatibilityTest.testBasicBackwardsCompatibility and testFieldKindChanged."""
    added = PROTO.replace("int32 test_int = 2;", "int32 test_int = 2;\n  bool flag = 3;")
    assert backward("PROTOBUF", added, PROTO) == []
    assert backward("PROTOBUF", PROTO, added) == []                          # FIELD_REMOVED is compatible
    scalar = PROTO.replace("int32 test_int", "string test_int")
    assert any("FIELD_SCALAR_KIND_CHANGED" in m for m in backward("PROTOBUF", scalar, PROTO))
    widened = PROTO.replace("int32 test_int", "int64 test_int")               # same GENERAL_NUMBER kind
    assert backward("PROTOBUF", widened, PROTO) == []
    renamed = PROTO.replace("test_int = 2", "renamed = 2")
    assert backward("PROTOBUF", renamed, PROTO) == []                        # FIELD_NAME_CHANGED
    package = PROTO.replace("package pkg;", "package other;")
    assert any("PACKAGE_CHANGED" in m for m in backward("PROTOBUF", package, PROTO))
    removed = 'syntax = "proto3";\npackage pkg;\nmessage Other { int32 a = 1; }\n'
    assert any("MESSAGE_REMOVED" in m for m in backward("PROTOBUF", removed, PROTO))


def test_protobuf_oneof_rules() -> None:
    """ProtobufCompatibilityTest: fields moved into a new oneof."""
    old = 'syntax = "proto3";\nmessage M {\n  string a = 1;\n  int32 b = 2;\n}\n'
    one = 'syntax = "proto3";\nmessage M {\n  oneof o {\n    string a = 1;\n    int32 b = 2;\n  }\n}\n'
    assert any("MULTIPLE_FIELDS_MOVED_TO_ONEOF" in m for m in backward("PROTOBUF", one, old))
    single = 'syntax = "proto3";\nmessage M {\n  oneof o {\n    string a = 1;\n  }\n  int32 b = 2;\n}\n'
    assert backward("PROTOBUF", single, old) == []


def test_protobuf_unresolved_type_and_missing_import_are_invalid() -> None:
    with pytest.raises(InvalidSchema, match="Missing"):
        parse("PROTOBUF", 'syntax = "proto3"; message M { Missing m = 1; }', ())
    with pytest.raises(InvalidSchema, match="no reference"):
        parse("PROTOBUF", 'syntax = "proto3"; import "other.proto"; message M { int32 a = 1; }', ())
    parse("PROTOBUF", 'syntax = "proto3"; import "google/protobuf/timestamp.proto";'
          ' message M { google.protobuf.Timestamp t = 1; }', ())
