"""Client quotas over the wire: AlterClientQuotas/DescribeClientQuotas (Kafka's
ClientQuotasRequestTest ported), kafka-python's admin client, and real clients held to their
quotas (confluent-kafka's throttle_cb and statistics), with the KIP-219 mute observable.

The cluster runs two quota samples of one second (``quota.window.num=2``), so a client's rate is
measured over 1-2 s and each throughput test needs about 2 s of traffic.
"""
from __future__ import annotations

import json
import socket
import time
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaAdminClient
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kio.index import load_request_schema

from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.protocol.codec import decode_response, encode_request
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.common.errors import Errors

from test_network import recv_frame
from wire_helpers import RawClient, unique

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.kafka_cluster(brokers=1, config={"quota.window.num": 2, "quota.window.size.seconds": 1,
                                                           "controller.quota.window.num": 2})]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


@pytest.fixture(autouse=True)
def clean(kafka_cluster: Any) -> None:
    kafka_cluster.reset()


@pytest.fixture
def raw(kafka_cluster: Any) -> Any:
    client = RawClient(kafka_cluster.bootstrap_servers)
    yield client
    client.close()


def alter(raw: Any, entries: list[tuple[dict[str, str | None], dict[str, float | None]]], validate_only: bool = False,
          version: int = 1) -> dict[tuple, tuple[int, str | None]]:
    """AlterClientQuotas: entity -> (error code, message)."""
    cls = load_request_schema(49, version)
    entry_cls = item_cls(cls, "entries")
    entity_cls, op_cls = item_cls(entry_cls, "entity"), item_cls(entry_cls, "ops")
    body = build(cls, validate_only=validate_only, entries=tuple(
        build(entry_cls, entity=tuple(build(entity_cls, entity_type=t, entity_name=n) for t, n in entity.items()),
              ops=tuple(build(op_cls, key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()))
        for entity, ops in entries))
    response = raw.send(body)
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): (entry.error_code, entry.error_message)
            for entry in response.entries}


def alter_one(raw: Any, entity: dict[str, str | None], ops: dict[str, float | None], validate_only: bool = False
              ) -> tuple[int, str | None]:
    [result] = alter(raw, [(entity, ops)], validate_only).values()
    return result


def describe(raw: Any, components: list[tuple[str, int, str | None]], strict: bool, version: int = 1
             ) -> tuple[int, str | None, dict[tuple, dict[str, float]]]:
    cls = load_request_schema(48, version)
    component_cls = item_cls(cls, "components")
    response = raw.send(build(cls, strict=strict, components=tuple(
        build(component_cls, entity_type=t, match_type=m, match=n) for t, m, n in components)))
    entries = {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)):
               {v.key: float(v.value) for v in entry.values} for entry in (response.entries or ())}
    return response.error_code, response.error_message, entries


def describe_entity(raw: Any, entity: dict[str, str | None]) -> dict[str, float]:
    """ClientQuotasRequestTest.verifyDescribeEntityQuotas: a strict filter naming the entity."""
    code, _, entries = describe(raw, [(t, EXACT if n is not None else DEFAULT, n) for t, n in entity.items()], True)
    assert code == Errors.NONE
    assert len(entries) <= 1
    return next(iter(entries.values()), {})


# ---------------------------------------------------------------- ClientQuotasRequestTest
@pytest.mark.parametrize("version", [0, 1])
def test_alter_client_quotas_request(raw: Any, version: int) -> None:
    """testAlterClientQuotasRequest: add, update, remove, remove a missing key, add back, mixed."""
    entity = {USER: "user", CLIENT_ID: "client-id"}
    assert describe_entity(raw, entity) == {}
    steps = [({"producer_byte_rate": 10000.0, "consumer_byte_rate": 20000.0},
              {"producer_byte_rate": 10000.0, "consumer_byte_rate": 20000.0}),
             ({"producer_byte_rate": 15000.0}, {"producer_byte_rate": 15000.0, "consumer_byte_rate": 20000.0}),
             ({"producer_byte_rate": None}, {"consumer_byte_rate": 20000.0}),
             ({"request_percentage": None}, {"consumer_byte_rate": 20000.0}),
             ({"producer_byte_rate": 5000.0}, {"producer_byte_rate": 5000.0, "consumer_byte_rate": 20000.0}),
             ({"producer_byte_rate": 20000.0, "consumer_byte_rate": None, "request_percentage": 12.3},
              {"producer_byte_rate": 20000.0, "request_percentage": 12.3})]
    for ops, expected in steps:
        assert alter(raw, [(entity, ops)], version=version) == {tuple(sorted(entity.items())): (Errors.NONE, None)}
        assert describe_entity(raw, entity) == expected


