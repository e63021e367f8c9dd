"""``kafka-emu bench timer``: the timing wheel against the timer a Python user would write.

Two scenarios, each run on ``SystemTimer`` (driven by a reaper thread calling
``advance_clock(200)``, as a purgatory does) and on a naive timer in the same process:

* add-cancel: the purgatory's common case. Requests almost always complete before their 30 s
  timeout, so each task is added and soon cancelled; 10,000 stay outstanding. The wheel unlinks
  a cancelled task at once; the naive heap keeps every cancelled entry until its deadline, so its
  memory grows with the number of tasks ever added rather than with those outstanding.
* firing: tasks with delays uniform in [0, max delay) all fire. Reported: add rate, lateness of
  each run against its deadline (p50/p99/max), and early firings (earlier than deadline minus one
  tick, which Kafka's wheel never does).

The naive timer is what one writes with the standard library: task objects with a cancel flag
on a ``heapq`` keyed by deadline, lazy cancellation (cancelled entries are skipped when they
reach the top), one thread waiting on a ``Condition`` that runs due tasks itself.
"""
from __future__ import annotations

import argparse
import sys
import gc
import heapq
import itertools
import random
import threading
import time
from typing import Any, Callable

from kafka_emu.metrics.progress import progress, progress_enabled
from kafka_emu.bench.bench_util import emit, mib, percentile, rss_bytes
from kafka_emu.timer.reaper import SystemTimerReaper
from kafka_emu.timer.system_timer import SystemTimer
from kafka_emu.timer.timer_task import TimerTask

_monotonic_ns = time.monotonic_ns
_PROGRESS_STEP = 10_000


# ---------------------------------------------------------------------------- the naive timer
class NaiveTask:
    """A timer task as a user would write it: a deadline and a cancel flag."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self.cancelled = False
        self.deadline = 0.0

    def cancel(self) -> None:
        self.cancelled = True

    def run(self) -> None:
        pass


class NaiveTimer:
    """heapq of (deadline, seq, task); one thread sleeps until the head is due and runs it."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, NaiveTask]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="naive-timer", daemon=True)
        self._thread.start()

    def add(self, task: NaiveTask) -> None:
        task.deadline = time.monotonic() + task.delay_ms / 1000.0
        with self._cond:
            heapq.heappush(self._heap, (task.deadline, next(self._seq), task))
            if self._heap[0][2] is task:
                self._cond.notify()

    def entries(self) -> int:
        return len(self._heap)

    def _loop(self) -> None:
        with self._cond:
            while not self._closed:
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, _, task = self._heap[0]
                delay = deadline - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                heapq.heappop(self._heap)
                if not task.cancelled:
                    self._cond.release()
                    try:
                        task.run()
                    finally:
                        self._cond.acquire()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(5.0)


# ---------------------------------------------------------------------------- tasks
class _NoopTask(TimerTask):
    __slots__ = ()

    def run(self) -> None:
        pass


class _Recorder:
    """Collects lateness samples (ns) and signals when every task has run."""

    def __init__(self, expected: int) -> None:
        self.lateness_ns: list[int] = []
        self.expected = expected
        self.done = threading.Event()
        if expected == 0:
            self.done.set()

    def record(self, deadline_ns: int) -> None:
        late = self.lateness_ns
        late.append(_monotonic_ns() - deadline_ns)
        if len(late) >= self.expected:
            self.done.set()


class _FiringTask(TimerTask):
    __slots__ = ("deadline_ns", "recorder")

    def __init__(self, delay_ms: int, recorder: _Recorder) -> None:
        super().__init__(delay_ms)
        self.recorder = recorder
        self.deadline_ns = 0

    def run(self) -> None:
        self.recorder.record(self.deadline_ns)


class _NaiveFiringTask(NaiveTask):
    def __init__(self, delay_ms: int, recorder: _Recorder) -> None:
        super().__init__(delay_ms)
        self.recorder = recorder
        self.deadline_ns = 0

    def run(self) -> None:
        self.recorder.record(self.deadline_ns)


