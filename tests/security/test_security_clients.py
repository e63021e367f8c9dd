"""Real clients (confluent-kafka, kafka-python, aiokafka) over SASL_SSL and SSL with client
certificates, against ``EmbeddedCluster(security=...)``: Kafka's SaslSslAdminIntegrationTest,
SaslPlainSslEndToEndAuthorizationTest, SaslScramSslEndToEndAuthorizationTest and
SslEndToEndAuthorizationTest in the clients users ship with: produce, group consume and commit,
transactions, wrong passwords, ACLs denied then allowed (created with confluent-kafka's
``create_acls``), a SCRAM user created with AlterUserScramCredentials, re-authentication."""
from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any, Iterator

import confluent_kafka
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kafka_emu.broker.cluster.cluster_security import ClusterSecurity
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

pytestmark = pytest.mark.timeout(90)

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
FAST = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100,
        "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1, "connection.failed.authentication.delay.ms": 10}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def sasl_cluster() -> Iterator[EmbeddedCluster]:
    """SASL_SSL with the StandardAuthorizer; resources without ACLs are open (so the client
    tests need none), ``admin`` is a super user."""
    security = ClusterSecurity("SASL_SSL", authorizer=True)
    with EmbeddedCluster(brokers=1, security=security,
                         config={**FAST, "allow.everyone.if.no.acl.found": True}) as cluster:
        yield cluster