def test_alter_client_quotas_request_validate_only(raw: Any) -> None:
    entity = {USER: "user"}
    assert alter_one(raw, entity, {"producer_byte_rate": 20000.0, "request_percentage": 23.45})[0] == Errors.NONE
    expected = {"producer_byte_rate": 20000.0, "request_percentage": 23.45}
    for ops in ({"consumer_byte_rate": 50000.0}, {"producer_byte_rate": 10000.0}, {"request_percentage": None},
                {"producer_byte_rate": 10000.0, "consumer_byte_rate": 50000.0, "request_percentage": None}):
        assert alter_one(raw, entity, ops, validate_only=True)[0] == Errors.NONE
        assert describe_entity(raw, entity) == expected


@pytest.mark.parametrize("entity, ops", [
    ({USER: ""}, {"request_percentage": 12.34}),
    ({CLIENT_ID: ""}, {"request_percentage": 12.34}),
    ({"": "name"}, {"request_percentage": 12.34}),
    ({}, {"producer_byte_rate": 10000.5}),
    ({USER: "user"}, {"bad": 1.0}),
    ({USER: "user"}, {"producer_byte_rate": 10000.5}),
    ({USER: "user"}, {"consumer_byte_rate": 0.0}),
])
def test_alter_client_quotas_invalid_requests(raw: Any, entity: dict, ops: dict) -> None:
    """testAlterClientQuotasInvalidRequests: INVALID_REQUEST, nothing stored."""
    code, message = alter_one(raw, entity, ops, validate_only=True)
    assert code == Errors.INVALID_REQUEST and message


def test_alter_client_quotas_invalid_entity_combination(raw: Any) -> None:
    for entity in ({USER: "user", IP: "1.2.3.4"}, {CLIENT_ID: "client", IP: "1.2.3.4"}):
        code, message = alter_one(raw, entity, {"request_percentage": 12.34}, validate_only=True)
        assert code == Errors.INVALID_REQUEST and "Invalid quota entity combination" in message


def test_ip_quotas_are_refused_by_name(raw: Any) -> None:
    """Difference from Kafka (testAlterIpQuotasRequest): the emulator has no connection-rate
    limits, so an IP quota is refused rather than stored and not enforced."""
    code, message = alter_one(raw, {IP: "1.2.3.4"}, {"connection_creation_rate": 100.0})
    assert code == Errors.INVALID_REQUEST and "connection_creation_rate" in message
    assert describe(raw, [(IP, SPECIFIED, None)], False)[2] == {}


def test_describe_client_quotas_invalid_filter_combination(raw: Any) -> None:
    for other in (USER, CLIENT_ID):
        code, message, entries = describe(raw, [(IP, SPECIFIED, None), (other, SPECIFIED, None)], False)
        assert code == Errors.INVALID_REQUEST and "Invalid entity filter component combination" in message
        assert entries == {}


def test_client_quotas_unsupported_entity_types(raw: Any) -> None:
    code, message, _ = describe(raw, [("other", EXACT, "name")], True)
    assert code == Errors.UNSUPPORTED_VERSION and "other" in message


MATCH_ENTITIES = [
    ({USER: "user-1", CLIENT_ID: "client-id-1"}, 50.50), ({USER: "user-2", CLIENT_ID: "client-id-1"}, 51.51),
    ({USER: "user-3", CLIENT_ID: "client-id-2"}, 52.52), ({USER: None, CLIENT_ID: "client-id-1"}, 53.53),
    ({USER: "user-1", CLIENT_ID: None}, 54.54), ({USER: "user-3", CLIENT_ID: None}, 55.55),
    ({USER: "user-1"}, 56.56), ({USER: "user-2"}, 57.57), ({USER: "user-3"}, 58.58), ({USER: None}, 59.59),
    ({CLIENT_ID: "client-id-2"}, 60.60),
]