# ---------------------------------------------------------------------------- scenario (a)
def _add_cancel(make: Callable[[], Any], add: Callable[[Any], None], tasks: int,
                outstanding: int, label: str, show: bool) -> float:
    """Add ``tasks`` tasks, cancelling each once ``outstanding`` newer ones exist; seconds taken."""
    ring: list[Any] = [None] * outstanding
    bar = progress(tasks, f"add-cancel {label}", enabled=show, unit="task")
    gc.collect()
    start = time.perf_counter()
    done = 0
    while done < tasks:
        chunk = min(_PROGRESS_STEP, tasks - done)
        for i in range(done, done + chunk):
            task = make()
            add(task)
            slot = i % outstanding
            old = ring[slot]
            if old is not None:
                old.cancel()
            ring[slot] = task
        done += chunk
        bar.update(chunk)
    elapsed = time.perf_counter() - start
    bar.close()
    return elapsed


def _measure_add_cancel(timer: Any, add: Callable[[Any], None], make: Callable[[], Any],
                        entries: Callable[[], int], tasks: int, outstanding: int, label: str,
                        show: bool) -> dict[str, Any]:
    """Run the add-cancel loop on one timer, then close it; rate, entries kept and RSS growth."""
    gc.collect()
    rss0 = rss_bytes()
    try:
        elapsed = _add_cancel(make, add, tasks, outstanding, label, show)
        result = {"seconds": round(elapsed, 3), "rate_per_s": round(tasks / elapsed),
                  "retained_entries": entries(), "rss_delta_mib": mib(rss_bytes() - rss0)}
    finally:
        timer.close()
    gc.collect()
    return result


def run_add_cancel(tasks: int, outstanding: int, delay_ms: int, show: bool) -> dict[str, Any]:
    # Tasks go straight into the SystemTimer, as a purgatory adds them; the reaper thread only
    # drives the clock.
    system_timer = SystemTimer("bench-timer")
    reaper = SystemTimerReaper("ExpirationReaper-bench-timer", system_timer)
    ours = _measure_add_cancel(reaper, system_timer.add, lambda: _NoopTask(delay_ms),
                               system_timer.size, tasks, outstanding, "wheel", show)
    del reaper, system_timer
    naive = NaiveTimer()
    theirs = _measure_add_cancel(naive, naive.add, lambda: NaiveTask(delay_ms), naive.entries,
                                 tasks, outstanding, "naive", show)
    del naive
    return {
        "tasks": tasks, "outstanding": outstanding, "delay_ms": delay_ms,
        "wheel": ours, "naive": theirs,
        "rate_ratio": round(ours["rate_per_s"] / theirs["rate_per_s"], 2),
    }


