"""The authorization cases of Kafka's KafkaApisTest, request by request (each sent as a network
request from ``User:alice``, straight to the broker's request channel): the error each API
answers when an ACL is missing, Metadata's filtering of topics it may not describe, the
authorized-operations fields, and the same calls passing once the ACL exists."""
from __future__ import annotations

import base64
import threading
from datetime import timedelta
from typing import Any, Iterator

import pytest
from kio.index import load_request_schema

from kafka_emu.broker.apis import api_name
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.network.request_channel import Request, Response
from kafka_emu.broker.protocol.adapter import response_schema
from kafka_emu.broker.protocol.codec import EncodedResponse, decode_response
from kafka_emu.broker.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from kafka_emu.broker.security.auth import KafkaPrincipal
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(60)

ALICE = KafkaPrincipal("User", "alice")
Op, RT = AclOperation, ResourceType


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    config = {"listeners": "", "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:admin", "offsets.topic.replication.factor": 1,
              "transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
              "share.coordinator.state.topic.num.partitions": 1, "share.coordinator.state.topic.replication.factor": 1}
    with EmbeddedCluster(brokers=1, config=config) as c:
        c.create_topic("visible", 1, 1)
        c.create_topic("hidden", 1, 1)
        yield c


@pytest.fixture(autouse=True)
def no_acls(cluster: EmbeddedCluster) -> None:
    cluster.metadata.alter_acls(lambda _current: ())


def allow(cluster: EmbeddedCluster, rtype: ResourceType, name: str, op: AclOperation) -> None:
    binding = AclBinding(rtype, name, PatternType.LITERAL, str(ALICE), "*", op, AclPermissionType.ALLOW)
    cluster.metadata.alter_acls(lambda current: current + (binding,))


def call(cluster: EmbeddedCluster, api_key: int, version: int, body: Any = None, **fields: Any) -> Any:
    done = threading.Event()
    box: list[Response] = []
    request = Request(api_key, version, 1, "test", body or load_request_schema(api_key, version)(**fields),
                      lambda r: (box.append(r), done.set()), api_name(api_key), processor_id=0,
                      client_host="127.0.0.1", principal=ALICE)
    cluster.broker(0).request_channel.send_request(request)
    assert done.wait(20)
    body = box[0].body
    if isinstance(body, EncodedResponse):   # the fast encoders' bytes, decoded as a client would
        frame = b"\0\0\0\0" + (b"\0" if body.flexible_header else b"") + body.data
        return decode_response(frame, response_schema(api_key, version))[1]
    return body


def codes(body: Any) -> set[int]:
    from kafka_emu.broker.cluster.control.recorder import _collect_errors

    out: list[int] = []
    _collect_errors(body, out)
    return set(out)


def metadata(cluster: EmbeddedCluster, topics: list[str] | None, **kw: Any) -> Any:
    entries = None if topics is None else tuple(_topic(name) for name in topics)
    return call(cluster, 3, 12, topics=entries, allow_auto_topic_creation=False,
                include_topic_authorized_operations=kw.get("ops", False))


def _topic(name: str) -> Any:
    from kafka_emu.broker.protocol.adapter import item_cls

    return item_cls(load_request_schema(3, 12), "topics")(name=name, topic_id=None)


