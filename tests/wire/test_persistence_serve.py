"""``kafka-emu serve`` on a ``log.dirs``: SIGKILL and restart on the same directory lose no
acknowledged record, committed group offsets come back; a clean SIGTERM restart too; an
idempotent producer and transactions keep their state across either restart; bad
directories are one-line errors (exit 2). Real clients: confluent-kafka."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_emu.broker.storage.record_batch import parse_batches

from wire_helpers import unique

pytestmark = pytest.mark.timeout(90)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def start(log_dir: Path, brokers: int, *settings: str, port: int = 0) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "kafka_emu.cli", "serve", "--brokers", str(brokers), "--port", str(port),
            "--set", f"log.dirs={log_dir}", "--set", "group.initial.rebalance.delay.ms=0"]
    for item in settings:
        args += ["--set", item]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    line = proc.stdout.readline().strip()
    assert line.startswith("bootstrap.servers="), (line, proc.poll())
    return proc, line.split("=", 1)[1]


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)


def terminate(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def produce_acknowledged(bootstrap: str, topic: str, n: int) -> set[bytes]:
    """Send ``n`` records with acks=all; the values the broker acknowledged."""
    acked: set[bytes] = set()

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        if err is None:
            acked.add(msg.value())  # type: ignore[attr-defined]

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2})
    for i in range(n):
        p.produce(topic, b"v%05d" % i, key=b"%d" % (i % 7), on_delivery=on_delivery)
        if i % 50 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    return acked


def consume_all(bootstrap: str, topic: str, expect: int, deadline_s: float = 30) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"), "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + deadline_s
    while len(got) < expect and time.monotonic() < deadline:
        got += [m.value() for m in c.consume(500, timeout=0.2) if m.error() is None]
    c.close()
    return got


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    c.close()


def committed(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                return c.committed([TopicPartition(topic, 0)], timeout=5)[0].offset
            except Exception:   # the coordinator may still be loading __consumer_offsets
                if time.monotonic() > deadline:
                    raise
    finally:
        c.close()


def create_topic(bootstrap: str, topic: str, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})   # kept alive until the future is done
    admin.create_topics([NewTopic(topic, 1, rf)])[topic].result(15)


def test_sigkill_single_broker_flush_every_message(tmp_path: Path) -> None:
    """One broker with log.flush.interval.messages=1: every acknowledged record survives a
    SIGKILL (fsynced before the ack); the group's committed offset comes back."""
    topic, group = unique("persist1"), unique("g")
    proc, bootstrap = start(tmp_path, 1, "log.flush.interval.messages=1")
    try:
        create_topic(bootstrap, topic, 1)
        acked = produce_acknowledged(bootstrap, topic, 300)
        assert len(acked) == 300
        commit(bootstrap, group, topic, 120)
    finally:
        kill(proc)
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    proc, bootstrap = start(tmp_path, 1)
    try:
        got = consume_all(bootstrap, topic, len(acked))
        assert acked <= set(got) and len(got) == len(set(got))
        assert committed(bootstrap, group, topic) == 120
    finally:
        terminate(proc)


def test_sigkill_three_brokers_replication_factor_3(tmp_path: Path) -> None:
    """Three brokers, RF 3, acks=all, Kafka's flush defaults (the OS decides): SIGKILL of the
    whole process loses no acknowledged record (each is in the page cache of three replicas'
    files); leaders are elected from the persisted ISRs on restart."""
    topic = unique("persist3")
    proc, bootstrap = start(tmp_path, 3, "min.insync.replicas=2")
    try:
        create_topic(bootstrap, topic, 3)
        acked = produce_acknowledged(bootstrap, topic, 300)
        assert len(acked) == 300
    finally:
        kill(proc)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("broker-")) == \
        ["broker-0", "broker-1", "broker-2"]
    proc, bootstrap = start(tmp_path, 3, "min.insync.replicas=2")
    try:
        got = consume_all(bootstrap, topic, len(acked))
        assert acked <= set(got)
    finally:
        terminate(proc)


def test_sigterm_restart_is_clean(tmp_path: Path) -> None:
    """A SIGTERM shutdown flushes, writes every checkpoint and .kafka_cleanshutdown; the restart
    skips recovery and serves everything, and the cluster keeps taking writes."""
    topic = unique("persist-clean")
    proc, bootstrap = start(tmp_path, 1)
    try:
        create_topic(bootstrap, topic, 1)
        acked = produce_acknowledged(bootstrap, topic, 100)
    finally:
        terminate(proc)
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    assert f"{topic} 0 100" in (tmp_path / "recovery-point-offset-checkpoint").read_text()
    proc, bootstrap = start(tmp_path, 1)
    try:
        assert not (tmp_path / ".kafka_cleanshutdown").exists()
        more = produce_acknowledged(bootstrap, topic, 10)
        got = consume_all(bootstrap, topic, 110)
        assert len(got) == 110 and set(got) == acked | more
    finally:
        terminate(proc)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stored_batches(log_dir: Path, topic: str) -> list:
    """Every batch in the partition's ``.log`` files, read after the broker stopped."""
    out = []
    for path in sorted(log_dir.glob(f"**/{topic}-0/*.log")):
        data = path.read_bytes()
        if data:
            out.extend(parse_batches(data, check_crc=False))
    return out


