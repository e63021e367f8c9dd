"""Consumers of a load run: group members (with planned leaves and crashes) and standalone readers.

A member's end is part of the plan: ``leave`` closes the consumer (LeaveGroup, a prompt
rebalance), ``crash`` is a SIGKILL of the child process the member runs in (no LeaveGroup, the
coordinator only notices when the session times out), and ``drain`` members stay until the
group has committed every partition up to its high watermark once producers have stopped, so a
run ends as soon as the group has consumed everything rather than after a fixed grace period.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from kafka_emu.loadgen.consumer_clients import make_consumer
from kafka_emu.loadgen.pacing import wait_until
from kafka_emu.loadgen.samples import SampleSink

POLL_S = 0.2
DRAIN_CHECK_S = 1.0


def producers_done(consumer: Any, params: dict[str, Any]) -> bool:
    """Every producer of the run has flushed and written its marker to the control topic."""
    if params["producers_expected"] == 0:
        return True
    try:
        return consumer.high_watermark(params["control_topic"], 0) >= params["producers_expected"]
    except Exception:
        return False


def consume_loop(consumer: Any, topics: list[str], group: bool, sink: SampleSink, params: dict[str, Any],
                 drain_from: float, leave_at: float | None, hard_stop: float, stop_event: threading.Event) -> str:
    """Poll until the planned leave, the full drain, or the hard stop; returns which."""
    dirty = False
    last_check = 0.0
    all_produced = False
    while not stop_event.is_set():
        now = time.time()
        if leave_at is not None and now >= leave_at:
            return "leave"
        if now >= hard_stop:
            return "drain_timeout"
        records = consumer.poll_batch(POLL_S)
        now_ms = time.time() * 1000.0
        for topic, partition, offset, ts_ms, nbytes, error in records:
            if error:
                sink.add("consume", None, error=error, topic=topic, partition=partition)
            else:
                sink.add("consume", max(0.0, now_ms - ts_ms), topic=topic, partition=partition, offset=offset,
                         nbytes=nbytes)
        if records and group:
            consumer.commit(sync=False)
            dirty = True
        sink.flush()
        if leave_at is None and not records and now >= drain_from and now - last_check >= DRAIN_CHECK_S:
            last_check = now
            if group and dirty:
                consumer.commit(sync=True)
                dirty = False
            try:
                all_produced = all_produced or producers_done(consumer, params)
                if all_produced and consumer.lag(topics, group) == 0:
                    return "drained"
            except Exception:
                continue  # metadata or offsets briefly unavailable (leader moving): check again later
    return "stopped"


def run_member(params: dict[str, Any], bootstrap: str, t0: float, start_s: float, stop_s: float,
               sink: SampleSink, stop_event: threading.Event) -> None:
    if params["end"] == "crash" and os.environ.get("LOADGEN_MEMBER_CHILD") != "1":
        _run_in_child(params, bootstrap, t0, start_s, stop_s, sink, stop_event)
        return
    if not wait_until(t0 + start_s, stop_event):
        return
    g = params["group"]
    state: dict[str, float | None] = {"since": time.perf_counter()}

    def on_commit(latency_ms: float, error: str) -> None:
        if error != "_NO_OFFSET":
            sink.add("commit", latency_ms, error=error)

    def on_revoke() -> None:
        state["since"] = time.perf_counter()
        sink.add("revoke")

    def on_assign(n: int) -> None:
        since = state["since"]
        latency = (time.perf_counter() - since) * 1000.0 if since is not None else None
        state["since"] = None
        sink.add("rebalance", latency, detail=f"assigned={n}")

    if g.get("group_protocol") == "consumer":
        # KIP-848: the timeouts are the group's configs on the broker (set before the run)
        settings = {"group.protocol": "consumer", **g["config"]}
    else:
        settings = {"session.timeout.ms": g["session_timeout_ms"], "heartbeat.interval.ms": g["heartbeat_interval_ms"],
                    **g["config"]}
    consumer = make_consumer(g["client"], bootstrap, g["group_id"], params["member"], settings, on_commit)
    sink.add("join")
    consumer.subscribe(list(g["topics"]), on_assign, on_revoke)
    leave_at = t0 + stop_s if params["end"] == "leave" else None
    # A crashing member runs until its parent kills it; the bound only matters if the parent died.
    hard_stop = t0 + stop_s + (60.0 if params["end"] == "crash" else 0.0)
    how = consume_loop(consumer, list(g["topics"]), True, sink, params, t0 + params["produce_end_s"], leave_at,
                       hard_stop, stop_event)
    if how != "leave":
        consumer.commit(sync=True)
    started = time.perf_counter()
    consumer.close()
    sink.add("leave", (time.perf_counter() - started) * 1000.0, detail=how)
    sink.flush()


def run_consumer(params: dict[str, Any], bootstrap: str, t0: float, start_s: float, stop_s: float,
                 sink: SampleSink, stop_event: threading.Event) -> None:
    if not wait_until(t0 + start_s, stop_event):
        return
    consumer = make_consumer(params["client"], bootstrap, None, params["name"], params["config"],
                             lambda _l, _e: None)
    consumer.assign_all(list(params["topics"]))
    how = consume_loop(consumer, list(params["topics"]), False, sink, params, t0 + params["produce_end_s"], None,
                       t0 + stop_s, stop_event)
    consumer.close()
    sink.add("close", None, detail=how)   # not a group member: no LeaveGroup, no rebalance


class StreamSink(SampleSink):
    """The child's sink: each row goes to stdout as a JSON line, so rows survive the SIGKILL."""

    def add(self, *args: Any, **kwargs: Any) -> None:
        super().add(*args, **kwargs)
        sys.stdout.write(json.dumps(self.rows.pop()) + "\n")

    def flush(self) -> None:
        sys.stdout.flush()


def _run_in_child(params: dict[str, Any], bootstrap: str, t0: float, start_s: float, stop_s: float,
                  sink: SampleSink, stop_event: threading.Event) -> None:
    """Run the member in a child process and SIGKILL it at its crash time."""
    if not wait_until(t0 + start_s - 1.0, stop_event):   # the child needs ~1 s to import its client
        return
    payload = json.dumps({"params": params, "bootstrap": bootstrap, "t0": t0, "start_s": start_s,
                          "stop_s": stop_s, "task": sink.task, "client": sink.client})
    env = {**os.environ, "LOADGEN_MEMBER_CHILD": "1"}
    child = subprocess.Popen([sys.executable, "-m", "kafka_emu.loadgen.member_child", payload], stdout=subprocess.PIPE,
                             env=env)
    assert child.stdout is not None
    fd = child.stdout.fileno()
    os.set_blocking(fd, False)
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    buffer = b""

    def drain_pipe() -> bytes:
        nonlocal buffer
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            buffer += chunk
        *lines, rest = buffer.split(b"\n")
        buffer = rest
        for line in lines:
            if line:
                sink.rows.append(tuple(json.loads(line)))
        return rest

    crash_at = t0 + stop_s
    try:
        while time.time() < crash_at and not stop_event.is_set() and child.poll() is None:
            if sel.select(timeout=min(0.2, max(0.0, crash_at - time.time()))):
                drain_pipe()
        alive = child.poll() is None
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        drain_pipe()
        sink.add("crash", None, error="" if alive else f"_CHILD_EXITED_{child.returncode}")
    finally:
        sel.close()
        child.stdout.close()
        if child.poll() is None:
            child.kill()
