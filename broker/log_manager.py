"""LogManager: the broker's logs, their retention, the memory budget and log deletion.

After Kafka's ``LogManager``: ``get_or_create_log`` makes a partition's ``Log`` with the topic's
``LogConfig``; ``cleanup_logs`` is the ``kafka-log-retention`` task (every
``log.retention.check.interval.ms`` after ``log.initial.task.delay.ms``), which runs
``Log.delete_old_segments`` on every log, leader or follower (a ``compact``-only log only loses
segments below its log start offset there; compaction is the cleaner's); ``delete_log`` drops
a deleted partition's log.

The emulator keeps logs in memory, so it adds one setting of its own,
``emulator.log.memory.max.bytes`` (default: a quarter of physical memory): when all logs
together hold more, ``enforce_memory_budget`` deletes the oldest segments of the largest logs as
retention would (only segments wholly below the HW; a log whose only segment is full and
committed is rolled first, as Kafka's retention does when every segment is due), logs one WARN
line naming the partitions and the bytes, and counts the bytes in ``memory_budget_deleted_bytes``.
It runs with the retention task and on its own every ``MEMORY_CHECK_INTERVAL_MS``. After any
deletion the freed memory is handed back to the operating system (``malloc_trim`` on glibc), so
the resident set shrinks instead of staying at its high-water mark.

Locking: ``_lock`` guards the ``logs`` map (creation and removal; readers take a snapshot with
``list``); each log is changed under its own ``Log.lock``, taken one at a time.

Differences from Kafka on purpose: no log directories, checkpoints or recovery (logs live in
memory: a ``Log`` survives an emulated restart because the cluster keeps the map); segments are
deleted at once (no ``.deleted`` files, ``file.delete.delay.ms`` has nothing to delay); the
memory budget is the emulator's own.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import platform
import threading
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

import structlog

from kafka_emu.broker.log import Log
from kafka_emu.broker.log_config import LogConfig
from kafka_emu.timer.time import Time

if TYPE_CHECKING:
    from kafka_emu.broker.config import KafkaConfig

_log = structlog.get_logger("broker.log_manager")

TP = tuple[str, int]
MEMORY_CHECK_INTERVAL_MS = 1000
IN_MEMORY_LOG_DIR = "/kafka-emu/in-memory/broker-{broker_id}"   # the notional log dir DescribeLogDirs names
MEMORY_BUDGET_CONFIG = "emulator.log.memory.max.bytes"


def _load_malloc_trim() -> Any:
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _load_malloc_trim()


def release_free_memory() -> bool:
    """Return free heap memory to the operating system (glibc's ``malloc_trim(0)``); false
    where there is no such call."""
    if _MALLOC_TRIM is None:
        return False
    _MALLOC_TRIM(0)
    return True


class LogDirInfo(NamedTuple):
    """One log directory as DescribeLogDirs reports it."""

    path: str
    logs: list[Log]
    total_bytes: int
    usable_bytes: int


class LogManager:
    def __init__(self, config: "KafkaConfig", logs: dict[TP, Log] | None = None,
                 time: Time | None = None) -> None:
        self.config = config
        self.logs: dict[TP, Log] = logs if logs is not None else {}
        self.time = time or Time.SYSTEM
        self.memory_max_bytes: int = int(config[MEMORY_BUDGET_CONFIG])  # type: ignore[arg-type]
        self._lock = threading.Lock()
        self.retention_deleted_bytes = 0
        self.memory_budget_deleted_bytes = 0
        self.cleaner: Any = None   # the LogCleaner, when log.cleaner.enable (set by KafkaServer)

    def log_config(self, topic_configs: Mapping[str, object] | None) -> LogConfig:
        return LogConfig.for_topic(topic_configs, self.config)

    def get_or_create_log(self, tp: TP, topic_configs: Mapping[str, object] | None = None) -> Log:
        """The partition's log with the topic's current ``LogConfig`` (a log kept over an
        emulated restart takes the configs changed while its broker was down, as Kafka's
        ``LogManager.loadLog`` reads them from the metadata)."""
        config = self.log_config(topic_configs)
        with self._lock:
            log = self.logs.get(tp)
            if log is None:
                log = self.logs[tp] = Log(tp[0], tp[1], config=config, time=self.time)
            else:
                log.update_config(config)
            return log

    def get_log(self, tp: TP) -> Log | None:
        return self.logs.get(tp)

    def all_logs(self) -> list[Log]:
        return list(self.logs.values())

    def total_size_bytes(self) -> int:
        return sum(log.size_bytes for log in self.all_logs())

    def log_dirs(self) -> list[LogDirInfo]:
        """The broker's log directories (Kafka's ``ReplicaManager.describeLogDirs`` source). Logs
        live in memory, so there is one notional directory, ``IN_MEMORY_LOG_DIR``, holding every
        log; its total bytes are the memory budget (``emulator.log.memory.max.bytes``) and its
        usable bytes what the logs leave of it."""
        logs = self.all_logs()
        used = sum(log.size_bytes for log in logs)
        return [LogDirInfo(IN_MEMORY_LOG_DIR.format(broker_id=self.config["broker.id"]), logs,
                           self.memory_max_bytes, max(self.memory_max_bytes - used, 0))]

    # ------------------------------------------------------------------ retention
    def cleanup_logs(self) -> int:
        """The ``kafka-log-retention`` task: retention on every log, then the memory budget.
        Returns the bytes deleted."""
        now = self.time.milliseconds()
        deleted = 0
        for log in self.all_logs():
            with log.lock:
                freed = log.delete_old_segments(now)
            if freed:
                _log.info("log_segments_deleted", topic=log.topic, partition=log.partition, bytes=freed,
                          log_start_offset=log.log_start_offset, reason="retention")
                deleted += freed
        self.retention_deleted_bytes += deleted
        budget = self._enforce_memory_budget()
        if deleted and not budget:
            release_free_memory()
        return deleted + budget

    def enforce_memory_budget(self) -> int:
        """The memory-budget task alone (see the module docstring); returns the bytes deleted."""
        return self._enforce_memory_budget()

    def _enforce_memory_budget(self) -> int:
        total = self.total_size_bytes()
        if total <= self.memory_max_bytes:
            return 0
        deleted: dict[str, int] = {}
        for log in sorted(self.all_logs(), key=lambda lg: lg.size_bytes, reverse=True):
            while total > self.memory_max_bytes:
                with log.lock:
                    if log.num_segments() == 1 and log.high_watermark == log.log_end_offset:
                        log.roll()
                    freed = log.delete_oldest_segment()
                if not freed:
                    break
                total -= freed
                name = f"{log.topic}-{log.partition}"
                deleted[name] = deleted.get(name, 0) + freed
            if total <= self.memory_max_bytes:
                break
        freed_total = sum(deleted.values())
        if freed_total:
            self.memory_budget_deleted_bytes += freed_total
            release_free_memory()
        _log.warning("log_memory_budget_exceeded", budget_bytes=self.memory_max_bytes, total_bytes=total,
                     deleted_bytes=freed_total, partitions=deleted,
                     message=f"logs hold more than {MEMORY_BUDGET_CONFIG}={self.memory_max_bytes}: deleted "
                             f"the oldest segments of {', '.join(deleted) or 'no partition (nothing below the HW)'}")
        return freed_total

    # ------------------------------------------------------------------ deletion
    def delete_log(self, tp: TP) -> Log | None:
        """Remove a deleted (or no longer hosted) partition's log and give its memory back."""
        with self._lock:
            log = self.logs.pop(tp, None)
        if self.cleaner is not None:
            self.cleaner.remove_log(tp)
        if log is not None:
            with log.lock:   # drop the data now: a Partition may still hold the Log object
                log.truncate_fully_and_start_at(log.log_end_offset)
            release_free_memory()
        return log
