"""The consumer group protocol (KIP-848) with real clients: confluent-kafka 2.16
(``group.protocol=consumer``) and kafka-python 3 (classic members) against 3 brokers,
replication factor 3, and the protocol's wire answers (ports of Kafka's
ConsumerGroupHeartbeatRequestTest and ConsumerGroupDescribeRequestTest).

The cluster's consumer-group session timeout and heartbeat interval are lowered (2 s, 200 ms)
so that a killed member's partitions move within seconds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer

from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.records import partition_for

from wire_helpers import RawClient, unique, wait_until

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.kafka_cluster(brokers=3, record_requests=True, config={
                  "group.consumer.min.session.timeout.ms": 500, "group.consumer.session.timeout.ms": 2000,
                  "group.consumer.min.heartbeat.interval.ms": 50, "group.consumer.heartbeat.interval.ms": 200,
                  "group.min.session.timeout.ms": 500})]


def consumer(bs: str, group: str, **extra: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                     "topic.metadata.refresh.interval.ms": 500, "reconnect.backoff.ms": 20,
                     "retry.backoff.ms": 20, **extra})


def produce(bs: str, topic: str, values: range, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 1})
    for v in values:
        p.produce(topic, str(v).encode(), partition=v % partitions)
    assert p.flush(20) == 0


def coordinator_of(cluster: Any, group: str) -> int:
    num = cluster.broker_config(0)["offsets.topic.num.partitions"]
    return cluster.leader_of("__consumer_offsets", partition_for(group, num))


def describe(cluster: Any, group: str) -> Any:
    return cluster.broker(coordinator_of(cluster, group)).group_coordinator.handle_consumer_group_describe([group])[0]


class Reader:
    """Consumers polled in turn on one thread; each record is committed (synchronously) right
    after it is read; ``reads`` keeps every (value, committed?)."""

    def __init__(self) -> None:
        self.consumers: dict[str, Any] = {}
        self.reads: list[tuple[int, bool]] = []

    def poll_all(self, seconds: float, until: Any = None) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until()):
            for c in list(self.consumers.values()):
                m = c.poll(0.05)
                if m is None or m.error():
                    continue
                try:
                    c.commit(message=m, asynchronous=False)
                    ok = True
                except Exception:
                    ok = False
                self.reads.append((int(m.value()), ok))

    def values(self) -> set[int]:
        return {v for v, _ in self.reads}


def check_exactly(reads: list[tuple[int, bool]], expected: set[int]) -> None:
    """Everything was read, and nothing was read again once its commit had succeeded."""
    got = {v for v, _ in reads}
    assert got == expected, f"missing {sorted(expected - got)[:10]}"
    committed: set[int] = set()
    for v, ok in reads:
        assert v not in committed, f"{v} read again after its commit"
        if ok:
            committed.add(v)


def test_reads_exactly_what_was_produced_with_commits(kafka_cluster: Any) -> None:
    """Two consumer-protocol members share a 6-partition topic: every record is read once and
    the committed offsets end at the log end."""
    topic, group = unique("cp-exact"), unique("g-exact")
    kafka_cluster.create_topic(topic, 6, 3)
    bs = kafka_cluster.bootstrap_servers
    produce(bs, topic, range(300), 6)
    r = Reader()
    for name in ("a", "b"):
        r.consumers[name] = consumer(bs, group)
        r.consumers[name].subscribe([topic])
    r.poll_all(30, until=lambda: len(r.values()) == 300)
    check_exactly(r.reads, set(range(300)))
    committed = r.consumers["a"].committed([TopicPartition(topic, p) for p in range(6)], timeout=10)
    assert sum(tp.offset for tp in committed) == 300
    for c in r.consumers.values():
        c.close()


KILLABLE = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
              "auto.offset.reset": "earliest", "enable.auto.commit": False})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.1)
    if c.assignment():
        print("assigned", len(c.assignment()), flush=True)
"""


