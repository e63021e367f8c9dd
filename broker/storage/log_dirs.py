"""Log directories: where a broker's (and an in-process cluster's) files live, and their checks.

``log.dirs`` (else ``log.dir``) names the directories, comma separated; unset, the logs live
in memory and nothing touches the disk. A broker's directory holds Kafka's ``meta.properties``
(version 1: ``cluster.id``, ``node.id``, ``directory.id``), ``.lock`` (held with ``flock`` while
the cluster runs, so a second process cannot open the same directory: Kafka's
``LogManager.lockLogDirs``), the offset checkpoints, ``.kafka_cleanshutdown`` after a clean
shutdown, and one directory per partition replica (``broker.storage.persistent_log``).

Layout of an in-process cluster (``cluster_broker_dirs``): Kafka brokers never share a log
directory, so with one broker the configured directories are that broker's; with N brokers
broker ``i`` uses ``<dir>/broker-<i>`` under each configured directory.

The cluster's controller state (``MetadataStore``: topics with their ids, partition
assignments, leaders, ISRs, epochs and configs, and the producer-id block) is kept in
``<first dir>/emulator-cluster-metadata.json`` (``MetadataSnapshotFile``), rewritten atomically
at each change, with the number of brokers it was written by.

Checks before anything starts (each failure is a ``ConfigException``: one line, exit 2 for
``kafka-emu serve``): every directory can be created and written; none is locked by another
process; every ``meta.properties`` and the metadata file name the same cluster id
(``InconsistentClusterIdException`` otherwise, as Kafka refuses a directory of another cluster)
and the node id of the broker using it; a persisted cluster is restarted with the number of
brokers that wrote it.

Differences from Kafka on purpose: the controller state is a JSON snapshot instead of the KRaft
``__cluster_metadata`` log; the broker count of a persisted cluster is fixed (Kafka can add
brokers); a directory without ``meta.properties`` is formatted on first use (Kafka requires
``kafka-storage format``).

Locking: ``MetadataSnapshotFile`` serialises its writes with its own lock (taken after the
metadata store's locks are released); directory locks are held by the owning cluster.
"""
from __future__ import annotations

import fcntl
import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any, Protocol

from kafka_emu.broker.storage.checkpoint_file import CorruptCheckpointError, MetaProperties, write_atomically
from kafka_emu.broker.storage.log_config import BrokerConfig
from kafka_emu.common.config_def import ConfigException

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
METADATA_SNAPSHOT_FILE = "emulator-cluster-metadata.json"
METADATA_SNAPSHOT_VERSION = 1


class InconsistentClusterIdException(ConfigException):
    """A log directory belongs to another cluster (Kafka's ``InconsistentClusterIdException``)."""


def configured_log_dirs(config: BrokerConfig) -> list[Path]:
    """``log.dirs``, else ``log.dir``, as paths; [] when neither is set (logs in memory)."""
    value = config.get("log.dirs") or config.get("log.dir") or ""
    return [Path(item.strip()).expanduser() for item in str(value).split(",") if item.strip()]


def cluster_broker_dirs(base_dirs: list[Path], broker_id: int, num_brokers: int) -> list[Path]:
    """The directories of broker ``broker_id`` of an in-process cluster (see the module docstring)."""
    if num_brokers == 1:
        return list(base_dirs)
    return [d / f"broker-{broker_id}" for d in base_dirs]


def prepare_dir(path: Path) -> None:
    """Create ``path`` if need be and check it can be written (ConfigException otherwise)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".kafka-emu-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigException(f"log.dirs: {path} is not a writable directory "
                              f"({exc.strerror or exc})") from None


class DirLock:
    """The ``.lock`` of a log directory, held (``flock``) until ``release``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise ConfigException(f"log.dirs: {directory} is in use by another broker process "
                                  f"(its {LOCK_FILE} is held)") from None

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def read_meta_properties(directory: Path) -> MetaProperties | None:
    try:
        return MetaProperties.read(directory)
    except CorruptCheckpointError as exc:
        raise ConfigException(f"log.dirs: {exc}") from None


