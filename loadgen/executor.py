"""What each Spark task does: run its share of the workload's client tasks concurrently.

The function returned by ``partition_runner`` is given to ``DataFrame.mapInArrow`` in barrier
mode, so every partition is running at the same moment (a producer and the consumer group it
feeds must overlap; ordinary scheduling could run them one after the other on a 2-core
machine). The partitions then agree on one start time through ``allGather`` and every client
task runs on its own named thread. The rows that come back are the samples (``loadgen.samples``).
"""
from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Iterator

import pyarrow as pa
import structlog

from kafka_emu.loadgen.live_stats import StatsReporter
from kafka_emu.loadgen.samples import SampleSink

START_LEAD_S = 1.5      # gives threads and crashable members' child processes time to start
STOP_GRACE_S = 30.0     # flushes and closes after the planned end before threads are abandoned

_log = structlog.get_logger("loadgen.executor")

Runner = Callable[[dict[str, Any], str, float, float, float, SampleSink, threading.Event], None]


def _runners() -> dict[str, Runner]:
    from kafka_emu.loadgen.admin_task import run_admin
    from kafka_emu.loadgen.consumer_task import run_consumer, run_member
    from kafka_emu.loadgen.producer_task import run_producer
    from kafka_emu.loadgen.share_task import run_share_member

    return {"producer": run_producer, "consumer": run_consumer, "member": run_member,
            "share_member": run_share_member, "admin": run_admin}


def agree_start_time(lead_s: float = START_LEAD_S) -> float:
    """One start time for every partition: the latest clock among them plus a lead."""
    now = time.time()
    try:
        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
        clocks = [float(x) for x in ctx.allGather(repr(now))]
    except Exception:  # not in a barrier stage (a plain local call from tests or tools)
        clocks = [now]
    return max(clocks) + lead_s


def _sink_for(task: dict[str, Any], params: dict[str, Any]) -> SampleSink:
    if task["kind"] == "member":
        g = params["group"]
        return SampleSink(task["task_id"], g["client"], g["group_id"], params["member"])
    if task["kind"] == "share_member":
        return SampleSink(task["task_id"], "confluent", params["share_group"]["group_id"], params["member"])
    return SampleSink(task["task_id"], params.get("client", "confluent"))


def run_tasks(tasks: list[dict[str, Any]], bootstrap: str, t0: float,
              reporter: StatsReporter | None = None) -> list[SampleSink]:
    """Run every task on its own thread from ``t0``; return their sinks once all have ended.

    ``reporter`` (if any) is given the sinks before the tasks start and is stopped, after a last
    report, once they have ended."""
    runners = _runners()
    stop_event = threading.Event()
    sinks: list[SampleSink] = []
    threads: list[threading.Thread] = []
    for task in tasks:
        params = json.loads(task["params"])
        sink = _sink_for(task, params)
        sinks.append(sink)

        def body(task: dict[str, Any] = task, params: dict[str, Any] = params, sink: SampleSink = sink) -> None:
            began = time.time()
            reason = "completed"
            try:
                runners[task["kind"]](params, bootstrap, t0, task["start_s"], task["stop_s"], sink, stop_event)
            except Exception as exc:
                reason = f"error: {exc!r}"
                sink.add("task_error", None, error=type(exc).__name__, detail=str(exc)[:500])
                _log.warning("load_task_failed", task=task["task_id"], error=repr(exc))
            finally:
                sink.add("task_end", (time.time() - began) * 1000.0, detail=reason)
                _log.info("thread_stopped", thread=threading.current_thread().name, reason=reason)

        thread = threading.Thread(target=body, name=f"loadgen-{task['task_id']}", daemon=True)
        threads.append(thread)
    if reporter is not None:
        reporter.watch(sinks)
        reporter.start()
    for thread in threads:
        thread.start()
    deadline = t0 + max((t["stop_s"] for t in tasks), default=0.0) + STOP_GRACE_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.time()))
    if any(t.is_alive() for t in threads):
        stop_event.set()   # the shutdown path: every loop checks it, every wait is bounded
        for thread in threads:
            thread.join(10.0)
    for thread, sink in zip(threads, sinks):
        if thread.is_alive():
            sink.add("task_error", None, error="_TASK_HUNG", detail="thread still running after stop")
            _log.warning("load_task_hung", thread=thread.name)
    if reporter is not None:
        reporter.stop()
    return sinks


def _partition_id() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def partition_runner(bootstrap: str, stats_address: str | None = None
                     ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function for a run against ``bootstrap``; live counts go to
    ``stats_address`` (host:port of the driver's ``StatsReceiver``) when given."""

    def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from kafka_emu.logsetup import ensure_configured

        ensure_configured("warning")
        tasks: list[dict[str, Any]] = []
        for batch in batches:
            tasks.extend(batch.to_pylist())
        t0 = agree_start_time()
        reporter = StatsReporter(stats_address, _partition_id()) if stats_address else None
        for sink in run_tasks(tasks, bootstrap, t0, reporter):
            if sink.rows:
                yield sink.to_arrow()

    return run_partition