def test_join_leave_and_sigkill(kafka_cluster: Any) -> None:
    """A member in another process is SIGKILLed: its partitions move to the others after the
    session timeout; a member that joins gets a share, one that leaves gives it back at once."""
    topic, group = unique("cp-kill"), unique("g-kill")
    kafka_cluster.create_topic(topic, 6, 3)
    bs = kafka_cluster.bootstrap_servers
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, bs, group, topic], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("assigned")
        a = consumer(bs, group)
        a.subscribe([topic])
        wait_until(lambda: (a.poll(0.05), len(a.assignment()))[1] == 3, 20, what="a shares with the killed one")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at = time.monotonic()
        wait_until(lambda: (a.poll(0.05), len(a.assignment()))[1] == 6, 20, what="a takes over after the session")
        assert time.monotonic() - killed_at >= 1.5   # not before the session timeout (2 s)
        b = consumer(bs, group)
        b.subscribe([topic])
        wait_until(lambda: (a.poll(0.02), b.poll(0.02), len(a.assignment()) + len(b.assignment()))[2] == 6
                   and len(b.assignment()) == 3, 20, what="b joins")
        b.close()
        wait_until(lambda: (a.poll(0.05), len(a.assignment()))[1] == 6, 10, what="b's partitions back at once")
        d = describe(kafka_cluster, group)
        assert d.state == "Stable" and len(d.members) == 1
        a.close()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_coordinator_broker_restarted_mid_group(kafka_cluster: Any) -> None:
    """The coordinator's broker stops while two members consume: the new coordinator loads the
    group from the replicated log (same members and group epoch) and they read on, nothing twice
    past the commits and nothing lost; then the broker comes back."""
    topic, group = unique("cp-fo"), unique("g-fo")
    kafka_cluster.create_topic(topic, 6, 3)
    bs = kafka_cluster.bootstrap_servers
    produce(bs, topic, range(200), 6)
    r = Reader()
    for name in ("a", "b"):
        r.consumers[name] = consumer(bs, group)
        r.consumers[name].subscribe([topic])
    r.poll_all(30, until=lambda: len(r.values()) >= 100 and describe(kafka_cluster, group).state == "Stable")
    before = describe(kafka_cluster, group)
    old = coordinator_of(kafka_cluster, group)
    kafka_cluster.stop_broker(old)
    try:
        wait_until(lambda: coordinator_of(kafka_cluster, group) not in (-1, old), 10, what="new coordinator")
        wait_until(lambda: describe(kafka_cluster, group).error == Errors.NONE, 10, what="group loaded")
        after = describe(kafka_cluster, group)
        assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
        assert after.group_epoch >= before.group_epoch
        produce(bs, topic, range(200, 300), 6)
        r.poll_all(40, until=lambda: len(r.values()) == 300)
        check_exactly(r.reads, set(range(300)))
    finally:
        kafka_cluster.start_broker(old)
        wait_until(lambda: old in kafka_cluster.live_brokers(), 10, what="broker restarted")
        for c in r.consumers.values():
            c.close()


def test_rolling_upgrade_from_kafka_python_to_confluent_consumer_protocol(kafka_cluster: Any) -> None:
    """Two kafka-python (classic) members, then two confluent-kafka consumer-protocol members join
    the same group (it becomes a consumer group with classic members), then the kafka-python ones
    leave one by one: nothing read twice past the commits, nothing lost."""
    topic, group = unique("cp-up"), unique("g-up")
    kafka_cluster.create_topic(topic, 4, 3)
    bs = kafka_cluster.bootstrap_servers
    reads: list[tuple[int, bool]] = []
    lock = threading.Lock()
    stop = {name: threading.Event() for name in ("k1", "k2")}

    def classic(name: str) -> None:
        c = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                          auto_offset_reset="earliest", session_timeout_ms=3000, heartbeat_interval_ms=200,
                          max_poll_interval_ms=10000, fetch_max_wait_ms=50, client_id=name)
        try:
            while not stop[name].is_set():
                for records in c.poll(timeout_ms=50).values():
                    for rec in records:
                        try:
                            c.commit()
                            ok = True
                        except Exception:
                            ok = False
                        with lock:
                            reads.append((int(rec.value), ok))
        finally:
            c.close()

    threads = {n: threading.Thread(target=classic, args=(n,), name=f"classic-{n}") for n in stop}
    for t in threads.values():
        t.start()
    produce(bs, topic, range(0, 100), 4)
    wait_until(lambda: len({v for v, _ in reads}) >= 100, 30, what="classic members read")
    r = Reader()
    for name in ("c1", "c2"):
        r.consumers[name] = consumer(bs, group)
        r.consumers[name].subscribe([topic])
    produce(bs, topic, range(100, 200), 4)
    r.poll_all(10, until=lambda: describe(kafka_cluster, group).error == Errors.NONE and any(
        m.member_type == 0 for m in describe(kafka_cluster, group).members))
    assert {m.member_type for m in describe(kafka_cluster, group).members} == {0, 1}   # both protocols
    for name in ("k1", "k2"):
        stop[name].set()
        threads[name].join(20)
        produce(bs, topic, range(200 + 50 * (name == "k2"), 250 + 50 * (name == "k2")), 4)
        r.poll_all(3)
    r.poll_all(30, until=lambda: len({v for v, _ in reads} | r.values()) == 300)
    d = describe(kafka_cluster, group)
    assert {m.member_type for m in d.members} == {0} and len(d.members) == 2
    check_exactly(reads + r.reads, set(range(300)))
    for c in r.consumers.values():
        c.close()


