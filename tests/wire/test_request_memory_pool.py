"""The request memory pool (``queued.max.request.bytes``, Kafka's ``SimpleMemoryPool``): the pool
itself, and network processors that stop reading a connection while the pool is empty.

Ports: Kafka's GarbageCollectedMemoryPoolTest (the cases that hold for SimpleMemoryPool) and
SelectorTest.testMuteOnOOM, over a real socket server with a stub request channel that holds
requests until the test answers them.
"""
from __future__ import annotations

import queue
import struct
import threading

import pytest
from kio.index import load_response_schema

from kafka_emu.broker.apis.api_versions import DefaultApiVersionManager, handle_api_versions
from kafka_emu.broker.network.socket_server import SocketServer
from kafka_emu.broker.protocol.codec import decode_response, encode_request
from kafka_emu.broker.server.config import ConfigException, KafkaConfig
from kafka_emu.common.memory_pool import SimpleMemoryPool

from test_network import StubRequest, StubResponse, api_versions_req, connect, is_closed, recv_frame

pytestmark = pytest.mark.timeout(30)


# ---------------------------------------------------------------- the pool
@pytest.mark.parametrize("size, max_single", [(0, 7), (-1, 7), (100, 0), (100, -1), (100, 101)])
def test_pool_refuses_bad_sizes(size: int, max_single: int) -> None:
    """testZeroSize, testNegativeSize, testZeroMaxAllocation, testNegativeMaxAllocation,
    testMaxAllocationLargerThanSize."""
    with pytest.raises(ValueError):
        SimpleMemoryPool(size, max_single)


@pytest.mark.parametrize("request_size", [11, 0, -1])
def test_pool_refuses_bad_allocations(request_size: int) -> None:
    """testAllocationOverMaxAllocation, testAllocationZero, testAllocationNegative."""
    with pytest.raises(ValueError):
        SimpleMemoryPool(1000, 10).try_allocate(request_size)


def test_pool_allocation_bound() -> None:
    """testAllocationBound: non-strict, an allocation succeeds while any memory is left, so the
    pool is overdrawn by at most one allocation; a release makes room again."""
    pool = SimpleMemoryPool(21, 10)
    assert pool.try_allocate(10) and pool.try_allocate(10) and pool.try_allocate(10)
    assert pool.available == -9 and pool.is_out_of_memory() and pool.used == 30
    assert not pool.try_allocate(1)
    pool.release(10)
    assert pool.try_allocate(10)
    assert not pool.try_allocate(1)


def test_strict_pool_needs_the_whole_size() -> None:
    pool = SimpleMemoryPool(15, 10, strict=True)
    assert pool.try_allocate(10)
    assert not pool.try_allocate(10) and pool.try_allocate(5)


def test_pool_tells_when_memory_is_back() -> None:
    """``on_available`` runs once a release takes the pool from out of memory to available, and
    the time allocations were refused is counted (MemoryPoolDepletedTimeTotal)."""
    pool = SimpleMemoryPool(10, 10)
    calls: list[int] = []
    pool.on_available = lambda: calls.append(pool.available)
    assert pool.try_allocate(10) and not pool.try_allocate(1)
    pool.release(5)
    assert calls == [5] and pool.depleted_ns > 0
    pool.release(5)
    assert calls == [5]


def test_queued_max_request_bytes_must_hold_the_largest_request() -> None:
    """KafkaConfig.validateValues: queued.max.request.bytes >= socket.request.max.bytes (or <= 0)."""
    with pytest.raises(ConfigException, match="must be larger or equal to socket.request.max.bytes"):
        KafkaConfig({"queued.max.request.bytes": 1000, "socket.request.max.bytes": 2000})
    assert KafkaConfig({"queued.max.request.bytes": 0})["queued.max.request.bytes"] == 0


