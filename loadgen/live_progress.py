"""Progress of a running load, shown by the driver while Spark executes the barrier stage.

The numbers come from the executors (``live_stats``): messages acknowledged and consumed so far
and the produce p99 of the last few seconds. On a terminal this is a tqdm bar over the planned
load seconds (elapsed and ETA are tqdm's), followed by the drain; otherwise a line every
``LINE_EVERY_S`` seconds on stderr, so CI logs stay readable.
"""
from __future__ import annotations

import sys
import threading
import time

import structlog

from kafka_emu.loadgen.live_stats import Snapshot, StatsReceiver
from kafka_emu.metrics.progress import progress

LINE_EVERY_S = 5.0
REFRESH_S = 0.5
_log = structlog.get_logger("loadgen.progress")


def describe(snap: Snapshot) -> dict[str, str]:
    p99 = "-" if snap.produce_p99_ms is None else f"{snap.produce_p99_ms:.0f}ms"
    out = {"acked": str(snap.acked), "consumed": str(snap.consumed), "p99": p99}
    if snap.failed:
        out["failed"] = str(snap.failed)
    return out


class LiveProgress(threading.Thread):
    def __init__(self, stats: StatsReceiver, load_s: float, enabled: bool = True,
                 label: str = "load") -> None:
        super().__init__(name="loadgen-progress", daemon=True)
        self._label = label
        self._stats = stats
        self._load_s = load_s
        self._enabled = enabled
        self._stop_event = threading.Event()

    def run(self) -> None:
        reason = "stopped"
        bar = progress(total=round(self._load_s), desc=self._label, enabled=self._enabled, unit="s")
        bar.bar_format = "{desc}: {percentage:3.0f}%|{bar}| {n}/{total} s [{elapsed}<{remaining}{postfix}]"
        tty = not bar.disable
        began = time.time()
        last_line = began
        try:
            while not self._stop_event.wait(REFRESH_S):
                snap = self._stats.snapshot()
                if not snap.partitions:
                    began = time.time()   # the clients have not started yet (Spark is scheduling)
                    bar.set_description("starting", refresh=True)
                    continue
                elapsed = time.time() - began
                phase = self._label if elapsed <= self._load_s else "drain"
                fields = describe(snap)
                if tty:
                    bar.set_description(phase, refresh=False)
                    bar.n = min(round(elapsed), bar.total)
                    bar.set_postfix(fields, refresh=True)
                elif self._enabled and time.time() - last_line >= LINE_EVERY_S:
                    last_line = time.time()
                    text = ", ".join(f"{k} {v}" for k, v in fields.items())
                    print(f"load: {phase} {elapsed:.0f}/{self._load_s:.0f} s, {text}", file=sys.stderr, flush=True)
        except Exception as exc:
            reason = f"error: {exc!r}"
        finally:
            bar.close()
            _log.info("thread_stopped", thread=self.name, reason=reason)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)
