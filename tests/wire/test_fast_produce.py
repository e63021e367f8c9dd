"""The fast ProduceResponse encoder writes exactly kio's bytes, for every version and shape."""
from __future__ import annotations

import io
import random
import sys
import uuid
from datetime import timedelta

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from broker.apis.produce import build_response
from broker.protocol.codec import decode_response, encode_response
from broker.protocol.fast_produce import encode_produce_response
from broker.replica_manager import ProducePartitionStatus


def kio_bytes(body: object) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(body))(buf, body)
    return buf.getvalue()


def sample(version: int, rng: random.Random) -> object:
    cls = load_response_schema(0, version)
    mod = sys.modules[cls.__module__]
    topics = []
    for t in range(rng.randint(0, 3)):
        parts = []
        for _ in range(rng.randint(0, 3)):
            kw = dict(index=rng.randint(0, 2**31 - 1), error_code=rng.choice(list(ErrorCode)),
                      base_offset=rng.randint(-1, 2**62), log_append_time=None)
            if version >= 5:
                kw["log_start_offset"] = rng.randint(-1, 2**40)
            if version >= 8:
                kw["record_errors"] = ()
                kw["error_message"] = rng.choice([None, "", "not leader", "é" * 130])
            parts.append(mod.PartitionProduceResponse(**kw))
        key = {"topic_id": rng.choice([uuid.uuid4(), None])} if version >= 13 else {"name": f"topic-{t}" * rng.randint(1, 20)}
        topics.append(mod.TopicProduceResponse(**key, partition_responses=tuple(parts)))
    return cls(responses=tuple(topics), throttle_time=timedelta(milliseconds=rng.randint(0, 5000)))


@pytest.mark.parametrize("version", range(3, 14))
def test_same_bytes_as_kio(version: int) -> None:
    rng = random.Random(version)
    for _ in range(50):
        body = sample(version, rng)
        assert encode_produce_response(body) == kio_bytes(body)


@pytest.mark.parametrize("version", range(3, 14))
def test_broker_built_responses_round_trip(version: int) -> None:
    statuses = {("t", 0): ProducePartitionStatus(5, 0, 4, -1, 0),
                ("t", 1): ProducePartitionStatus(-1, 6, -1, -1, -1, "not leader")}
    key = uuid.uuid4() if version >= 13 else "t"
    body = build_response(version, [(key, "t", [0, 1])], statuses, {})
    assert encode_produce_response(body) == kio_bytes(body)
    corr, decoded = decode_response(encode_response(7, body)[4:], type(body))
    assert corr == 7 and decoded == body


def test_unusual_shapes_fall_back_to_kio() -> None:
    cls = load_response_schema(0, 10)
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
