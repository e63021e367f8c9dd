"""The layouts Kafka 4.0 removed (``broker.protocol.legacy_schema``), byte for byte against
kafka-python's own classes for those versions (``kafka.protocol.old``): for random values, the
bytes kafka-python writes decode with our classes and re-encode to the same bytes, and what we
write kafka-python reads back as the same values (hypothesis round trips in both directions)."""
from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.old import admin as kp_admin
from kafka.protocol.old import commit as kp_commit
from kafka.protocol.old import fetch as kp_fetch
from kafka.protocol.old import list_offsets as kp_list_offsets
from kafka.protocol.old import offset_for_leader_epoch as kp_epoch
from kafka.protocol.old import produce as kp_produce
from kafka.protocol.old.types import Array, Boolean, Bytes, Int8, Int16, Int32, Int64, Schema, String
from kio.serial import entity_reader, entity_writer

from kafka_emu.broker.protocol.legacy_schema import LEGACY_VERSIONS, legacy_request, legacy_response
from kafka_emu.common.api_keys import ApiKeys

pytestmark = pytest.mark.timeout(120)

# kafka-python's DescribeLogDirsRequest_v0 declares one partition per topic where Kafka's schema
# has an array of them (DescribeLogDirsRequest.json, "version 1 is the same as version 0"): Kafka's
# layout, in kafka-python's types
_DESCRIBE_LOG_DIRS_REQUEST_V0 = Schema(("topics", Array(("topic", String("utf-8")), ("partitions", Array(Int32)))))
# kafka-python has no AlterReplicaLogDirs v0 classes: Kafka 3.9's AlterReplicaLogDirsRequest.json
# layout ("version 1 is the same as version 0"), in kafka-python's types
_ALTER_REPLICA_LOG_DIRS_V0 = (
    Schema(("dirs", Array(("path", String("utf-8")),
                          ("topics", Array(("name", String("utf-8")), ("partitions", Array(Int32))))))),
    Schema(("throttle_time_ms", Int32),
           ("results", Array(("topic_name", String("utf-8")),
                             ("partitions", Array(("partition_index", Int32), ("error_code", Int16)))))))
# (key, version) -> kafka-python's (request class, response class)
KAFKA_PYTHON = {
    **{(0, v): (getattr(kp_produce, f"ProduceRequest_v{v}"), getattr(kp_produce, f"ProduceResponse_v{v}"))
       for v in (0, 1, 2)},
    **{(1, v): (getattr(kp_fetch, f"FetchRequest_v{v}"), getattr(kp_fetch, f"FetchResponse_v{v}"))
       for v in (0, 1, 2, 3)},
    (2, 0): (kp_list_offsets.ListOffsetsRequest_v0, kp_list_offsets.ListOffsetsResponse_v0),
    **{(8, v): (getattr(kp_commit, f"OffsetCommitRequest_v{v}"), getattr(kp_commit, f"OffsetCommitResponse_v{v}"))
       for v in (0, 1)},
    (9, 0): (kp_commit.OffsetFetchRequest_v0, kp_commit.OffsetFetchResponse_v0),
    **{(19, v): (getattr(kp_admin, f"CreateTopicsRequest_v{v}"), getattr(kp_admin, f"CreateTopicsResponse_v{v}"))
       for v in (0, 1)},
    (20, 0): (kp_admin.DeleteTopicsRequest_v0, kp_admin.DeleteTopicsResponse_v0),
    (32, 0): (kp_admin.DescribeConfigsRequest_v0, kp_admin.DescribeConfigsResponse_v0),
    **{(23, v): (getattr(kp_epoch, f"OffsetForLeaderEpochRequest_v{v}"),
                 getattr(kp_epoch, f"OffsetForLeaderEpochResponse_v{v}")) for v in (0, 1)},
    (35, 0): (SimpleNamespace(SCHEMA=_DESCRIBE_LOG_DIRS_REQUEST_V0), kp_admin.DescribeLogDirsResponse_v0),
    (34, 0): (SimpleNamespace(SCHEMA=_ALTER_REPLICA_LOG_DIRS_V0[0]), SimpleNamespace(SCHEMA=_ALTER_REPLICA_LOG_DIRS_V0[1])),
}
_ERROR_CODES = (0, 1, 3, 6, 35, 87)


def values_for(schema: Any, name: str = "") -> st.SearchStrategy[Any]:
    """Random values in kafka-python's shape for one of its schema types. Durations and times
    (kio reads them as timedelta and datetime) are non-negative or -1; error codes are codes
    kio's enum knows."""
    if isinstance(schema, Schema):
        return st.tuples(*(values_for(t, n) for n, t in zip(schema.names, schema.fields)))
    if isinstance(schema, Array):
        return st.lists(values_for(schema.array_of, name), max_size=3)
    if schema is Boolean:
        return st.booleans()
    if schema is Int8:
        return st.integers(-128, 127)
    if schema is Int16:
        return st.sampled_from(_ERROR_CODES) if "error" in name else st.integers(-1, 2**15 - 1)
    if schema is Int32:
        low = 0 if any(w in name for w in ("time", "wait")) else -(2**31)
        return st.integers(low, 2**31 - 1)
    if schema is Int64:
        if "append_time" in name:   # a time (kio reads it as a datetime) or -1 (none)
            return st.one_of(st.just(-1), st.integers(0, 2**45))
        return st.integers(-(2**63), 2**63 - 1)
    if isinstance(schema, String):
        return st.text(max_size=8)
    if schema is Bytes:
        return st.one_of(st.none(), st.binary(max_size=40)) if name == "records" else st.binary(max_size=40)
    raise TypeError(f"no strategy for {schema!r}")


def _ours(cls: type, data: bytes) -> bytes:
    entity, used = entity_reader(cls)(memoryview(data), 0)
    assert used == len(data)
    buf = io.BytesIO()
    entity_writer(cls)(buf, entity)
    return buf.getvalue()


@pytest.mark.parametrize("key_version", sorted(KAFKA_PYTHON))
@pytest.mark.parametrize("side", ["request", "response"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_legacy_layout_matches_kafka_python(key_version: tuple[int, int], side: str, data: st.DataObject) -> None:
    kp_request, kp_response = KAFKA_PYTHON[key_version]
    kp_cls = kp_request if side == "request" else kp_response
    ours = (legacy_request if side == "request" else legacy_response)(*key_version)
    values = data.draw(values_for(kp_cls.SCHEMA))
    if side == "response" and key_version[0] == 1:
        # a null record set is written by kafka-python as length -1; Kafka writes empty records
        values = _non_null_records(values)
    wire = kp_cls.SCHEMA.encode(values)
    assert _ours(ours, wire) == wire
    assert kp_cls.SCHEMA.decode(io.BytesIO(_ours(ours, wire))) == kp_cls.SCHEMA.decode(io.BytesIO(wire))


def _non_null_records(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return type(value)(_non_null_records(v) for v in value)
    return b"" if value is None else value


def test_versions_and_flexibility() -> None:
    """Every derived class carries its own version and Kafka's non-flexible encoding, and is
    derived once (on first use); kio's own versions are not derived."""
    for key, version in LEGACY_VERSIONS:
        for derived in (legacy_request, legacy_response):
            cls = derived(key, version)
            assert (cls.__api_key__, cls.__version__, cls.__flexible__) == (key, version, False)
            assert derived(key, version) is cls   # derived once
    # kio's own versions
    assert legacy_request(ApiKeys.PRODUCE, 3) is None and legacy_response(ApiKeys.FETCH, 4) is None