def _key(entity: dict[str, str | None]) -> tuple:
    return tuple(sorted(entity.items()))


def test_describe_client_quotas_match_exact(raw: Any) -> None:
    """testDescribeClientQuotasMatchExact (without its IP entities)."""
    results = alter(raw, [(e, {"request_percentage": v}) for e, v in MATCH_ENTITIES])
    assert set(results.values()) == {(Errors.NONE, None)}
    for entity, value in MATCH_ENTITIES:
        assert describe_entity(raw, entity) == {"request_percentage": value}
    for entity in ({USER: "user-1", CLIENT_ID: "client-id-2"}, {USER: "user-3", CLIENT_ID: "client-id-1"},
                   {USER: "user-2", CLIENT_ID: None}, {USER: "user-4"}, {USER: None, CLIENT_ID: "client-id-2"},
                   {CLIENT_ID: "client-id-1"}, {CLIENT_ID: "client-id-3"}):
        assert describe_entity(raw, entity) == {}


@pytest.mark.parametrize("components, strict, expected", [
    ([(USER, EXACT, "user-1")], False, lambda e: e.get(USER, "-") == "user-1"),
    ([(USER, EXACT, "unknown")], False, lambda e: False),
    ([(CLIENT_ID, EXACT, "client-id-2")], False, lambda e: e.get(CLIENT_ID, "-") == "client-id-2"),
    ([(USER, DEFAULT, None)], False, lambda e: USER in e and e[USER] is None),
    ([(USER, EXACT, "user-2")], True, lambda e: e.get(USER, "-") == "user-2" and CLIENT_ID not in e),
    ([(CLIENT_ID, EXACT, "client-id-1")], True, lambda e: False),
    ([(USER, SPECIFIED, None)], True, lambda e: USER in e and CLIENT_ID not in e),
    ([(USER, SPECIFIED, None)], False, lambda e: USER in e),
    ([(CLIENT_ID, SPECIFIED, None)], True, lambda e: CLIENT_ID in e and USER not in e),
    ([(CLIENT_ID, SPECIFIED, None)], False, lambda e: CLIENT_ID in e),
    ([], False, lambda e: True),
    ([], True, lambda e: False),
])
def test_describe_client_quotas_match_partial(raw: Any, components: list, strict: bool, expected: Any) -> None:
    """testDescribeClientQuotasMatchPartial (without its IP entities)."""
    alter(raw, [(e, {"request_percentage": v}) for e, v in MATCH_ENTITIES])
    code, _, entries = describe(raw, components, strict)
    assert code == Errors.NONE
    assert entries == {_key(e): {"request_percentage": v} for e, v in MATCH_ENTITIES if expected(e)}


def test_client_quotas_sanitized_and_default_name(raw: Any) -> None:
    """testClientQuotasSanitized and testClientQuotasWithDefaultName: a name with spaces, and a
    client id spelt like the default, are names like any other."""
    assert alter_one(raw, {USER: "user with spaces"}, {"producer_byte_rate": 20000.0})[0] == Errors.NONE
    assert describe_entity(raw, {USER: "user with spaces"}) == {"producer_byte_rate": 20000.0}
    assert alter_one(raw, {CLIENT_ID: "<default>"}, {"producer_byte_rate": 20000.0})[0] == Errors.NONE
    assert describe_entity(raw, {CLIENT_ID: "<default>"}) == {"producer_byte_rate": 20000.0}
    assert describe(raw, [(CLIENT_ID, DEFAULT, None)], True)[2] == {}


def test_duplicate_entity_in_one_request(raw: Any) -> None:
    """ClientQuotaControlManager: the same entity twice is answered once, with the error."""
    results = alter(raw, [({USER: "u"}, {"producer_byte_rate": 1000.0}), ({USER: "u"}, {"consumer_byte_rate": 1000.0})])
    [(code, message)] = results.values()
    assert code == Errors.INVALID_REQUEST and "Ignoring duplicate entity" in message


