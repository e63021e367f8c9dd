"""Thread placement: every thread of an emulated cluster on one CPU (``emulator.cpu.affinity``).

Why one CPU: the interpreter lock lets one thread run Python at a time, so the cluster's
threads (processors, request handlers, replica fetchers, reapers, executors) gain almost
nothing from a second CPU, while every hand-off between two of them on different CPUs is a
cross-CPU wake-up. On a virtual machine that is an inter-processor interrupt through the
hypervisor, tens of microseconds, more than the broker spends on a small Produce. Measured on a
2-vCPU VM (``kafka-emu bench wire``, broker threads pinned vs. placed by the OS, load generator
unpinned in both): one connection 5.5-6.6k vs 4.5-5.5k requests/s, 16 connections 17-20k vs
13-16k, 3 brokers 15-19k vs 7-9k. A JVM broker has no such trade-off; Kafka has no such setting.

Why ``SCHED_BATCH`` too: on one CPU, a thread that wakes another (a processor handing a
request to a handler, a handler completing a follower's parked fetch) is, under the normal
policy, preempted by the woken thread at once, while it still holds the interpreter lock. The
woken thread runs only to find the lock taken and sleep again, and the waker waits for the CPU
behind every other runnable process of the machine before it can release the lock: two
context switches per hand-off, and on a loaded machine a scheduling delay of milliseconds.
Linux does no wake-up preemption for ``SCHED_BATCH`` threads (same share of the CPU, same
nice value), so the waker runs on until it blocks or releases the lock, and the woken thread
then takes it at once. Measured (``kafka-emu bench replication --in-flight 1 --partitions 1``,
replica fetches already served on the fetcher threads, a loaded 2-vCPU VM): acks=all
1,160-2,110 vs 870-930 produces/s, acks=1 6,300-6,600 vs 2,900-6,700.

How: Linux threads inherit the CPU mask and scheduling policy of the thread that creates them.
``pinned(cpus)`` sets the calling thread's mask and policy for the duration of a block and
restores them afterwards, so wrapping the places where broker threads are created
(``KafkaServer.startup`` and the metadata callback that starts replica fetchers) places every
thread of the broker, including the ones those threads start later (executor workers,
reapers), while the embedding application's threads keep their placement and policy.

Values of ``emulator.cpu.affinity``: ``auto`` (default) picks one CPU of the process's allowed
set, by process id so that parallel test workers spread over the machine; ``none`` leaves
placement (and the scheduling policy) to the OS; ``2`` or ``2,3`` names CPUs. Where the OS has
no ``sched_setaffinity`` (macOS, Windows) every value means ``none``. A bad value is a
configuration error (``ConfigException``) at start-up.

Stateless; ``pinned`` touches only the calling thread.
"""
from __future__ import annotations

import os
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Callable, Iterator

from kafka_emu.common.config_def import ConfigException

CONFIG_KEY = "emulator.cpu.affinity"
DEFAULT = "auto"
SUPPORTED = hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")
BATCH_SUPPORTED = hasattr(os, "SCHED_BATCH") and hasattr(os, "sched_setscheduler")


def resolve(value: object) -> frozenset[int] | None:
    """The CPUs a cluster's threads go on (None: leave placement to the OS)."""
    text = str(DEFAULT if value is None else value).strip().lower()
    if not SUPPORTED or text in ("none", "off", "", "false"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if text == "auto":
        if len(allowed) <= 1:
            return None
        return frozenset({allowed[os.getpid() % len(allowed)]})
    try:
        cpus = frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ConfigException(CONFIG_KEY, value, "Expected auto, none or a list of CPU numbers") from None
    if not cpus or not cpus <= set(allowed):
        raise ConfigException(CONFIG_KEY, value, f"CPUs must be a non-empty subset of {allowed}")
    return cpus


def describe(cpus: frozenset[int] | None) -> str:
    """The explicit config value for ``cpus`` (what a cluster hands to each broker)."""
    return "none" if cpus is None else ",".join(str(c) for c in sorted(cpus))


@contextmanager
def pinned(cpus: frozenset[int] | None) -> Iterator[None]:
    """Run the block with the calling thread on ``cpus`` and under ``SCHED_BATCH``; threads it
    starts inherit both."""
    if cpus is None or not SUPPORTED:
        yield
        return
    with _on_cpus(cpus), _batch_scheduled():
        yield


def _on_cpus(cpus: frozenset[int]) -> AbstractContextManager[None]:
    before = os.sched_getaffinity(0)
    if before == cpus:
        return nullcontext()
    # apply: the CPUs may have gone away (cpuset changed, CPU offlined): place nothing;
    # restore: some of the caller's CPUs may have gone meanwhile: it keeps what it has
    return _while_set(lambda: os.sched_setaffinity(0, cpus), lambda: os.sched_setaffinity(0, before))


def _batch_scheduled() -> AbstractContextManager[None]:
    """``SCHED_BATCH`` for the calling thread during the block (where the OS has it), its own
    policy back afterwards; a thread not under ``SCHED_OTHER`` (real-time, idle) keeps its own.
    A security policy may refuse it: the thread keeps the normal policy then."""
    if not BATCH_SUPPORTED or os.sched_getscheduler(0) != os.SCHED_OTHER:
        return nullcontext()
    return _while_set(lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)),
                      lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0)))


@contextmanager
def _while_set(apply: Callable[[], None], restore: Callable[[], None]) -> Iterator[None]:
    """The block after ``apply()``, then ``restore()``. The OS may refuse either (OSError): a
    refused ``apply`` runs the block as it is, a refused ``restore`` leaves what the OS allows."""
    try:
        apply()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        try:
            restore()
        except OSError:
            pass