def _wait(predicate: Any, timeout_s: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# --- confluent-kafka ----------------------------------------------------------------------------

def confluent_round_trip(cfg: dict[str, Any], topic: str, count: int = 5) -> None:
    producer = confluent_kafka.Producer({**cfg, "linger.ms": 0})
    errors: list[Any] = []
    for i in range(count):
        producer.produce(topic, b"v%d" % i, on_delivery=lambda err, _msg: errors.append(err) if err else None)
    assert producer.flush(20) == 0 and errors == []
    consumer = confluent_kafka.Consumer({**cfg, "group.id": unique("g"), "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False, "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    assert sorted(got) == sorted(b"v%d" % i for i in range(count))
    consumer.commit(asynchronous=False)
    committed = consumer.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=10)
    assert committed[0].offset == count
    consumer.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_sasl_ssl(sasl_cluster: EmbeddedCluster, mechanism: str) -> None:
    confluent_round_trip(sasl_cluster.client_config(user="alice", mechanism=mechanism), unique("cf"))


def test_confluent_transactions_over_scram(sasl_cluster: EmbeddedCluster) -> None:
    cfg = sasl_cluster.client_config(user="alice", mechanism="SCRAM-SHA-512")
    topic = unique("txn")
    producer = confluent_kafka.Producer({**cfg, "transactional.id": unique("tid")})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(topic, b"committed")
    producer.commit_transaction(20)
    producer.begin_transaction()
    producer.produce(topic, b"aborted")
    producer.abort_transaction(20)
    consumer = confluent_kafka.Consumer({**cfg, "group.id": unique("g"), "auto.offset.reset": "earliest",
                                         "isolation.level": "read_committed"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    _wait(lambda: (m := consumer.poll(0.2)) is not None and not m.error() and got.append(m.value()) is None,
          what="the committed record")
    consumer.close()
    assert got == [b"committed"]


def test_wrong_password_fails_each_client_and_the_broker_stays_healthy(sasl_cluster: EmbeddedCluster) -> None:
    """SaslAuthenticatorTest.testInvalidPasswordSaslPlain/Scram through the real clients: each
    gets its authentication error (SASL_AUTHENTICATION_FAILED), and the broker keeps serving."""
    server = sasl_cluster.broker(0).socket_server
    failed_before = server.stats()["failed_authentications"]
    errors: list[Any] = []
    cfg = sasl_cluster.client_config(user="alice", mechanism="SCRAM-SHA-256", password="wrong")
    producer = confluent_kafka.Producer({**cfg, "error_cb": errors.append})
    producer.produce(unique("x"), b"x")
    _wait(lambda: producer.poll(0.1) is not None and any(
        e.code() == confluent_kafka.KafkaError._AUTHENTICATION for e in errors), what="confluent's auth error")
    assert "Authentication failed during authentication due to invalid credentials" in str(errors[0])
    producer.purge()

    import kafka
    from kafka.errors import KafkaError as KafkaPythonError
    with pytest.raises(KafkaPythonError):
        kafka.KafkaProducer(**sasl_cluster.client_config(user="bob", client="kafka-python", mechanism="PLAIN",
                                                         password="nope"))

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError as AioKafkaError

    async def aio() -> None:
        p = AIOKafkaProducer(**sasl_cluster.client_config(user="bob", client="aiokafka", mechanism="SCRAM-SHA-512",
                                                          password="nope"), request_timeout_ms=5000)
        try:
            await p.start()
        finally:
            await p.stop()

    with pytest.raises(AioKafkaError):
        asyncio.run(asyncio.wait_for(aio(), 30))
    assert server.stats()["failed_authentications"] >= failed_before + 3
    confluent_round_trip(sasl_cluster.client_config(user="alice", mechanism="PLAIN"), unique("ok"), count=1)


# --- kafka-python and aiokafka ------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_sasl_ssl(sasl_cluster: EmbeddedCluster, mechanism: str) -> None:
    import kafka

    cfg = sasl_cluster.client_config(user="alice", client="kafka-python", mechanism=mechanism)
    topic = unique("kp")
    producer = kafka.KafkaProducer(**cfg, acks="all")
    for i in range(3):
        producer.send(topic, b"v%d" % i).get(timeout=20)
    producer.close()
    consumer = kafka.KafkaConsumer(topic, **cfg, group_id=unique("g"), auto_offset_reset="earliest",
                                   enable_auto_commit=False, consumer_timeout_ms=10000)
    got = [m.value for _, m in zip(range(3), consumer)]
    consumer.commit()
    assert got == [b"v0", b"v1", b"v2"]
    assert consumer.committed(kafka.TopicPartition(topic, 0)) == 3
    consumer.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_sasl_ssl(sasl_cluster: EmbeddedCluster, mechanism: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    cfg = sasl_cluster.client_config(user="alice", client="aiokafka", mechanism=mechanism)
    topic = unique("ak")

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(**cfg, acks="all")
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(topic, b"v%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, **cfg, group_id=unique("g"), auto_offset_reset="earliest",
                                    enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=200)
        await consumer.start()
        try:
            got = [(await consumer.getone()).value for _ in range(3)]
            await consumer.commit()
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(asyncio.wait_for(scenario(), 45)) == [b"v0", b"v1", b"v2"]


def test_aiokafka_transactions_over_plain(sasl_cluster: EmbeddedCluster) -> None:
    from aiokafka import AIOKafkaProducer

    cfg = sasl_cluster.client_config(user="alice", client="aiokafka", mechanism="PLAIN")

    async def scenario() -> None:
        producer = AIOKafkaProducer(**cfg, transactional_id=unique("tid"))
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(unique("aktxn"), b"x")
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(scenario(), 45))


# --- ACLs and SCRAM credentials through confluent-kafka's admin client --------------------------

def _acl(rtype: ResourceType, name: str, principal: str, op: AclOperation) -> AclBinding:
    return AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)


def test_acls_deny_then_allow(sasl_cluster: EmbeddedCluster) -> None:
    """SaslSslAdminIntegrationTest / EndToEndAuthorizationTest: with an ACL naming only admin, alice's
    produce, group and transactional id are refused with Kafka's errors; ACLs created for her
    through create_acls make the same calls pass; describe and delete see them."""
    admin_cfg = sasl_cluster.client_config(user="admin", mechanism="SCRAM-SHA-256")
    admin = AdminClient(admin_cfg)
    topic, group, tid = unique("guarded"), unique("g"), unique("tid")
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    owner = [_acl(ResourceType.TOPIC, topic, "User:admin", AclOperation.ALL),
             _acl(ResourceType.GROUP, group, "User:admin", AclOperation.ALL),
             _acl(ResourceType.TRANSACTIONAL_ID, tid, "User:admin", AclOperation.ALL)]
    for f in admin.create_acls(owner).values():
        f.result(20)
    alice = sasl_cluster.client_config(user="alice", mechanism="PLAIN")

    def produce() -> Any:
        results: list[Any] = []
        p = confluent_kafka.Producer({**alice, "message.timeout.ms": 5000, "linger.ms": 0})
        p.produce(topic, b"x", on_delivery=lambda err, _m: results.append(err))
        p.flush(10)
        return results[0]

    def consume_group() -> Any:
        c = confluent_kafka.Consumer({**alice, "group.id": group, "auto.offset.reset": "earliest"})
        try:
            c.subscribe([topic])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is not None:
                    return m.error()
            return "timeout"
        finally:
            c.close()

    def transactional() -> Any:
        p = confluent_kafka.Producer({**alice, "transactional.id": tid})
        try:
            p.init_transactions(10)
            return None
        except confluent_kafka.KafkaException as exc:
            return exc.args[0]

    assert produce().code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert consume_group().code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
    assert transactional().code() == confluent_kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    grants = [_acl(ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE),
              _acl(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ),
              _acl(ResourceType.GROUP, group, "User:alice", AclOperation.READ),
              _acl(ResourceType.TRANSACTIONAL_ID, tid, "User:alice", AclOperation.WRITE)]
    for f in admin.create_acls(grants).values():
        f.result(20)
    assert produce() is None
    assert consume_group() is None
    assert transactional() is None

    described = admin.describe_acls(confluent_kafka.admin.AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None, AclOperation.ANY,
        AclPermissionType.ANY)).result(20)
    assert sorted(map(str, described)) == sorted(map(str, grants))
    # alice may not touch ACLs once the cluster resource has ACLs of its own
    for f in admin.create_acls([_acl(ResourceType.BROKER, "kafka-cluster", "User:admin", AclOperation.ALTER)]).values():
        f.result(20)
    alice_admin = AdminClient(alice)
    with pytest.raises(confluent_kafka.KafkaException) as info:
        alice_admin.create_acls(grants[:1])[grants[0]].result(20)
    assert info.value.args[0].code() == confluent_kafka.KafkaError.CLUSTER_AUTHORIZATION_FAILED
    deleted = admin.delete_acls([confluent_kafka.admin.AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.MATCH, None, None, AclOperation.ANY,
        AclPermissionType.ANY)])
    assert len(list(deleted.values())[0].result(20)) == len(owner) + len(grants) + 1


def test_scram_user_created_with_alter_user_scram_credentials_logs_in(sasl_cluster: EmbeddedCluster) -> None:
    admin = AdminClient(sasl_cluster.client_config(user="admin", mechanism="PLAIN"))
    user = unique("carol")
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"carol-pw")
    for f in admin.alter_user_scram_credentials([upsert]).values():
        f.result(20)
    described = admin.describe_user_scram_credentials([user]).result(20) if hasattr(
        admin.describe_user_scram_credentials([user]), "result") else \
        {u: f.result(20) for u, f in admin.describe_user_scram_credentials([user]).items()}
    info = described[user].scram_credential_infos[0]
    assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_256, 8192)
    confluent_round_trip(sasl_cluster.client_config(user=user, mechanism="SCRAM-SHA-256", password="carol-pw"),
                         unique("carol"), count=1)


