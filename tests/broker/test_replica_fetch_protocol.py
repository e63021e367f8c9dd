"""The in-process follower fetch: plain fetch parameters in, ``fetch_messages`` results out,
through the leader's ``KafkaApis`` (served on the fetcher's thread) and Fetch purgatory; the
leader's request channel and handler pool serve such a request too."""
from __future__ import annotations

import threading

import pytest

from kafka_emu.broker.server.partition import LogReadResult
from kafka_emu.broker.server.replica_fetcher import ReplicaFetchRequestData
from kafka_emu.broker.network.request_channel import Request
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from cluster_support import wait_until

pytestmark = pytest.mark.timeout(30)


def _follower_fetches(cluster, leader: int) -> list[Request]:
    seen: list[Request] = []
    lock = threading.Lock()

    def listener(request: Request) -> None:
        if request.api_key == ApiKeys.FETCH and isinstance(request.body, ReplicaFetchRequestData):
            with lock:
                seen.append(request)

    cluster.broker(leader).request_channel.request_listeners.append(listener)
    return seen


def test_follower_fetch_reaches_the_leader_apis_as_plain_values(make_cluster):
    c = make_cluster()
    c.create_topic("t", 1, 3)
    leader = c.leader_of("t")
    seen = _follower_fetches(c, leader)
    assert c.produce("t", 0, [(b"k", b"v")]) == (Errors.NONE, 0)
    wait_until(lambda: len(seen) >= 2, msg="follower fetches seen by the leader")
    req = seen[0]
    assert req.is_from_follower and req.body.params.replica_id != leader
    assert {tp for tp, _ in req.body.fetch_infos} == {("t", 0)}
    # answered by the leader's KafkaApis and purgatory (parked fetches count remote time)
    assert req.dequeue_time_ns >= req.start_time_ns and req.api_local_complete_time_ns > 0
    for b in range(3):
        wait_until(lambda: len(c.read_all("t", 0, broker_id=b)) == 1, msg=f"replica {b}")


def test_fetch_handler_answers_with_read_results(make_cluster):
    c = make_cluster()
    c.create_topic("t", 1, 3)
    leader = c.leader_of("t")
    c.produce("t", 0, [(b"k", b"v1")])
    follower = next(b for b in range(3) if b != leader)
    from kafka_emu.broker.server.fetch_params import ISOLATION_LOG_END, FetchParams, PartitionFetchInfo

    answers: list = []
    done = threading.Event()
    body = ReplicaFetchRequestData(FetchParams(replica_id=follower, max_wait_ms=0, isolation=ISOLATION_LOG_END),
                                   [(("t", 0), PartitionFetchInfo(fetch_offset=0, max_bytes=1 << 20))])
    request = Request(api_key=ApiKeys.FETCH, api_version=17, correlation_id=1, client_id="test", body=body,
                      respond=lambda resp: (answers.append(resp.body), done.set()), api_name=ApiKeys.FETCH.name,
                      replica_id=follower)
    assert c.broker(leader).request_channel.send_request(request, timeout_s=5)
    assert done.wait(10)
    [(tp, result)] = answers[0]
    assert tp == ("t", 0) and isinstance(result, LogReadResult)
    assert result.error == Errors.NONE and result.records and result.log_end_offset == 1


def test_recreated_topic_is_replicated_from_its_new_leader(make_cluster):
    c = make_cluster()
    c.create_topic("t", 1, 3)
    c.produce("t", 0, [(b"k", b"old")])
    c.delete_topic("t")
    c.create_topic("t", 1, 3)
    assert c.produce("t", 0, [(b"k", b"new")]) == (Errors.NONE, 0)
    for b in range(3):
        wait_until(lambda: [v for _, _, v in c.read_all("t", 0, broker_id=b)] == [b"new"],
                   msg=f"replica {b} holds only the re-created topic's record")
