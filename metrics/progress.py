"""Progress display for long command-line runs (benchmarks, stress, load).

A thin wrapper over tqdm writing to stderr, so ``--json`` output on stdout stays parseable; it
switches itself off when stderr is not a terminal or the caller asks for quiet output.
"""
from __future__ import annotations

import sys
from typing import Any

from tqdm import tqdm


def progress(total: int | None, desc: str, enabled: bool = True, unit: str = "it") -> Any:
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                disable=not enabled or not sys.stderr.isatty(), dynamic_ncols=True,
                mininterval=0.25)