def test_metadata_filters_topics_and_fills_authorized_operations(cluster: EmbeddedCluster) -> None:
    """KafkaApisTest.testMetadataRequestOnDistinctListenerWithInconsistentListenersAcrossBrokers /
    testUnauthorizedTopicMetadataRequest: 'all topics' lists only the describable ones, a named
    one without DESCRIBE is TOPIC_AUTHORIZATION_FAILED; the operations field is alice's."""
    assert [t.name for t in metadata(cluster, None).topics] == []
    allow(cluster, RT.TOPIC, "visible", Op.READ)
    assert [t.name for t in metadata(cluster, None).topics] == ["visible"]
    named = {t.name: t for t in metadata(cluster, ["visible", "hidden"], ops=True).topics}
    assert int(named["hidden"].error_code) == Errors.TOPIC_AUTHORIZATION_FAILED
    assert int(named["visible"].topic_authorized_operations) == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_produce_and_fetch_need_write_and_read(cluster: EmbeddedCluster) -> None:
    from kafka_emu.broker.cluster.inprocess_client import fetch_request, produce_request
    from kafka_emu.broker.storage.record_batch import build_batch

    def produce() -> set[int]:
        body = produce_request("visible", 0, build_batch([(None, b"v")]), acks=1)
        return codes(call(cluster, 0, 9, body))

    def fetch() -> set[int]:
        body = fetch_request("visible", 0, 0)
        return codes(call(cluster, 1, 12, body))

    assert Errors.TOPIC_AUTHORIZATION_FAILED in produce()
    assert Errors.TOPIC_AUTHORIZATION_FAILED in fetch()
    allow(cluster, RT.TOPIC, "visible", Op.WRITE)
    allow(cluster, RT.TOPIC, "visible", Op.READ)
    assert produce() == {Errors.NONE}
    assert fetch() == {Errors.NONE}


def test_init_producer_id(cluster: EmbeddedCluster) -> None:
    """KafkaApisTest: idempotence needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
    (CLUSTER_AUTHORIZATION_FAILED); a transactional id WRITE on it."""
    assert int(call(cluster, 22, 4, transactional_id=None, transaction_timeout=60000, producer_id=-1,
                    producer_epoch=-1).error_code) == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert int(call(cluster, 22, 4, transactional_id="tx", transaction_timeout=60000, producer_id=-1,
                    producer_epoch=-1).error_code) == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    allow(cluster, RT.TOPIC, "visible", Op.WRITE)
    assert int(call(cluster, 22, 4, transactional_id=None, transaction_timeout=60000, producer_id=-1,
                    producer_epoch=-1).error_code) == Errors.NONE


def test_groups_and_coordinators(cluster: EmbeddedCluster) -> None:
    """FindCoordinator (DESCRIBE on the group), OffsetFetch (GROUP_AUTHORIZATION_FAILED), ListGroups
    (filtered, no error), DescribeGroups (per group)."""
    found = call(cluster, 10, 4, key_type=0, coordinator_keys=("g1",))
    assert int(found.coordinators[0].error_code) == Errors.GROUP_AUTHORIZATION_FAILED
    fetched = call(cluster, 9, 7, group_id="g1", topics=None, require_stable=False)
    assert int(fetched.error_code) == Errors.GROUP_AUTHORIZATION_FAILED
    described = call(cluster, 15, 5, groups=("g1",), include_authorized_operations=True)
    assert int(described.groups[0].error_code) == Errors.GROUP_AUTHORIZATION_FAILED
    assert int(call(cluster, 16, 4, states_filter=()).error_code) == Errors.NONE
    allow(cluster, RT.GROUP, "g1", Op.READ)
    found = call(cluster, 10, 4, key_type=0, coordinator_keys=("g1",))
    assert int(found.coordinators[0].error_code) == Errors.NONE
    described = call(cluster, 15, 5, groups=("g1",), include_authorized_operations=True)
    assert int(described.groups[0].authorized_operations) == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_admin_apis(cluster: EmbeddedCluster) -> None:
    """CreateTopics (CREATE), DeleteTopics (DELETE), DescribeCluster and DescribeConfigs on the
    cluster (CLUSTER_AUTHORIZATION_FAILED), CreateAcls (ALTER on the cluster)."""
    from kafka_emu.broker.protocol.adapter import item_cls

    create_cls = item_cls(load_request_schema(19, 5), "topics")
    created = call(cluster, 19, 5, topics=(create_cls(name="new", num_partitions=1, replication_factor=1,
                                                      assignments=(), configs=()),), timeout=5000, validate_only=True)
    assert int(created.topics[0].error_code) == Errors.TOPIC_AUTHORIZATION_FAILED
    deleted = call(cluster, 20, 5, topic_names=("hidden",), timeout=5000)
    assert int(deleted.responses[0].error_code) == Errors.TOPIC_AUTHORIZATION_FAILED
    assert int(call(cluster, 60, 0, include_cluster_authorized_operations=True).error_code) == \
        Errors.CLUSTER_AUTHORIZATION_FAILED
    res_cls = item_cls(load_request_schema(32, 4), "resources")
    described = call(cluster, 32, 4, resources=(res_cls(resource_type=4, resource_name="0", configuration_keys=None),),
                     include_synonyms=False, include_documentation=False)
    assert int(described.results[0].error_code) == Errors.CLUSTER_AUTHORIZATION_FAILED
    creation_cls = item_cls(load_request_schema(30, 3), "creations")
    acls = call(cluster, 30, 3, creations=(creation_cls(resource_type=2, resource_name="t", resource_pattern_type=3,
                                                        principal="User:alice", host="*", operation=2,
                                                        permission_type=3),))
    assert int(acls.results[0].error_code) == Errors.CLUSTER_AUTHORIZATION_FAILED
    allow(cluster, RT.CLUSTER, "kafka-cluster", Op.ALL)
    created = call(cluster, 19, 5, topics=(create_cls(name="new", num_partitions=1, replication_factor=1,
                                                      assignments=(), configs=()),), timeout=5000, validate_only=True)
    assert int(created.topics[0].error_code) == Errors.NONE
    assert int(call(cluster, 60, 0, include_cluster_authorized_operations=True).error_code) == Errors.NONE


