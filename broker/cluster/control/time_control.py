"""Broker time travel: the clocks behind ``EmbeddedCluster(time="real" | "offset" | "manual")``.

Every broker component reads time through the ``Time`` it was built with (purgatory timers,
the group coordinator's heartbeat and join timers, the ISR-expiration scheduler, record and
state timestamps), so replacing the cluster's clock moves all of them at once:

* ``real``: ``Time.SYSTEM``.
* ``offset`` (:class:`OffsetTime`): the real clocks plus an offset that only grows.
  ``advance(ms)`` adds to the offset, wakes every timer waiting on this clock, and
  ``run_due`` (called by :func:`advance`) runs what fell due, so the broker behaves as if
  ``ms`` had passed in an instant. Waits are real waits (a timer poller is woken early by the
  jump), so an untouched offset clock costs no more than the real one.
* ``manual`` (:class:`ManualTime`): a ``MockTime`` that starts at the real clocks' current
  values (timestamps look ordinary) and moves only on ``advance``: deterministic tests of the
  broker's own machinery. Pollers re-check every 10 ms of real time, as on any ``MockTime``.

Clients keep real time. After ``advance_time(ms)`` a client has not seen ``ms`` pass: its own
timeouts (request.timeout.ms, session and poll intervals, retries' backoff, linger) still run
on its wall clock, and its requests carry timeouts the broker counts on the broker's clock. A
jump therefore expires every broker-side deadline at once, the clients' included: a jump of a
group's session timeout expires every member whose heartbeat is older than the jump, not only
a silent one (give the members that must survive a longer ``session.timeout.ms``).

Locking: ``OffsetTime._offset_ns`` is written under ``MockTime._lock`` and read without it (one
int attribute: a read sees the old or the new value).
"""
from __future__ import annotations

import threading
import time as _time

from kafka_emu.timer.time import MockTime, Time

TIME_MODES = ("real", "offset", "manual")


class OffsetTime(MockTime):
    """Real time plus an offset moved forward by ``advance`` (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._offset_ns = 0

    def milliseconds(self) -> int:
        return (_time.time_ns() + self._offset_ns) // 1_000_000

    def nanoseconds(self) -> int:
        return _time.monotonic_ns() + self._offset_ns

    def hi_res_clock_ms(self) -> int:
        return (_time.monotonic_ns() + self._offset_ns) // 1_000_000

    def sleep(self, ms: float) -> None:
        Time.sleep(self, ms)   # time flows: a sleep is a real one

    def advance(self, ms: float) -> None:
        if ms < 0:
            raise ValueError("broker time only moves forward")
        with self._lock:
            self._offset_ns += int(ms * 1_000_000)
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def wait_on(self, condition: threading.Condition, timeout_ms: float) -> None:
        # A real wait: ``advance`` notifies every timer's condition through its listener.
        condition.wait(max(timeout_ms, 0) / 1000.0)


class ManualTime(MockTime):
    """A ``MockTime`` starting at the real clocks' current readings."""

    def __init__(self) -> None:
        super().__init__(start_ms=_time.monotonic_ns() // 1_000_000, wall_start_ms=_time.time_ns() // 1_000_000)

    def advance(self, ms: float) -> None:
        if ms < 0:
            raise ValueError("broker time only moves forward")
        super().advance(ms)


def make_time(mode: str | Time | None) -> Time:
    """The clock of a time mode (a ``Time`` instance is used as it is)."""
    if mode is None or mode == "real":
        return Time.SYSTEM
    if isinstance(mode, Time):
        return mode
    if mode == "offset":
        return OffsetTime()
    if mode == "manual":
        return ManualTime()
    raise ValueError(f"time must be one of {', '.join(TIME_MODES)} (got {mode!r})")


def time_mode(time: Time) -> str:
    if isinstance(time, OffsetTime):
        return "offset"
    if isinstance(time, MockTime):
        return "manual"
    return "real"


def advance(time: Time, ms: float, timeout_s: float = 30.0) -> int:
    """Move ``time`` forward by ``ms`` and return once what fell due has run (the number of
    rounds of due work, see ``MockTime.run_due``). The real clock cannot be moved."""
    if not isinstance(time, MockTime):
        raise RuntimeError("advance_time needs a cluster started with time='offset' or time='manual'")
    time.advance(ms)
    return time.run_due(timeout_s)
