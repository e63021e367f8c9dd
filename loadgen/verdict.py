"""The verdict of a stress run: named checks, each with what was observed and what was required.

Every stress command ends with the same table (and the same JSON with ``--json``), and exits 0
only when every check passed, so CI can run them as-is.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Check:
    name: str
    observed: Any
    required: str
    passed: bool


@dataclass
class Verdict:
    title: str
    checks: list[Check] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def check(self, name: str, observed: Any, required: str, passed: bool) -> None:
        self.checks.append(Check(name, observed, required, bool(passed)))

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "passed": self.passed, "checks": [asdict(c) for c in self.checks],
                "stats": self.stats}

    def table(self) -> str:
        rows = [("check", "observed", "required", "result")]
        rows += [(c.name, str(c.observed), c.required, "PASS" if c.passed else "FAIL") for c in self.checks]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        line = "+-" + "-+-".join("-" * w for w in widths) + "-+"
        out = [line, "| " + " | ".join(v.ljust(w) for v, w in zip(rows[0], widths)) + " |", line]
        out += ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |" for r in rows[1:]]
        out.append(line)
        stats = ", ".join(f"{k}={v}" for k, v in self.stats.items())
        return "\n".join([f"{self.title}: {'PASS' if self.passed else 'FAIL'}", *out] + ([stats] if stats else []))

    def emit(self, as_json: bool) -> int:
        """Print the verdict (JSON on stdout, or the table) and return the exit code."""
        if as_json:
            print(json.dumps(self.to_dict(), default=str))
        else:
            print(self.table())
        sys.stdout.flush()
        return 0 if self.passed else 1


def add_run_options(parser: Any, default_duration: float) -> None:
    """--duration / --count / --json / --seed, shared by every stress command."""
    from kafka_emu.cli import non_negative_int, positive_float, positive_int

    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--duration", type=positive_float, default=None,
                       help=f"seconds to run (default: {default_duration:g} unless --count is given)")
    limit.add_argument("--count", type=positive_int, default=None,
                       help="number of operations/rounds to run (default: run for --duration)")
    parser.add_argument("--json", action="store_true", help="print the verdict as one JSON object")
    parser.add_argument("--seed", type=non_negative_int, default=1, help="random seed")
    parser.set_defaults(default_duration=default_duration)


def run_duration(args: Any) -> float | None:
    """Seconds to run: ``--duration``, else none when ``--count`` bounds the run, else the default."""
    if args.duration is not None or args.count is not None:
        return args.duration
    return args.default_duration