def check_meta_properties(directory: Path, cluster_id: str, node_id: int) -> None:
    """Refuse a directory of another cluster or another node; format it if it is new."""
    meta = read_meta_properties(directory)
    if meta is None:
        MetaProperties(cluster_id, node_id, uuid.uuid4()).write(directory)
        return
    if meta.cluster_id != cluster_id:
        raise InconsistentClusterIdException(
            f"InconsistentClusterIdException: the cluster id {cluster_id} doesn't match stored cluster.id "
            f"{meta.cluster_id} in {directory / 'meta.properties'}: the broker is trying to join the wrong cluster")
    if meta.node_id != node_id:
        raise ConfigException(f"log.dirs: stored node.id {meta.node_id} in {directory / 'meta.properties'} "
                              f"doesn't match this broker's node.id {node_id}")


def write_clean_shutdown(directory: Path) -> None:
    """``.kafka_cleanshutdown`` (Kafka's ``CleanShutdownFileHandler``: JSON, version 0)."""
    write_atomically(directory / CLEAN_SHUTDOWN_FILE, json.dumps({"version": 0, "brokerEpoch": -1}))


def take_clean_shutdown(directory: Path) -> bool:
    """Whether the directory was shut down cleanly; the marker is removed (read once)."""
    path = directory / CLEAN_SHUTDOWN_FILE
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


class ControllerState(Protocol):
    """The controller state a snapshot file writes (``broker.server.metadata_store.MetadataStore``)."""

    def state_snapshot(self) -> dict[str, Any]:
        """The state as JSON values, taken under the store's locks."""


class MetadataSnapshotFile:
    """The cluster's controller state as JSON (see the module docstring); a callable for
    ``MetadataStore.on_change``."""

    def __init__(self, path: Path, num_brokers: int) -> None:
        self.path = path
        self.num_brokers = num_brokers
        self._lock = threading.Lock()

    def read(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            state = json.loads(text)
            if state.get("version") != METADATA_SNAPSHOT_VERSION:
                raise ValueError(f"unsupported version {state.get('version')!r}")
        except ValueError as exc:
            raise ConfigException(f"log.dirs: {self.path} is not a metadata snapshot of this emulator ({exc})") from None
        return state

    def __call__(self, store: ControllerState) -> None:
        with self._lock:
            state = store.state_snapshot()
            state["version"] = METADATA_SNAPSHOT_VERSION
            state["brokers"] = self.num_brokers
            write_atomically(self.path, json.dumps(state, indent=1, sort_keys=True))


class ClusterStorage:
    """The log directories of an in-process cluster, checked and locked (see the module
    docstring): ``cluster_id`` is the persisted one (None for new directories) and ``state``
    the persisted controller state."""

    def __init__(self, base_dirs: list[Path], num_brokers: int) -> None:
        self.base_dirs = base_dirs
        self.num_brokers = num_brokers
        self._locks: list[DirLock] = []
        for d in base_dirs:
            prepare_dir(d)
        self.snapshot_file = MetadataSnapshotFile(base_dirs[0] / METADATA_SNAPSHOT_FILE, num_brokers)
        self.state = self.snapshot_file.read()
        if self.state is not None and self.state.get("brokers") != num_brokers:
            raise ConfigException(f"log.dirs: {base_dirs[0]} holds a cluster of {self.state.get('brokers')} "
                                  f"brokers; start it with that many (a persisted cluster keeps its brokers)")
        found: dict[str, Path] = {}
        try:
            for broker_id in range(num_brokers):
                for d in cluster_broker_dirs(base_dirs, broker_id, num_brokers):
                    prepare_dir(d)
                    self._locks.append(DirLock(d))
                    meta = read_meta_properties(d)
                    if meta is not None:
                        found.setdefault(meta.cluster_id, d)
                        check_meta_properties(d, meta.cluster_id, broker_id)
        except ConfigException:
            self.release()
            raise
        self.cluster_id: str | None = self.state["cluster_id"] if self.state is not None else None
        ids = set(found) | ({self.cluster_id} if self.cluster_id else set())
        if len(ids) > 1:
            self.release()
            expected = self.cluster_id or sorted(found)[0]
            other = next(cid for cid in sorted(found) if cid != expected)
            raise InconsistentClusterIdException(
                f"InconsistentClusterIdException: the cluster id {expected} doesn't match stored cluster.id "
                f"{other} in {found[other] / 'meta.properties'}: the broker is trying to join the wrong cluster")
        if self.cluster_id is None and found:
            self.cluster_id = next(iter(found))

    def broker_dirs(self, broker_id: int) -> list[Path]:
        return cluster_broker_dirs(self.base_dirs, broker_id, self.num_brokers)

    def release(self) -> None:
        for lock in self._locks:
            lock.release()
        self._locks.clear()
