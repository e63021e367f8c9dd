"""``emulator.cpu.affinity``: every thread of a cluster on the chosen CPUs and under
``SCHED_BATCH``, the embedding application's threads untouched."""
from __future__ import annotations

import os
import threading

import pytest

from kafka_emu.broker.server import cpu_affinity
from kafka_emu.broker.server.cpu_affinity import CONFIG_KEY, pinned, resolve
from cluster_support import BROKER_THREAD_PREFIXES, wait_until

needs_affinity = pytest.mark.skipif(
    not cpu_affinity.SUPPORTED or len(os.sched_getaffinity(0)) < 2,
    reason="thread placement needs Linux sched_setaffinity and at least two allowed CPUs")


def _cluster_threads(existing: set[threading.Thread]) -> list[threading.Thread]:
    """Broker threads started since ``existing`` was taken (other tests' threads excluded)."""
    prefixes = BROKER_THREAD_PREFIXES + ("data-plane-kafka-network-thread", "data-plane-kafka-socket-acceptor")
    return [t for t in threading.enumerate()
            if t not in existing and t.name.startswith(prefixes) and t.native_id and t.is_alive()]


def test_resolve_values() -> None:
    assert resolve("none") is None and resolve("off") is None
    if not cpu_affinity.SUPPORTED:
        assert resolve("auto") is None
        return
    allowed = sorted(os.sched_getaffinity(0))
    auto = resolve("auto")
    assert auto is None if len(allowed) < 2 else (len(auto) == 1 and auto <= set(allowed))
    assert resolve(str(allowed[0])) == {allowed[0]}
    assert resolve(",".join(map(str, allowed))) == set(allowed)
    with pytest.raises(ValueError):
        resolve("first")
    with pytest.raises(ValueError):
        resolve(str(max(allowed) + 1000))


@needs_affinity
def test_pinned_restores_the_calling_thread() -> None:
    before = os.sched_getaffinity(0)
    cpu = frozenset({min(before)})
    seen: list[set[int]] = []
    with pinned(cpu):
        assert os.sched_getaffinity(0) == cpu
        t = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)), name="child-of-pinned")
        t.start()
        t.join(5)
    assert seen == [cpu]                       # a thread started inside inherits the CPUs
    assert os.sched_getaffinity(0) == before   # and the caller gets its own back


@needs_affinity
@pytest.mark.skipif(not cpu_affinity.BATCH_SUPPORTED, reason="SCHED_BATCH is a Linux scheduling policy")
def test_pinned_threads_inherit_batch_scheduling() -> None:
    if os.sched_getscheduler(0) != os.SCHED_OTHER:
        pytest.skip(reason="the test process runs under another policy, which pinned() leaves alone")
    seen: list[int] = []
    with pinned(frozenset({min(os.sched_getaffinity(0))})):
        t = threading.Thread(target=lambda: seen.append(os.sched_getscheduler(0)), name="child-of-pinned")
        t.start()
        t.join(5)
    assert seen == [os.SCHED_BATCH]            # no wake-up preemption (see broker.cpu_affinity)
    assert os.sched_getscheduler(0) == os.SCHED_OTHER   # the caller keeps its own policy


@needs_affinity
def test_cluster_threads_share_one_cpu(make_cluster) -> None:
    before = os.sched_getaffinity(0)
    cpu = max(before)
    existing = set(threading.enumerate())
    cluster = make_cluster(brokers=3, config={CONFIG_KEY: str(cpu), "listeners": "PLAINTEXT://127.0.0.1:0"})
    # fetcher threads start from this (unpinned) thread's create_topic call
    cluster.metadata.create_topic("placed", 3, 3)
    wait_until(lambda: sum(t.name.startswith("ReplicaFetcherThread") for t in _cluster_threads(existing)) >= 6,
               msg="replica fetchers")
    threads = _cluster_threads(existing)
    assert {t.name.split("-")[0] for t in threads} >= {"data", "ReplicaFetcherThread", "ExpirationReaper"}
    wrong = {t.name: os.sched_getaffinity(t.native_id) for t in threads
             if os.sched_getaffinity(t.native_id) != {cpu}}
    assert not wrong
    if cpu_affinity.BATCH_SUPPORTED:
        assert {t.name for t in threads if os.sched_getscheduler(t.native_id) != os.SCHED_BATCH} == set()
        assert os.sched_getscheduler(0) != os.SCHED_BATCH   # the test's own thread keeps its policy
    assert os.sched_getaffinity(0) == before
    cluster.stop_broker(1)
    cluster.start_broker(1)
    assert os.sched_getaffinity(0) == before
    assert all(os.sched_getaffinity(t.native_id) == {cpu} for t in _cluster_threads(existing))


@needs_affinity
def test_none_leaves_placement_to_the_os(make_cluster) -> None:
    allowed = os.sched_getaffinity(0)
    existing = set(threading.enumerate())
    cluster = make_cluster(brokers=1, config={CONFIG_KEY: "none"})
    assert cluster.cpus is None
    assert all(os.sched_getaffinity(t.native_id) == allowed for t in _cluster_threads(existing))
    if cpu_affinity.BATCH_SUPPORTED:
        assert all(os.sched_getscheduler(t.native_id) == os.sched_getscheduler(0)
                   for t in _cluster_threads(existing))


def test_bad_value_is_a_configuration_error(make_cluster) -> None:
    if not cpu_affinity.SUPPORTED:
        pytest.skip(reason="no sched_setaffinity on this OS: every value means none")
    with pytest.raises(ValueError, match=CONFIG_KEY):
        make_cluster(brokers=1, config={CONFIG_KEY: "fastest"})
