"""Progress display for long command-line runs (benchmarks, stress, load).

A thin wrapper over tqdm writing to stderr, so ``--json`` output on stdout stays parseable. A bar
shows the count (or seconds) done, the elapsed time and the ETA; it is drawn only on a terminal
and never with the global ``--no-progress`` (``progress_enabled``).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from tqdm import tqdm


def progress_enabled(args: argparse.Namespace) -> bool:
    """Whether a command should draw live progress: stderr is a terminal and ``--no-progress``
    was not given (``kafka-emu`` accepts it before or after the subcommand)."""
    return not args.no_progress and sys.stderr.isatty()


def progress(total: int | None, desc: str, enabled: bool, unit: str = "it") -> Any:
    """A tqdm bar on stderr; ``enabled`` is ``progress_enabled(args)`` (or False for a part of
    a run that must stay quiet)."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                disable=not enabled, dynamic_ncols=True, mininterval=0.25)


def wait_with_progress(seconds: float, desc: str, enabled: bool) -> None:
    """Sleep ``seconds`` (a timed measurement), showing the seconds elapsed and left."""
    if not enabled:
        time.sleep(seconds)
        return
    with progress(math.ceil(seconds), desc, enabled, unit="s") as bar:
        began = time.monotonic()
        while (left := seconds - (time.monotonic() - began)) > 0:
            time.sleep(min(0.25, left))
            bar.update(int(time.monotonic() - began) - bar.n)