@pytest.mark.parametrize("stop", [kill, terminate], ids=["sigkill", "sigterm"])
def test_idempotent_and_transactional_state_survives_restart(tmp_path: Path, stop: Callable) -> None:
    """Producer state across a SIGKILL or a SIGTERM restart (the ``.snapshot`` and ``.txnindex``
    files, or the replay after the snapshot): one idempotent confluent-kafka producer keeps
    producing through the restart and every record is stored exactly once under its first
    producer id and epoch with continuing sequences (no duplicate, no OUT_OF_ORDER_SEQUENCE_NUMBER
    and no producer reset); a read_committed consumer after the restart skips the transaction
    aborted before it."""
    topic, txn_topic = unique("idem"), unique("txn")
    port = _free_port()
    proc, bootstrap = start(tmp_path, 1, "transaction.state.log.replication.factor=1",
                            "transaction.state.log.min.isr=1", port=port)
    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 2, "reconnect.backoff.max.ms": 200, "message.timeout.ms": 60000})

    def send(start_at: int, n: int) -> None:
        for i in range(start_at, start_at + n):
            producer.produce(topic, b"v%05d" % i, key=b"%d" % (i % 7),
                             on_delivery=lambda err, msg: errors.append(err) if err else None)
            if i % 50 == 0:
                producer.poll(0)
        assert producer.flush(60) == 0
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for name in (topic, txn_topic):    # small segments: rolls, so snapshots at their bases
            admin.create_topics([NewTopic(name, 1, 1, config={"segment.bytes": "4000"})])[name].result(15)
        send(0, 200)
        txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tx"), "linger.ms": 2})
        txn.init_transactions(30)
        for outcome in ("committed-1", "aborted", "committed-2"):
            txn.begin_transaction()
            for i in range(20):
                txn.produce(txn_topic, b"%s-%d" % (outcome.encode(), i))
            txn.flush(30)
            if outcome == "aborted":
                txn.abort_transaction(30)
            else:
                txn.commit_transaction(30)
    finally:
        stop(proc)
    proc, bootstrap = start(tmp_path, 1, port=port)
    try:
        send(200, 200)
        assert not errors, errors
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("rc"), "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed", "enable.auto.commit": False})
        c.subscribe([txn_topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 40 and time.monotonic() < deadline:
            got += [m.value() for m in c.consume(100, timeout=0.2) if m.error() is None]
        c.close()
        assert sorted(got) == sorted(b"committed-%d-%d" % (t, i) for t in (1, 2) for i in range(20))
        values = consume_all(bootstrap, topic, 400)
        assert sorted(values) == [b"v%05d" % i for i in range(400)]
    finally:
        terminate(proc)
    data = [b for b in _stored_batches(tmp_path, topic) if b.producer_id >= 0]
    assert len({(b.producer_id, b.producer_epoch) for b in data}) == 1
    sequences = [(b.base_sequence, b.last_sequence) for b in data]
    assert sequences[0][0] == 0 and all(nxt[0] == prev[1] + 1 for prev, nxt in zip(sequences, sequences[1:]))
    assert sequences[-1][1] == 399


def _one_line_error(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "kafka_emu.cli", "serve", "--port", "0", *args],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_serve_refuses_bad_log_dirs(tmp_path: Path) -> None:
    """An unwritable directory and a directory of another cluster: one line, exit 2."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    line = _one_line_error("--brokers", "1", "--set", f"log.dirs={blocker}/logs")
    assert line == f"kafka-emu: log.dirs: {blocker}/logs is not a writable directory (Not a directory)"
    mine, other = tmp_path / "mine", tmp_path / "other"
    for d, cluster_id in ((mine, "ThisClusterId000000000"), (other, "AnotherCluster0000000A")):
        d.mkdir()
        (d / "meta.properties").write_text(f"version=1\ncluster.id={cluster_id}\nnode.id=0\n")
    line = _one_line_error("--brokers", "1", "--set", f"log.dirs={mine},{other}")
    assert line.startswith("kafka-emu: InconsistentClusterIdException: ") and "AnotherCluster0000000A" in line
