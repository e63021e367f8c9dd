"""A consumer-group member process for ``stress rebalance``: ``python -m loadgen.stress_member <json>``.

Each member is its own process so the storm can crash it for real (SIGKILL: no LeaveGroup, no
more heartbeats) or stop it politely (SIGTERM: commit, then close, which leaves the group). It
consumes, commits synchronously every ``commit_every_s`` and on every revocation, and reports
events on stdout as JSON lines (``assigned``, ``revoked``, ``commit``, ``commit_failed``).
"""
from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any


def _emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, "t": time.time(), **fields}) + "\n")
    sys.stdout.flush()


def main() -> int:
    from confluent_kafka import Consumer, KafkaException

    job = json.loads(sys.argv[1])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    consumer = Consumer({"bootstrap.servers": job["bootstrap"], "group.id": job["group"],
                         "client.id": job["member"], "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": job["session_timeout_ms"],
                         "heartbeat.interval.ms": max(50, job["session_timeout_ms"] // 5), "log_level": 0})

    def commit(reason: str) -> None:
        try:
            parts = consumer.commit(asynchronous=False)
            _emit("commit", reason=reason,
                  offsets={f"{p.topic}:{p.partition}": p.offset for p in parts or () if p.offset >= 0})
        except KafkaException as exc:
            err = exc.args[0]
            if err.name() != "_NO_OFFSET":
                _emit("commit_failed", reason=reason, error=err.name())

    def on_assign(_c: Any, parts: list[Any]) -> None:
        _emit("assigned", partitions=[f"{p.topic}:{p.partition}" for p in parts])

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        commit("revoke")
        _emit("revoked", partitions=[f"{p.topic}:{p.partition}" for p in parts])

    consumer.subscribe([job["topic"]], on_assign=on_assign, on_revoke=on_revoke)
    last_commit = time.monotonic()
    dirty = False
    try:
        while not stop.is_set():
            msgs = consumer.consume(200, 0.1)
            dirty = dirty or any(m.error() is None for m in msgs)
            if dirty and time.monotonic() - last_commit >= job["commit_every_s"]:
                commit("periodic")
                dirty = False
                last_commit = time.monotonic()
        if dirty:
            commit("close")
    finally:
        consumer.close()
        _emit("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
