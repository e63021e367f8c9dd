"""What the collectors read, wired in the real broker and coordinator.

Each test drives a real component (an EmbeddedCluster over TCP, a KafkaApis handler thread, a
GroupCoordinator) and checks that the value a scrape would read is now right: a parked fetch
counts its wait as RemoteTimeMs (not LocalTimeMs), a network request reaches the listeners
only after its response was written (with response-queue and send stamps), the response-queue
gauge, the longest rebalance, the log context of handler threads, and the cluster's own
``metrics_port`` endpoint.
"""
from __future__ import annotations

import importlib
import io
import json
import socket
import struct
import threading
import time
import urllib.request
from typing import Any, Iterator

import pytest

from kafka_emu.metrics import ClusterMetrics
from kafka_emu.logsetup import clear_thread_context, configure_logging
from kafka_emu.metrics.request_metrics import phase_times_ms

from metrics_support import eventually

pytestmark = pytest.mark.timeout(60)

cluster_module = importlib.import_module("kafka_emu.broker.cluster.embedded_cluster")
FETCH, API_VERSIONS = 1, 18


@pytest.fixture
def cluster() -> Iterator[Any]:
    c = cluster_module.EmbeddedCluster(brokers=1, offsets_topic=False)
    try:
        yield c
    finally:
        c.close()


def api_versions_frame(correlation_id: int) -> bytes:
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    from kafka_emu.broker.protocol.codec import encode_request

    return encode_request(ApiVersionsRequest(client_software_name="hooks-test",
                                             client_software_version="1"), correlation_id, "hooks-client")


