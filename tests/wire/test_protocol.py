"""The codec adapter: headers, unknown tagged fields, generic error responses, version table."""
from __future__ import annotations

import struct
from datetime import timedelta

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map

from kafka_emu.broker.protocol.codec import (
    InvalidRequestError,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    strip_unknown_tags,
)
from kafka_emu.broker.protocol.error_response import build_error_response
from kafka_emu.broker.apis import APIS, is_supported
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.kafka_releases import LATEST, RELEASES

API_VERSIONS = {key: (spec.min_version, spec.max_version) for key, spec in APIS.items()}

pytestmark = pytest.mark.timeout(30)


def frame_of(body: object, corr: int = 7, client_id: str | None = "cli") -> bytes:
    return encode_request(body, corr, client_id)[4:]


def test_declarations_name_apis_as_kafka_does_and_bound_the_version_check() -> None:
    """Each declared name is Kafka's ``ApiKeys`` name for the key, and ``is_supported`` (the
    processors' check) accepts exactly the range served as each release."""
    assert API_VERSIONS[0] == (0, 13) and API_VERSIONS[1] == (0, 18)
    for key, spec in APIS.items():
        kafka_name = "".join(part.capitalize() for part in api_key_map[key].split("_"))
        assert spec.api_key == key and spec.name == kafka_name
    for release in RELEASES.values():
        for key, spec in APIS.items():
            served = spec.versions(release)
            accepted = [v for v in range(spec.min_version - 1, spec.max_version + 2) if is_supported(key, v, release)]
            assert accepted == ([] if served is None else list(range(served[0], served[1] + 1))), (release, spec)
    assert not is_supported(ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, RELEASES[LATEST])   # known to kio, not declared


@pytest.mark.parametrize("api_key", sorted(API_VERSIONS))
def test_every_advertised_version_has_an_encodable_error_response(api_key: int) -> None:
    lo, hi = API_VERSIONS[api_key]
    for version in range(lo, hi + 1):
        resp = build_error_response(api_key, version, None, int(ErrorCode.not_coordinator))
        corr, back = decode_response(encode_response(3, resp)[4:], type(resp))
        assert corr == 3 and back == resp


def test_error_response_mirrors_request_items() -> None:
    from kio.schema.offset_commit.v8 import request as oc

    body = oc.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=1, member_id="m",
                                  group_instance_id=None, topics=(oc.OffsetCommitRequestTopic(
                                      name="t", partitions=(oc.OffsetCommitRequestPartition(
                                          partition_index=4, committed_offset=1, committed_leader_epoch=-1,
                                          committed_metadata=None),)),))
    resp = build_error_response(ApiKeys.OFFSET_COMMIT, 8, body, int(ErrorCode.not_coordinator))
    assert resp.topics[0].name == "t"
    p = resp.topics[0].partitions[0]
    assert (p.partition_index, p.error_code) == (4, ErrorCode.not_coordinator)

    from kio.schema.delete_groups.v2 import request as dg
    resp = build_error_response(ApiKeys.DELETE_GROUPS, 2, dg.DeleteGroupsRequest(groups_names=("a", "b")), 15)
    assert [(r.group_id, r.error_code) for r in resp.results] == [("a", 15), ("b", 15)]


def test_header_v1_and_v2() -> None:
    v1 = load_request_schema(ApiKeys.METADATA, 5)(topics=None, allow_auto_topic_creation=False)
    h = decode_request_header(frame_of(v1, 11, None))
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (3, 5, 11, None)
    v2 = load_request_schema(ApiKeys.METADATA, 12)(topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)
    raw = frame_of(v2, 12, "abc")
    h = decode_request_header(raw)
    assert (h.api_version, h.correlation_id, h.client_id) == (12, 12, "abc")
    assert decode_request(h, raw) == v2


def test_header_tagged_fields_are_skipped() -> None:
    body = load_request_schema(ApiKeys.API_VERSIONS, 3)(client_software_name="a", client_software_version="1")
    raw = bytearray(frame_of(body))
    # header v2 ends with the tag section right after the client id (10 + 3 bytes)
    assert raw[13] == 0
    raw[13:14] = b"\x01\x05\x02zz"
    h = decode_request_header(bytes(raw))
    assert decode_request(h, bytes(raw)) == body


