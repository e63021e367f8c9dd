"""Set-up time of the pytest plugin's ``kafka_cluster`` fixture, cold and warm.

    python scripts/fixture_setup_time.py [--python PATH] [--runs N] [--brokers N]

Each run is a fresh pytest process (the interpreter ``--python``, default this one, whose
environment has kafka-emu installed) on a throw-away project of two test modules that each ask
for ``kafka_cluster``. Times are wall clock, with the process's CPU time beside them (less
disturbed by other load on the machine). Cold is the first test's set-up phase: the plugin's lazy imports of the
broker plus starting a cluster. Warm is the second module's set-up: another cluster of the same
size, everything already imported. A measurement script, not a test: timings belong in reports,
not in assertions.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = '''
import json, os, time
import pytest

_setup_s = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        return (yield)
    finally:
        _setup_s.append((time.perf_counter() - t0, time.process_time() - c0))


def pytest_sessionfinish(session):
    with open(os.environ["FIXTURE_SETUP_TIMES"], "w") as f:
        json.dump(_setup_s, f)
'''

TEST = '''
import pytest

pytestmark = pytest.mark.kafka_cluster(brokers={brokers})


def test_cluster(kafka_cluster):
    assert len(kafka_cluster.live_brokers()) == {brokers}
'''


def one_run(python: str, project: Path, brokers: int) -> tuple[float, float, float, float, float]:
    """Cold and warm set-up (wall s, CPU s of the whole process), and the whole pytest process's
    wall s, of one fresh pytest process."""
    out = project / "times.json"
    env = dict(os.environ, FIXTURE_SETUP_TIMES=str(out))
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(project)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"pytest failed:\n{proc.stdout}\n{proc.stderr}")
    (cold, cold_cpu), (warm, warm_cpu) = json.loads(out.read_text())
    return cold, cold_cpu, warm, warm_cpu, wall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter with kafka-emu installed")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--brokers", type=int, default=3)
    args = parser.parse_args(argv)
    python = os.path.abspath(args.python)   # the project directory becomes the cwd
    with tempfile.TemporaryDirectory(prefix="kafka-emu-setup-") as tmp:
        project = Path(tmp)
        (project / "conftest.py").write_text(CONFTEST)
        for name in ("test_a_cold.py", "test_b_warm.py"):
            (project / name).write_text(TEST.format(brokers=args.brokers))
        runs = [one_run(python, project, args.brokers) for _ in range(args.runs)]
    for i, (cold, cold_cpu, warm, warm_cpu, wall) in enumerate(runs, 1):
        print(f"run {i}: cold {cold * 1000:7.1f} ms (CPU {cold_cpu * 1000:6.1f})  "
              f"warm {warm * 1000:6.1f} ms (CPU {warm_cpu * 1000:5.1f})  pytest process {wall:5.2f} s")
    cold, cold_cpu, warm, warm_cpu, wall = (statistics.median(r[k] for r in runs) for k in range(5))
    print(f"median ({args.brokers} brokers): cold {cold * 1000:.1f} ms (CPU {cold_cpu * 1000:.1f}), "
          f"warm {warm * 1000:.1f} ms (CPU {warm_cpu * 1000:.1f}), pytest process {wall:.2f} s")


if __name__ == "__main__":
    main()
