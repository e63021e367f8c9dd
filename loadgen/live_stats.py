"""Live counts from the executors to the driver while the barrier stage runs.

Spark returns a stage's rows only when it ends, so the executors also send a small UDP datagram
every ``REPORT_EVERY_S`` to the driver (the host Spark itself uses for the driver,
``spark.driver.host``): per Spark partition, the cumulative number of messages acknowledged,
failed and consumed, and a histogram of the produce latencies observed since the previous
datagram. The driver keeps the latest counts of each partition and merges the histograms of the
last ``WINDOW_S`` seconds into a current produce p99. A lost datagram costs one refresh of the
progress bar, never a count in the report: the report is built from the samples alone.

Latency buckets are ``BUCKETS_PER_DECADE`` per power of ten; a percentile is reported as the
upper bound of its bucket (at most 12 % high).
"""
from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import structlog

REPORT_EVERY_S = 0.5
WINDOW_S = 5.0
BUCKETS_PER_DECADE = 20
MAX_DATAGRAM = 60000

_log = structlog.get_logger("loadgen.live_stats")


def bucket_of(latency_ms: float) -> int:
    return math.floor(math.log10(max(latency_ms, 0.01)) * BUCKETS_PER_DECADE)


def upper_bound_ms(bucket: int) -> float:
    return 10.0 ** ((bucket + 1) / BUCKETS_PER_DECADE)


def percentile_ms(hist: dict[int, int], q: float) -> float | None:
    """The upper bound of the bucket holding the ``q`` quantile; None for an empty histogram."""
    total = sum(hist.values())
    if not total:
        return None
    rank = q * total
    seen = 0
    for bucket in sorted(hist):
        seen += hist[bucket]
        if seen >= rank:
            return upper_bound_ms(bucket)
    return upper_bound_ms(max(hist))


@dataclass(frozen=True)
class Snapshot:
    acked: int = 0
    failed: int = 0
    consumed: int = 0
    produce_p99_ms: float | None = None
    partitions: int = 0


class StatsReceiver:
    """The driver's end: a UDP socket and a thread that keeps the latest counts per partition.

    Locking: ``_lock`` guards ``_latest`` and ``_window``; the socket is read by the thread only.
    """

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        loopback = host in ("127.0.0.1", "localhost")
        self._sock.bind(("127.0.0.1" if loopback else "0.0.0.0", 0))
        self._sock.settimeout(0.2)
        self.address = f"{host}:{self._sock.getsockname()[1]}"
        self._lock = threading.Lock()
        self._latest: dict[int, dict[str, int]] = {}
        self._window: deque[tuple[float, dict[int, int]]] = deque()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loadgen-stats-receiver", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        reason = "closed"
        try:
            while not self._closed.is_set():
                try:
                    data = self._sock.recv(MAX_DATAGRAM + 4096)
                except socket.timeout:
                    continue
                self.accept(data, time.time())
        except OSError as exc:
            reason = f"error: {exc!r}"
        finally:
            _log.info("thread_stopped", thread=self._thread.name, reason=reason)

    def accept(self, data: bytes, now: float) -> None:
        try:
            msg = json.loads(data)
            part = int(msg["p"])
            counts = {k: int(msg[k]) for k in ("acked", "failed", "consumed")}
            hist = {int(b): int(n) for b, n in msg.get("hist", {}).items()}
        except (ValueError, KeyError, TypeError):
            return  # not ours, or truncated: the next datagram carries the same cumulative counts
        with self._lock:
            self._latest[part] = counts
            if hist:
                self._window.append((now, hist))

    def snapshot(self, now: float | None = None) -> Snapshot:
        now = time.time() if now is None else now
        with self._lock:
            while self._window and self._window[0][0] < now - WINDOW_S:
                self._window.popleft()
            merged: dict[int, int] = {}
            for _, hist in self._window:
                for b, n in hist.items():
                    merged[b] = merged.get(b, 0) + n
            totals = {k: sum(c[k] for c in self._latest.values()) for k in ("acked", "failed", "consumed")}
            parts = len(self._latest)
        return Snapshot(totals["acked"], totals["failed"], totals["consumed"], percentile_ms(merged, 0.99), parts)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(2.0)
        self._sock.close()


class StatsReporter(threading.Thread):
    """An executor's end: reads its tasks' sinks as they grow and sends the partition's counts.

    The sinks' row lists are only appended to by their tasks; this thread reads the new tail of
    each (``rows[cursor:]`` is one atomic copy under the GIL) and never modifies them.
    """

    def __init__(self, address: str, partition: int) -> None:
        super().__init__(name=f"loadgen-stats-reporter-{partition}", daemon=True)
        host, port = address.rsplit(":", 1)
        self._target = (host, int(port))
        self._partition = partition
        self._sinks: list[Any] = []
        self._cursors: list[int] = []
        self._counts = {"acked": 0, "failed": 0, "consumed": 0}
        self._stop_event = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def watch(self, sinks: list[Any]) -> None:
        self._sinks = list(sinks)
        self._cursors = [0] * len(self._sinks)

    def collect(self) -> dict[int, int]:
        """Fold the rows added since the last call into the counts; the new produce latencies' histogram."""
        hist: dict[int, int] = {}
        for i, sink in enumerate(self._sinks):
            new = sink.rows[self._cursors[i]:]
            self._cursors[i] += len(new)
            for row in new:
                op, latency, error = row[3], row[7], row[8]
                if op == "produce":
                    if error:
                        self._counts["failed"] += 1
                    else:
                        self._counts["acked"] += 1
                        if latency is not None:
                            b = bucket_of(latency)
                            hist[b] = hist.get(b, 0) + 1
                elif op == "consume" and not error:
                    self._counts["consumed"] += 1
        return hist

    def send(self) -> None:
        hist = self.collect()
        payload = json.dumps({"p": self._partition, **self._counts, "hist": hist}).encode()
        try:
            self._sock.sendto(payload[:MAX_DATAGRAM], self._target)
        except OSError:
            pass  # the driver's progress display is best effort; the samples carry the results

    def run(self) -> None:
        try:
            while not self._stop_event.wait(REPORT_EVERY_S):
                self.send()
            self.send()
        finally:
            self._sock.close()
            _log.info("thread_stopped", thread=self.name, reason="stopped")

    def stop(self) -> None:
        self._stop_event.set()
        self.join(2.0)
