"""Helpers shared by the benchmarks (not used by the broker itself)."""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import resource
import sys
from typing import Any, Callable, Sequence

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# CPU time in clock ticks by role: {role: [user, system]} (``cpu_per_request``)
CpuTicks = dict[str, list[int]]


def rss_bytes() -> int:
    """Current resident set size; falls back to the peak where /proc is unavailable."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return peak_rss_bytes()


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _stat_ticks(path: str) -> tuple[int, int] | None:
    """(user, system) clock ticks of a /proc stat file, None if the task is gone."""
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()   # after the command name, which may hold spaces
    except OSError:
        return None
    return int(fields[11]), int(fields[12])


def thread_cpu_ticks(role: Callable[[str], str]) -> CpuTicks:
    """This process's Python threads' CPU, summed by ``role(thread name)`` (Linux /proc)."""
    import threading

    out: CpuTicks = {}
    for thread in threading.enumerate():
        ticks = _stat_ticks(f"/proc/self/task/{thread.native_id}/stat")
        if ticks is not None:
            total = out.setdefault(role(thread.name), [0, 0])
            total[0] += ticks[0]
            total[1] += ticks[1]
    return out


def process_cpu_ticks(pid: int | str = "self") -> CpuTicks:
    """A whole process's CPU (every thread, native ones included) as the single role "process"."""
    ticks = _stat_ticks(f"/proc/{pid}/stat")
    return {"process": list(ticks) if ticks else [0, 0]}


def cpu_per_request(before: CpuTicks, after: CpuTicks, requests: int) -> dict[str, float]:
    """CPU µs per request by role between two samples, with the total and its user/system split."""
    us = 1e6 / _TICKS_PER_S / max(requests, 1)
    out: dict[str, float] = {}
    user = system = 0
    for role, (u, s) in sorted(after.items()):
        u0, s0 = before.get(role, (0, 0))
        out[role] = round((u - u0 + s - s0) * us, 1)
        user += u - u0
        system += s - s0
    out.update(total=round((user + system) * us, 1), user=round(user * us, 1), system=round(system * us, 1))
    return out


def cpu_line(cpu: dict[str, float]) -> str:
    """One line for ``cpu_per_request``'s result."""
    roles = ", ".join(f"{role} {us}" for role, us in cpu.items() if role not in ("total", "user", "system"))
    return f"CPU {cpu['total']} µs per request ({roles}; user {cpu['user']}, system {cpu['system']})"


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
