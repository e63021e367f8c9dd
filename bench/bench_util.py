"""Helpers shared by the benchmarks (not used by the broker itself)."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import resource
import sys
from typing import Any, Callable, Sequence

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """Current resident set size; falls back to the peak where /proc is unavailable."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return peak_rss_bytes()


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted sequence (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, int(round(pct / 100.0 * len(sorted_values) + 0.5)) - 1))
    return float(sorted_values[rank])


def child_result(target: Callable[..., None], args: tuple[Any, ...], name: str, timeout_s: float) -> Any:
    """Run ``target(*args, queue)`` in a ``spawn`` child, so a load generator does not share the
    measured brokers' interpreter lock, and return the one value it puts on the queue."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, q), name=name)
    proc.start()
    try:
        return q.get(timeout=timeout_s)
    finally:
        proc.join(30)


def mib(n_bytes: float) -> float:
    return round(n_bytes / (1024 * 1024), 1)


def emit(result: dict[str, Any], as_json: bool, table: list[tuple[str, ...]]) -> None:
    """Print exactly one JSON object, or an aligned table, on stdout."""
    if as_json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    columns = [row for row in table if len(row) > 1]  # one-cell rows are free-form lines
    n = max((len(row) for row in columns), default=0)
    widths = [max((len(row[i]) for row in columns if i < len(row)), default=0) for i in range(n)]
    for row in table:
        if len(row) == 1:
            print(row[0])
        else:
            print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
