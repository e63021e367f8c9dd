"""ActionQueue: work deferred until no partition or group lock is held (Kafka's ActionQueue).

Appends push "check the purgatories for this partition" actions here instead of triggering
them under the partition lock (or the group lock of a coordinator append); request handler
threads drain the queue when the request channel is empty and at least every
``ACTION_BATCH_REQUESTS`` requests (``broker.server.request_handler`` says why not after every request,
as Kafka does). ``on_add`` lets the broker wake a handler when an
action is added by a thread that will not drain it (a timer thread, for instance).

The deque is thread safe for append/popleft under the GIL; no lock is needed.
"""
from __future__ import annotations

from collections import deque
from typing import Callable

import structlog

_log = structlog.get_logger("broker.action_queue")


class ActionQueue:
    def __init__(self) -> None:
        self._queue: deque[Callable[[], None]] = deque()
        self.on_add: Callable[[], None] | None = None

    def add(self, action: Callable[[], None]) -> None:
        self._queue.append(action)
        hook = self.on_add
        if hook is not None:
            hook()

    def try_complete_actions(self) -> int:
        """Run every queued action (including ones added meanwhile); count them."""
        done = 0
        queue = self._queue
        while True:
            try:
                action = queue.popleft()
            except IndexError:
                return done
            try:
                action()
            except Exception:
                _log.exception("action_failed")
            done += 1

    def __len__(self) -> int:
        return len(self._queue)