# ---------------------------------------------------------------- kafka-python's admin client
def test_kafka_python_admin_sets_and_reads_quotas(kafka_cluster: Any) -> None:
    """kafka-python 3.0's admin client has no quota methods; its AlterClientQuotas and
    DescribeClientQuotas messages go through the admin client's own connection, as its methods'
    requests do."""
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap_servers)
    try:
        send = lambda request: admin._manager.run(admin._manager.send, request)   # noqa: E731
        altered = send(AlterClientQuotasRequest(validate_only=False, entries=[
            ([(USER, "alice")], [("producer_byte_rate", 1024.0, False), ("request_percentage", 50.0, False)]),
            ([(CLIENT_ID, None)], [("consumer_byte_rate", 2048.0, False)])]))
        assert [e.error_code for e in altered.entries] == [0, 0]
        described = send(DescribeClientQuotasRequest(components=[(USER, EXACT, "alice")], strict=False))
        assert described.error_code == 0
        [entry] = described.entries
        assert [(e.entity_type, e.entity_name) for e in entry.entity] == [(USER, "alice")]
        assert {v.key: v.value for v in entry.values} == {"producer_byte_rate": 1024.0, "request_percentage": 50.0}
        defaults = send(DescribeClientQuotasRequest(components=[(CLIENT_ID, DEFAULT, None)], strict=True))
        assert [{v.key: v.value for v in e.values} for e in defaults.entries] == [{"consumer_byte_rate": 2048.0}]
    finally:
        admin.close()
    # every broker applies them: this one's produce manager knows alice's quota
    quotas = kafka_cluster.broker(0).quotas
    assert quotas.produce.quota("alice", "any") == 1024.0 and quotas.fetch.quota("bob", "c") == 2048.0


# ---------------------------------------------------------------- real clients held to their quotas
QUOTA_WINDOW_S = 2.0   # quota.window.num * quota.window.size.seconds


def _rate_over_quota_window(events: list[tuple[float, int]]) -> float:
    """Bytes per second over the first quota window from the start: what Kafka's sampled rate
    holds to the quota (a client may send a window's worth at once, then waits it out)."""
    return sum(n for t, n in events if t < QUOTA_WINDOW_S) / QUOTA_WINDOW_S


def test_producer_is_held_to_its_producer_byte_rate(kafka_cluster: Any, raw: Any) -> None:
    """A confluent-kafka producer writing flat out under producer_byte_rate: the bytes it gets
    acknowledged per second over the quota window stay within 10 % of the quota, and librdkafka
    reports the throttling (throttle_cb and its statistics)."""
    topic = unique("quota-produce")
    kafka_cluster.create_topic(topic, 1, 1)
    quota = 200_000.0
    assert alter_one(raw, {CLIENT_ID: "quota-producer"}, {"producer_byte_rate": quota})[0] == Errors.NONE
    throttles: list[float] = []
    stats: list[dict] = []
    acked: list[tuple[float, int]] = []
    t0 = time.monotonic()
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "client.id": "quota-producer",
                         "acks": 1, "linger.ms": 1, "batch.size": 16_384, "statistics.interval.ms": 500,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time),
                         "stats_cb": lambda data: stats.append(json.loads(data)), "log_level": 0})
    value = b"q" * 1000

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.append((time.monotonic() - t0, len(msg.value())))

    while time.monotonic() - t0 < QUOTA_WINDOW_S + 0.1:
        try:
            producer.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.purge()
    producer.flush(5)
    rate = _rate_over_quota_window(acked)
    assert 0.9 * quota <= rate <= 1.1 * quota, rate
    assert throttles and max(throttles) > 0
    assert any(b.get("throttle", {}).get("max", 0) > 0 for s in stats for b in s["brokers"].values())