def test_regex_subscription_picks_up_a_new_topic(kafka_cluster: Any) -> None:
    """A consumer-protocol member subscribed with a regular expression (SubscribedTopicRegex)
    gets the partitions of a topic created after it joined."""
    prefix = unique("rx")
    group = unique("g-rx")
    bs = kafka_cluster.bootstrap_servers
    kafka_cluster.create_topic(f"{prefix}-a", 2, 3)
    produce(bs, f"{prefix}-a", range(10), 2)
    c = consumer(bs, group)
    c.subscribe([f"^{prefix}-.*"])
    got: list[str] = []

    def read(n: int) -> bool:
        m = c.poll(0.05)
        if m is not None and not m.error():
            got.append(m.topic())
        return len(got) >= n

    wait_until(lambda: read(10), 20, what="records of the first topic")
    kafka_cluster.create_topic(f"{prefix}-b", 2, 3)
    produce(bs, f"{prefix}-b", range(10), 2)
    wait_until(lambda: read(20), 20, what="records of the topic created later")
    assert got.count(f"{prefix}-b") == 10
    c.close()


# ----------------------------------------------------------------------------- wire answers
def heartbeat_request(version: int, **fields: Any) -> Any:
    from kio.index import load_request_schema
    cls = load_request_schema(ApiKeys.CONSUMER_GROUP_HEARTBEAT, version)
    values = {"group_id": "g", "member_id": "", "member_epoch": 0, "instance_id": None, "rack_id": None,
              "rebalance_timeout": 5000, "subscribed_topic_names": ("t",), "server_assignor": None,
              "topic_partitions": ()}
    if version >= 1:
        values["subscribed_topic_regex"] = None
    values.update(fields)
    from datetime import timedelta
    values["rebalance_timeout"] = timedelta(milliseconds=values["rebalance_timeout"])
    return build(cls, **values)


def to_coordinator(cluster: Any, group: str) -> RawClient:
    cluster.ensure_offsets_topic()
    wait_until(lambda: coordinator_of(cluster, group) >= 0, 10, what="a coordinator")
    return RawClient(cluster.broker(coordinator_of(cluster, group)).bootstrap_server)


def test_member_id_generated_on_server_when_api_version_is_0(kafka_cluster: Any) -> None:
    """ConsumerGroupHeartbeatRequestTest.testMemberIdGeneratedOnServerWhenApiVersionIs0 and
    testConsumerGroupHeartbeatFailureIfMemberIdMissingForVersionsAbove0"""
    group = unique("g-v0")
    client = to_coordinator(kafka_cluster, group)
    try:
        answers: list[Any] = []
        wait_until(lambda: answers.append(client.send(heartbeat_request(0, group_id=group))) or
                   answers[-1].error_code != Errors.COORDINATOR_LOAD_IN_PROGRESS, 10, what="the coordinator loaded")
        r = answers[-1]
        assert r.error_code == Errors.NONE and len(r.member_id) == 22 and r.member_epoch == 1
        r1 = client.send(heartbeat_request(1, group_id=group))
        assert r1.error_code == Errors.INVALID_REQUEST and r1.error_message == "MemberId can't be empty."
    finally:
        client.close()


@pytest.mark.kafka_cluster(brokers=1, scope="function", config={"group.coordinator.rebalance.protocols": "classic"})
def test_inaccessible_when_disabled_by_static_config(kafka_cluster: Any) -> None:
    """ConsumerGroupHeartbeatRequestTest.testConsumerGroupHeartbeatIsInaccessibleWhenDisabledByStaticConfig
    and ConsumerGroupDescribeRequestTest: listed in ApiVersions (as Kafka lists them), answered
    UNSUPPORTED_VERSION."""
    from kio.index import load_request_schema
    client = RawClient(kafka_cluster.bootstrap_servers)
    try:
        versions = client.send(load_request_schema(ApiKeys.API_VERSIONS, 3)(client_software_name="t",
                                                                            client_software_version="1"))
        advertised = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys}
        assert advertised[ApiKeys.CONSUMER_GROUP_HEARTBEAT] == (0, 1)
        assert client.send(heartbeat_request(1, member_id="m")).error_code == Errors.UNSUPPORTED_VERSION
        describe_cls = load_request_schema(ApiKeys.CONSUMER_GROUP_DESCRIBE, 1)
        d = client.send(build(describe_cls, group_ids=("g",), include_authorized_operations=False))
        assert [g.error_code for g in d.groups] == [Errors.UNSUPPORTED_VERSION]
    finally:
        client.close()


