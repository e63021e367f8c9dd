"""structlog set-up, done once per process.

Every event carries the emitting thread's name (``ExpirationReaper-0-Produce``,
``executor-Heartbeat``, ``data-plane-kafka-request-handler-3``...), a timestamp and a level;
components bind their own context (broker id, request type, correlation id, group id,
generation). ``json`` renders one JSON object per line (the default for ``serve``), ``console``
a readable line for interactive use.
"""
from __future__ import annotations

import logging
import sys
import threading
from typing import Any, TextIO

import structlog

_lock = threading.Lock()
_configured = False

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR, "critical": logging.CRITICAL}


def _add_thread_name(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    event_dict.setdefault("thread", threading.current_thread().name)
    return event_dict


def configure_logging(level: str = "warning", fmt: str = "console", stream: TextIO | None = None) -> None:
    """(Re)configure structlog for the whole process."""
    global _configured
    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    with _lock:
        structlog.configure(
            processors=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                _add_thread_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.format_exc_info,
                renderer,
            ],
            wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level.lower()]),
            logger_factory=structlog.PrintLoggerFactory(stream or sys.stderr),
            cache_logger_on_first_use=False,
        )
        _configured = True


def ensure_configured(level: str = "warning") -> None:
    """Configure with quiet defaults unless the application already configured structlog."""
    if not _configured and not structlog.is_configured():
        configure_logging(level=level)
