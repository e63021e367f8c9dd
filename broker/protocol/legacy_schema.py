"""Request and response classes for the API versions Kafka 4.0 removed (KIP-896) and kio lacks.

kio is generated from Kafka 4's message schemas, so it has no Produce v0-v2, Fetch v0-v3,
ListOffsets v0, OffsetCommit v0-v1, OffsetFetch v0, CreateTopics v0-v1, DeleteTopics v0,
OffsetForLeaderEpoch v0-v1, DescribeConfigs v0, DescribeLogDirs v0 or AlterReplicaLogDirs v0. Each of those layouts is the next kept version's with fields taken away (and
a few added), as Kafka 3.9's message schemas (``ProduceRequest.json`` ...) state with per-field
``versions``. This
module derives kio-style entity classes for them from kio's classes of the next version, so
kio's own reader and writer (which introspect the dataclass fields and their ``kafka_type``)
encode and decode them, ``broker.protocol.adapter.build`` fills them, and the handlers treat
them as any other version: ``legacy_request``/``legacy_response`` are asked by
``broker.protocol.codec.get_codec`` and ``broker.protocol.adapter.response_schema`` when kio
has no class. Each derived layout is tested byte for byte against kafka-python's classes for
those versions (``tests/wire/test_legacy_codec.py``).

Each class is derived on first use, under a lock; safe from any thread.
"""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import MISSING, Field, fields
from types import NoneType, UnionType
from typing import Any, Mapping, NamedTuple, Union, get_args, get_origin

from kio.index import load_request_schema, load_response_schema
from kio.static.primitive import i16, i32, i64

from kafka_emu.common.api_keys import ApiKeys


class Change(NamedTuple):
    """What differs in one entity class of the old version: fields removed, fields added
    (``(name, type, kafka_type, after)``: inserted after field ``after``)."""

    drop: tuple[str, ...] = ()
    add: tuple[tuple[str, Any, str, str], ...] = ()


def _retype(annotation: Any, classes: Mapping[type, type]) -> Any:
    """``annotation`` with every entity class replaced by its derived class."""
    if isinstance(annotation, type):
        return classes.get(annotation, annotation)
    origin = get_origin(annotation)
    if origin is tuple:
        inner, _ellipsis = get_args(annotation)
        return tuple[_retype(inner, classes), ...]   # type: ignore[misc]
    if origin in (UnionType, Union):
        inner = [a for a in get_args(annotation) if a is not NoneType]
        return _retype(inner[0], classes) | None
    return annotation


def _entity_classes(cls: type) -> list[type]:
    """``cls`` and the entity classes nested in it, innermost first."""
    out: list[type] = []
    for f in fields(cls):
        annotation = f.type
        while get_origin(annotation) in (tuple, UnionType, Union):
            annotation = [a for a in get_args(annotation) if a not in (NoneType, Ellipsis)][0]
        if isinstance(annotation, type) and dataclasses.is_dataclass(annotation) and annotation not in out:
            out.extend(c for c in _entity_classes(annotation) if c not in out)
    out.append(cls)
    return out


def _copy_field(f: Field, annotation: Any) -> tuple[str, Any, Field]:
    kwargs: dict[str, Any] = {"metadata": f.metadata}
    if f.default is not MISSING:
        kwargs["default"] = f.default
    elif f.default_factory is not MISSING:   # type: ignore[misc]
        kwargs["default_factory"] = f.default_factory   # type: ignore[misc]
    return f.name, annotation, dataclasses.field(**kwargs)


def derive(base: type, version: int, changes: Mapping[str, Change] | None = None) -> type:
    """A kio-style entity class for ``version`` of ``base``'s API: ``base``'s layout with the
    ``changes`` (by entity class name) applied, nested classes derived alike."""
    changes = changes or {}
    derived: dict[type, type] = {}
    for cls in _entity_classes(base):
        change = changes.get(cls.__name__, Change())
        spec: list[tuple[str, Any, Field]] = []
        for f in fields(cls):
            if f.name not in change.drop:
                spec.append(_copy_field(f, _retype(f.type, derived)))
            for name, type_, kafka_type, after in change.add:
                if after == f.name:
                    spec.append((name, type_, dataclasses.field(metadata={"kafka_type": kafka_type})))
        namespace = {name: getattr(cls, name) for name in ("__type__", "__api_key__", "__header_schema__")}
        namespace.update({"__version__": i16(version), "__flexible__": False, "__module__": __name__,
                          "__qualname__": f"{cls.__name__}V{version}"})
        derived[cls] = dataclasses.make_dataclass(cls.__name__, spec, namespace=namespace, frozen=True,
                                                  slots=True, kw_only=True)
    return derived[base]


