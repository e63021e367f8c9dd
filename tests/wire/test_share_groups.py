"""Share groups (KIP-932) with the real client: confluent-kafka 2.16's ``ShareConsumer`` against 3
brokers, replication factor 3 (Kafka's ShareConsumerTest scenarios: delivery to several
consumers, explicit RELEASE and REJECT, the acquisition lock of a killed consumer, the delivery
count limit, a share-partition leader stopped and restarted), and the share APIs' wire answers.

The cluster's clock is ``offset``: real time, moved forward by ``advance_time`` to expire
acquisition locks (share sessions last 45 s, so a 15 s jump expires no member)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from kafka_emu.broker.server.share.share_partition import RecordState
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.records import partition_for
from kafka_emu.coordinator.share.share_coordinator_records import topic_id_string

from wire_helpers import RawClient, unique, wait_until

LOCK_MS = 15_000
pytestmark = [pytest.mark.timeout(120),
              pytest.mark.kafka_cluster(brokers=3, time="offset", record_requests=True, config={
                  "group.share.record.lock.duration.ms": LOCK_MS, "group.share.delivery.count.limit": 3})]


def set_group_configs(bs: str, group: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    for f in admin.incremental_alter_configs([res]).values():
        f.result()


def share_consumer(bs: str, group: str, explicit: bool = False) -> ShareConsumer:
    config = {"bootstrap.servers": bs, "group.id": group, "reconnect.backoff.ms": 20, "retry.backoff.ms": 20,
              "topic.metadata.refresh.interval.ms": 500}
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    return ShareConsumer(config)


def produce(bs: str, topic: str, values: range, batch: int = 50) -> None:
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5})
    for v in values:
        p.produce(topic, str(v).encode(), partition=0)
        if (v + 1) % batch == 0:
            p.flush(10)
    assert p.flush(20) == 0


def new_group(cluster: Any, prefix: str, records: int) -> tuple[str, str, str]:
    topic, group = unique(f"sg-{prefix}"), unique(f"g-{prefix}")
    cluster.create_topic(topic, 1, 3)
    bs = cluster.bootstrap_servers
    set_group_configs(bs, group, share_auto_offset_reset="earliest")
    produce(bs, topic, range(records))
    return bs, topic, group


def share_partition(cluster: Any, group: str, topic: str) -> Any:
    server = cluster.broker(cluster.leader_of(topic, 0))
    topic_id = cluster.metadata.topic_id(topic)
    return server.share_partition_manager._partitions.get((group, topic_id, 0))


def test_three_consumers_split_1000_records_none_twice(kafka_cluster: Any) -> None:
    """ShareConsumerTest.testMultipleConsumersInGroupSequentialConsumption: three consumers of a
    one-partition topic; each record is delivered once when every delivery is accepted."""
    bs, topic, group = new_group(kafka_cluster, "split", 1000)
    consumers = [share_consumer(bs, group) for _ in range(3)]
    for c in consumers:
        c.subscribe([topic])
    got: Counter[int] = Counter()
    per_consumer = Counter()
    deadline = time.monotonic() + 40
    while sum(got.values()) < 1000 and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            for m in c.poll(0.05) or []:
                if m.error() is None:
                    got[int(m.value())] += 1
                    per_consumer[i] += 1
    for c in consumers:
        c.commit_sync(10)
        c.close()
    assert set(got) == set(range(1000))
    assert max(got.values()) == 1, [v for v, n in got.items() if n > 1][:10]
    assert len(per_consumer) >= 2, per_consumer   # the partition is shared
    wait_until(lambda: share_partition(kafka_cluster, group, topic).start_offset == 1000, 10,
               what="every record acknowledged")


def test_release_redelivers_and_reject_archives(kafka_cluster: Any) -> None:
    """ShareConsumerTest.testExplicitAcknowledgeReleaseAccept / testExplicitAcknowledgementReject:
    a RELEASEd record comes back with its delivery count raised; a REJECTed one never does."""
    bs, topic, group = new_group(kafka_cluster, "ack", 10)
    c = share_consumer(bs, group, explicit=True)
    c.subscribe([topic])
    deliveries: Counter[int] = Counter()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (deliveries[3] < 2 or sum(deliveries.values()) < 11):
        for m in c.poll(0.2) or []:
            v = int(m.value())
            deliveries[v] += 1
            kind = AcknowledgeType.ACCEPT
            if v == 3 and deliveries[v] == 1:
                kind = AcknowledgeType.RELEASE
            elif v == 5:
                kind = AcknowledgeType.REJECT
            c.acknowledge(m, kind)
        c.commit_sync(10)
    for _ in range(5):   # nothing more comes
        for m in c.poll(0.2) or []:
            deliveries[int(m.value())] += 1
            c.acknowledge(m)
    c.close()
    assert deliveries == Counter({**{v: 1 for v in range(10)}, 3: 2}), deliveries
    sp = share_partition(kafka_cluster, group, topic)
    assert sp.start_offset == 10 and sp.in_flight() == []
    snap = kafka_cluster.broker(kafka_cluster.leader_of(topic, 0)).share_partition_manager.snapshot()
    assert snap.acknowledgements["Release"] >= 1 and snap.acknowledgements["Reject"] >= 1


KILLABLE = """
import sys
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "share.acknowledgement.mode": "explicit"})
c.subscribe([sys.argv[3]])
while True:
    msgs = [m for m in (c.poll(0.2) or []) if m.error() is None]
    if msgs:
        print("acquired", len(msgs), flush=True)
        break
