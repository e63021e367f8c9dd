"""``kafka-emu serve``: prints the bootstrap servers, serves clients, stops cleanly on SIGTERM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer

from wire_helpers import unique

pytestmark = pytest.mark.timeout(60)


def start(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kafka_emu.cli", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    line = proc.stdout.readline().strip()
    assert line.startswith("bootstrap.servers="), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split("=", 1)[1]


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_round_trip_and_clean_shutdown(tmp_path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("# test\nnum.partitions=2\ngroup.initial.rebalance.delay.ms=0\n")
    proc, bootstrap = start("--brokers", "2", "--port", "0", "--config", str(props))
    try:
        assert bootstrap.count(",") == 1
        topic = unique("serve")
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(10):
            p.produce(topic, str(i).encode())
        assert p.flush(15) == 0
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("serve-g"),
                      "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
        c.subscribe([topic])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 10 and time.monotonic() < deadline:
            got += [m.value() for m in c.consume(10, timeout=0.2) if m.error() is None]
        c.close()
        assert sorted(got) == sorted(str(i).encode() for i in range(10))
        md = Producer({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=5)
        assert len(md.topics[topic].partitions) == 2     # from server.properties
    finally:
        stop(proc)


def _two_free_ports() -> int:
    """A port p with p and p + 1 both free right now (serve binds --port and the next one)."""
    import socket

    for _ in range(50):
        first, second = socket.socket(), socket.socket()
        try:
            first.bind(("127.0.0.1", 0))
            base = first.getsockname()[1]
            second.bind(("127.0.0.1", base + 1))
            return base
        except OSError:
            continue
        finally:
            first.close()
            second.close()
    raise AssertionError("no two consecutive free ports found")


def test_serve_fixed_ports(tmp_path) -> None:
    import socket

    base = _two_free_ports()
    proc, bootstrap = start("--brokers", "2", "--port", str(base))
    try:
        assert bootstrap == f"127.0.0.1:{base},127.0.0.1:{base + 1}"
    finally:
        stop(proc)
