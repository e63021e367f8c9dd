"""ThrottledChannel, the delay queue of throttled channels, and the ThrottledChannelReaper thread.

KIP-219: a client over its quota gets its response at once, carrying ``throttle_time_ms``, and
its connection is then muted (not read) for that long. ``ThrottledChannel`` (Kafka's) tells the
socket server when throttling starts (``ThrottleCallback.start_throttling``, from its
constructor, so before the response is queued) and, from the reaper, when it ends; each quota
manager keeps the throttled channels in its ``ThrottledChannelQueue`` (Kafka's
``DelayQueue<ThrottledChannel>``: a heap by end time) and runs one
``ThrottledChannelReaper`` (``<prefix>ThrottledChannelReaper-<quota type>``) that takes each
channel off when its time has come and ends its throttling.

Time is the quota manager's clock (``Time``; a ``MockTime`` in tests): a channel is due when
that clock passes its end. The reaper waits on the queue's condition (``Time.wait_on``, which on
a mock clock re-checks every few real milliseconds) for at most ``poll_timeout_s`` of real time
per ``do_work``, and shutdown wakes it with a no-op channel, as Kafka's ``initiateShutdown`` does.

Locking: ``ThrottledChannelQueue._cond`` guards its heap; callbacks run outside it.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time as _time
from typing import Callable, Protocol

import structlog

from kafka_emu.timer.shutdownable_thread import ShutdownableThread
from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.quota")


class ThrottleCallback(Protocol):
    """Kafka's ``ThrottleCallback``: the socket server's side of a throttled channel."""

    def start_throttling(self) -> None: ...
    def end_throttling(self) -> None: ...


class ThrottledChannel:
    """A channel muted for ``throttle_time_ms`` from now on ``time`` (Kafka's)."""

    __slots__ = ("time", "throttle_time_ms", "callback", "end_time_ns")

    def __init__(self, time: Time, throttle_time_ms: int, callback: ThrottleCallback) -> None:
        self.time = time
        self.throttle_time_ms = throttle_time_ms
        self.callback = callback
        self.end_time_ns = time.nanoseconds() + throttle_time_ms * 1_000_000
        callback.start_throttling()

    def notify_throttling_done(self) -> None:
        self.callback.end_throttling()

    def delay_ns(self) -> int:
        return self.end_time_ns - self.time.nanoseconds()


class _NoThrottle:
    def start_throttling(self) -> None:
        pass

    def end_throttling(self) -> None:
        pass


class ThrottledChannelQueue:
    """Throttled channels by end time (Kafka's ``DelayQueue``); see the module docstring."""

    def __init__(self, time: Time) -> None:
        self._time = time
        self._cond = threading.Condition()
        self._heap: list[tuple[int, int, ThrottledChannel]] = []
        self._seq = itertools.count()

    def add(self, channel: ThrottledChannel) -> None:
        with self._cond:
            heapq.heappush(self._heap, (channel.end_time_ns, next(self._seq), channel))
            self._cond.notify()

    def poll(self, timeout_s: float) -> ThrottledChannel | None:
        """The earliest channel once it is due, waiting at most ``timeout_s`` of real time."""
        deadline = _time.monotonic() + timeout_s
        with self._cond:
            while True:
                wait_ms = (deadline - _time.monotonic()) * 1000
                if self._heap:
                    delay_ms = (self._heap[0][0] - self._time.nanoseconds()) / 1e6
                    if delay_ms <= 0:
                        return heapq.heappop(self._heap)[2]
                    wait_ms = min(wait_ms, delay_ms)
                if wait_ms <= 0:
                    return None
                self._time.wait_on(self._cond, wait_ms)

    def __len__(self) -> int:
        return len(self._heap)


class ThrottledChannelReaper(ShutdownableThread):
    """Ends each channel's throttling when its time has come (Kafka's reaper thread);
    ``on_dequeued`` keeps the manager's queue-size count."""

    def __init__(self, queue: ThrottledChannelQueue, name: str, on_dequeued: Callable[[], None],
                 time: Time, broker_id: int | None = None, poll_timeout_s: float = 1.0) -> None:
        super().__init__(name, log_context={"broker_id": broker_id} if broker_id is not None else None)
        self.queue = queue
        self.on_dequeued = on_dequeued
        self.time = time
        self.poll_timeout_s = poll_timeout_s

    def do_work(self) -> None:
        channel = self.queue.poll(self.poll_timeout_s)
        if channel is not None:
            self.on_dequeued()
            try:
                channel.notify_throttling_done()
            except Exception:   # a failing callback must not leave the other channels muted
                _log.exception("end_throttling_failed", thread=self.name)

    def on_initiate_shutdown(self) -> None:
        # wake a poll in progress with a no-op channel due at once (Kafka's initiateShutdown)
        self.queue.add(ThrottledChannel(self.time, 0, _NoThrottle()))