while True:
    pass
"""


def test_sigkilled_consumers_records_come_back_after_the_lock_duration(kafka_cluster: Any) -> None:
    """ShareConsumerTest.testAcquisitionLockTimeoutOnConsumer: a consumer acquires records and is
    SIGKILLed; they stay locked until the lock duration passes (``advance_time``), then another
    consumer gets them, with delivery count 2."""
    bs, topic, group = new_group(kafka_cluster, "kill", 20)
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, bs, group, topic], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("acquired")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        sp = share_partition(kafka_cluster, group, topic)
        held = [b for b in sp.in_flight() if b[2] is RecordState.ACQUIRED]
        assert held and sum(b[1] - b[0] + 1 for b in held) == 20
        other = share_consumer(bs, group)
        other.subscribe([topic])
        assert not [m for _ in range(5) for m in (other.poll(0.2) or [])]   # still locked
        kafka_cluster.advance_time(LOCK_MS + 1)
        got: list[int] = []
        wait_until(lambda: got.extend(int(m.value()) for m in (other.poll(0.2) or [])) or len(got) >= 20, 20,
                   what="the killed consumer's records redelivered")
        assert sorted(got) == list(range(20))
        other.commit_sync(10)
        wait_until(lambda: sp.start_offset == 20, 10, what="accepted")
        snap = kafka_cluster.broker(kafka_cluster.leader_of(topic, 0)).share_partition_manager.snapshot()
        assert snap.record_lock_timeouts >= 20
        other.close()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_poison_record_archived_after_the_delivery_limit(kafka_cluster: Any) -> None:
    """ShareConsumerTest.testDeliveryCountLimit: a record released on every delivery is delivered
    ``group.share.delivery.count.limit`` (3) times, then archived."""
    bs, topic, group = new_group(kafka_cluster, "poison", 5)
    c = share_consumer(bs, group, explicit=True)
    c.subscribe([topic])
    deliveries: Counter[int] = Counter()
    deadline = time.monotonic() + 30
    sp = None
    while time.monotonic() < deadline:
        for m in c.poll(0.2) or []:
            v = int(m.value())
            deliveries[v] += 1
            c.acknowledge(m, AcknowledgeType.RELEASE if v == 2 else AcknowledgeType.ACCEPT)
        c.commit_sync(10)
        sp = share_partition(kafka_cluster, group, topic)
        if sp is not None and sp.start_offset == 5 and deliveries[2] >= 3:
            break
    for _ in range(3):
        for m in c.poll(0.2) or []:
            deliveries[int(m.value())] += 1
            c.acknowledge(m)
    c.close()
    assert deliveries == Counter({0: 1, 1: 1, 2: 3, 3: 1, 4: 1}), deliveries
    assert sp is not None and sp.start_offset == 5


def test_leader_stopped_and_restarted_acknowledged_records_stay_acknowledged(kafka_cluster: Any) -> None:
    """The share-partition leader's broker stops after half the records were accepted: the new
    leader restores the state from __share_group_state, so accepted records are never delivered
    again; the rest are; then the broker comes back."""
    bs, topic, group = new_group(kafka_cluster, "fo", 100)
    c = share_consumer(bs, group, explicit=True)
    c.subscribe([topic])
    accepted: list[int] = []
    deadline = time.monotonic() + 30
    while len(accepted) < 50 and time.monotonic() < deadline:
        msgs = [m for m in (c.poll(0.2) or []) if m.error() is None]
        for m in msgs:
            v = int(m.value())
            if v < 50:
                accepted.append(v)
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            else:
                c.acknowledge(m, AcknowledgeType.RELEASE)
        if msgs:
            c.commit_sync(10)
    assert sorted(accepted) == list(range(50))
    old = kafka_cluster.leader_of(topic, 0)
    kafka_cluster.stop_broker(old)
    try:
        wait_until(lambda: kafka_cluster.leader_of(topic, 0) not in (-1, old), 10, what="new leader")
        got: list[int] = []
        wait_until(lambda: got.extend(int(m.value()) for m in (c.poll(0.2) or []) if m.error() is None)
                   or len(set(got)) >= 50, 40, what="the other half delivered by the new leader")
        assert set(got) == set(range(50, 100)), sorted(set(got) - set(range(50, 100)))
    finally:
        kafka_cluster.start_broker(old)
        wait_until(lambda: old in kafka_cluster.live_brokers(), 10, what="broker restarted")
    c.close()


def test_share_apis_wire_answers(kafka_cluster: Any) -> None:
    """ShareFetchRequestTest / ShareGroupHeartbeatRequestTest cases: a session's errors, an
    acknowledgement in an initial request, an unknown member's acknowledge, FindCoordinator key
    type 2, ListGroups' share type."""
    from kio.index import load_request_schema
    from kafka_emu.broker.protocol.adapter import build, item_cls
    bs, topic, group = new_group(kafka_cluster, "wire", 3)
    topic_id = kafka_cluster.metadata.topic_id(topic)
    client = RawClient(kafka_cluster.broker(kafka_cluster.leader_of(topic, 0)).bootstrap_server)
    try:
        cls = load_request_schema(78, 1)
        t_cls = item_cls(cls, "topics")
        p_cls = item_cls(t_cls, "partitions")
        b_cls = item_cls(p_cls, "acknowledgement_batches")

        def fetch(epoch: int, acks: tuple = (), member: str = "m1", wait: int = 0) -> Any:
            return client.send(build(cls, group_id=group, member_id=member, share_session_epoch=epoch,
                                     max_wait=timedelta(milliseconds=wait), min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                                     topics=(build(t_cls, topic_id=topic_id, partitions=(build(
                                         p_cls, partition_index=0, acknowledgement_batches=acks),)),),
                                     forgotten_topics_data=()))

        assert fetch(3).error_code == Errors.SHARE_SESSION_NOT_FOUND
        ack = (build(b_cls, first_offset=0, last_offset=0, acknowledge_types=(1,)),)
        assert fetch(0, ack).error_code == Errors.INVALID_REQUEST
        first = fetch(0, wait=2000)
        assert first.error_code == Errors.NONE
        (p,) = first.responses[0].partitions
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(0, 2, 1)]
        assert first.acquisition_lock_timeout.total_seconds() * 1000 == LOCK_MS
        assert fetch(5).error_code == Errors.INVALID_SHARE_SESSION_EPOCH
        bad = fetch(1, (build(b_cls, first_offset=0, last_offset=0, acknowledge_types=(1,)),), member="m1")
        assert bad.error_code == Errors.NONE
        assert bad.responses[0].partitions[0].acknowledge_error_code == Errors.NONE
        other = fetch(0, member="m2")
        assert other.error_code == Errors.NONE
        ack_cls = load_request_schema(79, 1)
        at_cls = item_cls(ack_cls, "topics")
        ap_cls = item_cls(at_cls, "partitions")
        ab_cls = item_cls(ap_cls, "acknowledgement_batches")
        resp = client.send(build(ack_cls, group_id=group, member_id="m2", share_session_epoch=1, topics=(build(
            at_cls, topic_id=topic_id, partitions=(build(ap_cls, partition_index=0, acknowledgement_batches=(
                build(ab_cls, first_offset=1, last_offset=1, acknowledge_types=(1,)),)),)),)))
        assert resp.responses[0].partitions[0].error_code == Errors.INVALID_RECORD_STATE   # m1 holds it
        fc = load_request_schema(10, 6)
        found = client.send(build(fc, key_type=2, coordinator_keys=(f"{group}:{topic_id_string(topic_id)}:0", "bad")))
        assert [c.error_code for c in found.coordinators] == [Errors.NONE, Errors.INVALID_REQUEST]
    finally:
        client.close()




