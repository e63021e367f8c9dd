"""Test control without clients: name parsing, injection matching (with a hypothesis property),
plain-value conversion, recording switches and the metrics family."""
from __future__ import annotations

import threading
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.cluster.control.faults import (
    DISCONNECT,
    ErrorInjection,
    FaultTable,
    RequestFacts,
    api_key,
    error_code,
    new_injection,
    request_facts,
)
from kafka_emu.broker.cluster.control.entity_json import from_json_value, to_json_value
from kafka_emu.broker.cluster.inprocess_client import produce_request
from kafka_emu.broker.protocol.adapter import response_schema
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(60)


def test_api_and_error_names() -> None:
    assert api_key("Produce") == 0 and api_key("joingroup") == 11 and api_key(10) == 10 and api_key("3") == 3
    assert error_code("not_leader_or_follower") == Errors.NOT_LEADER_OR_FOLLOWER
    assert error_code(15) == Errors.COORDINATOR_NOT_AVAILABLE
    assert error_code("disconnect") == DISCONNECT and error_code("NONE") == Errors.NONE
    assert error_code("FENCED_LEADER_EPOCH") == 74       # any of Kafka's errors, not only the emulator's
    for bad in ("Produse", 999, True):
        with pytest.raises(ValueError, match="unknown API"):
            api_key(bad)
    for bad in ("NOT_AN_ERROR", 31337, "name"):
        with pytest.raises(ValueError, match="unknown Kafka error"):
            error_code(bad)
    with pytest.raises(ValueError, match="list"):
        new_injection("Produce", "NONE")
    with pytest.raises(ValueError, match="partition needs topic"):
        new_injection("Produce", ["NONE"], partition=1)


def test_request_facts_of_a_produce_request() -> None:
    body = produce_request("orders", 3, build_batch([(b"k", b"v")]), -1, 1000, 9)
    facts = request_facts(0, 1, body, None)
    assert facts.partitions == {("orders", 3)} and facts.broker == 1


def test_filters_select_the_matching_requests() -> None:
    table = FaultTable()
    table.add(new_injection("Produce", ["NOT_LEADER_OR_FOLLOWER"], topic="a", partition=1))
    table.add(new_injection("JoinGroup", ["REBALANCE_IN_PROGRESS"], group="g", broker=2))
    produce = RequestFacts(0, 0, {("a", 0)})
    assert table.take(produce) is None                     # other partition
    produce.partitions.add(("a", 1))
    assert table.take(produce)[1] == Errors.NOT_LEADER_OR_FOLLOWER
    assert table.take(produce) is None                     # spent
    join = RequestFacts(11, 1, groups={"g"})
    assert table.take(join) is None                        # other broker
    join.broker = 2
    assert table.take(join)[1] == Errors.REBALANCE_IN_PROGRESS
    assert table.pending() == []


@settings(max_examples=60, deadline=None)
@given(codes=st.lists(st.sampled_from([0, 6, 7, 15, DISCONNECT]), min_size=1, max_size=8),
       requests=st.lists(st.tuples(st.sampled_from([0, 1]), st.sampled_from(["a", "b"])), max_size=30))
def test_each_entry_answers_exactly_one_matching_request_in_order(codes: list, requests: list) -> None:
    """Invariant: the matching requests, in arrival order, take the queued entries in order,
    one each; non-matching requests take nothing."""
    table = FaultTable()
    table.add(ErrorInjection(0, deque(codes), topic="a"))
    taken = []
    for api, topic in requests:
        got = table.take(RequestFacts(api, 0, {(topic, 0)}))
        if api != 0 or topic != "a":
            assert got is None
        elif got is not None:
            taken.append(got[1])
    matching = sum(1 for api, topic in requests if api == 0 and topic == "a")
    assert taken == codes[:matching]


def test_concurrent_takers_never_share_an_entry() -> None:
    table = FaultTable()
    table.add(ErrorInjection(0, deque(range(1, 2001)), topic="a"))
    got: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        while True:
            entry = table.take(RequestFacts(0, 0, {("a", 0)}))
            if entry is None:
                return
            with lock:
                got.append(entry[1])

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(got) == list(range(1, 2001))


def test_plain_round_trip_and_unknown_fields() -> None:
    cls = response_schema(ApiKeys.METADATA, 12)
    entity = from_json_value(cls, {"brokers": [{"node_id": 1, "host": "h", "port": 9092}], "cluster_id": "c",
                              "controller_id": 1, "topics": [{"name": "t", "topic_id": "00000000-0000-0000-0000-000000000001",
                                                              "partitions": [{"partition_index": 0, "leader_id": 1,
                                                                              "replica_nodes": [1], "isr_nodes": [1]}]}]})
    assert entity.topics[0].partitions[0].leader_epoch == -1          # schema default for epochs
    assert from_json_value(cls, to_json_value(entity)) == entity
    with pytest.raises(ValueError, match="has no field leader"):
        from_json_value(cls, {"topics": [{"name": "t", "leader": 2}]})


def test_recording_is_off_by_default_and_metrics_count_actions() -> None:
    with EmbeddedCluster(brokers=1, config={"listeners": ""}, metrics_port=0) as cluster:
        with pytest.raises(RuntimeError, match="record_requests=True"):
            cluster.requests()
        cluster.set_latency(0, 10)
        cluster.clear_faults()
        text = cluster.metrics.exposition()
        assert 'kafka_emu_control_actions_total{action="latency_set"} 1.0' in text
        assert 'kafka_emu_control_actions_total{action="faults_cleared"} 1.0' in text
