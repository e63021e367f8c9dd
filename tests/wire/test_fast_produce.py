"""The fast ProduceResponse encoder writes exactly kio's bytes, for every version and shape."""
from __future__ import annotations

import random
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from kafka_emu.broker.apis import APIS
from kafka_emu.common.kafka_releases import LATEST, RELEASES
from kafka_emu.broker.apis.produce import build_response
from kafka_emu.broker.protocol.codec import decode_response, encode_response
from kafka_emu.broker.protocol.fast_produce import encode_produce_response
from kafka_emu.broker.server.replica_manager import ProducePartitionStatus
from kafka_emu.common.api_keys import ApiKeys

# every version the broker admits as the newest release (v0-v2 are Kafka 3.9's, on kio), so the
# fast codec is checked wherever it can be used
PRODUCE_VERSIONS = range(APIS[ApiKeys.PRODUCE].versions(RELEASES[LATEST])[0],
                         APIS[ApiKeys.PRODUCE].versions(RELEASES[LATEST])[1] + 1)


def sample(version: int, rng: random.Random) -> object:
    cls = load_response_schema(ApiKeys.PRODUCE, version)
    mod = sys.modules[cls.__module__]
    topics = []
    for t in range(rng.randint(0, 3)):
        parts = []
        for _ in range(rng.randint(0, 3)):
            kw = dict(index=rng.randint(0, 2**31 - 1), error_code=rng.choice(list(ErrorCode)),
                      base_offset=rng.randint(-1, 2**62),
                      log_append_time=rng.choice([None, datetime.fromtimestamp(rng.randint(0, 2**42) / 1000, UTC)]))
            if version >= 5:
                kw["log_start_offset"] = rng.randint(-1, 2**40)
            if version >= 8:
                kw["record_errors"] = tuple(
                    mod.BatchIndexAndErrorMessage(batch_index=rng.randint(0, 2**31 - 1),
                                                  batch_index_error_message=rng.choice([None, "", "no key", "é" * 70]))
                    for _ in range(rng.choice([0, 0, 1, 3])))
                kw["error_message"] = rng.choice([None, "", "not leader", "é" * 130])
            parts.append(mod.PartitionProduceResponse(**kw))
        key = {"topic_id": rng.choice([uuid.uuid4(), None])} if version >= 13 else {"name": f"topic-{t}" * rng.randint(1, 20)}
        topics.append(mod.TopicProduceResponse(**key, partition_responses=tuple(parts)))
    return cls(responses=tuple(topics), throttle_time=timedelta(milliseconds=rng.randint(0, 5000)))


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_same_bytes_as_kio(version: int) -> None:
    rng = random.Random(version)
    for _ in range(50):
        body = sample(version, rng)
        assert encode_produce_response(body) == kio_bytes(body)


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_broker_built_responses_round_trip(version: int) -> None:
    statuses = {("t", 0): ProducePartitionStatus(5, 0, 4, -1, 0),
                ("t", 1): ProducePartitionStatus(-1, 6, -1, -1, -1, "not leader"),
                ("t", 2): ProducePartitionStatus(9, 0, 8, 1_700_000_000_123, 0),
                ("t", 3): ProducePartitionStatus(-1, 87, -1, -1, 0, "rejected",
                                                 record_errors=((1, "no key"), (4, None)))}
    key = uuid.uuid4() if version >= 13 else "t"
    body = build_response(version, [(key, "t", [0, 1, 2, 3])], statuses, {})
    assert encode_produce_response(body) == kio_bytes(body)
    corr, decoded = decode_response(encode_response(7, body)[4:], type(body))
    assert corr == 7 and decoded == body


def test_unusual_shapes_fall_back_to_kio() -> None:
    cls = load_response_schema(ApiKeys.PRODUCE, 10)
    mod = sys.modules[cls.__module__]
    part = mod.PartitionProduceResponse(index=0, error_code=ErrorCode.not_leader_or_follower, base_offset=-1,
                                        log_append_time=None, log_start_offset=-1, record_errors=(),
                                        error_message=None,
                                        current_leader=mod.LeaderIdAndEpoch(leader_id=2, leader_epoch=7))
    body = cls(responses=(mod.TopicProduceResponse(name="t", partition_responses=(part,)),),
               throttle_time=timedelta(0),
               node_endpoints=(mod.NodeEndpoint(node_id=2, host="h", port=9092, rack=None),))
    assert encode_produce_response(body) is None
    assert decode_response(encode_response(1, body)[4:], cls)[1] == body   # kio path


# --- the request decoder ---------------------------------------------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

from kafka_emu.broker.protocol.codec import (  # noqa: E402
    decode_request,
    decode_request_header,
    encode_request,
)
from kafka_emu.broker.protocol.fast_produce import ProduceRequestData, decode_produce_request  # noqa: E402
from kafka_emu.broker.storage.record_batch import build_batch  # noqa: E402
from fast_codec_checks import check_every_prefix, check_frame, kio_bytes, mutated  # noqa: E402