def test_share_group_offsets_admin_and_delete(kafka_cluster: Any) -> None:
    """DescribeShareGroupOffsets / AlterShareGroupOffsets / DeleteShareGroupOffsets
    (ShareGroupOffsetsIntegrationTest cases): the start offset after accepting, refused while a
    member is in the group, altered back to 0 (every record delivered again), deleted; ListGroups'
    share type; DeleteGroups removes the group and its state."""
    from kio.index import load_request_schema
    from kafka_emu.broker.protocol.adapter import build, item_cls
    bs, topic, group = new_group(kafka_cluster, "admin", 10)
    c = share_consumer(bs, group)
    c.subscribe([topic])
    got: list[int] = []
    wait_until(lambda: got.extend(int(m.value()) for m in (c.poll(0.2) or [])) or len(got) >= 10, 20,
               what="records")
    c.commit_sync(10)
    coordinator = kafka_cluster.leader_of("__consumer_offsets", partition_for(
        group, kafka_cluster.broker_config(0)["offsets.topic.num.partitions"]))
    client = RawClient(kafka_cluster.broker(coordinator).bootstrap_server)
    try:
        d_cls = load_request_schema(90, 1)
        dg_cls = item_cls(d_cls, "groups")
        dt_cls = item_cls(dg_cls, "topics")

        def describe(topics: Any = None) -> Any:
            (g,) = client.send(build(d_cls, groups=(build(dg_cls, group_id=group, topics=topics),))).groups
            return g

        g = describe()
        assert g.error_code == Errors.NONE
        (t,) = g.topics
        assert (t.topic_name, [(p.partition_index, p.start_offset, p.lag) for p in t.partitions]) == (topic, [(0, 10, 0)])
        a_cls = load_request_schema(91, 0)
        at_cls = item_cls(a_cls, "topics")
        ap_cls = item_cls(at_cls, "partitions")

        def alter(start: int) -> Any:
            return client.send(build(a_cls, group_id=group, topics=(build(at_cls, topic_name=topic, partitions=(
                build(ap_cls, partition_index=0, start_offset=start),)),)))

        refused = alter(0)
        assert (refused.error_code, refused.error_message) == (Errors.NON_EMPTY_GROUP, "The group is not empty.")
        c.close()
        wait_until(lambda: alter(0).error_code == Errors.NONE, 20, what="the group empty")
        assert describe((build(dt_cls, topic_name=topic, partitions=(0,)),)).topics[0].partitions[0].start_offset == 0
        again = share_consumer(bs, group)
        again.subscribe([topic])
        redelivered: list[int] = []
        wait_until(lambda: redelivered.extend(int(m.value()) for m in (again.poll(0.2) or [])) or
                   len(redelivered) >= 10, 20, what="records delivered again from the altered start offset")
        assert sorted(redelivered) == list(range(10))
        again.commit_sync(10)
        again.close()
        l_cls = load_request_schema(16, 5)
        wait_until(lambda: (group, "share") in [(x.group_id, x.group_type) for x in client.send(build(
            l_cls, states_filter=("Empty",), types_filter=("share",))).groups], 20,
            what="the group listed as an empty share group")
        x_cls = load_request_schema(92, 0)
        xt_cls = item_cls(x_cls, "topics")
        deleted = client.send(build(x_cls, group_id=group, topics=(build(xt_cls, topic_name=topic),)))
        assert [(r.topic_name, r.error_code) for r in deleted.responses] == [(topic, Errors.NONE)]
        assert describe().topics == ()
        dg = load_request_schema(42, 2)
        assert [r.error_code for r in client.send(build(dg, groups_names=(group,))).results] == [Errors.NONE]
        assert describe().error_code == Errors.GROUP_ID_NOT_FOUND
    finally:
        client.close()


