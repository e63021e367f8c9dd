"""Open-loop pacing: a sender due ``rate`` messages per second since ``start``.

The schedule is fixed in advance (message i is due at start + i/rate) rather than "send, then
sleep 1/rate", so a slow broker shows up as rising latency and a backlog, not as a silently
lower offered load.
"""
from __future__ import annotations

import threading
import time


class Pacer:
    def __init__(self, rate: float, start: float, stop: float, stop_event: threading.Event,
                 max_burst: int = 1000) -> None:
        self.rate = rate
        self.start = start
        self.stop = stop
        self.stop_event = stop_event
        self.sent = 0
        self.max_burst = max_burst

    def due(self) -> int:
        """How many messages may be sent now (capped so callbacks still get served)."""
        now = time.time()
        target = int((min(now, self.stop) - self.start) * self.rate)
        return max(0, min(target - self.sent, self.max_burst))

    def running(self) -> bool:
        return not self.stop_event.is_set() and time.time() < self.stop

    def wait_next(self, cap_s: float = 0.05) -> None:
        next_due = self.start + (self.sent + 1) / self.rate
        delay = min(max(0.0, next_due - time.time()), cap_s)
        if delay > 0:
            self.stop_event.wait(delay)


def wait_until(deadline: float, stop_event: threading.Event) -> bool:
    """Sleep until ``deadline`` (wall clock); false if told to stop first."""
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            return True
        if stop_event.wait(min(remaining, 0.5)):
            return False
