"""Shared pieces for the metrics tests: a controllable delayed operation and scrape helpers.

The broker-like objects in these tests are real timer components (purgatories, timers) wired
into plain namespaces, because the metrics side only ever reads attributes; the broker's own
classes are exercised in test_cluster_integration.py once they exist.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from prometheus_client.parser import text_string_to_metric_families

import time as _time

from kafka_emu.timer import DelayedOperation, DelayedOperationPurgatory, MockTime, SystemTimer


class Op(DelayedOperation):
    """Completes when ``ready`` is set and a trigger (check_and_complete) arrives."""

    def __init__(self, delay_ms: int, **attrs: Any) -> None:
        super().__init__(delay_ms)
        self.ready = False
        self.expired = False
        for key, value in attrs.items():
            setattr(self, key, value)

    def try_complete(self) -> bool:
        return self.force_complete() if self.ready else False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.expired = True


def mock_purgatory(name: str, time: MockTime, broker_id: int = 0, purge_interval: int = 1000) -> DelayedOperationPurgatory:
    """A purgatory whose clock moves only when the test says so and that has no reaper thread.

    Its timer is the production SystemTimer on MockTime, so expirations run on the timer's
    executor thread as they do in a broker (see ``expire``), and the counters the metrics read
    are written by the threads that write them in production.
    """
    return DelayedOperationPurgatory(name, timer=SystemTimer(name, time=time), broker_id=broker_id,
                                     purge_interval=purge_interval, reaper_enabled=False)


def eventually(check: Callable[[], bool], timeout_s: float = 5.0, what: str = "condition") -> None:
    """Poll ``check`` every 5 ms until true; fail after ``timeout_s``."""
    deadline = _time.monotonic() + timeout_s
    while not check():
        if _time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        _time.sleep(0.005)


def expire(purgatory: DelayedOperationPurgatory, time: MockTime, ms: int, expected_total: int) -> None:
    """Move the mock clock by ``ms``, run due expirations, wait until the purgatory has recorded
    ``expected_total`` expirations in all (they run on the timer's executor thread)."""
    time.sleep(ms)
    purgatory.advance_clock(0)
    eventually(lambda: purgatory.expiration_count >= expected_total, what=f"{expected_total} expirations")


@dataclass
class FakeRequest:
    """The fields of broker.request_channel.Request that metrics read."""

    api_key: int
    api_version: int = 0
    correlation_id: int = 1
    client_id: str | None = "client"
    body: Any = None
    start_time_ns: int = 0
    dequeue_time_ns: int = 0
    api_local_complete_time_ns: int = 0
    response_complete_time_ns: int = 0
    response_dequeue_time_ns: int = 0
    end_time_ns: int = 0


@dataclass
class FakeChannel:
    """A request channel exposing only the metrics hooks."""

    request_listeners: list[Callable[[Any], None]] = field(default_factory=list)
    queued: int = 0

    def request_queue_size(self) -> int:
        return self.queued

    def complete(self, request: Any) -> None:
        for listener in list(self.request_listeners):
            listener(request)


def broker_namespace(broker_id: int, **components: Any) -> SimpleNamespace:
    return SimpleNamespace(broker_id=broker_id, **components)


def parse(text: str) -> dict[str, Any]:
    """name → family, failing on what Prometheus itself would reject (e.g. repeated TYPE)."""
    families: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        assert family.name not in families, f"family {family.name} emitted twice"
        families[family.name] = family
    return families
