"""Progress of a running load, shown by the driver while Spark executes the barrier stage.

The driver cannot see executor samples until the stage ends, so it watches the cluster instead:
the sum of the workload topics' high watermarks is exactly the number of messages the brokers
have accepted so far. On a terminal this is a tqdm bar over the planned seconds; otherwise a
line every ``LINE_EVERY_S`` seconds on stderr (CI logs stay short).
"""
from __future__ import annotations

import sys
import threading
import time

import structlog

from kafka_emu.metrics.progress import progress
from kafka_emu.loadgen.target import QUIET

LINE_EVERY_S = 10.0
_log = structlog.get_logger("loadgen.progress")


class LiveProgress(threading.Thread):
    def __init__(self, bootstrap: str, topics: list[str], planned_s: float, enabled: bool = True) -> None:
        super().__init__(name="loadgen-progress", daemon=True)
        self._servers = bootstrap
        self._topics = topics
        self._planned = planned_s
        self._enabled = enabled
        self._stop_event = threading.Event()
        self.messages = 0

    def _offsets(self, consumer: object) -> int:
        from confluent_kafka import TopicPartition

        md = consumer.list_topics(timeout=2)  # type: ignore[attr-defined]
        total = 0
        for t in self._topics:
            for p in (md.topics[t].partitions if t in md.topics else ()):
                total += consumer.get_watermark_offsets(TopicPartition(t, p), timeout=2)[1]  # type: ignore[attr-defined]
        return total

    def run(self) -> None:
        from confluent_kafka import Consumer

        reason = "stopped"
        consumer = Consumer({"bootstrap.servers": self._servers, "group.id": "loadgen-progress", **QUIET})
        bar = progress(total=int(self._planned), desc="load", enabled=self._enabled, unit="s")
        tty = sys.stderr.isatty()
        began = time.time()
        last_line = began
        try:
            baseline = self._offsets(consumer)
            while not self._stop_event.wait(1.0):
                elapsed = time.time() - began
                try:
                    self.messages = self._offsets(consumer) - baseline
                except Exception:
                    pass  # a broker restarting mid-run: keep the last count
                bar.n = min(int(elapsed), int(self._planned))
                bar.set_postfix(messages=self.messages, refresh=True)
                if self._enabled and not tty and time.time() - last_line >= LINE_EVERY_S:
                    last_line = time.time()
                    print(f"load: {elapsed:.0f}s of up to {self._planned:.0f}s, {self.messages} messages accepted",
                          file=sys.stderr, flush=True)
        except Exception as exc:
            reason = f"error: {exc!r}"
        finally:
            bar.close()
            consumer.close()
            _log.info("thread_stopped", thread=self.name, reason=reason)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)
