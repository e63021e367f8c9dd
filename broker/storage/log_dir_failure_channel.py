"""LogDirFailureChannel: where the log layer reports a log directory that failed (Kafka's).

Any thread that meets an I/O error in a log directory (an append, a roll, a flush, a checkpoint,
retention) reports the directory with ``maybe_add_offline_log_dir``; the first report of a
directory queues it, later ones are ignored, so it is taken offline once. The replica manager's
``LogDirFailureHandler`` thread takes each (``take_next_offline_log_dir``) and takes the
directory offline (``ReplicaManager.handle_log_dir_failure``): its partitions stop serving with
KAFKA_STORAGE_ERROR, its leaderships move to replicas in healthy directories, and the broker
stops when no directory is left, as Kafka does.

Locking: ``_lock`` guards ``_offline``; the queue has its own.
"""
from __future__ import annotations

import queue
import threading
from pathlib import Path

import structlog

_log = structlog.get_logger("broker.log_dir_failure")


class LogDirFailureChannel:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self._lock = threading.Lock()
        self._offline: dict[Path, str] = {}
        self._queue: queue.SimpleQueue[Path] = queue.SimpleQueue()

    def maybe_add_offline_log_dir(self, log_dir: Path, message: str, error: BaseException) -> None:
        """Report ``log_dir`` failed (logged once, with the error)."""
        with self._lock:
            if log_dir in self._offline:
                return
            self._offline[log_dir] = f"{message}: {error}"
        _log.error("log_dir_failed", broker_id=self.broker_id, log_dir=str(log_dir), error=str(error),
                   message=f"{message}: {error}")
        self._queue.put(log_dir)

    def has_offline_log_dir(self, log_dir: Path) -> bool:
        return log_dir in self._offline

    def take_next_offline_log_dir(self, timeout_s: float) -> Path | None:
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None
