"""Smoke test of ``kafka-emu bench share`` (a small run): one JSON object, every record delivered
to the share group once, and the lock expiring at its duration within one tick on the manual
clock."""
from __future__ import annotations

import json
import threading

import pytest

from kafka_emu.cli import main


@pytest.mark.timeout(120)
def test_bench_share_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "share", "--records", "3000", "--json", "--no-progress"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    result = json.loads(out[0])
    t = result["throughput"]
    assert t["share"]["records"] == 3000 and t["share"]["duplicates"] == 0 and t["classic"]["records"] == 3000
    assert t["share"]["records_per_s"] > 0 and t["ratio_share_classic"] > 0
    lock = result["lock_expiry"]
    assert lock["ok"] and abs(lock["available_after_ms"] - lock["lock_duration_ms"]) <= 1
    assert code in (0, 1)   # the ratio target is the benchmark's verdict, not this smoke test's


@pytest.mark.timeout(30)
def test_a_failing_member_stops_its_group_and_raises_on_the_caller() -> None:
    """A member whose thread fails (here: one given a closed ShareConsumer) is not left dead
    silently: the other member's thread stops and ``read`` raises, naming the failed thread."""
    from confluent_kafka import ShareConsumer

    from kafka_emu.bench.bench_share import _GroupReaders

    config = {"bootstrap.servers": "127.0.0.1:1", "group.id": "bench-share-failure"}
    live, closed = ShareConsumer(config), ShareConsumer(config)
    closed.close()
    readers = _GroupReaders("bench-share-failure", [live, closed], lambda s: s.poll(0.05) or [], 10)
    with pytest.raises(RuntimeError, match="bench-share-failure-member-1 failed"):
        readers.read(20)
    assert readers.stop.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("bench-share-failure-member")]
