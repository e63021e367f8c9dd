"""Broker time travel with real consumers: a session expires on ``advance_time`` alone.

Kafka's ``GroupCoordinatorTest.testSessionTimeout``/``testHeartbeatMaintainsSession`` scenario
over the wire: a member that stopped heartbeating is removed once its session timeout has
passed on the broker's clock, and the group rebalances among the remaining members, without a
real-time wait for the session timeout. The members that must survive the jump have a longer
session timeout than the jump: clients keep real time, so a jump expires every deadline it
passes (see docs/testing-failure.md).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest
from confluent_kafka import Consumer

from wire_helpers import unique, wait_until

pytestmark = pytest.mark.timeout(120)

DOOMED_SESSION_MS = 10_000
LIVE_SESSION_MS = 60_000
HEARTBEAT_MS = 100

_DOOMED = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": "doomed",
                  "session.timeout.ms": int(sys.argv[4]), "heartbeat.interval.ms": 100})
    c.subscribe([sys.argv[3]])
    while not c.assignment():
        c.poll(0.1)
    print("assigned", flush=True)
    while True:
        c.poll(0.1)
""")


@pytest.fixture(scope="module")
def kafka_cluster_config() -> dict[str, Any]:
    return {"brokers": 3, "time": "offset", "record_requests": True}


def test_advance_time_expires_a_dead_members_session_and_the_group_rebalances(kafka_cluster: Any) -> None:
    topic = unique("tt")
    group = unique("g-tt")
    kafka_cluster.create_topic(topic, partitions=4, replication_factor=3)
    bs = kafka_cluster.bootstrap_servers
    live = [Consumer({"bootstrap.servers": bs, "group.id": group, "client.id": f"live{i}",
                      "session.timeout.ms": LIVE_SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS})
            for i in range(2)]
    doomed = subprocess.Popen([sys.executable, "-c", _DOOMED, bs, group, topic, str(DOOMED_SESSION_MS)],
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        for c in live:
            c.subscribe([topic])
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(doomed.stdout.readline()), daemon=True)
        reader.start()

        def sizes() -> list[int]:
            for c in live:   # a confluent consumer takes part in a rebalance only while polled
                c.poll(0.05)
            return sorted(len(c.assignment()) for c in live)

        wait_until(lambda: sizes() is not None and bool(lines), 30, interval_s=0,
                   what="the doomed consumer's assignment")
        assert lines == ["assigned\n"]
        wait_until(lambda: sizes() == [1, 1] or sizes() == [1, 2], 30, interval_s=0,
                   what="a three-member group")
        doomed.send_signal(signal.SIGKILL)   # no LeaveGroup: only its session can end it
        doomed.wait(10)
        three_members = sizes()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:   # a second of real time changes nothing
            assert sizes() == three_members
        joins_before = len(kafka_cluster.requests(api="JoinGroup"))
        t0 = time.monotonic()
        kafka_cluster.advance_time(DOOMED_SESSION_MS + 1)
        wait_until(lambda: sizes() == [2, 2], 10, interval_s=0, what="the two survivors to share 4 partitions")
        elapsed = time.monotonic() - t0
    finally:
        if doomed.poll() is None:
            doomed.kill()
        for c in live:
            c.close()
    assert elapsed < DOOMED_SESSION_MS / 1000 / 2, elapsed
    new_joins = kafka_cluster.requests(api="JoinGroup")[joins_before:]
    assert {r.client_id for r in new_joins} == {"live0", "live1"}
    heartbeats = [r for r in kafka_cluster.requests(api="Heartbeat") if r.client_id in ("live0", "live1")]
    assert any(27 in r.error_codes() for r in heartbeats)   # REBALANCE_IN_PROGRESS told them