# ---------------------------------------------------------------------------- scenario (b)
def _fire(make: Callable[[int], Any], add: Callable[[Any], None], tasks: int, max_delay_ms: int,
          recorder: _Recorder, label: str, show: bool, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    delays = [rng.randrange(max_delay_ms) for _ in range(tasks)]
    objs = [make(d) for d in delays]
    bar = progress(tasks, f"firing {label}", enabled=show, unit="task")
    # The pre-built tasks would make every full collection scan them; a broker creates its
    # requests over time. Freezing them keeps collector pauses of the harness out of lateness.
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    done = 0
    while done < tasks:
        chunk = min(_PROGRESS_STEP, tasks - done)
        for task in objs[done:done + chunk]:
            task.deadline_ns = _monotonic_ns() + task.delay_ms * 1_000_000
            add(task)
        done += chunk
        bar.update(chunk)
    add_seconds = time.perf_counter() - start
    bar.close()
    finished = recorder.done.wait(max_delay_ms / 1000.0 + 30.0)
    gc.unfreeze()
    late = sorted(recorder.lateness_ns)
    return {
        "add_seconds": round(add_seconds, 3),
        "add_rate_per_s": round(tasks / add_seconds),
        "fired": len(late),
        "all_fired": finished,
        "lateness_ms_p50": round(percentile(late, 50) / 1e6, 3),
        "lateness_ms_p99": round(percentile(late, 99) / 1e6, 3),
        "lateness_ms_max": round((late[-1] if late else 0) / 1e6, 3),
        "early_firings": sum(1 for x in late if x < -1_000_000),  # earlier than deadline - 1 tick
    }


def run_firing(tasks: int, max_delay_ms: int, show: bool, seed: int = 42) -> dict[str, Any]:
    rec = _Recorder(tasks)
    system_timer = SystemTimer("bench-timer")
    timer = SystemTimerReaper("ExpirationReaper-bench-timer", system_timer)
    try:
        ours = _fire(lambda d: _FiringTask(d, rec), system_timer.add, tasks, max_delay_ms, rec,
                     "wheel", show, seed)
    finally:
        timer.close()
    rec = _Recorder(tasks)
    naive = NaiveTimer()
    try:
        theirs = _fire(lambda d: _NaiveFiringTask(d, rec), naive.add, tasks, max_delay_ms, rec,
                       "naive", show, seed)
    finally:
        naive.close()
    return {
        "tasks": tasks, "max_delay_ms": max_delay_ms, "wheel": ours, "naive": theirs,
        "add_rate_ratio": round(ours["add_rate_per_s"] / theirs["add_rate_per_s"], 2),
    }


# ---------------------------------------------------------------------------- CLI
def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import non_negative_float, non_negative_int, positive_int

    parser.add_argument("--tasks", type=positive_int, default=1_000_000,
                        help="tasks added then cancelled in the add-cancel scenario")
    parser.add_argument("--outstanding", type=positive_int, default=10_000,
                        help="tasks kept outstanding in the add-cancel scenario")
    parser.add_argument("--delay-ms", type=positive_int, default=30_000,
                        help="delay of the add-cancel tasks (they never fire)")
    parser.add_argument("--fire-tasks", type=positive_int, default=200_000,
                        help="tasks that fire in the firing scenario")
    parser.add_argument("--max-delay-ms", type=positive_int, default=2_000,
                        help="firing delays are uniform in [0, this)")
    parser.add_argument("--scenario", choices=["all", "add-cancel", "firing"], default="all",
                        help="which scenario to run")
    parser.add_argument("--seed", type=non_negative_int, default=42, help="random seed of the firing delays")
    parser.add_argument("--switch-interval-ms", type=non_negative_float, default=1.0,
                        help="sys.setswitchinterval for this process, applied to both timers "
                             "(Python's default is 5 ms, which delays every thread hand-off of an "
                             "expiration); 0 keeps Python's")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    if args.switch_interval_ms > 0:
        sys.setswitchinterval(args.switch_interval_ms / 1000.0)
    show = progress_enabled(args)
    result: dict[str, Any] = {"bench": "timer", "tick_ms": 1, "wheel_size": 20}
    ok = True
    table: list[tuple[str, ...]] = [("scenario", "metric", "wheel", "naive", "ratio")]
    if args.scenario in ("all", "add-cancel"):
        a = run_add_cancel(args.tasks, args.outstanding, args.delay_ms, show)
        a["target_ratio"] = 1.5
        a["passed"] = a["rate_ratio"] >= 1.5 and a["wheel"]["retained_entries"] <= args.outstanding
        ok &= a["passed"]
        result["add_cancel"] = a
        w, n = a["wheel"], a["naive"]
        table += [
            ("add-cancel", "tasks/s", f"{w['rate_per_s']:,}", f"{n['rate_per_s']:,}", f"{a['rate_ratio']}x"),
            ("add-cancel", "retained entries", f"{w['retained_entries']:,}", f"{n['retained_entries']:,}", ""),
            ("add-cancel", "RSS delta MiB", f"{w['rss_delta_mib']}", f"{n['rss_delta_mib']}", ""),
        ]
    if args.scenario in ("all", "firing"):
        b = run_firing(args.fire_tasks, args.max_delay_ms, show, args.seed)
        w, n = b["wheel"], b["naive"]
        b["target_p99_ms"] = 10
        b["passed"] = w["all_fired"] and w["lateness_ms_p99"] <= 10 and w["early_firings"] == 0
        ok &= b["passed"]
        result["firing"] = b
        table += [
            ("firing", "add tasks/s", f"{w['add_rate_per_s']:,}", f"{n['add_rate_per_s']:,}", f"{b['add_rate_ratio']}x"),
            ("firing", "fired", f"{w['fired']:,}", f"{n['fired']:,}", ""),
            ("firing", "lateness p50 ms", f"{w['lateness_ms_p50']}", f"{n['lateness_ms_p50']}", ""),
            ("firing", "lateness p99 ms", f"{w['lateness_ms_p99']}", f"{n['lateness_ms_p99']}", ""),
            ("firing", "lateness max ms", f"{w['lateness_ms_max']}", f"{n['lateness_ms_max']}", ""),
            ("firing", "early (> 1 tick)", f"{w['early_firings']}", f"{n['early_firings']}", ""),
        ]
    result["passed"] = ok
    table.append(("targets", "met" if ok else "NOT met", "", "", ""))
    emit(result, args.json, table)
    return 0