def test_consumer_is_held_to_its_consumer_byte_rate(kafka_cluster: Any, raw: Any) -> None:
    """A confluent-kafka consumer reading a backlog under consumer_byte_rate: the bytes it
    receives per second over the quota window stay within 10 % of the quota, with throttle_cb
    called."""
    topic = unique("quota-fetch")
    kafka_cluster.create_topic(topic, 1, 1)
    batch = [(None, b"c" * 1000)] * 25
    for _ in range(80):   # 2 MB backlog, more than a quota window's worth
        kafka_cluster.produce(topic, 0, batch, acks=1)
    quota = 400_000.0
    assert alter_one(raw, {CLIENT_ID: "quota-consumer"}, {"consumer_byte_rate": quota})[0] == Errors.NONE
    throttles: list[float] = []
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "client.id": "quota-consumer",
                         "group.id": unique("g"), "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.max.bytes": 65_536, "max.partition.fetch.bytes": 65_536, "message.max.bytes": 65_536,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time), "log_level": 0})
    consumer.subscribe([topic])
    received: list[tuple[float, int]] = []
    t0 = None
    try:
        while t0 is None or time.monotonic() - t0 < QUOTA_WINDOW_S + 0.1:
            for msg in consumer.consume(500, 0.05):
                if msg.error() is None:
                    if t0 is None:
                        t0 = time.monotonic()
                    received.append((time.monotonic() - t0, len(msg.value())))
    finally:
        consumer.close()
    rate = _rate_over_quota_window(received)
    assert 0.9 * quota <= rate <= 1.1 * quota, rate
    assert throttles and max(throttles) > 0


def test_throttled_connection_is_muted_for_the_throttle_time(kafka_cluster: Any, raw: Any) -> None:
    """KIP-219: the throttled response comes at once with its throttle_time_ms; the next request
    on that connection is not read before that time has passed; another connection of another
    client is not held up meanwhile."""
    topic = unique("quota-mute")
    kafka_cluster.create_topic(topic, 1, 1)
    assert alter_one(raw, {CLIENT_ID: "muted"}, {"producer_byte_rate": 10_000.0})[0] == Errors.NONE
    host, port = kafka_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    cls = load_request_schema(0, 9)
    topic_cls = item_cls(cls, "topic_data")
    part_cls = item_cls(topic_cls, "partition_data")
    records = build_batch([(None, b"m" * 13_000)], timestamp_ms=int(time.time() * 1000))
    body = build(cls, transactional_id=None, acks=1, timeout=timedelta(seconds=5),
                 topic_data=(build(topic_cls, name=topic, partition_data=(build(part_cls, index=0, records=records),)),))
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request(body, 1, client_id="muted") + encode_request(body, 2, client_id="muted"))
        first = _response(sock, cls)
        answered_first = time.monotonic()
        throttle_ms = first.throttle_time // timedelta(milliseconds=1)
        assert throttle_ms >= 200 and first.responses[0].partition_responses[0].error_code == Errors.NONE
        other = RawClient(kafka_cluster.bootstrap_servers)   # another client meanwhile: not held up
        try:
            sent = time.monotonic()
            other.send(load_request_schema(18, 3)(client_software_name="t", client_software_version="1"))
            assert time.monotonic() - sent < throttle_ms / 2000
        finally:
            other.close()
        second = _response(sock, cls)
        assert time.monotonic() - answered_first >= 0.9 * throttle_ms / 1000
        assert second.throttle_time > timedelta(0)


def _response(sock: socket.socket, request_cls: type) -> Any:
    return decode_response(recv_frame(sock), response_schema(request_cls.__api_key__, request_cls.__version__))[1]