def test_test_control_and_metrics_on_share_groups(kafka_cluster: Any) -> None:
    """Test control on a share group: errors injected into its ShareGroupHeartbeats and
    ShareFetches (matched by group id), which the consumer rides out; the requests in
    ``requests()``; and the share series of the metrics (acknowledgements by type, the start
    offset and lag, the ShareFetch purgatory, share group counts)."""
    from kafka_emu.metrics import ClusterMetrics
    bs, topic, group = new_group(kafka_cluster, "ctl", 30)
    hb = kafka_cluster.inject_errors("ShareGroupHeartbeat", ["COORDINATOR_LOAD_IN_PROGRESS"], group=group)
    sf = kafka_cluster.inject_errors("ShareFetch", ["SHARE_SESSION_NOT_FOUND", "UNKNOWN_SERVER_ERROR"], group=group)
    metrics = ClusterMetrics(kafka_cluster)
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "client.id": group, "retry.backoff.ms": 20,
                       "reconnect.backoff.ms": 20})
    try:
        c.subscribe([topic])
        got: list[int] = []
        wait_until(lambda: got.extend(int(m.value()) for m in (c.poll(0.2) or []) if m.error() is None)
                   or len(set(got)) >= 30, 30, what="records despite the errors")
        assert set(got) == set(range(30))
        c.commit_sync(10)
        assert hb.injected == 1 and sf.injected == 2
        fetches = kafka_cluster.requests(api="ShareFetch", client_id=group)
        assert [r.fault for r in fetches[:2]] == ["error", "error"]
        assert [r.response.error_code for r in fetches[:2]] == [Errors.SHARE_SESSION_NOT_FOUND,
                                                                 Errors.UNKNOWN_SERVER_ERROR]
        leader = kafka_cluster.leader_of(topic, 0)
        labels = {"broker_id": str(leader), "group": group, "topic": topic, "partition": "0"}
        wait_until(lambda: metrics.sample("kafka_emu_share_group_start_offset", labels) == 30, 10,
                   what="the start offset series")
        assert metrics.sample("kafka_emu_share_group_lag", labels) == 0
        assert (metrics.sample("kafka_server_share_group_metrics_record_acknowledgement_total",
                               {"broker_id": str(leader), "ack_type": "Accept"}) or 0) >= 30
        assert metrics.sample("kafka_server_delayedoperationpurgatory_purgatorysize",
                              {"broker_id": str(leader), "delayedOperation": "ShareFetch"}) is not None
        counts = [metrics.sample("kafka_server_group_coordinator_metrics_group_count",
                                 {"broker_id": str(b), "protocol": "share"}) or 0 for b in range(3)]
        assert sum(counts) >= 1
    finally:
        c.close()
        metrics.close()
        kafka_cluster.clear_faults()


