"""RequestChannel's hand-off to handler threads: nothing lost, nothing answered twice, batches.

The channel wakes idle handlers through per-handler eventfds (``_IdleHandler``) with a
"push yourself idle, then look once more" protocol instead of a ``queue.SimpleQueue``; these
tests pin what that protocol must keep: Kafka's ``RequestChannel`` contract (every queued
request reaches exactly one handler; the channel is bounded) and the emulator's batching (the
requests of one processor poll wake one handler, and more only while more wait).
"""
from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_emu.broker.request_channel import WAKEUP, Request, RequestChannel

pytestmark = pytest.mark.timeout(60)

# Handlers wait far longer than any test takes: a lost wake-up shows as a test timeout, not as a
# request served late by a poll timeout.
LONG_WAIT_S = 30.0


def _request(correlation_id: int) -> Request:
    return Request(0, 0, correlation_id, None, None, lambda r: None)


class _Handlers:
    """``threads`` handler threads taking requests until a shutdown marker (None)."""

    def __init__(self, channel: RequestChannel, threads: int) -> None:
        self.channel = channel
        self.taken: list[tuple[str, int]] = []    # (thread name, correlation id)
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, name=f"test-handler-{i}", daemon=True)
                         for i in range(threads)]
        for t in self._threads:
            t.start()

    def _run(self) -> None:
        while True:
            item = self.channel.receive_request(LONG_WAIT_S)
            if item is None:
                return
            if item is not WAKEUP:
                with self._lock:
                    self.taken.append((threading.current_thread().name, item.correlation_id))

    def wait_idle(self, count: int) -> None:
        """Until ``count`` handlers sleep in the channel (registered idle)."""
        event = threading.Event()
        while len(self.channel._idle) < count:
            event.wait(0.001)

    def stop(self) -> None:
        self.channel.put_shutdown_markers(len(self._threads))
        for t in self._threads:
            t.join(10)
            assert not t.is_alive(), "a handler did not take its shutdown marker"


@settings(max_examples=15, deadline=None)
@given(senders=st.integers(1, 4), handlers=st.integers(1, 4), per_sender=st.integers(1, 300),
       batch=st.integers(1, 8))
def test_every_request_reaches_exactly_one_handler(senders: int, handlers: int, per_sender: int,
                                                   batch: int) -> None:
    """Concurrent senders (some batching with ``wake=False`` as a processor does) and handlers:
    every request is taken exactly once, without relying on a handler's poll timeout (Kafka's
    RequestChannel contract; the lost-wake-up invariant of the emulator's hand-off)."""
    channel = RequestChannel(queue_size=10_000)
    pool = _Handlers(channel, handlers)

    def send(sender: int) -> None:
        for i in range(per_sender):
            batched = sender % 2 == 1
            assert channel.send_request(_request(sender * 1_000_000 + i), wake=not batched)
            if batched and (i % batch == batch - 1 or i == per_sender - 1):
                channel.wake_handlers()

    threads = [threading.Thread(target=send, args=(s,)) for s in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = threading.Event()
    while len(pool.taken) < senders * per_sender:
        assert not done.wait(0.001) and any(t.is_alive() for t in pool._threads)
    pool.stop()
    ids = sorted(cid for _, cid in pool.taken)
    assert ids == sorted(s * 1_000_000 + i for s in range(senders) for i in range(per_sender))


def test_a_batch_is_shared_and_a_blocked_handler_holds_nothing_up() -> None:
    """The requests of one processor poll, sent with ``wake=False`` and followed by one
    ``wake_handlers()``, are all taken in order; while the handler that took the first is
    blocked in it (as a TV2 implicit add blocks), the rest are taken by the other handlers at
    once, not after a handler's poll timeout (``LONG_WAIT_S``): Kafka's handlers all serve the
    one queue."""
    channel = RequestChannel(queue_size=100)
    release = threading.Event()
    taken: list[tuple[str, int]] = []
    lock = threading.Lock()

    def handler() -> None:
        while (item := channel.receive_request(LONG_WAIT_S)) is not None:
            with lock:
                taken.append((threading.current_thread().name, item.correlation_id))
            if item.correlation_id == 0:
                release.wait(LONG_WAIT_S)   # the long request

    threads = [threading.Thread(target=handler, name=f"test-handler-{i}", daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    idle = threading.Event()
    while len(channel._idle) < 3:
        idle.wait(0.001)
    for i in range(5):
        channel.send_request(_request(i), wake=False)
    assert channel.size() == 5 and not taken   # nobody woken yet
    channel.wake_handlers()
    while len(taken) < 5:
        idle.wait(0.001)
    assert sorted(cid for _, cid in taken) == [0, 1, 2, 3, 4] and taken[0][1] == 0
    blocked = taken[0][0]
    assert all(name != blocked for name, cid in taken[1:])   # served around the blocked one
    release.set()
    channel.put_shutdown_markers(len(threads))
    for t in threads:
        t.join(10)
        assert not t.is_alive()


def test_a_wakeup_marker_reaches_an_idle_handler() -> None:
    """``wakeup()`` (the action queue's nudge) is coalesced while pending, and wakes an idle
    handler."""
    channel = RequestChannel(queue_size=10)
    channel.wakeup()
    channel.wakeup()
    assert channel.size() == 1   # one marker
    assert channel.receive_request(0) is WAKEUP
    got = threading.Event()

    def handler() -> None:
        if channel.receive_request(LONG_WAIT_S) is WAKEUP:
            got.set()

    t = threading.Thread(target=handler, daemon=True)
    t.start()
    while not channel._idle:
        got.wait(0.001)
    channel.wakeup()
    assert got.wait(10)
    t.join(10)
    assert channel.size() == 0
