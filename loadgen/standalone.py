"""A Spark standalone cluster on this machine, from the installed pyspark: one master, N workers.

Used by the test that runs ``kafka-emu load --master spark://...`` against a real cluster, and by
hand (``python -m kafka_emu.loadgen.standalone --workers 2``) to try a load from a cluster. The
daemons are started with ``bin/spark-class`` (which execs the JVM, so the process we start is the
daemon), each in its own session; stopping sends SIGTERM to each of those process groups (a
worker's executors are its children and die with it), then SIGKILL after a grace period.
Readiness is read from each daemon's log: the master's "I have been elected leader", a worker's
"Successfully registered with master".
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from kafka_emu.loadgen.errors import LoadgenError

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    """Locking: none; start and stop are called from one thread."""

    def __init__(self, workers: int = 2, cores_per_worker: int = 1, memory_per_worker: str = "1g",
                 host: str = "127.0.0.1", work_dir: Path | None = None) -> None:
        self.workers = workers
        self.cores = cores_per_worker
        self.memory = memory_per_worker
        self.host = host
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix="spark-standalone-"))
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port(host)
        self.master_url = f"spark://{host}:{self.port}"
        self._procs: list[tuple[subprocess.Popen[bytes], Path, IO[bytes]]] = []

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.work_dir / f"{name}.log"
        out = open(log, "wb")
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": self.host,
               "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1"}
        proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self._procs.append((proc, log, out))

    def _wait_ready(self, deadline: float) -> None:
        """Every daemon has logged its readiness line (workers retry registering until the master is up)."""
        pending = {log: (proc, "I have been elected leader" if log.stem == "master"
                         else "Successfully registered with master") for proc, log, _ in self._procs}
        while pending and time.monotonic() < deadline:
            for log, (proc, ready) in list(pending.items()):
                if ready in log.read_text(errors="replace"):
                    del pending[log]
                elif proc.poll() is not None:
                    deadline = 0.0
            time.sleep(0.2)
        if pending:
            log = next(iter(pending))
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            raise LoadgenError(f"Spark {log.stem} did not start (log {log}): {' | '.join(tail)[:400]}")

    def start(self) -> "StandaloneCluster":
        """Start the master and the workers together (each JVM takes seconds to start) and wait for all."""
        try:
            self._spawn("master", [MASTER_CLASS, "--host", self.host, "--port", str(self.port), "--webui-port", "0"])
            for i in range(self.workers):
                wd = self.work_dir / f"worker-{i}"
                wd.mkdir(parents=True, exist_ok=True)
                self._spawn(f"worker-{i}", [WORKER_CLASS, self.master_url, "--host", self.host, "--port", "0",
                                            "--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory,
                                            "--work-dir", str(wd)])
            self._wait_ready(time.monotonic() + START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def pids(self) -> list[int]:
        return [p.pid for p, _, _ in self._procs]

    def stop(self) -> None:
        """Workers first (they take their executors with them), then the master."""
        for proc, _, _ in reversed(self._procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STOP_GRACE_S
        for proc, _, out in reversed(self._procs):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(5)
            out.close()
        self._procs.clear()

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a Spark standalone master and workers until Ctrl-C")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1, help="cores per worker")
    parser.add_argument("--memory", default="1g", help="memory per worker")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    with StandaloneCluster(args.workers, args.cores, args.memory, args.host) as cluster:
        print(f"master {cluster.master_url}; logs in {cluster.work_dir}; Ctrl-C to stop", flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


if __name__ == "__main__":
    sys.exit(main())
