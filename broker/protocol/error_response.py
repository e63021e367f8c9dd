"""Generic error responses, the analogue of Kafka's ``AbstractRequest.getErrorResponse``.

Kafka writes one ``getErrorResponse`` per request type: it answers every topic, partition, group
or key the request named, each with the error code, and fills offsets and ids with -1. Rather
than 20 hand-written builders this walks the response schema next to the decoded request:

* every ``error_code`` field, at any level, gets the error;
* an array in the response mirrors the request's array of the same name (or its known alias,
  e.g. Produce ``responses`` <- ``topic_data``), one response item per request item, copying the
  identifying fields (``name``, ``partition_index`` <- ``index``, ``group_id`` <- a bare group
  name, ...);
* numeric fields that denote offsets, epochs, ids, ports or timestamps get -1, the rest their
  schema default or zero.

It is used when a handler raises, when a request is for a topic/group the broker cannot serve
at all, and by the fuzz tests to check that every advertised (api, version) has an answer.
Where a specific API needs a different shape (ApiVersions' KIP-511 v0 reply), its handler
builds it itself.
"""
from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

from kafka_emu.broker.protocol.adapter import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    field_plan,
    get_field_tag,
    is_error_code,
    is_optional,
    kio_error,
    primitive_default,
)
from kafka_emu.broker.protocol.codec import get_codec

# response array field -> request array fields it answers, in preference order
_ARRAY_ALIASES: dict[str, tuple[str, ...]] = {
    "responses": ("topic_data", "topics", "topic_names"),
    "partition_responses": ("partition_data", "partitions"),
    "partitions": ("partition_data", "partition_indexes", "partitions"),
    "results": ("groups_names", "topics", "resources", "topic_names"),
    "coordinators": ("coordinator_keys",),
    "groups": ("groups", "groups_names", "group_ids"),
    "topics": ("topics", "topic_data", "topic_names"),
    "members": ("members",),
    "results_by_topic_v3_and_below": ("v3_and_below_topics",),   # AddPartitionsToTxn v0-v3
    "results_by_partition": ("partitions",),
}
# response scalar field -> request fields that identify it
_SCALAR_ALIASES: dict[str, tuple[str, ...]] = {
    "partition_index": ("partition_index", "index", "partition"),
    "name": ("name", "topic", "topic_name", "resource_name"),
    "topic_id": ("topic_id",),
    "group_id": ("group_id", "key"),
    "key": ("key", "group_id"),
    "resource_name": ("resource_name", "name"),
    "resource_type": ("resource_type",),
    "member_id": ("member_id",),
    "group_instance_id": ("group_instance_id",),
    "key_type": ("key_type",),
}
def _build(cls: type, src: Any, code: int) -> Any:
    kwargs: dict[str, Any] = {}
    src_fields = {f.name for f in fields(type(src))} if src is not None and hasattr(src, "__dataclass_fields__") else set()
    for f, fc in field_plan(cls):
        tagged = get_field_tag(f) is not None
        if is_error_code(f):
            kwargs[f.name] = code
            continue
        if isinstance(fc, EntityTupleField):
            items = _source_array(f.name, src, src_fields)
            kwargs[f.name] = tuple(_build_item(fc.type_, item, code) for item in items)
            continue
        if isinstance(fc, EntityField):
            if f.default is not MISSING:
                kwargs[f.name] = f.default
            elif is_optional(f):
                kwargs[f.name] = None
            else:
                kwargs[f.name] = _build(fc.type_, None, code)
            continue
        if isinstance(fc, PrimitiveTupleField):
            kwargs[f.name] = f.default if f.default is not MISSING else ()
            continue
        copied = False
        for alias in _SCALAR_ALIASES.get(f.name, (f.name,)):
            if alias in src_fields:
                value = getattr(src, alias)
                if not isinstance(value, tuple) and not hasattr(value, "__dataclass_fields__"):
                    kwargs[f.name] = value
                    copied = True
                    break
        if copied:
            continue
        if tagged or f.default is not MISSING:
            if f.default is not MISSING:
                kwargs[f.name] = f.default
            continue
        if is_optional(f):
            kwargs[f.name] = None
            continue
        kwargs[f.name] = primitive_default(f, fc.type_)
    return cls(**kwargs)


def _source_array(name: str, src: Any, src_fields: set[str]) -> tuple[Any, ...]:
    if src is None:
        return ()
    for alias in (name, *_ARRAY_ALIASES.get(name, ())):
        if alias in src_fields:
            value = getattr(src, alias)
            if isinstance(value, tuple):
                return value
    return ()


def _build_item(cls: type, item: Any, code: int) -> Any:
    if hasattr(item, "__dataclass_fields__"):
        return _build(cls, item, code)
    # a bare request item (a group name, a topic name, a partition number): it fills the first
    # response field of the same kind
    entity = _build(cls, None, code)
    for f, fc in field_plan(cls):
        if get_field_tag(f) is not None or fc.is_array:
            continue
        if isinstance(item, str) and f.metadata.get("kafka_type") == "string" and not is_optional(f):
            # (not a nullable error_message before the name: ConsumerGroupDescribe's DescribedGroup)
            return _replace(entity, f.name, item)
        if isinstance(item, int) and f.metadata.get("kafka_type") == "int32" and "partition" in f.name:
            return _replace(entity, f.name, fc.type_(item))
    return entity


def _replace(entity: Any, name: str, value: Any) -> Any:
    kwargs = {f.name: getattr(entity, f.name) for f in fields(entity)}
    kwargs[name] = value
    return type(entity)(**kwargs)


def build_error_response(api_key: int, api_version: int, request_body: Any, error_code: int) -> Any:
    """A response entity of (api_key, api_version) answering every item of ``request_body``
    with ``error_code``. ``request_body`` may be None (nothing to mirror)."""
    codec = get_codec(api_key, api_version)
    return _build(codec.response_cls, request_body, kio_error(error_code))
