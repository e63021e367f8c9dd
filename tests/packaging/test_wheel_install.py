"""The wheel as a user gets it: built, installed (not editable) into a fresh venv, used from a
project whose own module names are the repository's folder names (metrics.py, timer.py, broker/).

What this guards: the product lives only under ``kafka_emu.*`` (no top-level ``broker`` or
``metrics`` shadowing, or being shadowed by, the user's modules), the base install pulls no
Spark, the ``pytest11`` entry point gives a working ``kafka_cluster`` to a real client, and
pytest does not assertion-rewrite the product.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
# the repository's top-level folders; none may be importable as a top-level name after install
REPOSITORY_FOLDERS = ("broker", "coordinator", "timer", "metrics", "loadgen", "bench")

PROJECT_FILES = {
    "metrics.py": 'OWNER = "project"\n',
    "timer.py": 'OWNER = "project"\n',
    "broker/__init__.py": 'OWNER = "project"\n',
    "test_uses_kafka.py": '''
import sys
import uuid

import broker
import metrics
import timer
from confluent_kafka import Consumer, Producer


def test_produce_and_consume(kafka_cluster):
    assert (broker.OWNER, metrics.OWNER, timer.OWNER) == ("project",) * 3
    # pytest was kept from rewriting the product's modules
    assert type(sys.modules["kafka_emu.broker.cluster.embedded_cluster"].__loader__).__name__ == "SourceFileLoader"
    topic = f"t-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=2)
    bs = kafka_cluster.bootstrap_servers
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 1})
    for i in range(10):
        p.produce(topic, f"v{i}".encode())
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": bs, "group.id": "g", "auto.offset.reset": "earliest",
                  "session.timeout.ms": 1500, "heartbeat.interval.ms": 100, "fetch.wait.max.ms": 50})
    c.subscribe([topic])
    got = []
    for _ in range(300):
        got += [m.value() for m in c.consume(num_messages=10, timeout=0.1) if m.error() is None]
        if len(got) == 10:
            break
    c.close()
    assert sorted(got) == sorted(f"v{i}".encode() for i in range(10))
''',
}


def run(*cmd: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_wheel_installs_and_serves_a_foreign_project(tmp_path: Path) -> None:
    # the user's environment, not this test run's (no PYTHONPATH, no pytest options)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PYTEST_")}
    source = tmp_path / "source"   # a copy, so the build leaves nothing in the repository
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        ".hypothesis", "reports", "bench-results", "spark-warehouse", "metastore_db"))
    run(sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path / "dist", source, cwd=tmp_path, env=env)
    (wheel,) = (tmp_path / "dist").glob("kafka_emu-*.whl")

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path, env=env)
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--disable-pip-version-check",
        wheel, "confluent-kafka", cwd=tmp_path, env=env)

    # -I: only the venv's own site-packages, not the working directory, on the path
    importable = run(python, "-I", "-c", "import importlib.util as u, sys; print(' '.join(n for n in sys.argv[1:] "
                     "if u.find_spec(n)))", "pyspark", *REPOSITORY_FOLDERS, cwd=tmp_path, env=env).stdout.split()
    assert importable == [], "the base install must not pull Spark nor put folders at top level"

    project = tmp_path / "project"
    for name, text in PROJECT_FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    result = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project, env=env)
    assert "1 passed" in result.stdout, result.stdout