def read_frame(sock: socket.socket) -> bytes:
    def exact(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            assert chunk, "broker closed the connection"
            out += chunk
        return out
    return exact(struct.unpack(">i", exact(4))[0])


def test_parked_fetch_counts_its_wait_as_remote_time_not_local_time(cluster: Any) -> None:
    from kafka_emu.broker.cluster.inprocess_client import fetch_request, send

    cluster.create_topic("quiet", 1, 1)
    channel = cluster.broker(0).request_channel
    seen: list[Any] = []
    channel.request_listeners.append(seen.append)
    started = time.monotonic()
    # Nothing to read: the fetch waits its full max.wait.ms in the Fetch purgatory.
    send(channel, FETCH, 12, fetch_request("quiet", 0, 0, max_wait_ms=300, min_bytes=1))
    assert time.monotonic() - started >= 0.25
    (request,) = [r for r in seen if r.api_key == FETCH]
    total, _queue, local, remote, _resp_queue, _send = phase_times_ms(request)
    assert request.api_local_complete_time_ns < request.response_complete_time_ns
    assert local < 100, f"the purgatory wait leaked into LocalTimeMs: {local} ms"
    assert remote >= 250 and total >= remote


def test_network_request_reaches_listeners_after_its_response_is_written(cluster: Any) -> None:
    server = cluster.broker(0)
    seen: list[tuple[Any, str]] = []

    def failing(_request: Any) -> None:
        raise RuntimeError("a broken listener must not end the processor")

    server.request_channel.request_listeners[:0] = [failing]
    server.request_channel.request_listeners.append(
        lambda r: seen.append((r, threading.current_thread().name)))
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for corr in (1, 2):  # the second one proves the processor survived the failing listener
            sock.sendall(api_versions_frame(corr))
            assert struct.unpack_from(">i", read_frame(sock), 0)[0] == corr
    eventually(lambda: len(seen) == 2, what="both requests reported")
    for request, thread in seen:
        assert request.processor_id >= 0 and thread.startswith("data-plane-kafka-network-thread-0-")
        assert 0 < request.start_time_ns <= request.dequeue_time_ns <= request.api_local_complete_time_ns
        assert request.api_local_complete_time_ns <= request.response_complete_time_ns
        assert request.response_complete_time_ns <= request.response_dequeue_time_ns <= request.end_time_ns
    # ...and the collector now sees real response-queue and send phases (ResponseSendTimeMs > 0)
    assert phase_times_ms(seen[0][0])[5] > 0


def test_processor_response_queue_size_and_its_gauge(cluster: Any) -> None:
    from kafka_emu.broker.network.processor import Processor
    from kafka_emu.broker.network.request_channel import CloseConnectionResponse, SendResponse

    ss = cluster.broker(0).socket_server
    assert [p.response_queue_size() for p in ss.processors] == [0]
    idle = Processor(ss, 99, "PLAINTEXT")   # not started: what is queued stays queued
    try:
        idle.enqueue_response(SendResponse("nobody", None, b"x"))
        idle.enqueue_response(CloseConnectionResponse("nobody", None))
        assert idle.response_queue_size() == 2
    finally:
        idle._close_all()
    with ClusterMetrics(cluster) as metrics:
        assert metrics.sample("kafka_network_requestchannel_responsequeuesize", {"broker_id": "0"}) == 0


def test_rebalance_time_max_is_the_longest_rebalance() -> None:
    from kafka_emu.coordinator.group.group_coordinator import GroupCoordinator
    from kafka_emu.coordinator.group.classic.group_metadata import GroupMetadata, GroupState
    from kafka_emu.timer import MockTime

    time_ = MockTime()
    gc = GroupCoordinator.__new__(GroupCoordinator)  # only the metrics hook under test
    gc.time = time_
    gc._metrics_lock = threading.Lock()
    gc.rebalances_started = gc.rebalance_count = gc.rebalance_time_ms_total = 0
    gc.rebalance_time_ms_max = 0
    group = GroupMetadata("g", GroupState.EMPTY, time_, on_transition=gc._on_transition)
    for took in (700, 200):
        group.transition_to(GroupState.PREPARING_REBALANCE)
        time_.sleep(took)
        group.transition_to(GroupState.COMPLETING_REBALANCE)
        group.transition_to(GroupState.STABLE)
    assert gc.rebalance_count == 2 and gc.rebalance_time_ms_total == 900
    assert gc.rebalance_time_ms_max == 700


def test_handler_thread_events_carry_broker_and_request_context(cluster: Any) -> None:
    import structlog

    from kafka_emu.broker.cluster.inprocess_client import send

    buffer = io.StringIO()
    configure_logging(level="info", fmt="json", stream=buffer)
    try:
        apis = cluster.broker(0).apis
        log = structlog.get_logger("broker.apis.test")

        def handler(apis_: Any, request: Any) -> None:
            log.info("handled_in_test")
            apis_.request_channel.send_response(request, None)

        apis.register(9999, handler)
        send(cluster.broker(0).request_channel, 9999, 3, None)
        log.info("outside_any_request")
    finally:
        clear_thread_context()
        configure_logging(level="warning")
    events = {e["event"]: e for e in map(json.loads, buffer.getvalue().splitlines())}
    inside, outside = events["handled_in_test"], events["outside_any_request"]
    assert inside["thread"].startswith("data-plane-kafka-request-handler-")
    assert inside["broker_id"] == 0 and inside["api_version"] == 3
    assert {"request", "correlation_id"} <= inside.keys()
    assert "request" not in outside and "broker_id" not in outside


def test_group_state_transitions_log_in_group_context() -> None:
    from kafka_emu.coordinator.group.classic.group_metadata import GroupMetadata, GroupState

    buffer = io.StringIO()
    configure_logging(level="info", fmt="json", stream=buffer)
    try:
        GroupMetadata("orders", GroupState.EMPTY).transition_to(GroupState.PREPARING_REBALANCE, "test")
    finally:
        configure_logging(level="warning")
    (event,) = [e for e in map(json.loads, buffer.getvalue().splitlines())
                if e["event"] == "group_state_transition"]
    assert event["group_id"] == "orders" and event["generation"] == 0


def test_embedded_cluster_serves_metrics_on_metrics_port() -> None:
    cluster = cluster_module.EmbeddedCluster(brokers=1, offsets_topic=False, metrics_port=0)
    try:
        url = cluster.metrics_url
        assert url is not None and url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        assert ('kafka_server_delayedoperationpurgatory_purgatorysize{broker_id="0",'
                'delayedOperation="Produce"}') in text
    finally:
        cluster.close()
    assert cluster.metrics_url is None and cluster.metrics is None
    off = cluster_module.EmbeddedCluster(brokers=1, offsets_topic=False)
    try:
        assert off.metrics_url is None
    finally:
        off.close()