# Produce v0-v2 requests: v3 without transactional_id (v3 added it). Responses: v2 is v3's
# layout; v1 lacks log_append_time (added in v2); v0 also lacks throttle_time (added in v1).
_NO_TXN_ID = {"ProduceRequest": Change(drop=("transactional_id",))}
_NO_APPEND_TIME = {"PartitionProduceResponse": Change(drop=("log_append_time",))}
# Fetch v0-v3 requests: v4 without isolation_level (added in v4); v0-v2 also without max_bytes
# (added in v3). Responses: v4 without last_stable_offset and aborted_transactions; v0 also
# without throttle_time (added in v1).
_FETCH_V3 = {"FetchRequest": Change(drop=("isolation_level",))}
_FETCH_V0 = {"FetchRequest": Change(drop=("isolation_level", "max_bytes"))}
_FETCH_RESPONSE_V1 = {"PartitionData": Change(drop=("last_stable_offset", "aborted_transactions"))}
_FETCH_RESPONSE_V0 = {**_FETCH_RESPONSE_V1, "FetchResponse": Change(drop=("throttle_time",))}
# ListOffsets v0: each partition asks for up to max_num_offsets offsets and is answered with a
# list of them (old_style_offsets); v1 replaced both with a single timestamp and offset.
_LIST_OFFSETS_V0 = {"ListOffsetsPartition": Change(add=(("max_num_offsets", i32, "int32", "timestamp"),))}
_LIST_OFFSETS_RESPONSE_V0 = {"ListOffsetsPartitionResponse": Change(
    drop=("timestamp", "offset"), add=(("old_style_offsets", tuple[i64, ...], "int64", "error_code"),))}

# OffsetCommit v1: v2 without retention_time (added in v2), with a commit timestamp per
# partition (v1 only); v0 also without the generation and member id (added in v1). Responses:
# v2's layout.
_OFFSET_COMMIT_V1 = {"OffsetCommitRequest": Change(drop=("retention_time",)),
                     "OffsetCommitRequestPartition": Change(add=(("commit_timestamp", i64, "int64",
                                                                  "committed_offset"),))}
_OFFSET_COMMIT_V0 = {"OffsetCommitRequest": Change(drop=("generation_id_or_member_epoch", "member_id",
                                                         "retention_time"))}
# CreateTopics v0: v1 (v2's request) without validate_only; responses: v2 without throttle_time
# (added in v2), v0 also without error_message (added in v1).
_CREATE_TOPICS_V0 = {"CreateTopicsRequest": Change(drop=("validate_only",))}
_CREATE_TOPICS_RESPONSE_V1 = {"CreateTopicsResponse": Change(drop=("throttle_time",))}
_CREATE_TOPICS_RESPONSE_V0 = {**_CREATE_TOPICS_RESPONSE_V1,
                              "CreatableTopicResult": Change(drop=("error_message",))}
# DeleteTopics v0: v1's request; the response without throttle_time (added in v1).
_DELETE_TOPICS_RESPONSE_V0 = {"DeleteTopicsResponse": Change(drop=("throttle_time",))}
# DescribeConfigs v0: v1 without include_synonyms; each entry has is_default where v1 has
# config_source and synonyms.
_DESCRIBE_CONFIGS_V0 = {"DescribeConfigsRequest": Change(drop=("include_synonyms",))}
_DESCRIBE_CONFIGS_RESPONSE_V0 = {"DescribeConfigsResourceResult": Change(
    drop=("config_source", "synonyms"), add=(("is_default", bool, "bool", "read_only"),))}

# OffsetForLeaderEpoch v0-v1: v2 without current_leader_epoch (added in v2); responses: v2
# without throttle_time (added in v2), v0 also without leader_epoch (added in v1).
_EPOCH_V0 = {"OffsetForLeaderPartition": Change(drop=("current_leader_epoch",))}
_EPOCH_RESPONSE_V1 = {"OffsetForLeaderEpochResponse": Change(drop=("throttle_time",))}
_EPOCH_RESPONSE_V0 = {**_EPOCH_RESPONSE_V1, "EpochEndOffset": Change(drop=("leader_epoch",))}

