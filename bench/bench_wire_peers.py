"""The peers ``kafka-emu bench wire`` compares the emulator with, in the same invocation.

* librdkafka's mock cluster (C), through the librdkafka bundled with confluent-kafka (the
  ``[load]``/``[test]`` extra): ``rd_kafka_mock_cluster_new`` on a handle made with
  ``rd_kafka_new``, its address from ``rd_kafka_mock_cluster_bootstraps``, topics from
  ``rd_kafka_mock_topic_create``. It runs on its own C threads in this process.
* noida-db (native, one node; the ``[bench]`` extra installs it from PyPI): ``noida-db start
  --only kafka`` in a temporary data directory, on a free port, stopped afterwards.

Each peer offers what the measurements need of a cluster: ``bootstrap_servers``,
``create_topic(name, partitions, replication_factor)`` and ``leaders(topic, partitions)`` (the
(host, port) of each partition's leader, asked with confluent-kafka's AdminClient). A peer that
is not installed (or does not start) is reported as such, never as a failure of the bench.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Iterator

from kafka_emu.bench.bench_util import CpuTicks, process_cpu_ticks

START_TIMEOUT_S = 20.0


class _AdminMixin:
    bootstrap_servers: str

    def leaders(self, topic: str, partitions: int) -> list[tuple[str, int]]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            md = admin.list_topics(topic, timeout=5)
            t = md.topics.get(topic)
            if t is not None and t.error is None and len(t.partitions) >= partitions and \
                    all(t.partitions[p].leader >= 0 for p in range(partitions)):
                out = []
                for p in range(partitions):
                    b = md.brokers[t.partitions[p].leader]
                    out.append((b.host, b.port))
                return out
            if time.monotonic() > deadline:
                raise RuntimeError(f"no leaders for {topic} on {self.bootstrap_servers}")
            time.sleep(0.1)


class LibrdkafkaMockCluster(_AdminMixin):
    """librdkafka's mock cluster with ``brokers`` brokers (see the module docstring)."""

    def __init__(self, brokers: int) -> None:
        lib = ctypes.CDLL(_bundled_librdkafka())
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
        lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
        lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        self._lib = lib
        conf = lib.rd_kafka_conf_new()   # the handle only owns the mock cluster; it connects nowhere
        errstr = ctypes.create_string_buffer(512)
        self._rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))   # RD_KAFKA_PRODUCER
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new: {errstr.value.decode()}")
        self._mc = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            lib.rd_kafka_destroy(self._rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.bootstrap_servers = lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def cpu_ticks(self) -> CpuTicks:
        """The mock cluster's CPU: its C threads run in this process (the bench's own threads
        are idle while a load generator child runs)."""
        return process_cpu_ticks()

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, replication_factor)
        if err:
            raise RuntimeError(f"rd_kafka_mock_topic_create({name}): error {err}")

    def close(self) -> None:
        self._lib.rd_kafka_mock_cluster_destroy(self._mc)
        self._lib.rd_kafka_destroy(self._rk)


class NoidaDb(_AdminMixin):
    """One noida-db node serving only Kafka (see the module docstring)."""

    def __init__(self, binary: str) -> None:
        self._dir = tempfile.mkdtemp(prefix="bench-wire-noida-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self._proc = subprocess.Popen(
            [binary, "start", "--data-dir", self._dir, "--only", "kafka", "--kafka-port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # its own process group: ``noida-db`` on PATH may be a wrapper (a pyenv shim, a
            # console script) whose child is the server, and close() must stop both
            start_new_session=True)
        self.bootstrap_servers = f"127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError("noida-db did not start")
                time.sleep(0.1)

    def cpu_ticks(self) -> CpuTicks:
        """The server's CPU (the process ``noida-db`` started, which may be a wrapper's child:
        every process of its group)."""
        total = [0, 0]
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.getpgid(int(entry)) != self._proc.pid:
                        continue
                except OSError:
                    continue
                u, s = process_cpu_ticks(entry)["process"]
                total[0] += u
                total[1] += s
        return {"process": total}

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})   # alive until the result
        admin.create_topics([NewTopic(name, partitions, replication_factor)])[name].result(30)

    def close(self) -> None:
        try:
            os.killpg(self._proc.pid, signal.SIGTERM)
            self._proc.wait(10)
        except ProcessLookupError:
            pass                                     # the whole group has exited
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


def _bundled_librdkafka() -> str:
    import confluent_kafka

    site = os.path.dirname(os.path.dirname(confluent_kafka.__file__))
    found = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
    if not found:
        raise RuntimeError("no librdkafka bundled with confluent-kafka")
    return found[0]


def noida_binary() -> str | None:
    """The noida-db executable, if the ``[bench]`` extra (or a noida-db on PATH) is installed."""
    return shutil.which("noida-db")


@contextlib.contextmanager
def peer(name: str, brokers: int) -> Iterator[LibrdkafkaMockCluster | NoidaDb]:
    """Start peer ``name`` ("librdkafka-mock" or "noida-db"); RuntimeError if it cannot run."""
    if name == "librdkafka-mock":
        p: LibrdkafkaMockCluster | NoidaDb = LibrdkafkaMockCluster(brokers)
    else:
        binary = noida_binary()
        if binary is None:
            raise RuntimeError("noida-db is not installed (pip install 'kafka-emu[bench]')")
        p = NoidaDb(binary)
    try:
        yield p
    finally:
        p.close()
