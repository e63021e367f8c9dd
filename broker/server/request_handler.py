"""KafkaRequestHandlerPool: ``num.io.threads`` named threads serving the request channel.

Each ``KafkaRequestHandler`` (``data-plane-kafka-request-handler-<n>``) takes a request, calls
``KafkaApis.handle`` and then drains the replica manager's ``ActionQueue`` so purgatory checks
run with no lock held.

Difference from Kafka, on purpose: Kafka drains the action queue after every request. Here a
handler drains it when the request channel is empty, and at least every
``ACTION_BATCH_REQUESTS`` requests. Under load, the appends of a burst of produce requests then
complete each parked follower (and consumer) fetch once, with all of the burst's batches, instead
of once per produce: in CPython every completion is a round of thread hand-offs (leader handler,
fetcher thread, the follower's next fetch back through the leader's channel), which cost more
than the produce itself. At low load the channel is empty after every request, so nothing
changes; under load an action waits at most ``ACTION_BATCH_REQUESTS`` requests. Responses to
the produce requests themselves are not delayed (acks=1 answers before, acks=-1 is parked in
its purgatory either way). Idle time (waiting on the channel) and busy time are accumulated per
thread for Kafka's ``RequestHandlerAvgIdlePercent``; ``snapshot()`` adds the wait in progress, so
a pool that has not finished its first wait yet reads as idle, not as unknown. Each thread binds ``broker_id`` to its log context once
(``ShutdownableThread(log_context=...)``); ``KafkaApis.handle`` adds the request's fields.

Locking: none shared; counters are written by their own thread only and read by scrapes
(``wait_started_ns`` is cleared before ``idle_ns`` grows, so a scrape never counts a wait twice).
"""
from __future__ import annotations

import time as _time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from kafka_emu.broker.network.request_channel import WAKEUP
from kafka_emu.timer import ShutdownableThread

if TYPE_CHECKING:
    from kafka_emu.broker.server.action_queue import ActionQueue
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import RequestChannel

_log = structlog.get_logger("broker.request_handler")

POLL_S = 0.3
ACTION_BATCH_REQUESTS = 16


class KafkaRequestHandler(ShutdownableThread):
    def __init__(self, handler_id: int, broker_id: int, channel: "RequestChannel", apis: "KafkaApis",
                 action_queue: "ActionQueue") -> None:
        super().__init__(name=f"data-plane-kafka-request-handler-{handler_id}",
                         log_context={"broker_id": broker_id})
        self.handler_id = handler_id
        self.broker_id = broker_id
        self.channel = channel
        self.apis = apis
        self.action_queue = action_queue
        self.idle_ns = 0
        self.busy_ns = 0
        self.wait_started_ns = 0    # monotonic start of the wait in progress, 0 while busy
        self.requests_handled = 0
        self._since_actions = 0     # requests handled since this thread last drained the actions

    def on_initiate_shutdown(self) -> None:
        self.channel.put_shutdown_markers(1)

    def do_work(self) -> None:
        t0 = self.wait_started_ns = _time.monotonic_ns()
        item = self.channel.receive_request(POLL_S)
        t1 = _time.monotonic_ns()
        self.wait_started_ns = 0
        self.idle_ns += t1 - t0
        if item is None:
            self.action_queue.try_complete_actions()
            return
        if item is not WAKEUP:
            try:
                self.apis.handle(item)
            except Exception:
                _log.exception("request_handling_failed", broker_id=self.broker_id,
                               api_key=item.api_key, correlation_id=item.correlation_id)
            self.requests_handled += 1
            self._since_actions += 1
        if self._since_actions >= ACTION_BATCH_REQUESTS or not self.channel.size():
            self._since_actions = 0
            self.action_queue.try_complete_actions()
        self.busy_ns += _time.monotonic_ns() - t1


@dataclass(frozen=True, slots=True)
class HandlerPoolSnapshot:
    """Cumulative time of the pool's threads since they started, summed over threads.

    Kafka's RequestHandlerAvgIdlePercent over a window is Δidle_ns / (Δidle_ns + Δbusy_ns).
    """

    threads: int
    idle_ns: int    # waiting for a request, the waits in progress included
    busy_ns: int    # handling requests and draining the action queue


class KafkaRequestHandlerPool:
    def __init__(self, broker_id: int, channel: "RequestChannel", apis: "KafkaApis",
                 action_queue: "ActionQueue", num_threads: int) -> None:
        self.broker_id = broker_id
        self.channel = channel
        self.handlers = [KafkaRequestHandler(i, broker_id, channel, apis, action_queue)
                         for i in range(num_threads)]

    def start(self) -> None:
        for h in self.handlers:
            h.start()

    def snapshot(self) -> HandlerPoolSnapshot:
        now = _time.monotonic_ns()
        idle = busy = 0
        for h in self.handlers:
            idle += h.idle_ns            # read before wait_started_ns: see "Locking"
            started = h.wait_started_ns
            if started:
                idle += max(0, now - started)
            busy += h.busy_ns
        return HandlerPoolSnapshot(len(self.handlers), idle, busy)

    def shutdown(self) -> None:
        for h in self.handlers:
            h.initiate_shutdown()
        for h in self.handlers:
            h.await_shutdown()
