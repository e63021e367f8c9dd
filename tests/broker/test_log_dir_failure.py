"""A log directory that fills up goes offline as in Kafka (LogDirFailureTest's scenarios, on a
real full filesystem).

Each case runs ``log_dir_failure_scenario.py`` in a child process inside a new user and mount
namespace (``unshare --user --map-root-user --mount``), where it mounts a 1 MiB tmpfs as broker
0's log directory: the writes really fail with ENOSPC, and the mount disappears with the child,
whatever happens. No root needed, only user namespaces; without them the test is skipped (and
says why).

Kafka's ``LogDirFailureTest`` checks the same outcomes: the failed directory is reported offline
(DescribeLogDirs: KAFKA_STORAGE_ERROR), leaderships move to replicas in healthy directories
(``testReplicaFetcherThreadAfterLogDirFailureOnFollower``, ``testProduceErrorsFromLogDirFailureOnLeader``),
and a broker with no directory left stops while the others go on.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafka_emu.common.errors import Errors

pytestmark = pytest.mark.timeout(90)

SCENARIO = Path(__file__).with_name("log_dir_failure_scenario.py")
UNSHARE = ["unshare", "--user", "--map-root-user", "--mount"]


def _namespaces_available() -> str | None:
    """None if a child can mount a tmpfs in its own namespace, else why not."""
    if shutil.which("unshare") is None:
        return "no unshare(1) to make a mount namespace"
    probe = subprocess.run([*UNSHARE, "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", "/mnt"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a user namespace: {probe.stderr.strip()}"
    return None


def run_scenario(tmp_path: Path, layout: str) -> dict[str, Any]:
    why = _namespaces_available()
    if why is not None:
        pytest.skip(reason=f"needs a small filesystem: {why}")
    done = subprocess.run([*UNSHARE, sys.executable, str(SCENARIO), str(tmp_path / "base"), "1m", layout],
                          capture_output=True, text=True, timeout=80)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_full_log_dir_goes_offline_and_its_leaderships_move(tmp_path: Path) -> None:
    """Broker 0 with two directories, one a 1 MiB tmpfs, under acks=all load: the tmpfs fills,
    the directory goes offline (DescribeLogDirs: KAFKA_STORAGE_ERROR, no partitions), its
    partitions' leaderships move and broker 0 is listed among their offline replicas; broker 0
    keeps serving from its other directory; every acknowledged message reads back."""
    out = run_scenario(tmp_path, "jbod")
    assert out["sent_before_failure"] is not None, out
    dirs = out["broker0_log_dirs"]
    assert dirs[out["small_dir"]] == {"error_code": Errors.KAFKA_STORAGE_ERROR, "partitions": 0}
    assert dirs[out["other_dir"]]["error_code"] == Errors.NONE and dirs[out["other_dir"]]["partitions"] > 0
    for p in out["partitions_in_small_dir"]:
        assert out["leaders_after"][str(p)] != 0 and out["offline_replicas"][str(p)] == [0]
    assert all(out["offline_replicas"][str(p)] == [] for p in range(6) if p not in out["partitions_in_small_dir"])
    assert out["broker0_leads"] and not out["broker0_stopped"]
    assert out["acked"] == out["sent"] and out["unflushed"] == 0
    assert out["lost"] == 0 and out["in_log"] >= out["acked"]


def test_broker_with_no_log_dir_left_stops_and_the_process_goes_on(tmp_path: Path) -> None:
    """Broker 0's only directory fills: it stops (Kafka halts it), its leaderships move, the two
    other brokers take every acknowledged message and the process reads them all back."""
    out = run_scenario(tmp_path, "single")
    assert out["sent_before_failure"] is not None and out["broker0_stopped"]
    assert all(leader != 0 for leader in out["leaders_after"].values())
    assert out["acked"] == out["sent"] and out["lost"] == 0


def test_alter_replica_log_dirs_to_or_from_an_offline_directory(tmp_path: Path) -> None:
    """Kafka's ``ReplicaManager.alterReplicaLogDirs`` after a directory failed: moving into it,
    or moving a replica whose log was in it, is KAFKA_STORAGE_ERROR (``isLogDirOnline``,
    ``getPartitionOrException``), not LOG_DIR_NOT_FOUND; a new log goes to the healthy directory
    even when the failed one was asked for."""
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    first, second = tmp_path / "a", tmp_path / "b"
    config = {"log.dirs": f"{first},{second}", "offsets.topic.replication.factor": 1}
    with EmbeddedCluster(brokers=1, config=config) as cluster:
        cluster.create_topic("in-failed", partitions=1, replication_factor=1)
        rm = cluster.broker(0).replica_manager
        failed = cluster.broker(0).partition("in-failed", 0).log.dir.parent
        healthy = second if failed == first else first
        assert rm.alter_replica_log_dirs({("later", 0): str(failed)}) == {("later", 0): Errors.REPLICA_NOT_AVAILABLE}
        rm.handle_log_dir_failure(failed)
        assert rm.alter_replica_log_dirs({("in-failed", 0): str(healthy)}) == \
            {("in-failed", 0): Errors.KAFKA_STORAGE_ERROR}
        assert rm.alter_replica_log_dirs({("in-failed", 0): str(failed)}) == \
            {("in-failed", 0): Errors.KAFKA_STORAGE_ERROR}
        cluster.create_topic("later", partitions=1, replication_factor=1)
        assert cluster.broker(0).partition("later", 0).log.dir.parent == healthy