def test_consumer_group_protocol(cluster: EmbeddedCluster) -> None:
    """KafkaApisTest.testConsumerGroupHeartbeatRequestAuthorizationFailed and
    testConsumerGroupHeartbeatRequestTopicAuthorization; ConsumerGroupDescribe per group."""
    def heartbeat(topics: tuple[str, ...]) -> int:
        return int(call(cluster, 68, 0, group_id="cg", member_id="", member_epoch=0, instance_id=None,
                        rack_id=None, rebalance_timeout=timedelta(milliseconds=5000), subscribed_topic_names=topics,
                        server_assignor=None, topic_partitions=()).error_code)

    assert heartbeat(("visible",)) == Errors.GROUP_AUTHORIZATION_FAILED
    allow(cluster, RT.GROUP, "cg", Op.READ)
    assert heartbeat(("visible",)) == Errors.TOPIC_AUTHORIZATION_FAILED
    described = call(cluster, 69, 0, group_ids=("cg", "other"), include_authorized_operations=True)
    assert [int(g.error_code) for g in described.groups if g.group_id == "other"] == [Errors.GROUP_AUTHORIZATION_FAILED]


def test_issue_32_apis_authorize_as_kafka_s_kafka_apis() -> None:
    """DescribeTopicPartitions (DESCRIBE per topic: a named topic without it is
    TOPIC_AUTHORIZATION_FAILED, an unnamed one left out), ListConfigResources (DESCRIBE_CONFIGS
    on the cluster), DescribeQuorum (DESCRIBE on the cluster, a top-level error) and
    AlterReplicaLogDirs (ALTER on the cluster, on every partition)."""
    config = {"listeners": "", "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:admin", "offsets.topic.replication.factor": 1}
    from kafka_emu.broker.protocol.adapter import build, item_cls
    with EmbeddedCluster(brokers=1, config=config) as c:
        c.create_topic("visible", 1, 1)
        c.create_topic("hidden", 1, 1)
        allow(c, RT.TOPIC, "visible", Op.DESCRIBE)
        dtp = load_request_schema(75, 0)
        named = call(c, 75, 0, build(dtp, topics=tuple(build(item_cls(dtp, "topics"), name=n) for n in ("hidden", "visible")),
                                     response_partition_limit=10))
        assert [(t.name, int(t.error_code)) for t in named.topics] == \
            [("visible", Errors.NONE), ("hidden", Errors.TOPIC_AUTHORIZATION_FAILED)]
        every = call(c, 75, 0, build(dtp, topics=(), response_partition_limit=10))
        assert [t.name for t in every.topics] == ["visible"]
        assert int(call(c, 74, 1, resource_types=()).error_code) == Errors.CLUSTER_AUTHORIZATION_FAILED
        dq = load_request_schema(55, 2)
        t_cls = item_cls(dq, "topics")
        quorum = build(dq, topics=(build(t_cls, topic_name="__cluster_metadata",
                                         partitions=(build(item_cls(t_cls, "partitions"), partition_index=0),)),))
        assert int(call(c, 55, 2, quorum).error_code) == Errors.CLUSTER_AUTHORIZATION_FAILED
        ar = load_request_schema(34, 2)
        d_cls = item_cls(ar, "dirs")
        move = build(ar, dirs=(build(d_cls, path="/x", topics=(
            build(item_cls(d_cls, "topics"), name="visible", partitions=(0,)),)),))
        assert codes(call(c, 34, 2, move)) == {Errors.CLUSTER_AUTHORIZATION_FAILED}
        allow(c, RT.CLUSTER, "kafka-cluster", Op.DESCRIBE_CONFIGS)
        allow(c, RT.CLUSTER, "kafka-cluster", Op.DESCRIBE)
        allow(c, RT.CLUSTER, "kafka-cluster", Op.ALTER)
        assert int(call(c, 74, 1, resource_types=()).error_code) == Errors.NONE
        assert int(call(c, 55, 2, quorum).error_code) == Errors.NONE
        assert codes(call(c, 34, 2, move)) == {Errors.LOG_DIR_NOT_FOUND}


