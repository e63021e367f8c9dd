"""LogManager: the broker's logs, their retention, the memory budget and log deletion.

After Kafka's ``LogManager``: ``get_or_create_log`` makes a partition's ``UnifiedLog`` with the topic's
``LogConfig``; ``cleanup_logs`` is the ``kafka-log-retention`` task (every
``log.retention.check.interval.ms`` after ``log.initial.task.delay.ms``), which runs
``UnifiedLog.delete_old_segments`` on every log, leader or follower (a ``compact``-only log only loses
segments below its log start offset there; compaction is the cleaner's); ``delete_log`` drops
a deleted partition's log; ``remove_expired_producers`` is the ``PeriodicProducerExpirationCheck``
task (every ``producer.id.expiration.check.interval.ms``, KIP-854), one per broker where Kafka
schedules one per log.

The emulator keeps logs in memory, so it adds one setting of its own,
``emulator.log.memory.max.bytes`` (default: a quarter of physical memory): when all logs
together hold more, ``enforce_memory_budget`` deletes the oldest segments of the largest logs as
retention would (only segments wholly below the HW; a log whose only segment is full and
committed is rolled first, as Kafka's retention does when every segment is due), logs one WARN
line naming the partitions and the bytes, and counts the bytes in ``memory_budget_deleted_bytes``.
It runs with the retention task and on its own every ``MEMORY_CHECK_INTERVAL_MS``.

Memory that follows retention: an in-memory log also runs its retention whenever an append rolls
its active segment (``UnifiedLog.roll_retention``, set here on every in-memory log this manager
creates or is handed), so what it holds stays near ``retention.bytes`` plus a segment at any
ingress rate instead of growing until the next ``kafka-log-retention`` run (measured, issue 29:
flat out on RF 3 with ``retention.bytes`` 1 MiB the process held the whole replicated ingress,
6.9 GiB in 25 s, because Kafka's first check comes after ``log.initial.task.delay.ms``). After
any deletion the freed memory is handed back to the operating system (``malloc_trim`` on glibc:
after a retention run, and on the next memory-budget check, within a second, for deletions at a
roll), so the resident set follows what the logs hold instead of staying at its high-water mark;
between those the allocator reuses the freed segments for new ones. The check first reads the
process's resident plus swapped memory (``process_memory_bytes``, one read of /proc): the logs
are part of it, so while it is within the budget the sum over every log (a pass over all
segments, milliseconds with thousands of partitions) is skipped.

Persistence (``log.dirs`` or ``log.dir`` set; ``broker.storage.log_dirs``): logs are
``PersistentLog`` s in ``<log dir>/<topic>-<partition>`` (a new one goes to the directory
with the fewest logs, as Kafka's ``nextLogDirs`` picks). ``load_logs`` (broker start-up, before
the broker registers) checks each directory's ``meta.properties``, reads the checkpoints and
the clean-shutdown marker, and loads every partition directory the controller still assigns to
this broker with the same topic id (``partition.metadata``); any other is renamed
``<name>.<uuid>-stray`` and left alone, as Kafka 4.0 does. ``schedule_tasks`` adds Kafka's
tasks: ``kafka-log-flusher`` (every ``log.flush.scheduler.interval.ms``: logs not flushed within
``flush.ms``), ``kafka-recovery-point-checkpoint`` (``log.flush.offset.checkpoint.interval.ms``),
``kafka-log-start-offset-checkpoint`` (``log.flush.start.offset.checkpoint.interval.ms``) and
``highwatermark-checkpoint`` (``replica.high.watermark.checkpoint.interval.ms``), plus the one-off
``flush-log`` of each rolled segment. ``shutdown`` (clean) flushes every log, writes every
checkpoint and ``.kafka_cleanshutdown``.

A log directory that fails (an I/O error in an append, flush, roll, retention or checkpoint,
reported to ``log_dir_failure_channel``) goes offline through ``handle_log_dir_failure``, called
by the replica manager's failure handler: new logs go to the other directories, its logs leave
the map, and ``log_dirs`` reports it with KAFKA_STORAGE_ERROR (Kafka's ``LogManager``
``handleLogDirFailure``).

The memory budget and persisted logs: a persisted log's inactive segments are memory maps of
their files (page cache, which the OS reclaims), so only active segments count; over the
budget, the largest persisted logs have their active segment rolled (its bytes move to the page
cache) and no persisted data is deleted. In-memory logs lose their oldest segments as before.

Locking: ``_lock`` guards the ``logs`` map (creation and removal; readers take a snapshot with
``list``); each log is changed under its own ``UnifiedLog.lock``, taken one at a time;
``_freed_lock`` guards ``retention_deleted_bytes`` and ``_freed_since_trim``, which appending
threads update through ``_on_roll_retention`` (under their log's lock, never the other way).

Differences from Kafka on purpose: without ``log.dirs`` no log directories, checkpoints or
recovery (logs live in memory: a ``UnifiedLog`` survives an emulated restart because the cluster keeps
the map); segments and deleted partitions' directories are deleted at once (no ``.deleted``
files or ``-delete`` directories, ``file.delete.delay.ms`` has nothing to delay); the memory
budget is the emulator's own; ``num.recovery.threads.per.data.dir`` is not implemented (logs
load on the starting thread).
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import platform
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Protocol

import structlog

from kafka_emu.broker.storage.checkpoint_file import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    CorruptCheckpointError,
    OffsetCheckpointFile,
    PartitionMetadataFile,
)
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import MEMORY_BUDGET_CONFIG, BrokerConfig, LogConfig
from kafka_emu.broker.storage.log_dirs import (
    check_meta_properties,
    configured_log_dirs,
    prepare_dir,
    take_clean_shutdown,
    write_clean_shutdown,
)
from kafka_emu.broker.storage.log_dir_failure_channel import LogDirFailureChannel
from kafka_emu.broker.storage.persistent_log import PersistentLog
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer.scheduler import KafkaScheduler
from kafka_emu.timer.time import Time

_log = structlog.get_logger("broker.log_manager")

TP = tuple[str, int]
MEMORY_CHECK_INTERVAL_MS = 1000
IN_MEMORY_LOG_DIR = "/kafka-emu/in-memory/broker-{broker_id}"   # the notional log dir DescribeLogDirs names


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


UNKNOWN_VOLUME_BYTES = -1   # Kafka's DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES


class LogDirInfo(NamedTuple):
    """One log directory as DescribeLogDirs reports it (an offline one: KAFKA_STORAGE_ERROR)."""

    path: str
    logs: list[UnifiedLog]
    total_bytes: int
    usable_bytes: int
    error: int = 0


def process_memory_bytes() -> int | None:
    """Resident plus swapped memory of this process (Linux ``/proc/self/status``), None elsewhere."""
    try:
        with open("/proc/self/status", "rb") as f:
            status = f.read()
    except OSError:
        return None
    total = 0
    for line in status.splitlines():
        if line.startswith((b"VmRSS:", b"VmSwap:")):
            total += int(line.split()[1]) * 1024
    return total or None


class ReplicaAssignment(Protocol):
    """A partition's replicas as the controller assigns them."""

    @property
    def replicas(self) -> tuple[int, ...]: ...