def test_unknown_tags_at_every_level() -> None:
    from kio.schema.metadata.v12 import request as md

    body = md.MetadataRequest(topics=(md.MetadataRequestTopic(topic_id=None, name="t"),),
                              allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    raw = bytearray(frame_of(body))
    h = decode_request_header(bytes(raw))
    b = raw[h.size:]
    # body layout: topics array (len+1), topic: uuid(16) name(2) tags(1), then two bools, tags
    assert b[0] == 2 and b[-1] == 0
    topic_tags_at = 1 + 16 + 2
    assert b[topic_tags_at] == 0
    mutated = b[:topic_tags_at] + b"\x01\x09\x01x" + b[topic_tags_at + 1:-1] + b"\x02\x0a\x00\x0b\x01y"
    full = bytes(raw[:h.size] + mutated)
    assert decode_request(decode_request_header(full), full) == body
    assert strip_unknown_tags(type(body), mutated) == bytes(b)


def test_known_tagged_fields_are_kept() -> None:
    from kio.schema.api_versions.v3 import response as av

    resp = av.ApiVersionsResponse(error_code=ErrorCode.none, api_keys=(), throttle_time=timedelta(0),
                                  finalized_features_epoch=5)
    data = encode_response(1, resp)[4:]
    # response header v0 for ApiVersions: 4 bytes correlation id, then the body
    assert strip_unknown_tags(type(resp), data[4:]) == data[4:]


@pytest.mark.parametrize("frame,error", [
    (b"\x00\x03", InvalidRequestError),
    (struct.pack(">hhih", 999, 0, 1, -1), UnknownApiKeyError),
    (struct.pack(">hhih", 3, 99, 1, -1), UnsupportedVersionError),
    (struct.pack(">hhih", 3, 1, 1, 50) + b"ab", InvalidRequestError),
    (struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe", InvalidRequestError),
])
def test_bad_headers(frame: bytes, error: type) -> None:
    with pytest.raises(error):
        decode_request_header(frame)


def test_truncated_and_null_bodies_are_invalid() -> None:
    body = load_request_schema(ApiKeys.FIND_COORDINATOR, 4)(key_type=0, coordinator_keys=("g",))
    raw = frame_of(body)
    h = decode_request_header(raw)
    with pytest.raises(InvalidRequestError):
        decode_request(h, raw[:-2])
    nulled = bytearray(raw)
    nulled[h.size + 1] = 0          # coordinator_keys: compact array length 0 = null
    with pytest.raises(InvalidRequestError, match="non-nullable"):
        decode_request(h, bytes(nulled[:h.size + 2]) + b"\x00")


def test_api_versions_response_uses_header_v0() -> None:
    resp = load_response_schema(ApiKeys.API_VERSIONS, 3)(error_code=ErrorCode.none, api_keys=(),
                                                         throttle_time=timedelta(0))
    data = encode_response(9, resp)
    size, corr = struct.unpack_from(">ii", data)
    assert size == len(data) - 4 and corr == 9
    assert data[8] == 0       # error code high byte follows the correlation id directly
    md = build_error_response(ApiKeys.METADATA, 12, None, 0)
    assert encode_response(9, md)[8] == 0     # header v1: empty tag section after the id


def test_build_keeps_the_version_fields_defaults_the_rest_and_converts_error_codes() -> None:
    """``adapter.build`` (and the ``constructor`` it caches per call site): names the version
    lacks are ignored, required fields get Kafka's "no value", error codes become kio's enum;
    positional and keyword calls build the same entity."""
    from kafka_emu.broker.protocol.adapter import build, constructor, item_cls

    v3 = item_cls(item_cls(load_response_schema(ApiKeys.PRODUCE, 3), "responses"), "partition_responses")
    v9 = item_cls(item_cls(load_response_schema(ApiKeys.PRODUCE, 9), "responses"), "partition_responses")
    given = dict(index=2, error_code=87, base_offset=-1, log_append_time=None, log_start_offset=7,
                 error_message="bad", record_errors=())
    old = build(v3, **given)
    assert (old.index, old.error_code, old.base_offset) == (2, ErrorCode.invalid_record, -1)
    assert not hasattr(old, "log_start_offset")   # v5+: dropped, not refused
    new = build(v9, **given)
    assert (new.log_start_offset, new.error_message, new.error_code) == (7, "bad", ErrorCode.invalid_record)
    assert constructor(v9, tuple(given))(*given.values()) == new
    sparse = build(v9, index=1)   # the rest defaulted: error none, offsets -1
    assert (sparse.error_code, sparse.base_offset, sparse.log_start_offset) == (ErrorCode.none, -1, -1)
    with pytest.raises(TypeError):
        constructor(v9, ("index", "_cls"))   # never a name of the generated code
