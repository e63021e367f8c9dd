"""ShutdownableThread: the named, stoppable worker loop behind every long-lived thread.

Mirrors Kafka's ``ShutdownableThread``: ``do_work()`` runs in a loop until
``initiate_shutdown()``; ``await_shutdown()`` joins. Every start and death is logged with the
thread name. Kafka lets an unexpected exception end the thread; a dead reaper or fetcher would
silently stall every timeout in the emulator, so here the exception is logged and the loop goes
on (after a short pause, so a persistent fault cannot spin a core).

``log_context`` (for example ``{"broker_id": 0}``) is bound once at the top of ``run()`` with
``logsetup.bind_thread_context``, so every event the thread emits carries it at no cost
per event (structlog contextvars are per thread). Only ``metrics`` is imported, as the
dependency rule for ``timer`` requires.
"""
from __future__ import annotations

import threading
from typing import Any, Mapping

import structlog

from kafka_emu.logsetup import bind_thread_context

_log = structlog.get_logger("timer.shutdownable_thread")


class ShutdownableThread(threading.Thread):
    def __init__(self, name: str, daemon: bool = True, log_context: Mapping[str, Any] | None = None) -> None:
        super().__init__(name=name, daemon=daemon)
        self.log_context = dict(log_context) if log_context else None
        self._shutdown_initiated = threading.Event()
        self.error_count = 0

    def do_work(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def initiate_shutdown(self) -> bool:
        """Ask the loop to stop; true if this call was the first to ask."""
        if self._shutdown_initiated.is_set():
            return False
        self._shutdown_initiated.set()
        self.on_initiate_shutdown()
        return True

    def on_initiate_shutdown(self) -> None:
        """Hook to wake the loop if it is blocked (for example on a queue)."""

    def await_shutdown(self, timeout_s: float | None = 10.0) -> None:
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout_s)

    def shutdown(self) -> None:
        self.initiate_shutdown()
        self.await_shutdown()

    def is_shutdown_initiated(self) -> bool:
        return self._shutdown_initiated.is_set()

    def run(self) -> None:
        if self.log_context:
            bind_thread_context(**self.log_context)
        _log.debug("thread_started", thread=self.name)
        reason = "shutdown"
        try:
            while not self._shutdown_initiated.is_set():
                try:
                    self.do_work()
                except Exception:
                    if self._shutdown_initiated.is_set():
                        break
                    self.error_count += 1
                    _log.exception("thread_error", thread=self.name)
                    self._shutdown_initiated.wait(0.01)
        except BaseException as exc:  # pragma: no cover - interpreter teardown
            reason = f"fatal: {exc!r}"
            raise
        finally:
            _log.info("thread_stopped", thread=self.name, reason=reason)
