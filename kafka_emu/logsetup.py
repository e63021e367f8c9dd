"""structlog set-up, done once per process, and helpers to bind Kafka context to log events.

A leaf module (it imports nothing of the project), so that every package, ``timer`` included,
can log through it without depending on ``metrics`` or ``broker``.

Every event carries the emitting thread's name (``ExpirationReaper-0-Produce``,
``executor-Heartbeat``, ``data-plane-kafka-request-handler-3``...), the logger name (the dotted
module path given to ``structlog.get_logger``), a UTC timestamp and a level. Components add
their context through structlog's contextvars, which are per thread (a new thread starts with
an empty context), so a handler thread binds its broker id once and each request binds its
request type, correlation id and client id for the duration of its handling:

    bind_thread_context(broker_id=0)                  # at the top of a thread's run()
    with request_context(request):                    # while handling one request
        ...
    with group_context(group_id, generation):         # inside the coordinator
        ...

Rendering: ``json`` writes one JSON object per line (the default for ``serve``), ``console`` a
readable line for interactive use. Levels: one global level plus optional per-logger levels
(``{"kafka_emu.broker.server.replica_manager": "debug"}``, longest dotted prefix wins), from the CLI
(``--log-level``, ``--log-format``, ``--log-logger-level NAME=LEVEL``), from a config mapping
(``log.level``, ``log.format``, ``log.level.<logger>``) or from the environment
(``KAFKA_EMU_LOG_LEVEL``, ``KAFKA_EMU_LOG_FORMAT``); the CLI beats the config, which beats the
environment, which beats the defaults.

Cost: the bound logger filters by the lowest configured level before any processor runs, so a
debug call with the level at warning is a no-op method call; only events at or above that level
pay for the processors. Per-logger overrides lower the floor and drop the extra events in a
processor, so they are meant for debugging, not for production settings.

``request_context`` is on every request's path, so it is lazy: entering it sets one context
variable to the request (about 0.3 µs, where binding four structlog contextvars costs several
µs), and the ``_merge_request_context`` processor turns it into fields only when an event is
actually emitted. Fields passed explicitly to a log call, then ``group_context`` values, win.

Locking: ``_lock`` guards (re)configuration; writes to a stream are serialized by structlog's
``PrintLogger`` (one lock per file).
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Protocol, TextIO

import structlog

_lock = threading.Lock()
_configured = False

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR, "critical": logging.CRITICAL}
FORMATS = ("json", "console")
_METHOD_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "msg": logging.INFO,
                  "warning": logging.WARNING, "warn": logging.WARNING, "error": logging.ERROR,
                  "exception": logging.ERROR, "critical": logging.CRITICAL,
                  "fatal": logging.CRITICAL}

# Keys bound by the helpers below (documented in docs/metrics.md, "Logs").
BROKER_ID = "broker_id"
REQUEST = "request"
API_VERSION = "api_version"
CORRELATION_ID = "correlation_id"
CLIENT_ID = "client_id"
GROUP_ID = "group_id"
GENERATION = "generation"
MEMBER_ID = "member_id"


class LoggedRequest(Protocol):
    """What ``request_context`` reads of a request (``broker.network.request_channel.Request`` has it)."""

    @property
    def api_name(self) -> str: ...
    @property
    def api_version(self) -> int: ...
    @property
    def correlation_id(self) -> int: ...
    @property
    def client_id(self) -> str | None: ...


# The request being handled on this thread (and the broker id given with it), or None; read by
# ``_merge_request_context`` only when an event is emitted (see ``request_context``).
_current_request: contextvars.ContextVar[tuple[LoggedRequest, int | None] | None] = contextvars.ContextVar(
    "kafka_emu_request", default=None)


# ---------------------------------------------------------------------- processors
def _merge_request_context(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    current = _current_request.get()
    if current is not None:
        request, broker_id = current
        for key, value in request_fields(request).items():
            event_dict.setdefault(key, value)
        if broker_id is not None:
            event_dict.setdefault(BROKER_ID, broker_id)
    return event_dict


def _add_thread_name(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    event_dict.setdefault("thread", threading.current_thread().name)
    return event_dict


def _add_logger_name(logger: Any, _: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    name = getattr(logger, "name", "")
    if name:
        event_dict.setdefault("logger", name)
    return event_dict


class _LoggerLevelFilter:
    """Drops events below the level configured for their logger's longest dotted prefix."""

    def __init__(self, default: int, per_logger: Mapping[str, int]) -> None:
        self._default = default
        # Longest prefix first, so the first match is the most specific.
        self._rules = sorted(per_logger.items(), key=lambda kv: -len(kv[0]))
        self._cache: dict[str, int] = {}  # name -> level; racing writers store equal values

    def level_for(self, name: str) -> int:
        level = self._cache.get(name)
        if level is None:
            level = self._default
            for prefix, rule_level in self._rules:
                if name == prefix or name.startswith(prefix + "."):
                    level = rule_level
                    break
            self._cache[name] = level
        return level

    def __call__(self, logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        if _METHOD_LEVELS.get(method_name, logging.INFO) < self.level_for(getattr(logger, "name", "")):
            raise structlog.DropEvent
        return event_dict


class _NamedPrintLogger(structlog.PrintLogger):
    """A PrintLogger that remembers the name it was created with (for ``logger`` and filters)."""

    def __init__(self, file: TextIO, name: str) -> None:
        super().__init__(file)
        self.name = name


class _NamedPrintLoggerFactory:
    """Creates loggers on ``stream``, or on whatever ``sys.stderr`` is at the time of the call
    (so pytest's capture and redirected stderr are honoured)."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def __call__(self, *args: Any) -> _NamedPrintLogger:
        name = args[0] if args and isinstance(args[0], str) else ""
        return _NamedPrintLogger(self._stream or sys.stderr, name)


# ---------------------------------------------------------------------- configuration
@dataclass
class LogSettings:
    """What ``configure_logging`` applies; built from CLI, config and environment."""

    level: str = "warning"
    fmt: str = "console"
    logger_levels: dict[str, str] = field(default_factory=dict)


def _check_level(level: str) -> str:
    key = level.strip().lower()
    if key == "warn":
        key = "warning"
    if key not in LEVELS:
        raise ValueError(f"unknown log level {level!r}; expected one of {', '.join(LEVELS)}")
    return key


def configure_logging(level: str = "warning", fmt: str = "console", stream: TextIO | None = None,
                      logger_levels: Mapping[str, str] | None = None,
                      capture_stdlib: bool = False) -> None:
    """(Re)configure structlog for the whole process.

    ``capture_stdlib`` also routes the standard ``logging`` module (used by kafka-python and
    other libraries) through the same renderer, so ``serve`` emits nothing but JSON lines.
    """
    global _configured
    level_key = _check_level(level)
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; expected one of {', '.join(FORMATS)}")
    per_logger = {name: LEVELS[_check_level(lvl)] for name, lvl in (logger_levels or {}).items()}
    default_level = LEVELS[level_key]
    floor = min([default_level, *per_logger.values()])
    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    processors: list[Any] = [structlog.contextvars.merge_contextvars, _merge_request_context]
    if per_logger:
        processors.append(_LoggerLevelFilter(default_level, per_logger))
    shared: list[Any] = [
        structlog.processors.add_log_level,
        _add_thread_name,
        _add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    processors += shared + [structlog.processors.format_exc_info, renderer]
    with _lock:
        structlog.configure(
            processors=processors,
            wrapper_class=structlog.make_filtering_bound_logger(floor),
            logger_factory=_NamedPrintLoggerFactory(stream),
            cache_logger_on_first_use=False,
        )
        if capture_stdlib:
            _capture_stdlib(default_level, renderer, stream)
        _configured = True


_STDLIB_HANDLER_NAME = "kafka-emu-structlog"


def _capture_stdlib(level: int, renderer: Any, stream: TextIO | None) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler.get_name() == _STDLIB_HANDLER_NAME:
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_STDLIB_HANDLER_NAME)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.contextvars.merge_contextvars, _merge_request_context,
                           structlog.stdlib.add_log_level,
                           structlog.stdlib.add_logger_name, _add_thread_name,
                           structlog.processors.TimeStamper(fmt="iso", utc=True)],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    ))
    root.addHandler(handler)
    root.setLevel(level)


def ensure_configured(level: str = "warning") -> None:
    """Configure with quiet defaults unless the application already configured structlog."""
    if not _configured and not structlog.is_configured():
        configure_logging(level=level)


def add_logging_arguments(parser: argparse.ArgumentParser, default_format: str | None = None) -> None:
    """``--log-level``, ``--log-format`` and repeatable ``--log-logger-level NAME=LEVEL``.

    Defaults are None so that ``resolve_settings`` can tell "not given" from "given".
    """
    group = parser.add_argument_group("logging")
    group.add_argument("--log-level", choices=sorted(LEVELS), default=None,
                       help="minimum level of log events (default: config log.level, "
                            "$KAFKA_EMU_LOG_LEVEL, else warning)")
    group.add_argument("--log-format", choices=FORMATS, default=None,
                       help="json: one JSON object per line; console: readable lines (default: "
                            f"config log.format, $KAFKA_EMU_LOG_FORMAT, else "
                            f"{default_format or 'json for serve, console for the other commands'})")
    group.add_argument("--log-logger-level", action="append", default=[], metavar="NAME=LEVEL",
                       help="level for one logger and its children, e.g. broker.replica_manager=debug "
                            "(repeatable; default: none)")
    parser.set_defaults(_log_default_format=default_format)


def resolve_settings(args: argparse.Namespace | None = None, config: Mapping[str, Any] | None = None,
                     env: Mapping[str, str] | None = None, default_level: str = "warning",
                     default_format: str = "console") -> LogSettings:
    """Merge CLI arguments, a config mapping and the environment (in that priority)."""
    env = os.environ if env is None else env
    config = config or {}
    settings = LogSettings(level=default_level,
                           fmt=getattr(args, "_log_default_format", None) or default_format)
    # environment
    if env.get("KAFKA_EMU_LOG_LEVEL"):
        settings.level = _check_level(env["KAFKA_EMU_LOG_LEVEL"])
    if env.get("KAFKA_EMU_LOG_FORMAT"):
        settings.fmt = env["KAFKA_EMU_LOG_FORMAT"]
    # config file (Kafka-style properties)
    if config.get("log.level"):
        settings.level = _check_level(str(config["log.level"]))
    if config.get("log.format"):
        settings.fmt = str(config["log.format"])
    for key, value in config.items():
        if key.startswith("log.level.") and len(key) > len("log.level."):
            settings.logger_levels[key[len("log.level."):]] = _check_level(str(value))
    # command line
    if args is not None:
        if getattr(args, "log_level", None):
            settings.level = _check_level(args.log_level)
        if getattr(args, "log_format", None):
            settings.fmt = args.log_format
        for item in getattr(args, "log_logger_level", None) or []:
            name, sep, level = item.partition("=")
            if not sep or not name:
                raise ValueError(f"--log-logger-level expects NAME=LEVEL, got {item!r}")
            settings.logger_levels[name.strip()] = _check_level(level)
    if settings.fmt not in FORMATS:
        raise ValueError(f"unknown log format {settings.fmt!r}; expected one of {', '.join(FORMATS)}")
    return settings


def configure_from(args: argparse.Namespace | None = None, config: Mapping[str, Any] | None = None,
                   stream: TextIO | None = None, default_format: str = "console",
                   capture_stdlib: bool = False) -> LogSettings:
    """``resolve_settings`` then ``configure_logging``; returns what was applied."""
    settings = resolve_settings(args, config, default_format=default_format)
    configure_logging(settings.level, settings.fmt, stream=stream,
                      logger_levels=settings.logger_levels, capture_stdlib=capture_stdlib)
    return settings


# ---------------------------------------------------------------------- context helpers
def get_logger(name: str, **initial: Any) -> Any:
    """``structlog.get_logger(name)`` with initial bound values (e.g. ``broker_id=0``)."""
    logger = structlog.get_logger(name)
    return logger.bind(**initial) if initial else logger


def bind_thread_context(**values: Any) -> None:
    """Bind values to every later event of the calling thread (e.g. at the top of ``run()``)."""
    structlog.contextvars.bind_contextvars(**values)


def clear_thread_context() -> None:
    structlog.contextvars.clear_contextvars()


def request_fields(request: LoggedRequest) -> dict[str, Any]:
    """Log fields of a broker ``Request``: API name, version, correlation id, client id."""
    fields: dict[str, Any] = {REQUEST: request.api_name, API_VERSION: request.api_version,
                              CORRELATION_ID: request.correlation_id}
    if request.client_id is not None:
        fields[CLIENT_ID] = request.client_id
    return fields


class request_context:  # noqa: N801 - used like a function: ``with request_context(request):``
    """Bind a request's fields (and optionally the broker id) while handling it; restores after.

    Lazy and cheap (one context variable set and reset): the fields are computed from the
    request only when an event is emitted inside the block.
    """

    __slots__ = ("_value", "_token")

    def __init__(self, request: LoggedRequest, broker_id: int | None = None) -> None:
        self._value = (request, broker_id)
        self._token: Any = None

    def __enter__(self) -> None:
        self._token = _current_request.set(self._value)

    def __exit__(self, *exc: Any) -> None:
        _current_request.reset(self._token)


@contextlib.contextmanager
def group_context(group_id: str, generation: int | None = None, member_id: str | None = None) -> Iterator[None]:
    """Bind a group's id (and generation, member) while working on it; restores after."""
    fields: dict[str, Any] = {GROUP_ID: group_id}
    if generation is not None:
        fields[GENERATION] = generation
    if member_id is not None:
        fields[MEMBER_ID] = member_id
    with structlog.contextvars.bound_contextvars(**fields):
        yield
