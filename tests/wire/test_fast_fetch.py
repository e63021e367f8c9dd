"""The hand-written Fetch codec (``broker.protocol.fast_fetch``) against kio, for every version
the 4.x range serves: requests kio encodes decode to the same values, frames kio refuses are
never accepted, and responses are kio's bytes exactly. The intent of Kafka's
``RequestResponseTest.testSerialization`` (every version of FetchRequest/FetchResponse
round-trips) and ``MessageTest``'s tagged-field cases (unknown tags skipped), with kio as the
reference implementation."""
from __future__ import annotations

import dataclasses
import random
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from kio.index import load_request_schema

from kafka_emu.broker.apis import APIS
from kafka_emu.common.kafka_releases import LATEST, RELEASES
from kafka_emu.broker.apis.fetch import (
    build_response,
    parse_fetch_request,
    partition_responses,
)
from kafka_emu.broker.server.partition import LogReadResult
from kafka_emu.broker.storage.transaction_index import AbortedTxn
from kafka_emu.broker.protocol.codec import (
    EncodedResponse,
    InvalidRequestError,
    decode_request,
    decode_request_fast,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from kafka_emu.broker.protocol.fast_fetch import (
    FIRST_FLEXIBLE,
    FetchRequestData,
    decode_fetch_request,
    encode_fetch_body,
    error_counts,
)
from kafka_emu.broker.storage.record_batch import build_batch
from fast_codec_checks import check_every_prefix, check_frame, kio_bytes, mutated
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.metrics.error_counts import error_counts as entity_error_counts

# the versions the newest release admits (v0-v3 stay on kio: down-conversion, emulator.kafka.version=3.9)
FETCH_VERSIONS = range(APIS[ApiKeys.FETCH].versions(RELEASES[LATEST])[0],
                       APIS[ApiKeys.FETCH].versions(RELEASES[LATEST])[1] + 1)


# --- requests ------------------------------------------------------------------------------------

def request_sample(version: int, rng: random.Random) -> object:
    """A FetchRequest of ``version`` with every field it has at a random value (tagged fields
    sometimes at their defaults, so absent from the frame)."""
    cls = load_request_schema(ApiKeys.FETCH, version)
    mod = sys.modules[cls.__module__]
    names = {f.name for f in dataclasses.fields(cls)}
    part_names = {f.name for f in dataclasses.fields(mod.FetchPartition)}
    by_id = version >= 13

    def key(t: int) -> dict[str, Any]:
        if by_id:
            return {"topic_id": rng.choice([uuid.uuid4(), None])}
        return {"topic": rng.choice(["t", "é-topic", f"topic-{t}" * rng.randint(1, 30)])}

    topics = []
    for t in range(rng.randint(0, 3)):
        parts = []
        for _ in range(rng.randint(0, 4)):
            kw = dict(partition=rng.randint(0, 2**31 - 1), fetch_offset=rng.randint(-1, 2**62),
                      partition_max_bytes=rng.randint(0, 2**31 - 1))
            for name in ("current_leader_epoch", "last_fetched_epoch"):
                if name in part_names:
                    kw[name] = rng.randint(-1, 2**31 - 1)
            if "log_start_offset" in part_names:
                kw["log_start_offset"] = rng.randint(-1, 2**50)
            if "replica_directory_id" in part_names and rng.random() < 0.3:
                kw["replica_directory_id"] = uuid.uuid4()
            if "high_watermark" in part_names and rng.random() < 0.3:
                kw["high_watermark"] = rng.randint(-1, 2**50)
            parts.append(mod.FetchPartition(**kw))
        topics.append(mod.FetchTopic(**key(t), partitions=tuple(parts)))
    kw = dict(max_wait=timedelta(milliseconds=rng.randint(0, 2**31 - 1)), min_bytes=rng.randint(-1, 2**31 - 1),
              max_bytes=rng.randint(0, 2**31 - 1), isolation_level=rng.choice([0, 1]), topics=tuple(topics))
    if "replica_id" in names:
        kw["replica_id"] = rng.choice([-1, -1, 0, 3])
    if "session_id" in names:
        kw.update(session_id=rng.choice([0, 0, 17]), session_epoch=rng.choice([-1, 0, 5]),
                  forgotten_topics_data=tuple(
                      mod.ForgottenTopic(**key(t), partitions=tuple(rng.randint(0, 99) for _ in range(rng.randint(0, 3))))
                      for t in range(rng.choice([0, 0, 2]))))
    if "rack_id" in names:
        kw["rack_id"] = rng.choice(["", "rack-a", "é"])
    if "cluster_id" in names:
        kw["cluster_id"] = rng.choice([None, None, "", "cluster-1"])
    if "replica_state" in names and rng.random() < 0.4:
        kw["replica_state"] = mod.ReplicaState(replica_id=rng.randint(-1, 5), replica_epoch=rng.randint(-1, 2**40))
    return cls(**kw)


def same(fast: Any, slow: Any) -> bool:
    """The fast decoder's value equals kio's, for every field kio's class of that version has."""
    if dataclasses.is_dataclass(slow):
        return all(same(getattr(fast, f.name), getattr(slow, f.name)) for f in dataclasses.fields(slow))
    if isinstance(slow, tuple):
        return isinstance(fast, tuple) and len(fast) == len(slow) and all(map(same, fast, slow))
    if isinstance(slow, timedelta):
        return fast == slow // timedelta(milliseconds=1)
    return type(fast) in (int, str, type(None), uuid.UUID) and fast == slow


def frame_of(body: object) -> bytes:
    return encode_request(body, 5, "c")[4:]


def decode_both(body: object) -> tuple[FetchRequestData | None, object]:
    """(the fast decoder's, kio's) decoding of ``body`` encoded by kio."""
    frame = frame_of(body)
    header = decode_request_header(frame)
    return decode_fetch_request(header.api_version, frame, header.size), decode_request(header, frame)


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_decoder_agrees_with_kio(version: int) -> None:
    rng = random.Random(2000 + version)
    for _ in range(60):
        body = request_sample(version, rng)
        fast, slow = decode_both(body)
        assert fast is not None and same(fast, slow)
        frame = frame_of(body)
        assert isinstance(decode_request_fast(decode_request_header(frame), frame), FetchRequestData)


@settings(max_examples=200, deadline=None)
@given(version=st.sampled_from(list(FETCH_VERSIONS)), seed=st.integers(0, 2**32))
def test_decoder_agrees_with_kio_property(version: int, seed: int) -> None:
    fast, slow = decode_both(request_sample(version, random.Random(seed)))
    assert fast is not None and same(fast, slow)


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_handler_reads_the_same_request(version: int) -> None:
    """``parse_fetch_request`` gets the same params, fetch infos, order and pre-set errors from
    either decoding (the metadata knows one topic id, so unknown ids are pre-set errors)."""
    known = uuid.uuid4()

    class Metadata:
        @staticmethod
        def topic_name(topic_id: uuid.UUID | None) -> str | None:
            return "known" if topic_id == known else None

    rng = random.Random(version)
    for _ in range(20):
        body = request_sample(version, rng)
        if version >= 13 and body.topics:
            body = dataclasses.replace(body, topics=(dataclasses.replace(body.topics[0], topic_id=known),
                                                     *body.topics[1:]))
        fast, slow = decode_both(body)
        assert parse_fetch_request(fast, version, Metadata) == parse_fetch_request(slow, version, Metadata)


@pytest.mark.parametrize("version", [4, 7, 11, 12, 13, 15, 17, 18])
def test_truncated_frames_never_decode_fast_where_kio_refuses(version: int) -> None:
    """Every prefix: the fast decoder either declines or agrees with a successful kio decode,
    so ``decode_request_fast`` raises exactly when ``decode_request`` does."""
    rng = random.Random(version)
    body = request_sample(version, rng)
    while not body.topics or not body.topics[0].partitions:
        body = request_sample(version, rng)
    check_every_prefix(version, frame_of(body), decode_fetch_request, same)


@settings(max_examples=400, deadline=None)
@given(version=st.sampled_from(list(FETCH_VERSIONS)), seed=st.integers(0, 2**16),
       flips=st.lists(st.tuples(st.integers(0, 300), st.sampled_from([0, 1, 2, 0x80, 0xFF]) | st.integers(0, 255)),
                      min_size=1, max_size=4))
def test_mutated_frames_never_decode_fast_where_kio_refuses(version: int, seed: int,
                                                             flips: list[tuple[int, int]]) -> None:
    body = request_sample(version, random.Random(seed))
    check_frame(version, mutated(frame_of(body), flips), decode_fetch_request, same)


def _with_tags(frame: bytes, at: int, tags: bytes) -> bytes:
    """``frame`` with the empty tagged-field section at ``at`` replaced by ``tags``."""
    assert frame[at] == 0
    return frame[:at] + tags + frame[at + 1:]


@pytest.mark.parametrize("version", [12, 15, 18])
def test_unknown_tagged_fields_are_skipped(version: int) -> None:
    """Unknown tags at the top level, on a topic and on a partition are skipped as Kafka skips
    them; known ones after an unknown one are still read."""
    cls = load_request_schema(ApiKeys.FETCH, version)
    mod = sys.modules[cls.__module__]
    key = {"topic_id": uuid.uuid4()} if version >= 13 else {"topic": "t"}
    body = cls(max_wait=timedelta(milliseconds=500), min_bytes=1, max_bytes=1 << 20, isolation_level=1,
               session_id=0, session_epoch=-1, rack_id="",
               topics=(mod.FetchTopic(**key, partitions=(mod.FetchPartition(
                   partition=0, fetch_offset=42, partition_max_bytes=1 << 20),)),),
               forgotten_topics_data=())
    frame = frame_of(body)
    header = decode_request_header(frame)
    # layout from the end: ... partition tags(1), topic tags(1), forgotten(1), rack(1), top tags(1)
    top, rack, forgotten, topic_tags, part_tags = (len(frame) - i for i in (1, 2, 3, 4, 5))
    assert frame[rack] == 1 and frame[forgotten] == 1
    tagged = _with_tags(frame, top, b"\x02" + b"\x00\x03\x03id" + b"\x07\x02zz")    # cluster_id "id", unknown 7
    tagged = _with_tags(tagged, topic_tags, b"\x01\x05\x01q")
    tagged = _with_tags(tagged, part_tags, b"\x01\x09\x00")
    fast = decode_fetch_request(version, tagged, header.size)
    slow = decode_request(header, tagged)
    assert fast is not None and same(fast, slow) and fast.cluster_id == "id"


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_error_responses_mirror_the_same_request(version: int) -> None:
    """``build_error_response`` (a handler that raised) answers a fast-decoded request exactly
    as it answers kio's entity: the decoded object shows the fields kio's version has."""
    from kafka_emu.broker.protocol.error_response import build_error_response

    rng = random.Random(4000 + version)
    for _ in range(10):
        fast, slow = decode_both(request_sample(version, rng))
        assert build_error_response(ApiKeys.FETCH, version, fast, Errors.UNKNOWN_SERVER_ERROR) == \
            build_error_response(ApiKeys.FETCH, version, slow, Errors.UNKNOWN_SERVER_ERROR)


def test_replica_state_tag_is_read() -> None:
    """v15+: a replica id sent in ``replica_state`` (tag 1) is read as kio reads it."""
    cls = load_request_schema(ApiKeys.FETCH, 15)
    mod = sys.modules[cls.__module__]
    body = cls(max_wait=timedelta(0), min_bytes=1, topics=(), forgotten_topics_data=(),
               replica_state=mod.ReplicaState(replica_id=2, replica_epoch=77))
    fast, slow = decode_both(body)
    assert fast is not None and same(fast, slow)
    assert (fast.replica_state.replica_id, fast.replica_state.replica_epoch) == (2, 77)


def test_known_tag_of_the_wrong_size_is_left_to_kio() -> None:
    """A ``replica_state`` whose declared size is not what it holds: kio decides."""
    cls = load_request_schema(ApiKeys.FETCH, 15)
    body = cls(max_wait=timedelta(0), min_bytes=1, topics=(), forgotten_topics_data=())
    frame = frame_of(body)
    header = decode_request_header(frame)
    bad = _with_tags(frame, len(frame) - 1, b"\x01\x01\x0e" + bytes(14))   # 12 bytes + tags, size 14
    assert decode_fetch_request(15, bad, header.size) is None


def test_null_cluster_id_is_left_to_kio() -> None:
    """kio refuses a null ``cluster_id`` (tag 0), so the fast decoder must not accept one."""
    cls = load_request_schema(ApiKeys.FETCH, 12)
    body = cls(replica_id=-1, max_wait=timedelta(0), min_bytes=1, topics=(), forgotten_topics_data=())
    frame = frame_of(body)
    header = decode_request_header(frame)
    null_tag = _with_tags(frame, len(frame) - 1, b"\x01\x00\x01\x00")
    assert decode_fetch_request(12, null_tag, header.size) is None
    with pytest.raises(InvalidRequestError):
        decode_request_fast(header, null_tag)


def test_versions_outside_4_to_18_stay_on_kio() -> None:
    """v0-v3 (down-conversion) are kio's, and so would be a version newer than the layouts
    written here."""
    cls = load_request_schema(ApiKeys.FETCH, 4)
    body = cls(replica_id=-1, max_wait=timedelta(0), min_bytes=1, max_bytes=1, isolation_level=0, topics=())
    frame = frame_of(body)
    offset = decode_request_header(frame).size
    assert decode_fetch_request(3, frame, offset) is None and decode_fetch_request(19, frame, offset) is None
    assert encode_fetch_body(3, []) is None and encode_fetch_body(19, []) is None


# --- responses -----------------------------------------------------------------------------------

def read_result(rng: random.Random, version: int) -> LogReadResult:
    batch = build_batch([(None, b"v" * rng.randint(0, 200))] * rng.randint(1, 3))
    error = rng.choice([Errors.NONE, Errors.NONE, Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH,
                        Errors.OFFSET_OUT_OF_RANGE, Errors.UNKNOWN_TOPIC_OR_PARTITION])
    return LogReadResult(
        records=rng.choice([b"", batch, batch + batch]), error=error,
        high_watermark=rng.randint(-1, 2**50), last_stable_offset=rng.randint(-1, 2**50),
        log_start_offset=rng.randint(-1, 2**40), log_end_offset=rng.randint(-1, 2**50),
        diverging_epoch=rng.choice([None, None, (-1, -1), (rng.randint(0, 99), rng.randint(0, 2**40))]),
        leader_id=rng.choice([-1, 0, 2]), leader_epoch=rng.choice([-1, 0, 5]),
        aborted_transactions=rng.choice([None, (), tuple(AbortedTxn(rng.randint(0, 2**40), rng.randint(0, 2**40), -1, -1)
                                                         for _ in range(rng.randint(1, 3)))]))


def response_sample(version: int, rng: random.Random, topics: int = 3, partitions: int = 4):
    """(order, results, pre): topics by name or id (some unknown), partitions read or not."""
    order, results, pre = [], {}, {}
    for t in range(rng.randint(0, topics)):
        name = rng.choice([f"topic-{t}", "é" * rng.randint(1, 40)])
        known = rng.random() < 0.8
        key = (uuid.uuid4() if rng.random() < 0.9 else None) if version >= 13 else name
        parts = [rng.randint(0, 2**31 - 1) for _ in range(rng.randint(0, partitions))]
        for idx in parts:
            if not known:
                if rng.random() < 0.5:
                    pre[(key, idx)] = Errors.UNKNOWN_TOPIC_ID
            elif rng.random() < 0.9:
                results[(name, idx)] = read_result(rng, version)
        order.append((key, name if known or version < 13 else None, parts))
    return order, results, pre


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_same_bytes_as_kio(version: int) -> None:
    rng = random.Random(3000 + version)
    for _ in range(60):
        order, results, pre = response_sample(version, rng)
        error = rng.choice([Errors.NONE, Errors.NONE, Errors.UNKNOWN_SERVER_ERROR])
        entity = build_response(version, order, results, pre, error)
        topics = partition_responses(version, order, results, pre)
        assert encode_fetch_body(version, topics, error) == kio_bytes(entity)
        assert error_counts(version, topics, error) == entity_error_counts(entity)


@settings(max_examples=100, deadline=None)
@given(version=st.sampled_from(list(FETCH_VERSIONS)), seed=st.integers(0, 2**32))
def test_same_bytes_as_kio_many_partitions(version: int, seed: int) -> None:
    rng = random.Random(seed)
    order, results, pre = response_sample(version, rng, topics=6, partitions=40)
    entity = build_response(version, order, results, pre)
    assert encode_fetch_body(version, partition_responses(version, order, results, pre)) == kio_bytes(entity)


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_encoded_response_frames_and_decodes_like_the_entity(version: int) -> None:
    """The framed ``EncodedResponse`` is the framed kio entity, and kio reads it back."""
    tp_result = LogReadResult(build_batch([(b"k", b"v")]), Errors.NONE, 1, 1, 0, 1,
                              aborted_transactions=(AbortedTxn(7, 0, 5, 6),))
    fenced = LogReadResult(b"", Errors.FENCED_LEADER_EPOCH, -1, -1, -1, -1, (3, 40), 2, 9)
    key = uuid.uuid4() if version >= 13 else "t"
    order = [(key, "t", [0, 1, 2])]
    results = {("t", 0): tp_result, ("t", 1): fenced}
    topics = partition_responses(version, order, results, {})
    entity = build_response(version, order, results, {})
    data = encode_fetch_body(version, topics)
    framed = encode_response(11, EncodedResponse(data, version >= FIRST_FLEXIBLE, error_counts(version, topics)))
    assert framed == encode_response(11, entity)
    corr, decoded = decode_response(framed[4:], type(entity))
    assert corr == 11 and decoded == entity


def test_leader_hint_only_with_leader_errors() -> None:
    """Kafka's ``KafkaApis.handleFetchRequest`` sends ``current_leader`` with
    NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH only: the leader a successful read carries is
    not sent."""
    read = LogReadResult(b"", Errors.NONE, 5, 5, 0, 5, None, 2, 9)
    hinted = LogReadResult(b"", Errors.NOT_LEADER_OR_FOLLOWER, -1, -1, -1, -1, None, 2, 9)
    order = [(uuid.uuid4(), "t", [0, 1])]
    topics = partition_responses(18, order, {("t", 0): read, ("t", 1): hinted}, {})
    assert [hint for _, _, hint in topics[0][2]] == [False, True]
    entity = build_response(18, order, {("t", 0): read, ("t", 1): hinted}, {})
    assert [p.current_leader.leader_id for p in entity.responses[0].partitions] == [-1, 2]
    assert encode_fetch_body(18, topics) == kio_bytes(entity)


# --- over the wire -------------------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.kafka_cluster(brokers=1, record_requests=True)
def test_real_consumer_fetches_go_through_the_fast_codec(kafka_cluster: Any) -> None:
    """A confluent-kafka (librdkafka) consumer's fetches are decoded and answered by the fast
    codec, and what it reads is what was produced, read_committed included (aborted
    transactions in the answer)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from wire_helpers import unique

    topic = unique("fast-fetch")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
    bs = kafka_cluster.bootstrap_servers
    p = Producer({"bootstrap.servers": bs, "transactional.id": unique("txn")})
    p.init_transactions()
    p.begin_transaction()
    p.produce(topic, b"aborted", partition=0)
    p.flush()   # sent before the abort (which purges what is still queued)
    p.abort_transaction()
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, b"v%d" % i, partition=0)
    p.commit_transaction()
    c = Consumer({"bootstrap.servers": bs, "group.id": unique("g"), "isolation.level": "read_committed",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            got.extend(m.value() for m in c.consume(num_messages=10, timeout=0.2) if m.error() is None)
    finally:
        c.close()
    assert got == [b"v%d" % i for i in range(5)]
    fetches = [r for r in kafka_cluster.requests(api="Fetch") if r.request.topics]
    assert fetches and all(isinstance(r.request, FetchRequestData) for r in fetches)
    assert all(isinstance(r.raw_response, EncodedResponse) for r in fetches)
    aborted = [pr.aborted_transactions for r in fetches for t in r.response.responses for pr in t.partitions
               if pr.aborted_transactions]
    assert aborted, "the aborted transaction was announced to the read_committed consumer"