# ---------------------------------------------------------------- processors and the pool
class HoldingChannel:
    """Keeps every request until the test answers it (ApiVersions)."""

    def __init__(self) -> None:
        self.requests: queue.Queue[StubRequest] = queue.Queue()

    def add_processor(self, processor_id: int, processor: object) -> None:
        """The socket server registers its processors (throttling needs them; not used here)."""

    def send_request(self, request: StubRequest, timeout_s: float | None = None) -> bool:
        self.requests.put(request)
        return True

    def answer(self, request: StubRequest) -> None:
        request.respond(StubResponse(request, handle_api_versions(request)))


def _server(queued_max_bytes: int, max_request: int, channel: HoldingChannel, threads: int = 1) -> SocketServer:
    return SocketServer({"queued.max.request.bytes": queued_max_bytes, "socket.request.max.bytes": max_request,
                         "num.network.threads": threads}, channel, broker_id=1, request_factory=StubRequest,
                        api_versions=DefaultApiVersionManager())


def test_connections_are_muted_while_the_pool_is_empty() -> None:
    """SelectorTest.testMuteOnOOM: with room for one request, the second connection's request
    is not read until the first one's memory comes back (when it has been answered); then it
    is, and both clients get their answers."""
    frame = encode_request(api_versions_req(3), 1)
    size = len(frame) - 4
    channel = HoldingChannel()
    srv = _server(size, size, channel, threads=2)
    srv.startup()
    try:
        pool = srv.memory_pool
        first, second = connect(srv), connect(srv)
        first.sendall(frame)
        held = channel.requests.get(timeout=5)
        assert held.memory_bytes == size and pool.available == 0 and pool.is_out_of_memory()
        second.sendall(frame)
        with pytest.raises(queue.Empty):
            channel.requests.get(timeout=0.3)   # muted: its bytes wait in the socket
        channel.answer(held)
        assert decode_response(recv_frame(first), load_response_schema(18, 3))[0] == 1
        later = channel.requests.get(timeout=5)   # the pool had memory again: read
        assert later.memory_bytes == size
        channel.answer(later)
        assert decode_response(recv_frame(second), load_response_schema(18, 3))[0] == 1
        waiter = threading.Event()
        for _ in range(50):   # the processor releases once the response is written
            if pool.available == size:
                break
            waiter.wait(0.02)
        assert pool.available == size and pool.depleted_ns > 0
    finally:
        srv.shutdown()


def test_closed_connections_give_their_memory_back() -> None:
    """A connection closed while its request is in flight, or in the middle of a granted frame,
    returns what it held; a malformed frame returns its memory at once."""
    frame = encode_request(api_versions_req(3), 1)
    size = len(frame) - 4
    channel = HoldingChannel()
    srv = _server(4 * size, size, channel)
    srv.startup()
    try:
        pool = srv.memory_pool
        in_flight = connect(srv)
        in_flight.sendall(frame)
        held = channel.requests.get(timeout=5)
        partial = connect(srv)
        partial.sendall(frame[:10])
        bad = connect(srv)
        bad.sendall(struct.pack(">i", 10) + struct.pack(">hhih", 1234, 0, 1, -1))   # unknown api key
        assert is_closed(bad)
        in_flight.close()
        partial.close()
        channel.answer(held)   # answered after its connection went away
        waiter = threading.Event()
        for _ in range(100):
            if pool.available == 4 * size:
                break
            waiter.wait(0.02)
        assert pool.available == 4 * size
    finally:
        srv.shutdown()


def test_socket_request_max_bytes_is_inclusive() -> None:
    """NetworkReceive: a size equal to socket.request.max.bytes is read, one more closes the
    connection before any body byte (the emulator's existing prefix check, unchanged by the pool)."""
    frame = encode_request(api_versions_req(3), 1)
    size = len(frame) - 4
    channel = HoldingChannel()
    srv = _server(size, size, channel)
    srv.startup()
    try:
        ok = connect(srv)
        ok.sendall(frame)
        channel.answer(channel.requests.get(timeout=5))
        assert decode_response(recv_frame(ok), load_response_schema(18, 3))[0] == 1
        over = connect(srv)
        over.sendall(struct.pack(">i", size + 1))
        assert is_closed(over)
    finally:
        srv.shutdown()
