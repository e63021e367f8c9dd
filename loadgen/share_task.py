"""Share group members of a load run (KIP-932): confluent-kafka ``ShareConsumer``s in explicit
acknowledgement mode.

Each delivered record is acknowledged by a seeded draw: RELEASE with the group's
``release_fraction`` (the broker delivers it again, to any member), REJECT with
``reject_fraction`` (archived) and ACCEPT otherwise; the acknowledgements of a poll go to the
broker with ``commit_sync`` before the next poll. Samples: ``consume`` for an accepted delivery
(so the report's delivery check counts each record once per ACCEPT), ``share_release`` and
``share_reject`` for the others, with the record's topic, partition and offset. A member stops
once every producer has flushed and nothing was delivered to it for ``IDLE_S`` (a share group
has no committed offsets to compare with the high watermarks), or at the run's hard stop.
"""
from __future__ import annotations

import random
import threading
import time
from typing import Any

from kafka_emu.loadgen.consumer_clients import make_consumer
from kafka_emu.loadgen.consumer_task import producers_done
from kafka_emu.loadgen.pacing import wait_until
from kafka_emu.loadgen.samples import SampleSink

POLL_S = 0.2
IDLE_S = 3.0
OPS = {"ACCEPT": "consume", "RELEASE": "share_release", "REJECT": "share_reject"}


def run_share_member(params: dict[str, Any], bootstrap: str, t0: float, start_s: float, stop_s: float,
                     sink: SampleSink, stop_event: threading.Event) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    if not wait_until(t0 + start_s, stop_event):
        return
    g = params["share_group"]
    rng = random.Random(params["seed"])
    release, reject = float(g["release_fraction"]), float(g["reject_fraction"])
    kinds = {"ACCEPT": AcknowledgeType.ACCEPT, "RELEASE": AcknowledgeType.RELEASE, "REJECT": AcknowledgeType.REJECT}
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": g["group_id"], "client.id": params["member"],
                              "share.acknowledgement.mode": "explicit", "log_level": 3, **g["config"]})
    watch = make_consumer("confluent", bootstrap, None, f"{params['member']}-watch", {}, lambda _l, _e: None)
    sink.add("join")
    consumer.subscribe(list(g["topics"]))
    drain_from, hard_stop = t0 + params["produce_end_s"], t0 + stop_s
    last_record = time.time()
    all_produced = False
    how = "stopped"
    while not stop_event.is_set():
        now = time.time()
        if now >= hard_stop:
            how = "drain_timeout"
            break
        try:
            messages = consumer.poll(POLL_S) or []
        except Exception as exc:
            sink.add("share_consume", None, error=type(exc).__name__)
            continue
        now_ms = time.time() * 1000.0
        for m in messages:
            error = m.error()
            if error is not None:
                sink.add("share_consume", None, error=error.name(), topic=m.topic(), partition=m.partition())
                continue
            draw = rng.random()
            kind = "RELEASE" if draw < release else "REJECT" if draw < release + reject else "ACCEPT"
            consumer.acknowledge(m, kinds[kind])
            _ts_type, ts_ms = m.timestamp()
            value = m.value()
            sink.add(OPS[kind], max(0.0, now_ms - ts_ms), topic=m.topic(), partition=m.partition(), offset=m.offset(),
                     nbytes=len(value) if value is not None else 0)
        if messages:
            last_record = time.time()
            started = time.perf_counter()
            try:
                consumer.commit_sync(10)
                sink.add("commit", (time.perf_counter() - started) * 1000.0)
            except Exception as exc:
                sink.add("commit", None, error=type(exc).__name__)
        sink.flush()
        if not messages and now >= drain_from and now - last_record >= IDLE_S:
            all_produced = all_produced or producers_done(watch, params)
            if all_produced:
                how = "drained"
                break
    started = time.perf_counter()
    consumer.close()
    watch.close()
    sink.add("leave", (time.perf_counter() - started) * 1000.0, detail=how)
    sink.flush()