def test_client_quota_apis_need_the_cluster_configs_operations(cluster: EmbeddedCluster) -> None:
    """KafkaApisTest's DescribeClientQuotas and ControllerApisTest's AlterClientQuotas
    authorization: DESCRIBE_CONFIGS on the cluster (else a top-level
    CLUSTER_AUTHORIZATION_FAILED), ALTER_CONFIGS on the cluster (else every entry refused and
    nothing altered)."""
    from kafka_emu.broker.protocol.adapter import item_cls

    alter_cls = load_request_schema(49, 1)
    entry_cls = item_cls(alter_cls, "entries")
    entry = entry_cls(entity=(item_cls(entry_cls, "entity")(entity_type="client-id", entity_name="c1"),),
                      ops=(item_cls(entry_cls, "ops")(key="producer_byte_rate", value=1000.0, remove=False),))
    component = item_cls(load_request_schema(48, 1), "components")(entity_type="client-id", match_type=0, match="c1")
    try:
        refused = call(cluster, 49, 1, entries=(entry,), validate_only=False)
        assert [(int(e.error_code), [(x.entity_type, x.entity_name) for x in e.entity]) for e in refused.entries] == \
            [(Errors.CLUSTER_AUTHORIZATION_FAILED, [("client-id", "c1")])]
        assert cluster.metadata.describe_client_quotas([], strict=False) == []
        assert int(call(cluster, 48, 1, components=(component,), strict=True).error_code) == \
            Errors.CLUSTER_AUTHORIZATION_FAILED
        allow(cluster, RT.CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS)
        assert [int(e.error_code) for e in call(cluster, 49, 1, entries=(entry,), validate_only=False).entries] == \
            [Errors.NONE]
        allow(cluster, RT.CLUSTER, "kafka-cluster", Op.DESCRIBE_CONFIGS)
        described = call(cluster, 48, 1, components=(component,), strict=True)
        assert int(described.error_code) == Errors.NONE and len(described.entries) == 1
    finally:
        quotas = cluster.metadata.describe_client_quotas([], strict=False)
        cluster.metadata.alter_client_quotas([(list(e), [(k, None) for k in v]) for e, v in quotas])