# (api key, version) -> (the kept version whose layout it is derived from, the changes)
_Layouts = Mapping[tuple[int, int], tuple[int, Mapping[str, Change] | None]]
_REQUEST_LAYOUTS: _Layouts = {
    **{(ApiKeys.PRODUCE, v): (3, _NO_TXN_ID) for v in (0, 1, 2)},
    **{(ApiKeys.FETCH, v): (4, _FETCH_V0) for v in (0, 1, 2)},
    (ApiKeys.FETCH, 3): (4, _FETCH_V3),
    (ApiKeys.LIST_OFFSETS, 0): (1, _LIST_OFFSETS_V0),
    (ApiKeys.OFFSET_COMMIT, 0): (2, _OFFSET_COMMIT_V0),
    (ApiKeys.OFFSET_COMMIT, 1): (2, _OFFSET_COMMIT_V1),
    (ApiKeys.OFFSET_FETCH, 0): (1, None),
    (ApiKeys.CREATE_TOPICS, 0): (2, _CREATE_TOPICS_V0),
    (ApiKeys.CREATE_TOPICS, 1): (2, None),
    (ApiKeys.DELETE_TOPICS, 0): (1, None),
    (ApiKeys.DESCRIBE_CONFIGS, 0): (1, _DESCRIBE_CONFIGS_V0),
    **{(ApiKeys.OFFSET_FOR_LEADER_EPOCH, v): (2, _EPOCH_V0) for v in (0, 1)},
    (ApiKeys.DESCRIBE_LOG_DIRS, 0): (1, None),   # "v1 is the same as v0"
    (ApiKeys.ALTER_REPLICA_LOG_DIRS, 0): (1, None),   # likewise
}
_RESPONSE_LAYOUTS: _Layouts = {
    (ApiKeys.PRODUCE, 0): (3, {**_NO_APPEND_TIME, "ProduceResponse": Change(drop=("throttle_time",))}),
    (ApiKeys.PRODUCE, 1): (3, _NO_APPEND_TIME),
    (ApiKeys.PRODUCE, 2): (3, None),
    (ApiKeys.FETCH, 0): (4, _FETCH_RESPONSE_V0),
    **{(ApiKeys.FETCH, v): (4, _FETCH_RESPONSE_V1) for v in (1, 2, 3)},
    (ApiKeys.LIST_OFFSETS, 0): (1, _LIST_OFFSETS_RESPONSE_V0),
    **{(ApiKeys.OFFSET_COMMIT, v): (2, None) for v in (0, 1)},
    (ApiKeys.OFFSET_FETCH, 0): (1, None),
    (ApiKeys.CREATE_TOPICS, 0): (2, _CREATE_TOPICS_RESPONSE_V0),
    (ApiKeys.CREATE_TOPICS, 1): (2, _CREATE_TOPICS_RESPONSE_V1),
    (ApiKeys.DELETE_TOPICS, 0): (1, _DELETE_TOPICS_RESPONSE_V0),
    (ApiKeys.DESCRIBE_CONFIGS, 0): (1, _DESCRIBE_CONFIGS_RESPONSE_V0),
    (ApiKeys.OFFSET_FOR_LEADER_EPOCH, 0): (2, _EPOCH_RESPONSE_V0),
    (ApiKeys.OFFSET_FOR_LEADER_EPOCH, 1): (2, _EPOCH_RESPONSE_V1),
    (ApiKeys.DESCRIBE_LOG_DIRS, 0): (1, None),
    (ApiKeys.ALTER_REPLICA_LOG_DIRS, 0): (1, None),
}
# the (api key, version) pairs this module derives, for requests and responses alike
LEGACY_VERSIONS = frozenset(_REQUEST_LAYOUTS)

# Derived on first use, not at import: deriving every layout (about 60 dataclasses) took a
# tenth of a second of every broker's cold start, for versions few clients still send.
_derived: dict[tuple[bool, int, int], type] = {}
_derive_lock = threading.Lock()   # guards _derived: one class per layout, whichever thread asks first


def _layout(request: bool, api_key: int, version: int) -> type | None:
    layout = (_REQUEST_LAYOUTS if request else _RESPONSE_LAYOUTS).get((api_key, version))
    if layout is None:
        return None
    with _derive_lock:
        cls = _derived.get((request, api_key, version))
        if cls is None:
            base_version, changes = layout
            load = load_request_schema if request else load_response_schema
            cls = _derived[(request, api_key, version)] = derive(load(api_key, base_version), version, changes)
        return cls


def legacy_request(api_key: int, version: int) -> type | None:
    """The request class of a version Kafka 4.0 removed, None for any other version."""
    return _layout(True, api_key, version)


def legacy_response(api_key: int, version: int) -> type | None:
    """The response class of a version Kafka 4.0 removed, None for any other version."""
    return _layout(False, api_key, version)


__all__ = ["Change", "LEGACY_VERSIONS", "derive", "legacy_request", "legacy_response"]