def test_controller_mutation_quota_refuses_topic_creation(kafka_cluster: Any, raw: Any) -> None:
    """KIP-599 over the wire, controller_mutation_rate 2 with a burst of 2 * 2 samples * 1 s = 4
    partitions: CreateTopics v7 creates a 4-partition topic (the bucket at 0) and, the bucket not
    yet negative, a second one (-4); the third is refused with THROTTLING_QUOTA_EXCEEDED and the
    time to refill the bucket (2 s), and so is DeleteTopics v6 of the first."""
    assert alter_one(raw, {CLIENT_ID: "kafka-emu"}, {"controller_mutation_rate": 2.0})[0] == Errors.NONE
    cls = load_request_schema(19, 7)
    topic_cls = item_cls(cls, "topics")
    names = [unique("mut") for _ in range(3)]

    def create(name: str) -> Any:
        return raw.send(build(cls, topics=(build(topic_cls, name=name, num_partitions=4, replication_factor=1,
                                                  assignments=(), configs=()),),
                              timeout=timedelta(seconds=5), validate_only=False))

    assert [create(n).topics[0].error_code for n in names[:2]] == [Errors.NONE, Errors.NONE]
    refused = create(names[2])
    assert refused.topics[0].error_code == Errors.THROTTLING_QUOTA_EXCEEDED
    assert timedelta(milliseconds=1500) < refused.throttle_time <= timedelta(seconds=2)
    assert kafka_cluster.metadata.topic(names[2]) is None
    # this connection is muted for the throttle time: the same client id on another one
    other = RawClient(kafka_cluster.bootstrap_servers)
    try:
        delete_cls = load_request_schema(20, 6)
        deleted = other.send(build(delete_cls, topics=(build(item_cls(delete_cls, "topics"), name=names[0],
                                                             topic_id=None),), timeout=timedelta(seconds=5)))
    finally:
        other.close()
    assert deleted.responses[0].error_code == Errors.THROTTLING_QUOTA_EXCEEDED
    assert kafka_cluster.metadata.topic(names[0]) is not None


def test_controller_mutation_quota_counts_manual_assignments(kafka_cluster: Any, raw: Any) -> None:
    """KIP-599 with explicit replica assignments (Kafka's ``ReplicationControlManager.createTopic``
    takes the assignment's partition count from the quota once it is valid): an invalid
    assignment takes nothing; a valid one of 6 partitions empties the 4-partition bucket, so the
    next topic is refused."""
    assert alter_one(raw, {CLIENT_ID: "manual"}, {"controller_mutation_rate": 2.0})[0] == Errors.NONE
    creator = RawClient(kafka_cluster.bootstrap_servers, client_id="manual")
    cls = load_request_schema(19, 7)
    topic_cls = item_cls(cls, "topics")
    assignment_cls = item_cls(topic_cls, "assignments")

    def create(name: str, replicas: list[list[int]]) -> int:
        topic = build(topic_cls, name=name, num_partitions=-1 if replicas else 1, replication_factor=-1 if replicas else 1,
                      assignments=tuple(build(assignment_cls, partition_index=p, broker_ids=tuple(r))
                                        for p, r in enumerate(replicas)), configs=())
        return creator.send(build(cls, topics=(topic,), timeout=timedelta(seconds=5), validate_only=False)
                            ).topics[0].error_code

    try:
        assert create(unique("bad"), [[7]] * 6) == Errors.INVALID_REPLICA_ASSIGNMENT   # no broker 7
        assert create(unique("manual"), [[0]] * 6) == Errors.NONE
        assert create(unique("next"), []) == Errors.THROTTLING_QUOTA_EXCEEDED
    finally:
        creator.close()


def test_quotas_are_keyed_by_the_authenticated_user() -> None:
    """On a SASL listener the quota's user is the request's principal (Kafka's
    ``Session.sanitizedUser``): alice, with a producer_byte_rate, is throttled; bob, sending the
    same, is not."""
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    config = {"quota.window.num": 2, "quota.window.size.seconds": 1}
    with EmbeddedCluster(brokers=1, security="SASL_PLAINTEXT", config=config) as cluster:
        topic = unique("quota-user")
        cluster.create_topic(topic, 1, 1)
        cluster.metadata.alter_client_quotas([([(USER, "alice")], [("producer_byte_rate", 20_000.0)])])
        value = b"u" * 1000
        seen: dict[str, list[float]] = {}
        for user in ("alice", "bob"):
            throttles = seen.setdefault(user, [])
            producer = Producer({**cluster.client_config(user, mechanism="PLAIN"), "acks": 1, "linger.ms": 5,
                                 "throttle_cb": lambda event, t=throttles: t.append(event.throttle_time),
                                 "log_level": 0})
            for _ in range(100):   # 100 KB at once: five times alice's rate over her 2 s window
                producer.produce(topic, value)
            deadline = time.monotonic() + 5
            while producer.flush(0.1) and not (user == "alice" and throttles) and time.monotonic() < deadline:
                pass
            producer.purge()
            producer.flush(0)
        assert seen["alice"] and max(seen["alice"]) > 0, seen
        assert max(seen["bob"], default=0) == 0, seen
