"""``emulator.kafka.version``: the broker answers as one Kafka release (3.9, 4.0, 4.1, 4.2).

Ported from Kafka: ``ApiVersionsRequestTest.testApiVersionsRequest`` (the advertised table, per
release, against the ranges in that release's message schemas: the checked-in table
``kafka_emu.common.kafka_release_data``, derived from them by ``scripts/derive_kafka_releases.py``),
``ProcessorTest``'s ``testParseRequestHeaderWithUnsupportedApiVersion``/``WithUnsupportedApi``/
``ForProduceV0ToV2`` (a request the broker does not serve closes the connection, nothing reaches a
handler), and an old client end to end: kafka-python pinned to ``api_version=(0, 10, 0)`` (Produce
v2 with message format v1, Fetch v2, ListOffsets v0, Metadata v1, OffsetCommit v2, OffsetFetch v1,
JoinGroup/SyncGroup v0) works against 3.9 and gets Kafka 4's closed connection otherwise.
"""
from __future__ import annotations

import socket
import struct
import time
from pathlib import Path
from datetime import timedelta
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaConnectionError, KafkaTimeoutError
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kio.index import load_request_schema
from kio.schema.index import api_key_map, schema_name_map

from kafka_emu.broker.apis import APIS
from kafka_emu.broker.apis.api_versions import build_api_versions_response
from kafka_emu.common.kafka_releases import LATEST, RELEASE_NAMES, RELEASES, KafkaRelease
from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.broker.protocol.codec import decode_response, encode_request, encode_response, get_codec
from kafka_emu.broker.protocol.error_response import build_error_response
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from wire_helpers import RawClient, unique

pytestmark = pytest.mark.timeout(90)

# Versions a release serves that the emulator does not implement: (release, api key) -> the
# versions refused (as the release refuses a version it does not know: the connection closes).
# docs/compatibility.md lists each one with its reason.
NOT_IMPLEMENTED: dict[tuple[str, int], tuple[int, ...]] = {
    ("3.9", 27): (0,),                            # WriteTxnMarkers v0: the marker channel sends v1
    ("4.2", 27): (2,),                            # WriteTxnMarkers v2 (KIP-1228 transaction version in markers)
    ("3.9", 24): (4, 5), ("4.0", 24): (4, 5), ("4.1", 24): (4, 5), ("4.2", 24): (4, 5),   # AddPartitionsToTxn
    ("4.2", 8): (10,), ("4.2", 9): (10,),        # OffsetCommit/OffsetFetch v10 (topic ids)
    ("3.9", 29): (0,), ("3.9", 30): (0,), ("3.9", 31): (0,),   # DescribeAcls/CreateAcls/DeleteAcls v0
}


def advertised(release: KafkaRelease) -> dict[int, tuple[int, int]]:
    body = build_api_versions_response(3, 0, release)
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in body.api_keys}


def advertised_over_the_wire(bootstrap: str) -> dict[int, tuple[int, int]]:
    c = RawClient(bootstrap)
    try:
        resp = c.send(load_request_schema(ApiKeys.API_VERSIONS, 3)(client_software_name="t",
                                                                  client_software_version="1"))
    finally:
        c.close()
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}


@pytest.mark.parametrize("name", RELEASE_NAMES)
def test_every_served_range_is_the_release_s_and_every_gap_is_listed(name: str) -> None:
    """Per release: each range ApiVersions lists lies within the release's message schemas'
    (never above, never below), each API of the release the emulator implements is listed, and
    the versions left out are exactly ``NOT_IMPLEMENTED`` (each named in docs/compatibility.md)."""
    release = RELEASES[name]
    listed = advertised(release)
    for key, (low, high) in listed.items():
        theirs = release.api_versions(key)
        assert theirs is not None, f"{APIS[key].name} is not served by Kafka {name}"
        served = APIS[key].versions(release)
        assert (low, high) == (release.advertised_min_version(key, served[0]), served[1]), APIS[key].name
        assert theirs[0] <= served[0] and served[1] <= theirs[1], APIS[key].name
        missing = tuple(v for v in range(theirs[0], theirs[1] + 1) if not served[0] <= v <= served[1])
        assert missing == NOT_IMPLEMENTED.get((name, key), ()), (APIS[key].name, missing)
    for key, spec in APIS.items():
        if release.api_versions(key) is not None:
            assert key in listed, f"Kafka {name} serves {spec.name}"
    assert all(k in listed for (n, k) in NOT_IMPLEMENTED if n == name)


