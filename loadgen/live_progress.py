"""Progress of a running load, shown by the driver while Spark executes the barrier stage.

The numbers come from the executors (``live_stats``): messages acknowledged and consumed so far
and the produce p99 of the last few seconds, on a tqdm bar over the planned load seconds
(elapsed and ETA are tqdm's), then the drain. Like every progress display of ``kafka-emu`` it is
drawn on a terminal only (``metrics.progress.progress_enabled``).
"""
from __future__ import annotations

import threading
import time

import structlog

from kafka_emu.loadgen.live_stats import Snapshot, StatsReceiver
from kafka_emu.metrics.progress import progress

REFRESH_S = 0.5
BAR_FORMAT = "{desc}{percentage:3.0f}%|{bar}| {n}/{total} s [{elapsed}<{remaining}{postfix}]"
_log = structlog.get_logger("loadgen.progress")


def describe(snap: Snapshot) -> dict[str, str]:
    p99 = "-" if snap.produce_p99_ms is None else f"{snap.produce_p99_ms:.0f}ms"
    out = {"acked": str(snap.acked), "consumed": str(snap.consumed), "p99": p99}
    if snap.failed:
        out["failed"] = str(snap.failed)
    return out


class LiveProgress(threading.Thread):
    def __init__(self, stats: StatsReceiver, load_s: float, enabled: bool, label: str = "load") -> None:
        super().__init__(name="loadgen-progress", daemon=True)
        self._stats = stats
        self._load_s = load_s
        self._enabled = enabled
        self._label = label
        self._stop_event = threading.Event()

    def run(self) -> None:
        if not self._enabled:
            return
        reason = "stopped"
        bar = progress(total=round(self._load_s), desc="starting", enabled=True, unit="s")
        bar.bar_format = BAR_FORMAT
        bar.set_description("starting", refresh=False)   # set_description adds the ": "
        began: float | None = None
        try:
            while not self._stop_event.wait(REFRESH_S):
                snap = self._stats.snapshot()
                if not snap.partitions:   # the clients have not started yet (Spark is scheduling)
                    bar.refresh()
                    continue
                if began is None:         # elapsed and ETA count from the clients' start
                    began = time.time()
                    bar.reset(total=round(self._load_s))
                elapsed = time.time() - began
                bar.set_description(self._label if elapsed <= self._load_s else "drain", refresh=False)
                bar.n = min(round(elapsed), bar.total)
                bar.set_postfix(describe(snap), refresh=True)
        except Exception as exc:
            reason = f"error: {exc!r}"
        finally:
            bar.close()
            _log.info("thread_stopped", thread=self.name, reason=reason)

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(5)
