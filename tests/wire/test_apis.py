"""The wire APIs one by one, with raw kio requests over a socket to a 3-broker cluster."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kio.index import load_request_schema as req_cls
from kio.schema.errors import ErrorCode

from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.broker.apis import APIS
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.kafka_releases import LATEST, RELEASES
from wire_helpers import RawClient, unique, wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def kafka_cluster_config() -> dict[str, Any]:
    return {"brokers": 3, "config": {"num.partitions": 2, "default.replication.factor": 3}}


@pytest.fixture()
def client(kafka_cluster: Any) -> Any:
    c = RawClient(kafka_cluster.bootstrap_servers.split(",")[0])
    yield c
    c.close()


def metadata_request(version: int, topics: list[str] | None, auto: bool = True) -> Any:
    cls = req_cls(3, version)
    items = None if topics is None else tuple(build(item_cls(cls, "topics"), name=t) for t in topics)
    return build(cls, topics=items, allow_auto_topic_creation=auto, include_topic_authorized_operations=False)


def test_api_versions_advertises_exactly_the_declared_ranges(client: Any) -> None:
    resp = client.send(req_cls(18, 3)(client_software_name="t", client_software_version="1"))
    got = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    latest = RELEASES[LATEST]
    assert got == {key: spec.advertised(latest) for key, spec in APIS.items() if spec.advertised(latest)}
    produce = APIS[ApiKeys.PRODUCE]
    assert got[0] == (0, produce.max_version) and produce.versions(latest)[0] == 3   # KAFKA-18659
    assert ApiKeys.GET_TELEMETRY_SUBSCRIPTIONS in got and ApiKeys.PUSH_TELEMETRY in got   # KIP-714
    assert got[ApiKeys.CONSUMER_GROUP_HEARTBEAT] == got[ApiKeys.CONSUMER_GROUP_DESCRIBE] == (0, 1)   # KIP-848


def test_api_versions_rejects_bad_software_name(client: Any) -> None:
    resp = client.send(req_cls(18, 3)(client_software_name="bad name!", client_software_version="1"))
    assert resp.error_code == ErrorCode.invalid_request


def test_metadata_auto_creates_with_defaults(kafka_cluster: Any, client: Any) -> None:
    topic = unique("auto")
    resp = client.send(metadata_request(12, [topic]))
    (t,) = resp.topics
    assert t.error_code == ErrorCode.none and t.name == topic
    assert t.topic_id.int != 0
    assert len(t.partitions) == 2                         # num.partitions
    assert all(len(p.replica_nodes) == 3 for p in t.partitions)   # default.replication.factor
    assert all(p.leader_id in {0, 1, 2} for p in t.partitions)
    assert resp.controller_id in {0, 1, 2} and len(resp.brokers) == 3
    # the id is stable: the same from another broker and on every later request
    other = RawClient(kafka_cluster.bootstrap_servers.split(",")[2])
    try:
        again = other.send(metadata_request(12, [topic])).topics[0]
    finally:
        other.close()
    assert again.topic_id == t.topic_id


def test_metadata_respects_auto_create_switches(client: Any) -> None:
    topic = unique("noauto")
    resp = client.send(metadata_request(12, [topic], auto=False))
    assert resp.topics[0].error_code == ErrorCode.unknown_topic_or_partition
    resp = client.send(metadata_request(12, ["__internal_like"], auto=True))
    assert resp.topics[0].error_code == ErrorCode.unknown_topic_or_partition
    resp = client.send(metadata_request(12, ["bad/name"], auto=True))
    assert resp.topics[0].error_code == ErrorCode.invalid_topic_exception


def test_metadata_all_topics_and_old_versions(kafka_cluster: Any, client: Any) -> None:
    topic = unique("listed")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    for version in (0, 1, 5, 9, 13):
        resp = client.send(metadata_request(version, None if version else []))
        names = {t.name for t in resp.topics}
        assert topic in names, version


def test_list_offsets_earliest_latest_and_timestamp(kafka_cluster: Any, client: Any) -> None:
    topic = unique("offsets")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3)
    base_ts = 1_700_000_000_000
    for i in range(3):
        err, _ = kafka_cluster.produce(topic, 0, [(None, b"a"), (None, b"b")], timestamp_ms=base_ts + i * 1000)
        assert err == 0
    leader = kafka_cluster.leader_of(topic, 0)
    c = RawClient(kafka_cluster.broker(leader).bootstrap_server)
    try:
        def ask(version: int, ts: int) -> Any:
            cls = req_cls(2, version)
            tcls = item_cls(cls, "topics")
            pcls = item_cls(tcls, "partitions")
            body = build(cls, replica_id=-1, isolation_level=0, timeout=timedelta(seconds=5),
                         topics=(build(tcls, name=topic, partitions=(
                             build(pcls, partition_index=0, timestamp=ts, current_leader_epoch=-1),)),))
            return c.send(body).topics[0].partitions[0]

        assert ask(7, -2).offset == 0
        assert ask(7, -1).offset == 6
        p = ask(7, base_ts + 1000)
        assert (p.offset, p.timestamp) == (2, base_ts + 1000)
        p = ask(7, base_ts + 1500)
        assert (p.offset, p.timestamp) == (4, base_ts + 2000)
        assert ask(7, base_ts + 10_000).offset == -1
        assert ask(7, -3).timestamp == base_ts + 2000
        assert ask(1, -1).offset == 6
    finally:
        c.close()
    # a follower answers NOT_LEADER_OR_FOLLOWER
    follower = next(b for b in (0, 1, 2) if b != leader)
    c = RawClient(kafka_cluster.broker(follower).bootstrap_server)
    try:
        cls = req_cls(2, 7)
        tcls = item_cls(cls, "topics")
        pcls = item_cls(tcls, "partitions")
        body = build(cls, replica_id=-1, topics=(build(tcls, name=topic, partitions=(
            build(pcls, partition_index=0, timestamp=-1),)),))
        assert c.send(body).topics[0].partitions[0].error_code == ErrorCode.not_leader_or_follower
    finally:
        c.close()


def test_find_coordinator_single_and_batched(kafka_cluster: Any, client: Any) -> None:
    single = client.send(req_cls(10, 1)(key="g1", key_type=0))
    assert single.error_code == ErrorCode.none and single.node_id in {0, 1, 2}
    assert f"{single.host}:{single.port}" == kafka_cluster.broker(single.node_id).bootstrap_server
    batched = client.send(req_cls(10, 4)(key_type=0, coordinator_keys=("g1", "g2", "g3")))
    assert [c.key for c in batched.coordinators] == ["g1", "g2", "g3"]
    assert all(c.error_code == ErrorCode.none for c in batched.coordinators)
    assert batched.coordinators[0].node_id == single.node_id
    txn = client.send(req_cls(10, 4)(key_type=1, coordinator_keys=("tx", "")))
    assert txn.coordinators[0].error_code == ErrorCode.none and txn.coordinators[0].node_id in {0, 1, 2}
    assert txn.coordinators[1].error_code == ErrorCode.invalid_request
    assert kafka_cluster.metadata.topic("__transaction_state") is not None


def test_init_producer_id_unique_and_epoch_bump(client: Any) -> None:
    a = client.send(req_cls(22, 0)(transactional_id=None, transaction_timeout=timedelta(seconds=60)))
    b = client.send(req_cls(22, 4)(transactional_id=None, transaction_timeout=timedelta(seconds=60),
                                   producer_id=-1, producer_epoch=-1))
    assert a.error_code == b.error_code == ErrorCode.none
    assert a.producer_id != b.producer_id and a.producer_epoch == b.producer_epoch == 0
    bumped = client.send(req_cls(22, 4)(transactional_id=None, transaction_timeout=timedelta(seconds=60),
                                        producer_id=b.producer_id, producer_epoch=0))
    assert (bumped.producer_id, bumped.producer_epoch) == (b.producer_id, 1)


def test_create_and_delete_topics_errors(kafka_cluster: Any, client: Any) -> None:
    cls = req_cls(19, 7)
    tcls = item_cls(cls, "topics")
    name = unique("ct")

    def create(*topics: Any, validate_only: bool = False) -> Any:
        return client.send(build(cls, topics=topics, timeout=timedelta(seconds=5), validate_only=validate_only))

    resp = create(build(tcls, name=name, num_partitions=-1, replication_factor=-1))
    (t,) = resp.topics
    assert t.error_code == ErrorCode.none and t.num_partitions == 2 and t.replication_factor == 3
    assert t.topic_id == kafka_cluster.metadata.topic_id(name)
    dup = create(build(tcls, name=name, num_partitions=1, replication_factor=1))
    assert dup.topics[0].error_code == ErrorCode.topic_already_exists
    too_many = create(build(tcls, name=unique("rf"), num_partitions=1, replication_factor=4))
    assert too_many.topics[0].error_code == ErrorCode.invalid_replication_factor
    bad = create(build(tcls, name="bad name", num_partitions=1, replication_factor=1))
    assert bad.topics[0].error_code == ErrorCode.invalid_topic_exception
    dry = unique("dry")
    assert create(build(tcls, name=dry, num_partitions=1, replication_factor=1),
                  validate_only=True).topics[0].error_code == ErrorCode.none
    assert kafka_cluster.metadata.topic(dry) is None

    old = client.send(req_cls(20, 1)(topic_names=(name, unique("missing")), timeout=timedelta(seconds=5)))
    assert [r.error_code for r in old.responses] == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
    wait_until(lambda: kafka_cluster.metadata.topic(name) is None, 5, what="topic removed")


def test_describe_cluster_and_configs(kafka_cluster: Any, client: Any) -> None:
    dc = client.send(req_cls(60, 1)(include_cluster_authorized_operations=False, endpoint_type=1))
    assert dc.error_code == ErrorCode.none and dc.cluster_id == kafka_cluster.metadata.cluster_id
    assert sorted(b.broker_id for b in dc.brokers) == [0, 1, 2]
    topic = unique("cfg")
    kafka_cluster.create_topic(topic, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    cls = req_cls(32, 4)
    rcls = item_cls(cls, "resources")
    resp = client.send(build(cls, resources=(
        build(rcls, resource_type=2, resource_name=topic, configuration_keys=None),
        build(rcls, resource_type=4, resource_name="0", configuration_keys=("num.partitions",)),
        build(rcls, resource_type=2, resource_name=unique("nope"), configuration_keys=None),
    ), include_synonyms=False, include_documentation=False))
    topic_cfg = {c.name: (c.value, c.config_source) for c in resp.results[0].configs}
    assert topic_cfg["min.insync.replicas"] == ("2", 1)
    assert topic_cfg["cleanup.policy"] == ("delete", 5)
    assert [(c.name, c.value) for c in resp.results[1].configs] == [("num.partitions", "2")]
    assert resp.results[2].error_code == ErrorCode.unknown_topic_or_partition


def test_group_apis_without_a_group(client: Any, kafka_cluster: Any) -> None:
    coordinator = client.send(req_cls(10, 1)(key="lonely", key_type=0)).node_id
    c = RawClient(kafka_cluster.broker(coordinator).bootstrap_server)
    try:
        hb = c.send(req_cls(12, 4)(group_id="lonely", generation_id=1, member_id="m", group_instance_id=None))
        assert hb.error_code == ErrorCode.unknown_member_id
        dg = c.send(req_cls(15, 5)(groups=("lonely",), include_authorized_operations=False))
        assert dg.groups[0].group_state == "Dead"
        of = c.send(req_cls(9, 1)(group_id="lonely", topics=(
            item_cls(req_cls(9, 1), "topics")(name="t", partition_indexes=(0,)),)))
        assert of.topics[0].partitions[0].committed_offset == -1
        dl = c.send(req_cls(42, 2)(groups_names=("lonely",)))
        assert dl.results[0].error_code == ErrorCode.group_id_not_found
        lg = c.send(req_cls(16, 4)(states_filter=()))
        assert lg.error_code == ErrorCode.none
    finally:
        c.close()


def test_describe_cluster_lists_fenced_brokers_on_request(kafka_cluster: Any, client: Any) -> None:
    resp = client.send(req_cls(60, 2)(include_cluster_authorized_operations=False, endpoint_type=1,
                                      include_fenced_brokers=True))
    assert [(b.broker_id, b.is_fenced) for b in resp.brokers] == [(0, False), (1, False), (2, False)]