def test_the_gaps_are_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "compatibility.md").read_text()
    for (name, key), versions in NOT_IMPLEMENTED.items():
        label = f"{APIS[key].name} v{versions[0]}" + (f"-v{versions[-1]}" if len(versions) > 1 else "")
        assert label in doc, f"docs/compatibility.md does not name {label} (Kafka {name})"


def test_the_table_is_what_the_sources_say_where_kafka_python_knows_them() -> None:
    """An independent check of the derived table: kafka-python 3.0 records each release's
    ApiVersions as a real broker answered it. The differences are explained: its 3.9 table is a
    ZooKeeper broker's, its 4.0 one 4.0.0's (JoinGroup v0-v1 came back in 4.0.1, KAFKA-19444), and a
    real broker advertises the telemetry APIs only with a telemetry plugin (which the emulator is)."""
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS
    for name in RELEASE_NAMES[1:]:
        release = RELEASES[name]
        theirs = BROKER_API_VERSIONS[tuple(int(p) for p in name.split("."))]
        for key in set(release.apis) - {71, 72}:
            low, high = release.api_versions(key)
            expected = theirs[key]
            if (name, key) == ("4.0", 11):
                expected = (0, expected[1])
            assert (release.advertised_min_version(key, low), high) == expected, (name, key)


@pytest.mark.parametrize("name", RELEASE_NAMES)
def test_kafka_python_infers_the_configured_release(name: str) -> None:
    """kafka-python 3.0's ``infer_broker_version_from_api_versions`` on the advertised table."""
    from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions
    assert infer_broker_version_from_api_versions(advertised(RELEASES[name])) == \
        tuple(int(p) for p in name.split("."))


def test_every_version_served_as_any_release_has_layouts_and_an_error_response() -> None:
    """Each (key, version) a release serves has a request and response layout (kio's, or one of
    ``broker.protocol.legacy_schema``), and the generic error response (handler failures,
    injected errors) encodes and decodes in it."""
    for key, spec in APIS.items():
        versions = {v for r in RELEASES.values() if (served := spec.versions(r)) for v in range(served[0], served[1] + 1)}
        for version in sorted(versions):
            codec = get_codec(key, version)
            assert codec.response_cls.__version__ == version
            resp = build_error_response(key, version, None, Errors.NOT_COORDINATOR)
            assert decode_response(encode_response(3, resp)[4:], type(resp)) == (3, resp)


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        while sock.recv(65536):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def _raw_frame(api_key: int, version: int) -> bytes:
    """A request at (api_key, version): kio's or a legacy class with defaults, else a bare header."""
    try:
        return encode_request(build(get_codec(api_key, version).request_cls), 5)
    except Exception:   # noqa: BLE001 - a key or version nobody can encode: the header alone
        frame = struct.pack(">hhih", api_key, version, 5, -1) + b"\0"
        return struct.pack(">i", len(frame)) + frame


def _unadvertised(release: KafkaRelease) -> list[tuple[int, int]]:
    """Requests the broker does not serve as ``release``: every key kio knows that is not served
    (at its newest version), a version below and above each served range, an unknown key."""
    served = {key: spec.versions(release) for key, spec in APIS.items()}
    out = [(key, max(schema_name_map[name])) for key, name in sorted(api_key_map.items()) if served.get(key) is None]
    for key, versions in served.items():
        if versions is None:
            continue
        low, high = versions
        if key != ApiKeys.API_VERSIONS:   # it answers every version (KIP-511)
            out += [(key, v) for v in (low - 1, high + 1) if v >= 0]
    return out + [(9999, 0)]


def _assert_unadvertised_requests_close(bootstrap: str, release: KafkaRelease) -> None:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    for key, version in _unadvertised(release):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(_raw_frame(key, version))
            assert _closed(s), f"api key {key} v{version} got an answer"