def test_share_group_apis_authorize_as_kafka_s_kafka_apis(cluster: EmbeddedCluster) -> None:
    """KafkaApisTest's share-group cases: testShareGroupHeartbeatRequestGroupAuthorizationFailed and
    ...TopicAuthorizationFailed (READ on the group, DESCRIBE on the subscribed topics),
    testShareGroupDescribeRequestAuthorizationFailedForOneGroup (DESCRIBE per group),
    testHandleShareFetchRequestGroupAuthorizationError / testHandleShareAcknowledgeRequestGroup-
    AuthorizationError (READ on the group; READ on each topic, TOPIC_AUTHORIZATION_FAILED on its
    partitions), testReadShareGroupStateAuthorizationFailed and the other state APIs
    (CLUSTER_ACTION), FindCoordinator key type 2 (CLUSTER_ACTION),
    testDescribeShareGroupOffsetsRequestGroupAuthorizationFailed / ...TopicAuthorizationFailed,
    testAlterShareGroupOffsetsAuthorizationFailed (READ on the group and topics) and
    testDeleteShareGroupOffsetsRequestsGroupAuthorizationFailed / ...TopicAuthorizationFailed
    (DELETE on the group, READ on the topics); then the same calls pass once the ACLs exist."""
    from kafka_emu.broker.protocol.adapter import build, item_cls
    c = cluster
    visible, hidden = c.metadata.topic_id("visible"), c.metadata.topic_id("hidden")

    def heartbeat(topics: tuple[str, ...]) -> int:
        return int(call(c, 76, 1, group_id="sg", member_id="m1", member_epoch=0, rack_id=None,
                        subscribed_topic_names=topics).error_code)

    sf = load_request_schema(78, 1)
    sf_t = item_cls(sf, "topics")

    def share_fetch(member: str, epoch: int) -> Any:
        return call(c, 78, 1, build(sf, group_id="sg", member_id=member, share_session_epoch=epoch,
                                    max_wait=timedelta(0), min_bytes=1, max_bytes=1 << 20, max_records=10,
                                    batch_size=10, forgotten_topics_data=(), topics=tuple(
                                        build(sf_t, topic_id=t, partitions=(build(item_cls(sf_t, "partitions"),
                                              partition_index=0, acknowledgement_batches=()),))
                                        for t in (visible, hidden))))

    sa = load_request_schema(79, 1)
    sa_t = item_cls(sa, "topics")
    sa_p = item_cls(sa_t, "partitions")
    acknowledge = build(sa, group_id="sg", member_id="m2", share_session_epoch=1, topics=(build(
        sa_t, topic_id=hidden, partitions=(build(sa_p, partition_index=0, acknowledgement_batches=(
            build(item_cls(sa_p, "acknowledgement_batches"), first_offset=0, last_offset=0,
                  acknowledge_types=(1,)),)),)),))
    rs = load_request_schema(84, 0)
    rs_t = item_cls(rs, "topics")
    read_state = build(rs, group_id="sg", topics=(build(rs_t, topic_id=visible, partitions=(
        build(item_cls(rs_t, "partitions"), partition=0, leader_epoch=0),)),))
    share_key = f"sg:{base64.urlsafe_b64encode(visible.bytes).decode().rstrip('=')}:0"
    do = load_request_schema(90, 1)
    do_g = item_cls(do, "groups")
    describe_offsets = build(do, groups=(build(do_g, group_id="sg", topics=tuple(
        build(item_cls(do_g, "topics"), topic_name=n, partitions=(0,)) for n in ("visible", "hidden"))),))
    ao = load_request_schema(91, 0)
    ao_t = item_cls(ao, "topics")
    alter_offsets = build(ao, group_id="empty", topics=tuple(build(ao_t, topic_name=n, partitions=(
        build(item_cls(ao_t, "partitions"), partition_index=0, start_offset=0),)) for n in ("visible", "hidden")))
    xo = load_request_schema(92, 0)
    delete_offsets = build(xo, group_id="empty", topics=tuple(build(item_cls(xo, "topics"), topic_name=n)
                                                           for n in ("visible", "hidden")))

    # without ACLs: the group checks answer first
    assert heartbeat(("visible",)) == Errors.GROUP_AUTHORIZATION_FAILED
    assert [int(g.error_code) for g in call(c, 77, 1, group_ids=("sg",), include_authorized_operations=True
                                            ).groups] == [Errors.GROUP_AUTHORIZATION_FAILED]
    assert int(share_fetch("m2", 0).error_code) == Errors.GROUP_AUTHORIZATION_FAILED
    assert int(call(c, 79, 1, acknowledge).error_code) == Errors.GROUP_AUTHORIZATION_FAILED
    assert codes(call(c, 84, 0, read_state)) == {Errors.CLUSTER_AUTHORIZATION_FAILED}
    assert int(call(c, 10, 6, key_type=2, coordinator_keys=(share_key,)).coordinators[0].error_code) == \
        Errors.CLUSTER_AUTHORIZATION_FAILED
    assert [int(g.error_code) for g in call(c, 90, 1, describe_offsets).groups] == \
        [Errors.GROUP_AUTHORIZATION_FAILED]
    assert int(call(c, 91, 0, alter_offsets).error_code) == Errors.GROUP_AUTHORIZATION_FAILED
    assert int(call(c, 92, 0, delete_offsets).error_code) == Errors.GROUP_AUTHORIZATION_FAILED

    # the group allowed: the topics decide, per topic
    allow(c, RT.GROUP, "sg", Op.READ)
    allow(c, RT.GROUP, "empty", Op.READ)
    allow(c, RT.GROUP, "empty", Op.DELETE)
    assert heartbeat(("visible",)) == Errors.TOPIC_AUTHORIZATION_FAILED
    allow(c, RT.TOPIC, "visible", Op.READ)   # implies DESCRIBE
    assert heartbeat(("visible",)) == Errors.NONE
    fetched = share_fetch("m2", 0)
    assert int(fetched.error_code) == Errors.NONE
    by_topic = {t.topic_id: int(t.partitions[0].error_code) for t in fetched.responses}
    assert by_topic == {visible: Errors.NONE, hidden: Errors.TOPIC_AUTHORIZATION_FAILED}
    acked = call(c, 79, 1, acknowledge)
    assert [int(p.error_code) for t in acked.responses for p in t.partitions] == [Errors.TOPIC_AUTHORIZATION_FAILED]
    described = {t.topic_name: int(t.partitions[0].error_code) for g in call(c, 90, 1, describe_offsets).groups
                 for t in g.topics}
    assert described == {"visible": Errors.NONE, "hidden": Errors.TOPIC_AUTHORIZATION_FAILED}
    altered = call(c, 91, 0, alter_offsets)
    assert {t.topic_name: int(t.partitions[0].error_code) for t in altered.responses} == \
        {"visible": Errors.NONE, "hidden": Errors.TOPIC_AUTHORIZATION_FAILED}
    deleted = call(c, 92, 0, delete_offsets)
    assert {t.topic_name: int(t.error_code) for t in deleted.responses} == \
        {"visible": Errors.NONE, "hidden": Errors.TOPIC_AUTHORIZATION_FAILED}

    allow(c, RT.CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)
    assert codes(call(c, 84, 0, read_state)) == {Errors.NONE}
    assert int(call(c, 10, 6, key_type=2, coordinator_keys=(share_key,)).coordinators[0].error_code) == Errors.NONE
