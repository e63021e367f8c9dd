"""Metadata responses built from cached per-topic encodings (``broker.apis.metadata``) and spliced
(``broker.protocol.metadata_splice``)."""
import pytest
from kio.serial import entity_reader

from kafka_emu.broker.apis._common import AUTHORIZED_OPS_OMITTED, ZERO_THROTTLE
from kafka_emu.broker.apis.metadata import TopicEncodingCache
from kafka_emu.broker.server.metadata_store import BrokerInfo, MetadataStore
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.broker.protocol.metadata_splice import splice_topics
from kafka_emu.common.api_keys import ApiKeys

pytestmark = pytest.mark.timeout(30)


def _store() -> MetadataStore:
    md = MetadataStore()
    for b in (0, 1, 2):
        md.register_broker(BrokerInfo(b))
    md.create_topic("a", 3, 3)
    md.create_topic("b", 2, 1)
    return md


def _decode(version: int, md: MetadataStore, cache: TopicEncodingCache, live=frozenset({0, 1, 2})):
    cls = response_schema(ApiKeys.METADATA, version)
    broker_cls = item_cls(cls, "brokers")
    shell = build(cls, throttle_time=ZERO_THROTTLE, brokers=(build(broker_cls, node_id=0, host="h", port=1),),
                  cluster_id="c", controller_id=0, topics=(),
                  cluster_authorized_operations=AUTHORIZED_OPS_OMITTED, error_code=0)
    parts = [cache.encoded(version, False, md.topic(n), live).data for n in ("a", "b")]
    data = splice_topics(version, shell, parts)
    body, size = entity_reader(cls)(data, 0)
    assert size == len(data)
    return body


@pytest.mark.parametrize("version", range(0, 14))
def test_spliced_response_decodes_as_the_full_response(version):
    md = _store()
    body = _decode(version, md, TopicEncodingCache())
    assert [t.name for t in body.topics] == ["a", "b"]
    assert [b.node_id for b in body.brokers] == [0]
    for t in body.topics:
        info = md.topic(t.name)
        assert [(p.partition_index, p.leader_id, tuple(p.replica_nodes)) for p in t.partitions] == \
            [(p, info.partitions[p].leader, info.partitions[p].replicas) for p in sorted(info.partitions)]


def test_entry_is_reencoded_when_a_partition_state_or_the_live_brokers_change():
    md = _store()
    cache = TopicEncodingCache()
    first = cache.encoded(12, False, md.topic("a"), frozenset({0, 1, 2}))
    assert cache.encoded(12, False, md.topic("a"), frozenset({0, 1, 2})) is first
    st = md.partition_state("a", 0)
    new_leader = next(r for r in st.replicas if r != st.leader)
    md.elect_leader("a", 0, new_leader)
    moved = _decode(12, md, cache)
    assert moved.topics[0].partitions[0].leader_id == new_leader
    down = _decode(12, md, cache, live=frozenset({0, 1}))
    assert all(2 in p.offline_replicas for p in down.topics[0].partitions)