@pytest.mark.kafka_cluster(brokers=1, config={"emulator.kafka.version": "3.9"})
class TestKafka39:
    def test_api_versions_over_the_wire(self, kafka_cluster: Any) -> None:
        assert advertised_over_the_wire(kafka_cluster.bootstrap_servers) == advertised(RELEASES['3.9'])

    def test_kafka_python_0_10_produces_consumes_in_a_group_and_commits(self, kafka_cluster: Any) -> None:
        topic, group = unique("old"), unique("g")
        kafka_cluster.create_topic(topic, partitions=2, replication_factor=1)
        bs = kafka_cluster.bootstrap_servers
        producer = KafkaProducer(bootstrap_servers=bs, api_version=(0, 10, 0), acks="all",
                                 request_timeout_ms=5000, linger_ms=0)
        futures = [producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2) for i in range(10)]
        producer.flush(10)
        metas = [f.get(timeout=5) for f in futures]
        producer.close(timeout=5)
        assert sorted(m.offset for m in metas) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
        consumer = KafkaConsumer(bootstrap_servers=bs, api_version=(0, 10, 0), group_id=group,
                                 auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=50,
                                 session_timeout_ms=6000, heartbeat_interval_ms=200, request_timeout_ms=7000)
        try:
            consumer.subscribe([topic])
            got: list[Any] = []
            deadline = time.monotonic() + 30
            while len(got) < 10 and time.monotonic() < deadline:
                for records in consumer.poll(200).values():
                    got += records
            assert sorted((r.value, r.key) for r in got) == sorted((b"v%d" % i, b"k%d" % i) for i in range(10))
            assert all(r.timestamp > 0 for r in got)   # message format v1 keeps the producer's timestamps
            consumer.commit()
            assert consumer.committed(TopicPartition(topic, 0)) == 5
            assert consumer.committed(TopicPartition(topic, 1)) == 5
            assert consumer.poll(300) == {}   # an empty fetch is empty (KAFKA-13116), not an error
        finally:
            consumer.close()

    def test_list_offsets_v0(self, kafka_cluster: Any) -> None:
        """``handleListOffsetRequestV0``: -2 the log start, -1 the HW (consumers), up to
        max_num_offsets segment offsets newest first; a timestamp below -2 is UNSUPPORTED_VERSION."""
        topic = unique("lo")
        kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
        kafka_cluster.produce(topic, 0, [(None, b"a"), (None, b"b"), (None, b"c")])
        cls = get_codec(ApiKeys.LIST_OFFSETS, 0).request_cls
        topic_cls = item_cls(cls, "topics")
        part_cls = item_cls(topic_cls, "partitions")
        c = RawClient(kafka_cluster.bootstrap_servers)
        try:
            answers = []
            for ts, n in ((-2, 1), (-1, 1), (-1, 5), (-3, 1)):
                req = build(cls, replica_id=-1, topics=(build(topic_cls, name=topic, partitions=(
                    build(part_cls, partition_index=0, timestamp=ts, max_num_offsets=n),)),))
                p = c.send(req).topics[0].partitions[0]
                answers.append((int(p.error_code), tuple(p.old_style_offsets)))
        finally:
            c.close()
        assert answers == [(0, (0,)), (0, (3,)), (0, (3, 0)), (35, ())]

    def test_produce_v2_message_set_is_stored_as_a_v2_batch(self, kafka_cluster: Any) -> None:
        """Kafka 3.x up-converts a v1 message set to message format v2 (KIP-724): a v4 fetch sees
        one v2 batch with the records, keys and timestamps the old producer sent."""
        topic = unique("up")
        kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
        builder = LegacyRecordBatchBuilder(1, 0, 1 << 20)
        for i in range(3):
            builder.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i)
        cls = get_codec(ApiKeys.PRODUCE, 2).request_cls
        td = item_cls(cls, "topic_data")
        pd = item_cls(td, "partition_data")
        c = RawClient(kafka_cluster.bootstrap_servers)
        try:
            resp = c.send(build(cls, acks=-1, timeout=timedelta(seconds=5), topic_data=(
                build(td, name=topic, partition_data=(build(pd, index=0, records=bytes(builder.build())),)),)))
        finally:
            c.close()
        part = resp.responses[0].partition_responses[0]
        assert (int(part.error_code), int(part.base_offset)) == (0, 0)
        stored = bytes(kafka_cluster.fetch(topic, 0, 0).records)
        assert stored[16] == 2 and struct.unpack_from(">i", stored, 57)[0] == 3   # one v2 batch, 3 records
        assert struct.unpack_from(">qq", stored, 27) == (1_700_000_000_000, 1_700_000_000_002)
        assert kafka_cluster.read_all(topic, 0) == [(i, b"k%d" % i, b"v%d" % i) for i in range(3)]

    def test_old_offset_commit_and_fetch(self, kafka_cluster: Any) -> None:
        """OffsetCommit v1 commits with the request's commit timestamp; v0 commits and v0
        fetches, which Kafka 3.9 kept in ZooKeeper, get a KRaft 3.9 broker's
        UNSUPPORTED_VERSION on every partition (unknown topics alone: UNKNOWN_TOPIC_OR_PARTITION)."""
        topic, group = unique("oc"), unique("g")
        kafka_cluster.create_topic(topic, partitions=2, replication_factor=1)
        c = RawClient(kafka_cluster.bootstrap_servers)
        try:
            def commit(version: int, topic_name: str, **extra: Any) -> list[int]:
                cls = get_codec(ApiKeys.OFFSET_COMMIT, version).request_cls
                t_cls = item_cls(cls, "topics")
                p_cls = item_cls(t_cls, "partitions")
                parts = tuple(build(p_cls, partition_index=i, committed_offset=7, commit_timestamp=1234,
                                    committed_metadata="m") for i in range(2))
                resp = c.send(build(cls, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                    topics=(build(t_cls, name=topic_name, partitions=parts),), **extra))
                return [int(p.error_code) for t in resp.topics for p in t.partitions]

            assert commit(0, topic) == [35, 35]
            assert commit(0, unique("missing")) == [3, 3]
            assert commit(1, topic) == [0, 0]
            fetch_cls = get_codec(ApiKeys.OFFSET_FETCH, 0).request_cls
            ft_cls = item_cls(fetch_cls, "topics")
            resp = c.send(build(fetch_cls, group_id=group, topics=(build(ft_cls, name=topic, partition_indexes=(0, 1)),)))
            assert [(int(p.error_code), int(p.committed_offset), p.metadata) for p in resp.topics[0].partitions] == \
                [(35, -1, "")] * 2
            v1_cls = get_codec(ApiKeys.OFFSET_FETCH, 1).request_cls
            v1 = c.send(build(v1_cls, group_id=group, topics=(
                build(item_cls(v1_cls, "topics"), name=topic, partition_indexes=(0,)),)))
            assert (int(v1.topics[0].partitions[0].committed_offset), v1.topics[0].partitions[0].metadata) == (7, "m")
        finally:
            c.close()

    def test_old_admin_versions(self, kafka_cluster: Any) -> None:
        """CreateTopics v0 (no validate_only, no error message), DeleteTopics v0 (no throttle
        time) and DescribeConfigs v0 (is_default, which Kafka's broker leaves false)."""
        topic = unique("adm")
        c = RawClient(kafka_cluster.bootstrap_servers)
        try:
            ct = get_codec(ApiKeys.CREATE_TOPICS, 0).request_cls
            ct_topic = item_cls(ct, "topics")
            resp = c.send(build(ct, timeout=timedelta(seconds=5), topics=(
                build(ct_topic, name=topic, num_partitions=1, replication_factor=1, assignments=(), configs=()),)))
            assert [(r.name, int(r.error_code)) for r in resp.topics] == [(topic, 0)]
            dc = get_codec(ApiKeys.DESCRIBE_CONFIGS, 0).request_cls
            res = c.send(build(dc, resources=(build(item_cls(dc, "resources"), resource_type=2, resource_name=topic,
                                                    configuration_keys=("cleanup.policy",)),)))
            entry = res.results[0].configs[0]
            assert (entry.name, entry.value, entry.is_default, entry.read_only) == ("cleanup.policy", "delete", False, False)
            dt = get_codec(ApiKeys.DELETE_TOPICS, 0).request_cls
            resp = c.send(build(dt, topic_names=(topic, unique("missing")), timeout=timedelta(seconds=5)))
            assert [int(r.error_code) for r in resp.responses] == [0, 3]
        finally:
            c.close()

    def test_offset_for_leader_epoch_v0(self, kafka_cluster: Any) -> None:
        """v0 (no current leader epoch, no epoch in the answer): the latest epoch ends at the LEO."""
        topic = unique("ep")
        kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
        kafka_cluster.produce(topic, 0, [(None, b"a"), (None, b"b")])
        cls = get_codec(ApiKeys.OFFSET_FOR_LEADER_EPOCH, 0).request_cls
        t_cls = item_cls(cls, "topics")
        c = RawClient(kafka_cluster.bootstrap_servers)
        try:
            resp = c.send(build(cls, topics=(build(t_cls, topic=topic, partitions=(
                build(item_cls(t_cls, "partitions"), partition=0, leader_epoch=0),)),)))
        finally:
            c.close()
        p = resp.topics[0].partitions[0]
        assert (int(p.error_code), int(p.end_offset)) == (0, 2) and not hasattr(p, "leader_epoch")

    def test_requests_outside_the_3_9_table_close_the_connection(self, kafka_cluster: Any) -> None:
        _assert_unadvertised_requests_close(kafka_cluster.bootstrap_servers, RELEASES['3.9'])