@pytest.mark.kafka_cluster(brokers=1, scope="function", config={"emulator.share.version": 0})
def test_share_groups_off_answer_as_kafka_does(kafka_cluster: Any) -> None:
    """``emulator.share.version=0`` (Kafka's ``share.version=0``): the share APIs stay listed, the
    group-facing ones answer UNSUPPORTED_VERSION (KafkaApis.isShareGroupProtocolEnabled), while
    FindCoordinator key type 2 and the share coordinator's state APIs, which Kafka does not gate,
    answer as usual; ApiVersions finalizes no share.version."""
    from kio.index import load_request_schema
    from kafka_emu.broker.protocol.adapter import build, item_cls
    client = RawClient(kafka_cluster.bootstrap_servers)
    try:
        versions = client.send(load_request_schema(18, 4)(client_software_name="t", client_software_version="1"))
        listed = {int(k.api_key) for k in versions.api_keys}
        assert {76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92} <= listed
        assert "share.version" not in {f.name for f in versions.finalized_features}
        assert [(f.min_version, f.max_version) for f in versions.supported_features if f.name == "share.version"] \
            == [(0, 1)]
        hb = client.send(build(load_request_schema(76, 1), group_id="g", member_id="m", member_epoch=0,
                               subscribed_topic_names=("t",)))
        assert hb.error_code == Errors.UNSUPPORTED_VERSION
        describe = load_request_schema(90, 1)
        offsets = client.send(build(describe, groups=(build(item_cls(describe, "groups"), group_id="g", topics=None),)))
        assert [g.error_code for g in offsets.groups] == [Errors.UNSUPPORTED_VERSION]
        key = "g:AAAAAAAAAAAAAAAAAAAAAA:0"
        found = client.send(build(load_request_schema(10, 6), key_type=2, coordinator_keys=(key,)))
        assert found.coordinators[0].error_code == Errors.NONE
        assert client.send(build(load_request_schema(10, 5), key_type=2, coordinator_keys=(key,))
                           ).coordinators[0].error_code == Errors.INVALID_REQUEST   # key type 2 from v6
    finally:
        client.close()


@pytest.mark.parametrize("name, share_version, served", [("4.0", 0, None), ("4.1", 0, (1, 1)), ("4.1", 1, (1, 1)),
                                                         ("4.2", 1, (1, 2))])
def test_share_apis_and_feature_as_each_release_serves_them(name: str, share_version: int,
                                                             served: tuple[int, int] | None) -> None:
    """ShareFetch's listed range and the finalized share.version, per release: 4.0 lists no share
    API, 4.1 ShareFetch v1 (finalized 0 unless upgraded), 4.2 v1-2 with share.version 1."""
    from kafka_emu.broker.apis.api_versions import build_api_versions_response
    from kafka_emu.common.kafka_releases import RELEASES
    answer = build_api_versions_response(4, 0, RELEASES[name], 2, share_version)
    assert {int(k.api_key): (k.min_version, k.max_version) for k in answer.api_keys}.get(78) == served
    finalized = [(f.min_version_level, f.max_version_level) for f in answer.finalized_features
                 if f.name == "share.version"]
    assert finalized == ([(1, 1)] if share_version else [])