def test_consumer_group_describe_over_the_wire(kafka_cluster: Any) -> None:
    """ConsumerGroupDescribeRequestTest.testConsumerGroupDescribeWithNewGroupCoordinator"""
    from kio.index import load_request_schema
    topic, group = unique("cp-desc"), unique("g-desc")
    kafka_cluster.create_topic(topic, 2, 3)
    c = consumer(kafka_cluster.bootstrap_servers, group)
    c.subscribe([topic])
    wait_until(lambda: (c.poll(0.05), len(c.assignment()))[1] == 2, 20, what="assigned")
    client = to_coordinator(kafka_cluster, group)
    try:
        cls = load_request_schema(ApiKeys.CONSUMER_GROUP_DESCRIBE, 1)
        d = client.send(build(cls, group_ids=(group,), include_authorized_operations=True))
        (g,) = d.groups
        assert (g.error_code, g.group_state, g.assignor_name) == (Errors.NONE, "Stable", "uniform")
        (m,) = g.members
        assert m.subscribed_topic_names == (topic,) and m.member_type == 0
        assert [(t.topic_name, tuple(t.partitions)) for t in m.assignment.topic_partitions] == [(topic, (0, 1))]
    finally:
        client.close()
        c.close()


def test_group_configs_through_incremental_alter_and_describe_configs(kafka_cluster: Any) -> None:
    """Per-group consumer.heartbeat.interval.ms / consumer.session.timeout.ms on the GROUP
    resource (32): PlaintextAdminIntegrationTest.testIncrementalAlterAndDescribeGroupConfigs and
    ControllerConfigurationValidatorTest / GroupConfigTest's refusals; the next heartbeat answers
    with the group's interval; DescribeConfigs shows the broker's value (DEFAULT_CONFIG) until
    the group sets its own (GROUP_CONFIG)."""
    from kio.index import load_request_schema
    group = unique("g-cfg")
    client = to_coordinator(kafka_cluster, group)

    def alter(*ops: tuple[str, int, str | None], name: str = group, version: int = 1) -> tuple[int, str | None]:
        cls = load_request_schema(ApiKeys.INCREMENTAL_ALTER_CONFIGS, version)
        res_cls = item_cls(cls, "resources")
        cfg_cls = item_cls(res_cls, "configs")
        r = client.send(build(cls, validate_only=False, resources=(build(
            res_cls, resource_type=32, resource_name=name,
            configs=tuple(build(cfg_cls, name=k, config_operation=op, value=v) for k, op, v in ops)),)))
        (res,) = r.responses
        return res.error_code, res.error_message

    def described() -> dict[str, tuple[str, int]]:
        cls = load_request_schema(ApiKeys.DESCRIBE_CONFIGS, 4)
        res_cls = item_cls(cls, "resources")
        r = client.send(build(cls, resources=(build(res_cls, resource_type=32, resource_name=group,
                                                    configuration_keys=None),),
                              include_synonyms=True, include_documentation=False))
        (res,) = r.results
        assert res.error_code == Errors.NONE
        return {e.name: (e.value, e.config_source) for e in res.configs if e.name.startswith("consumer.")}

    try:
        assert described() == {"consumer.session.timeout.ms": ("2000", 5), "consumer.heartbeat.interval.ms": ("200", 5)}
        assert alter(("consumer.heartbeat.interval.ms", 0, "100"), ("consumer.session.timeout.ms", 0, "1500")) \
            == (Errors.NONE, None)
        assert kafka_cluster.metadata.group_configs(group) == {"consumer.heartbeat.interval.ms": 100,
                                                               "consumer.session.timeout.ms": 1500}
        assert described() == {"consumer.session.timeout.ms": ("1500", 8), "consumer.heartbeat.interval.ms": ("100", 8)}
        answers: list[Any] = []
        wait_until(lambda: answers.append(client.send(heartbeat_request(0, group_id=group))) or
                   answers[-1].error_code != Errors.COORDINATOR_LOAD_IN_PROGRESS, 10, what="the coordinator loaded")
        assert answers[-1].heartbeat_interval.total_seconds() == 0.1
        refused = [
            alter(("consumer.heartbeat.interval.ms", 0, "10")),
            alter(("consumer.session.timeout.ms", 0, "60001")),
            alter(("consumer.session.timeout.ms", 0, "1000"), ("consumer.heartbeat.interval.ms", 0, "1000")),
            alter(("consumer.session.timeout.ms", 0, "abc")),
            alter(("foo", 0, "1")),
            alter(("streams.session.timeout.ms", 0, "45000")),
            alter(("consumer.session.timeout.ms", 0, "1500"), name=""),
        ]
        assert refused == [
            (Errors.INVALID_CONFIG, "consumer.heartbeat.interval.ms must be greater than or equal to "
                                    "group.consumer.min.heartbeat.interval.ms"),
            (Errors.INVALID_CONFIG, "consumer.session.timeout.ms must be less than or equal to "
                                    "group.consumer.max.session.timeout.ms"),
            (Errors.INVALID_CONFIG, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
            (Errors.INVALID_CONFIG, "Invalid value abc for configuration consumer.session.timeout.ms: "
                                    "Not a number of type INT"),
            (Errors.INVALID_CONFIG, "Unknown group config name: foo"),
            (Errors.INVALID_CONFIG, "The group config 'streams.session.timeout.ms' is defined by Kafka for "
                                    "streams groups, which the emulator does not serve."),
            (Errors.INVALID_REQUEST, "Default group resources are not allowed."),
        ]
        assert alter(("consumer.heartbeat.interval.ms", 1, None)) == (Errors.NONE, None)   # DELETE
        assert described()["consumer.heartbeat.interval.ms"] == ("200", 5)
    finally:
        client.close()


def test_test_control_on_consumer_groups(kafka_cluster: Any) -> None:
    """Test control on a consumer-protocol group: errors injected into its ConsumerGroupHeartbeats
    (matched by group id) and into a ConsumerGroupDescribe naming it (group_ids), its heartbeats in
    ``requests()``, and ``move_group_coordinator`` mid-group: the new coordinator loads the group
    from __consumer_offsets and the member keeps its epoch and partitions."""
    topic, group = unique("cp-ctl"), unique("g-ctl")
    kafka_cluster.create_topic(topic, 2, 3)
    injection = kafka_cluster.inject_errors("ConsumerGroupHeartbeat",
                                            ["COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"], group=group)
    c = consumer(kafka_cluster.bootstrap_servers, group, **{"client.id": group})
    try:
        c.subscribe([topic])
        wait_until(lambda: (c.poll(0.05), len(c.assignment()))[1] == 2, 20, what="assigned despite the errors")
        assert not injection.errors and injection.injected == 2
        beats = kafka_cluster.requests(api="ConsumerGroupHeartbeat", client_id=group)
        assert [r.fault for r in beats[:2]] == ["error", "error"]
        assert [r.response.error_code for r in beats[:3]] == [Errors.COORDINATOR_NOT_AVAILABLE,
                                                               Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NONE]
        before = describe(kafka_cluster, group)
        (member,) = before.members
        source = coordinator_of(kafka_cluster, group)
        target = (source + 1) % 3
        kafka_cluster.move_group_coordinator(group, target)

        def answered_by_target() -> bool:
            c.poll(0.05)
            last = kafka_cluster.requests(api="ConsumerGroupHeartbeat", client_id=group)[-1]
            return last.broker == target and last.response is not None and last.response.error_code == Errors.NONE
        wait_until(answered_by_target, 20, what="heartbeats answered by the new coordinator")
        after = describe(kafka_cluster, group)
        assert after.error == Errors.NONE and after.group_epoch == before.group_epoch
        (moved,) = after.members
        assert (moved.member_id, moved.member_epoch) == (member.member_id, member.member_epoch)
        assert len(c.assignment()) == 2
        kafka_cluster.inject_errors("ConsumerGroupDescribe", ["GROUP_AUTHORIZATION_FAILED"], group=group)
        client = to_coordinator(kafka_cluster, group)
        try:
            from kio.index import load_request_schema
            d = client.send(build(load_request_schema(ApiKeys.CONSUMER_GROUP_DESCRIBE, 1), group_ids=(group,),
                                  include_authorized_operations=False))
            assert [g.error_code for g in d.groups] == [Errors.GROUP_AUTHORIZATION_FAILED]
        finally:
            client.close()
    finally:
        c.close()
        kafka_cluster.clear_faults()