@pytest.mark.kafka_cluster(brokers=1)
class TestKafka4:
    def test_api_versions_over_the_wire(self, kafka_cluster: Any) -> None:
        assert advertised_over_the_wire(kafka_cluster.bootstrap_servers) == advertised(RELEASES[LATEST])

    def test_kafka_python_0_10_gets_kafka_4s_closed_connection(self, kafka_cluster: Any) -> None:
        """Produce v2 is advertised (from v0) but not served: the connection closes and the old
        producer fails its send, as against Kafka 4.0."""
        topic = unique("old")
        kafka_cluster.create_topic(topic, partitions=1, replication_factor=1)
        producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers, api_version=(0, 10, 0),
                                 acks=1, retries=0, request_timeout_ms=3000, max_block_ms=3000,
                                 reconnect_backoff_ms=50)
        try:
            future = producer.send(topic, b"v")
            producer.flush(5)
            with pytest.raises((KafkaConnectionError, KafkaTimeoutError)):
                future.get(timeout=5)
        finally:
            producer.close(timeout=1)

    @pytest.mark.parametrize("api_key,version", [(0, 2), (0, 0), (1, 3), (2, 0), (8, 1), (19, 1)])
    def test_versions_kafka_4_removed_close_the_connection(self, kafka_cluster: Any, api_key: int,
                                                           version: int) -> None:
        """``ProcessorTest.testParseRequestHeaderForProduceV0ToV2`` and KIP-896's other removals:
        a well-formed request at a removed version gets no answer, the connection closes."""
        host, port = kafka_cluster.bootstrap_servers.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(_raw_frame(api_key, version))
            assert _closed(s)

    def test_requests_outside_the_4_table_close_the_connection(self, kafka_cluster: Any) -> None:
        """``ProcessorTest.testParseRequestHeaderWithUnsupportedApi``/``...ApiVersion``: every
        key the broker does not declare, and every version outside a declared range."""
        _assert_unadvertised_requests_close(kafka_cluster.bootstrap_servers, RELEASES[LATEST])

    def test_old_api_versions_request_gets_the_v0_error_reply(self, kafka_cluster: Any) -> None:
        """KIP-511, unchanged by the mode: an ApiVersions version above 4 is answered in v0 form."""
        host, port = kafka_cluster.bootstrap_servers.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            frame = struct.pack(">hhih", 18, 9, 6, -1) + b"\x00"
            s.sendall(struct.pack(">i", len(frame)) + frame)
            s.settimeout(5)
            data = s.recv(1024)
        assert struct.unpack_from(">iih", data)[1:] == (6, 35)


def test_generic_error_response_answers_every_add_partitions_to_txn_item() -> None:
    """The generic error response (a handler failure, an injected error) mirrors AddPartitionsToTxn
    v0-v3's topics and partitions; it used to answer with an empty results list, so a client saw
    no error at all."""
    cls = load_request_schema(ApiKeys.ADD_PARTITIONS_TO_TXN, 3)
    topic_cls = item_cls(cls, "v3_and_below_topics")
    body = build(cls, v3_and_below_transactional_id="t", v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
                 v3_and_below_topics=(build(topic_cls, name="a", partitions=(0, 2)),))
    resp = build_error_response(ApiKeys.ADD_PARTITIONS_TO_TXN, 3, body, Errors.NOT_COORDINATOR)
    assert [(t.name, [(int(p.partition_index), int(p.partition_error_code)) for p in t.results_by_partition])
            for t in resp.results_by_topic_v3_and_below] == [("a", [(0, 16), (2, 16)])]