class TopicAssignment(Protocol):
    """A topic as the controller knows it: its id, configs and partitions' replicas."""

    @property
    def topic_id(self) -> uuid.UUID: ...
    @property
    def configs(self) -> Mapping[str, object]: ...
    @property
    def partitions(self) -> Mapping[int, ReplicaAssignment]: ...


class ClusterMetadata(Protocol):
    """What ``load_logs`` reads of the controller's state to tell this broker's logs from strays
    (Kafka's ``LogManager.startup`` reads the metadata image): the cluster id and each topic.
    ``broker.server.metadata_store.MetadataStore`` is one."""

    @property
    def cluster_id(self) -> str: ...
    def topic(self, name: str) -> TopicAssignment | None: ...


class LogManager:
    def __init__(self, config: BrokerConfig, logs: dict[TP, UnifiedLog] | None = None,
                 time: Time | None = None) -> None:
        self.config = config
        self.logs: dict[TP, UnifiedLog] = logs if logs is not None else {}
        self.time = time or Time.SYSTEM
        self.memory_max_bytes: int = int(config[MEMORY_BUDGET_CONFIG])  # type: ignore[arg-type]
        self._lock = threading.Lock()
        self.retention_deleted_bytes = 0
        self.memory_budget_deleted_bytes = 0
        self.cleaner: Any = None   # the LogCleaner, when log.cleaner.enable (set by KafkaServer)
        self.live_log_dirs: list[Path] = configured_log_dirs(config)
        self.offline_log_dirs: list[Path] = []   # failed (handle_log_dir_failure), in failure order
        self.log_dir_failure_channel = LogDirFailureChannel(int(config["broker.id"]))  # type: ignore[arg-type]
        self.scheduler: KafkaScheduler | None = None   # set by schedule_tasks
        # partition -> the log dir AlterReplicaLogDirs chose before the partition came (Kafka's
        # preferredLogDirs); guarded by _lock
        self._preferred_dirs: dict[TP, Path] = {}
        self._freed_lock = threading.Lock()
        self._freed_since_trim = 0
        for log in self.logs.values():
            if not isinstance(log, PersistentLog):
                log.roll_retention = self._on_roll_retention

    def _on_roll_retention(self, log: UnifiedLog, freed: int) -> None:
        """An in-memory log deleted ``freed`` bytes at a roll (on the appending thread): counted,
        and handed back to the OS at the next memory check."""
        _log.debug("log_segments_deleted", topic=log.topic, partition=log.partition, bytes=freed,
                   log_start_offset=log.log_start_offset, reason="retention at roll")
        with self._freed_lock:
            self.retention_deleted_bytes += freed
            self._freed_since_trim += freed

    def log_config(self, topic_configs: Mapping[str, object] | None) -> LogConfig:
        return LogConfig.for_topic(topic_configs, self.config)

    def get_or_create_log(self, tp: TP, topic_configs: Mapping[str, object] | None = None,
                          topic_id: uuid.UUID | None = None) -> UnifiedLog:
        """The partition's log with the topic's current ``LogConfig`` (a log kept over an
        emulated restart takes the configs changed while its broker was down, as Kafka's
        ``LogManager.loadLog`` reads them from the metadata); with ``log.dirs`` a new log is a
        ``PersistentLog``."""
        config = self.log_config(topic_configs)
        with self._lock:
            log = self.logs.get(tp)
            if log is None:
                if self.live_log_dirs or self.offline_log_dirs:
                    log = self._create_persistent_log(tp, config, topic_id)
                else:
                    log = UnifiedLog(tp[0], tp[1], config=config, time=self.time)
                    log.roll_retention = self._on_roll_retention
                self.logs[tp] = log
            else:
                log.update_config(config)
            return log

    # ------------------------------------------------------------------ persistence
    def _create_persistent_log(self, tp: TP, config: LogConfig, topic_id: uuid.UUID | None) -> PersistentLog:
        if not self.live_log_dirs:   # every one failed: the broker is stopping
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"no log directory is online for {tp[0]}-{tp[1]}")
        counts = {d: 0 for d in self.live_log_dirs}
        for log in self.logs.values():
            if isinstance(log, PersistentLog) and log.dir.parent in counts:
                counts[log.dir.parent] += 1
        preferred = self._preferred_dirs.pop(tp, None)
        parent = preferred if preferred in counts else min(self.live_log_dirs, key=lambda d: counts[d])
        directory = parent / f"{tp[0]}-{tp[1]}"
        if directory.exists():   # not a log of this broker (load_logs set strays aside): keep it apart
            _set_aside(directory)
        try:
            log = PersistentLog(directory, tp[0], tp[1], config=config, time=self.time,
                                flush_scheduler=self._schedule_flush)
            if topic_id is not None:
                PartitionMetadataFile(directory / PARTITION_METADATA_FILE).write(topic_id)
        except OSError as exc:
            self.log_dir_failure_channel.maybe_add_offline_log_dir(
                directory.parent, f"Error while creating log for {tp[0]}-{tp[1]} in dir {directory.parent}", exc)
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"cannot create {directory}: {exc.strerror or exc}") from None
        log.dir_failure = self.log_dir_failure_channel.maybe_add_offline_log_dir
        return log

    def load_logs(self, metadata: ClusterMetadata) -> None:
        """Load every partition directory of this broker's log dirs not already in ``logs``
        (see the module docstring); raises ``ConfigException`` for a directory that cannot be
        written or belongs to another cluster or node."""
        broker_id = int(self.config["broker.id"])  # type: ignore[arg-type]
        for d in self.live_log_dirs:
            prepare_dir(d)
            check_meta_properties(d, metadata.cluster_id, broker_id)
            clean = take_clean_shutdown(d)
            recovery_points = self._read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
            log_starts = self._read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
            high_watermarks = self._read_checkpoint(d / HIGH_WATERMARK_CHECKPOINT)
            for child in sorted(d.iterdir()):
                tp = _parse_partition_dir(child)
                if tp is None:
                    continue
                kept = self.logs.get(tp)
                if isinstance(kept, PersistentLog):   # kept in memory across an in-process restart
                    kept.flush_scheduler = self._schedule_flush
                    kept.dir_failure = self.log_dir_failure_channel.maybe_add_offline_log_dir
                    continue
                topic = metadata.topic(tp[0])
                state = topic.partitions.get(tp[1]) if topic is not None else None
                try:
                    stored_id = PartitionMetadataFile(child / PARTITION_METADATA_FILE).read()
                except CorruptCheckpointError:
                    stored_id = None
                if state is None or broker_id not in state.replicas or \
                        (stored_id is not None and stored_id != topic.topic_id):
                    _set_aside(child)
                    continue
                log = PersistentLog.load(child, tp[0], tp[1], self.log_config(topic.configs), self.time,
                                         recovery_points.get(tp, 0), log_starts.get(tp), high_watermarks.get(tp),
                                         clean, self._schedule_flush)
                log.dir_failure = self.log_dir_failure_channel.maybe_add_offline_log_dir
                if stored_id is None:
                    PartitionMetadataFile(child / PARTITION_METADATA_FILE).write(topic.topic_id)
                self.logs[tp] = log
                _log.info("log_loaded", broker_id=broker_id, topic=tp[0], partition=tp[1],
                          log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
                          high_watermark=log.high_watermark, clean_shutdown=clean)

    @staticmethod
    def _read_checkpoint(path: Path) -> dict[TP, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except CorruptCheckpointError as exc:
            _log.warning("checkpoint_corrupt", file=str(path), error=str(exc))
            return {}

    def persistent_logs(self) -> list[PersistentLog]:
        return [log for log in self.all_logs() if isinstance(log, PersistentLog)]

    def schedule_tasks(self, scheduler: KafkaScheduler) -> None:
        """Kafka's flusher and checkpoint tasks (with ``log.dirs``)."""
        if not self.live_log_dirs:
            return
        self.scheduler = scheduler
        cfg = self.config
        delay = cfg["log.initial.task.delay.ms"]
        scheduler.schedule("kafka-log-flusher", self.flush_dirty_logs, cfg["log.flush.scheduler.interval.ms"], delay)
        scheduler.schedule("kafka-recovery-point-checkpoint", self.checkpoint_recovery_points,
                           cfg["log.flush.offset.checkpoint.interval.ms"], delay)
        scheduler.schedule("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets,
                           cfg["log.flush.start.offset.checkpoint.interval.ms"], delay)
        scheduler.schedule("highwatermark-checkpoint", self.checkpoint_high_watermarks,
                           cfg["replica.high.watermark.checkpoint.interval.ms"])

    def _schedule_flush(self, log: PersistentLog, offset: int) -> None:
        """A roll: flush the rolled segment soon, off the append path (Kafka's ``flush-log``)."""
        scheduler = self.scheduler
        if scheduler is None:
            return

        def flush() -> None:
            with log.lock, self._io_guard(log, "flushing"):
                log.flush(offset)

        scheduler.schedule_once("flush-log", flush)

    def flush_dirty_logs(self) -> None:
        """The ``kafka-log-flusher`` task: flush each log not flushed within its ``flush.ms``."""
        now = self.time.milliseconds()
        for log in self.persistent_logs():
            if now - log.last_flush_ms >= log.config.flush_ms:
                with log.lock, self._io_guard(log, "flushing"):
                    log.flush()

    @contextlib.contextmanager
    def _io_guard(self, log: PersistentLog, doing: str) -> Iterator[None]:
        """An I/O error takes the log's directory offline (Kafka's ``maybeHandleIOException``)
        instead of ending the task."""
        try:
            yield
        except OSError as exc:
            log.report_io_error(f"Error while {doing} {log.topic}-{log.partition} in dir {log.dir.parent}", exc)

    def _checkpoint(self, name: str, value_of: Any, only: Any = None) -> None:
        for d in list(self.live_log_dirs):
            offsets = {(log.topic, log.partition): value_of(log) for log in self.persistent_logs()
                       if log.dir.parent == d and (only is None or only(log))}
            try:
                OffsetCheckpointFile(d / name).write(offsets)
            except OSError as exc:
                self.log_dir_failure_channel.maybe_add_offline_log_dir(d, f"Error while writing {name} in dir {d}",
                                                                       exc)

    def checkpoint_recovery_points(self) -> None:
        """Kafka's ``checkpointRecoveryOffsetsInDir``: the checkpoint, then each log's producer
        snapshots that no recovery from it needs go."""
        self._checkpoint(RECOVERY_POINT_CHECKPOINT, lambda log: log.recovery_point)
        for log in self.persistent_logs():
            with log.lock, self._io_guard(log, "deleting snapshots of"):
                log.delete_snapshots_after_recovery_point_checkpoint()

    def checkpoint_log_start_offsets(self) -> None:
        """Only logs whose start is above their first segment's base (as Kafka writes it)."""
        self._checkpoint(LOG_START_OFFSET_CHECKPOINT, lambda log: log.log_start_offset,
                         lambda log: log.log_start_offset > log.segments[0].base_offset)

    def checkpoint_high_watermarks(self) -> None:
        self._checkpoint(HIGH_WATERMARK_CHECKPOINT, lambda log: log.high_watermark)

    def shutdown(self) -> None:
        """Clean shutdown of the persisted logs: flushed, checkpoints written, the
        clean-shutdown marker in each directory."""
        if not self.live_log_dirs:
            return
        self.scheduler = None
        for log in self.persistent_logs():
            with log.lock, self._io_guard(log, "closing"):
                log.close()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        for d in self.live_log_dirs:
            if not self.log_dir_failure_channel.has_offline_log_dir(d):   # failed at shutdown: not clean
                try:
                    write_clean_shutdown(d)
                except OSError as exc:
                    _log.error("clean_shutdown_marker_failed", dir=str(d), error=str(exc))

    def get_log(self, tp: TP) -> UnifiedLog | None:
        return self.logs.get(tp)

    def all_logs(self) -> list[UnifiedLog]:
        return list(self.logs.values())

    def total_size_bytes(self) -> int:
        return sum(log.size_bytes for log in self.all_logs())

    def log_dirs(self) -> list[LogDirInfo]:
        """The broker's log directories (Kafka's ``ReplicaManager.describeLogDirs`` source): with
        ``log.dirs`` the real ones, with their file system's total and free bytes, as Kafka
        reports them. Otherwise logs live in memory, so there is one notional directory, ``IN_MEMORY_LOG_DIR``, holding every
        log; its total bytes are the memory budget (``emulator.log.memory.max.bytes``) and its
        usable bytes what the logs leave of it."""
        logs = self.all_logs()
        if self.live_log_dirs or self.offline_log_dirs:   # persisted: the real directories, their file systems' sizes
            out = []
            for d in self.live_log_dirs:
                usage = shutil.disk_usage(d)
                out.append(LogDirInfo(str(d), [log for log in logs if isinstance(log, PersistentLog)
                                               and log.dir.parent == d], usage.total, usage.free))
            out += [LogDirInfo(str(d), [], UNKNOWN_VOLUME_BYTES, UNKNOWN_VOLUME_BYTES, Errors.KAFKA_STORAGE_ERROR)
                    for d in self.offline_log_dirs]
            return out
        used = sum(log.size_bytes for log in logs)
        return [LogDirInfo(IN_MEMORY_LOG_DIR.format(broker_id=self.config["broker.id"]), logs,
                           self.memory_max_bytes, max(self.memory_max_bytes - used, 0))]

    # ------------------------------------------------------------------ log directory failure
    def handle_log_dir_failure(self, log_dir: Path) -> list[TP]:
        """Take ``log_dir`` offline (Kafka's ``LogManager.handleLogDirFailure``): no new log goes
        there, its logs leave the map (their handles closed unflushed) and the cleaner forgets
        them; DescribeLogDirs reports it with KAFKA_STORAGE_ERROR. Returns their partitions."""
        with self._lock:
            if log_dir not in self.live_log_dirs:
                return []
            self.live_log_dirs.remove(log_dir)
            self.offline_log_dirs.append(log_dir)
            gone = [(tp, log) for tp, log in self.logs.items()
                    if isinstance(log, PersistentLog) and log.dir.parent == log_dir]
            for tp, _ in gone:
                del self.logs[tp]
        for tp, log in gone:
            if self.cleaner is not None:
                self.cleaner.remove_log(tp)
            with log.lock:
                log.close_files()
        _log.error("log_dir_offline", dir=str(log_dir), partitions=len(gone),
                   live_log_dirs=[str(d) for d in self.live_log_dirs],
                   message=f"log directory {log_dir} is offline: {len(gone)} partition(s) stop serving here")
        return [tp for tp, _ in gone]

    # ------------------------------------------------------------------ retention
    def cleanup_logs(self) -> int:
        """The ``kafka-log-retention`` task: retention on every log, then the memory budget.
        Returns the bytes deleted."""
        now = self.time.milliseconds()
        deleted = 0
        for log in self.all_logs():
            with log.lock:
                try:
                    freed = log.delete_old_segments(now)
                except OSError as exc:
                    if not isinstance(log, PersistentLog):
                        raise
                    log.report_io_error(f"Error while deleting segments of {log.topic}-{log.partition}", exc)
                    continue
            if freed:
                _log.info("log_segments_deleted", topic=log.topic, partition=log.partition, bytes=freed,
                          log_start_offset=log.log_start_offset, reason="retention")
                deleted += freed
        with self._freed_lock:
            self.retention_deleted_bytes += deleted
        budget = self._enforce_memory_budget()
        if deleted and not budget:
            release_free_memory()
        return deleted + budget

    def remove_expired_producers(self) -> int:
        """The ``PeriodicProducerExpirationCheck`` task (every
        ``producer.id.expiration.check.interval.ms``): Kafka schedules one per log, the emulator
        one per broker over every log, leader or follower. Returns the producers forgotten."""
        now = self.time.milliseconds()
        removed = 0
        for log in self.all_logs():
            with log.lock:
                expired = log.remove_expired_producers(now)
            if expired:
                _log.debug("producer_ids_expired", topic=log.topic, partition=log.partition, producer_ids=expired)
                removed += len(expired)
        return removed

    def enforce_memory_budget(self) -> int:
        """The memory-budget task alone (see the module docstring); returns the bytes deleted."""
        return self._enforce_memory_budget()

    def _enforce_memory_budget(self) -> int:
        if self._freed_since_trim:
            with self._freed_lock:
                self._freed_since_trim = 0
            release_free_memory()
        in_process = process_memory_bytes()
        if in_process is not None and in_process <= self.memory_max_bytes:
            return 0   # the logs' heap bytes are a part of the process's memory
        logs = self.all_logs()
        total = sum(map(_heap_bytes, logs))
        if total <= self.memory_max_bytes:
            return 0
        deleted: dict[str, int] = {}
        rolled: dict[str, int] = {}
        for log in sorted(logs, key=_heap_bytes, reverse=True):
            name = f"{log.topic}-{log.partition}"
            if isinstance(log, PersistentLog):   # its active segment moves to the page cache
                with log.lock:
                    before = log.memory_bytes()
                    log.roll()
                    moved = before - log.memory_bytes()
                if moved:
                    total -= moved
                    rolled[name] = moved
            while total > self.memory_max_bytes and not isinstance(log, PersistentLog):
                with log.lock:
                    if log.num_segments() == 1 and log.high_watermark == log.log_end_offset:
                        log.roll()
                    freed = log.delete_oldest_segment()
                if not freed:
                    break
                total -= freed
                deleted[name] = deleted.get(name, 0) + freed
            if total <= self.memory_max_bytes:
                break
        freed_total = sum(deleted.values())
        if freed_total or rolled:
            self.memory_budget_deleted_bytes += freed_total
            release_free_memory()
        message = (f"logs hold more than {MEMORY_BUDGET_CONFIG}={self.memory_max_bytes}: deleted the oldest "
                   f"segments of {', '.join(deleted) or 'no partition (nothing below the HW)'}")
        if rolled:
            message += f"; rolled the active segments of the persisted {', '.join(rolled)}"
        _log.warning("log_memory_budget_exceeded", budget_bytes=self.memory_max_bytes, total_bytes=total,
                     deleted_bytes=freed_total, partitions=deleted, rolled=rolled, message=message)
        return freed_total

    # ------------------------------------------------------------------ moves (AlterReplicaLogDirs)
    def log_dir(self, path: str) -> Path | None:
        """The log directory named ``path`` (an absolute path, as DescribeLogDirs names them);
        None if the broker has none of that name (Kafka's ``isLogDirOnline``: not in the
        config); KafkaError KAFKA_STORAGE_ERROR if it is offline. Without ``log.dirs`` the one
        notional directory."""
        if not self.live_log_dirs and not self.offline_log_dirs:
            notional = IN_MEMORY_LOG_DIR.format(broker_id=self.config["broker.id"])
            return Path(notional) if path == notional else None
        for d in self.live_log_dirs + self.offline_log_dirs:
            if str(d) == path or str(d.absolute()) == path:
                if d in self.offline_log_dirs:
                    raise KafkaError(Errors.KAFKA_STORAGE_ERROR, f"log directory {path} is offline")
                return d
        return None

    def maybe_update_preferred_log_dir(self, tp: TP, directory: Path) -> None:
        """Where ``tp``'s log goes when it is created here later (Kafka's namesake)."""
        if self.live_log_dirs:
            with self._lock:
                if tp not in self.logs:
                    self._preferred_dirs[tp] = directory

    def move_log(self, tp: TP, directory: Path) -> None:
        """Move ``tp``'s log into log directory ``directory`` unless it is there (without
        ``log.dirs`` the one notional directory holds every log). Done at once under the log's
        lock, which appends and the cleaner also take; ``OSError`` when the move fails."""
        log = self.logs.get(tp)
        if not isinstance(log, PersistentLog) or log.dir.parent == directory:
            return
        with log.lock:
            target = directory / log.dir.name
            if target.exists():   # a leftover of this partition, not a log of this broker
                _set_aside(target)
            log.rename_dir(target)
        # the directories' checkpoints name it there from their next write (until then a crash
        # recovers the moved log from its start)
        _log.info("log_moved", broker_id=self.config["broker.id"], topic=tp[0], partition=tp[1],
                  log_dir=str(directory))

    # ------------------------------------------------------------------ deletion
    def delete_log(self, tp: TP) -> UnifiedLog | None:
        """Remove a deleted (or no longer hosted) partition's log and give its memory back."""
        with self._lock:
            log = self.logs.pop(tp, None)
        if self.cleaner is not None:
            self.cleaner.remove_log(tp)
        if log is not None:
            with log.lock:   # drop the data now: a Partition may still hold the UnifiedLog object
                log.truncate_fully_and_start_at(log.log_end_offset)
                if isinstance(log, PersistentLog):
                    log.delete()
            release_free_memory()
        return log


def _set_aside(directory: Path) -> None:
    """Rename a partition directory this broker does not host to ``<name>.<uuid>-stray``
    (Kafka 4.0's stray logs: kept for an operator, never served)."""
    stray = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}-stray")
    directory.rename(stray)
    _log.warning("stray_log_dir", dir=str(directory), renamed_to=stray.name,
                 message=f"{directory.name} is not a replica this broker hosts: renamed to {stray.name}")


def _heap_bytes(log: UnifiedLog) -> int:
    """Bytes of a log held in the heap: all of an in-memory log, the active segment of a
    persisted one."""
    return log.memory_bytes() if isinstance(log, PersistentLog) else log.size_bytes


def _parse_partition_dir(path: Path) -> TP | None:
    """(topic, partition) of a ``<topic>-<partition>`` directory; None for anything else
    (files, ``-stray``/``-delete``/``-future`` directories)."""
    if not path.is_dir():
        return None
    topic, sep, partition = path.name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        return None
    return topic, int(partition)