# --- SSL with client certificates ---------------------------------------------------------------

def test_ssl_client_certificates_all_clients() -> None:
    """SslEndToEndAuthorizationTest: ssl.client.auth=required, the principal from the certificate
    (ssl.principal.mapping.rules), an ACL on it; a client without a certificate cannot connect."""
    import kafka
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    security = ClusterSecurity("SSL", client_auth="required", authorizer=True)
    config = {**FAST, "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=(.*?)$/$1/,DEFAULT"}
    with EmbeddedCluster(brokers=1, security=security, config=config, record_requests=True) as cluster:
        topic = unique("ssl")
        cluster.create_topic(topic, 1, 1)
        bindings = [AclBinding(rt, name, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.ALL,
                               AclPermissionType.ALLOW)
                    for rt, name in ((ResourceType.TOPIC, topic), (ResourceType.GROUP, "*"))]
        admin = AdminClient(cluster.client_config(user="admin"))
        for f in admin.create_acls(bindings).values():
            f.result(20)
        confluent_round_trip(cluster.client_config(user="alice"), topic, count=2)
        producer = kafka.KafkaProducer(**cluster.client_config(user="alice", client="kafka-python"), acks="all")
        producer.send(topic, b"kp").get(timeout=20)
        producer.close()

        async def aio() -> bytes:
            p = AIOKafkaProducer(**cluster.client_config(user="alice", client="aiokafka"))
            await p.start()
            await p.send_and_wait(topic, b"ak")
            await p.stop()
            c = AIOKafkaConsumer(topic, **cluster.client_config(user="alice", client="aiokafka"),
                                 group_id=unique("g"), auto_offset_reset="earliest")
            await c.start()
            try:
                return [(await c.getone()).value for _ in range(4)][-1]
            finally:
                await c.stop()

        assert asyncio.run(asyncio.wait_for(aio(), 45)) == b"ak"
        assert {str(r.principal) for r in cluster.requests("Produce")} == {"User:alice"}
        # bob's certificate is valid, but no ACL names him
        errors: list[Any] = []
        p = confluent_kafka.Producer({**cluster.client_config(user="bob"), "message.timeout.ms": 5000})
        p.produce(topic, b"x", on_delivery=lambda err, _m: errors.append(err))
        p.flush(10)
        assert errors[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        # no certificate at all: the handshake fails
        bare = {k: v for k, v in cluster.client_config(user="alice").items() if not k.startswith("ssl.certificate")
                and not k.startswith("ssl.key")}
        failures = cluster.broker(0).socket_server.stats()["failed_authentications"]
        p = confluent_kafka.Producer({**bare, "message.timeout.ms": 3000})
        p.produce(topic, b"x")
        _wait(lambda: cluster.broker(0).socket_server.stats()["failed_authentications"] > failures,
              what="a refused handshake")
        p.purge()


# --- KIP-368 re-authentication -------------------------------------------------------------------

def test_reauthentication_happens_on_schedule() -> None:
    """SaslAuthenticatorTest.testValidSaslPlainOverSslReauthentication (KIP-368): with
    connections.max.reauth.ms short, librdkafka re-authenticates its connections before the
    session ends and keeps producing; the broker counts the re-authentications."""
    config = {**FAST, "connections.max.reauth.ms": 1500}
    with EmbeddedCluster(brokers=1, security=ClusterSecurity("SASL_SSL", mechanisms=("SCRAM-SHA-256",)),
                         config=config, metrics_port=0) as cluster:
        producer = confluent_kafka.Producer({**cluster.client_config(user="alice"), "linger.ms": 0})
        server = cluster.broker(0).socket_server
        topic = unique("reauth")
        deadline = time.monotonic() + 30
        while server.stats()["successful_reauthentications"] < 1 and time.monotonic() < deadline:
            producer.produce(topic, b"x")
            producer.flush(10)
            time.sleep(0.05)
        assert producer.flush(10) == 0
        stats = server.stats()
        assert stats["successful_reauthentications"] >= 1
        assert stats["failed_reauthentications"] == 0 and stats["expired_connections_killed"] == 0
        import urllib.request   # Kafka's socket-server-metrics names, per listener
        text = urllib.request.urlopen(cluster.metrics_url, timeout=10).read().decode()
        assert 'kafka_server_socket_server_metrics_successful_reauthentication_total{broker_id="0",' \
               'listener="SASL_SSL"}' in text