def request_sample(version: int, rng: random.Random) -> object:
    from kio.index import load_request_schema

    cls = load_request_schema(ApiKeys.PRODUCE, version)
    mod = sys.modules[cls.__module__]
    topics = []
    for t in range(rng.randint(0, 3)):
        parts = tuple(mod.PartitionProduceData(
            index=rng.randint(0, 2**31 - 1),
            records=rng.choice([None, b"", build_batch([(None, b"v" * rng.randint(0, 300))])]))
            for _ in range(rng.randint(0, 3)))
        key = {"topic_id": rng.choice([uuid.uuid4(), None])} if version >= 13 else \
            {"name": rng.choice(["t", "é-topic", f"topic-{t}" * rng.randint(1, 30)])}
        topics.append(mod.TopicProduceData(**key, partition_data=parts))
    return cls(transactional_id=rng.choice([None, "", "txn-1"]), acks=rng.choice([-1, 0, 1]),
               timeout=timedelta(milliseconds=rng.randint(0, 2**31 - 1)), topic_data=tuple(topics))


def same_request(fast: ProduceRequestData, kio_body: object) -> bool:
    """The fast decoder's view equals kio's, field by field."""
    by_id = type(kio_body).__version__ >= 13

    def topic_key(t: object) -> object:
        return t.topic_id if by_id else t.name

    return (fast.transactional_id == kio_body.transactional_id and fast.acks == kio_body.acks
            and fast.timeout == kio_body.timeout // timedelta(milliseconds=1)
            and [(topic_key(t), [(p.index, p.records) for p in t.partition_data]) for t in fast.topic_data]
            == [(topic_key(t), [(p.index, None if p.records is None else bytes(p.records))
                                for p in t.partition_data]) for t in kio_body.topic_data])


@pytest.mark.parametrize("version", PRODUCE_VERSIONS)
def test_decoder_agrees_with_kio(version: int) -> None:
    rng = random.Random(1000 + version)
    for _ in range(40):
        body = request_sample(version, rng)
        frame = encode_request(body, 5, "c")[4:]
        header = decode_request_header(frame)
        fast = decode_produce_request(version, frame, header.size)
        assert fast is not None and same_request(fast, decode_request(header, frame))


@pytest.mark.parametrize("version", [3, 8, 9, 13])
def test_truncated_frames_never_decode_fast_where_kio_refuses(version: int) -> None:
    """Every prefix: the fast decoder either declines or agrees with a successful kio decode,
    so ``decode_request_fast`` raises exactly when ``decode_request`` does."""
    body = request_sample(version, random.Random(7))
    while not body.topic_data:
        body = request_sample(version, random.Random(version))
    check_every_prefix(version, encode_request(body, 5, "c")[4:], decode_produce_request, same_request)


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from([3, 7, 9, 12, 13]), seed=st.integers(0, 2**16),
       flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=4))
def test_mutated_frames_never_decode_fast_where_kio_refuses(version: int, seed: int,
                                                             flips: list[tuple[int, int]]) -> None:
    body = request_sample(version, random.Random(seed))
    check_frame(version, mutated(encode_request(body, 5, "c")[4:], flips), decode_produce_request, same_request)


def test_unknown_tagged_fields_are_skipped() -> None:
    body = request_sample(9, random.Random(3))
    while not body.topic_data or not body.topic_data[0].partition_data:
        body = request_sample(9, random.Random(4))
    frame = encode_request(body, 5, "c")[4:]
    assert frame.endswith(b"\x00")
    tagged = frame[:-1] + b"\x01\x07\x03abc"          # an unknown tag on the request itself
    header = decode_request_header(tagged)
    fast = decode_produce_request(9, tagged, header.size)
    assert fast is not None and same_request(fast, decode_request(header, tagged))


def test_fast_decoded_produce_gets_the_same_response_bytes() -> None:
    """The broker answers a fast-decoded Produce with bytes equal to kio's encoding of the
    entity it builds for a kio-decoded one."""
    from kafka_emu.broker.protocol.codec import EncodedResponse
    from kafka_emu.broker.apis.produce import partition_results
    from kafka_emu.broker.protocol.fast_produce import encode_produce_body

    statuses = {("t", 0): ProducePartitionStatus(5, 0, 4, -1, 0),
                ("t", 3): ProducePartitionStatus(9, 0, 8, 1_700_000_000_123, 0),
                ("t", 4): ProducePartitionStatus(-1, 87, -1, -1, 0, "rejected", record_errors=((0, "no key"),))}
    pre = {("t", 1): (3, None), ("t", 2): (87, "no records")}
    for version in range(3, 13):
        order = [("t", "t", [0, 1, 2, 3, 4])]
        data = encode_produce_body(version, partition_results(order, statuses, pre))
        entity = build_response(version, order, statuses, pre)
        assert encode_response(9, EncodedResponse(data, version >= 9, {})) == encode_response(9, entity)
