"""Thread placement: every thread of an emulated cluster on one CPU (``emulator.cpu.affinity``).

Why one CPU: the interpreter lock lets one thread run Python at a time, so the cluster's
threads (processors, request handlers, replica fetchers, reapers, executors) gain almost
nothing from a second CPU, while every hand-off between two of them on different CPUs is a
cross-CPU wake-up. On a virtual machine that is an inter-processor interrupt through the
hypervisor, tens of microseconds, more than the broker spends on a small Produce. Measured on a
2-vCPU VM (``kafka-emu bench wire``, broker threads pinned vs. placed by the OS, load generator
unpinned in both): one connection 5.5-6.6k vs 4.5-5.5k requests/s, 16 connections 17-20k vs
13-16k, 3 brokers 15-19k vs 7-9k. A JVM broker has no such trade-off; Kafka has no such setting.

How: Linux threads inherit the CPU mask of the thread that creates them. ``pinned(cpus)`` sets
the calling thread's mask for the duration of a block and restores it afterwards, so wrapping
the places where broker threads are created (``KafkaServer.startup`` and the metadata callback
that starts replica fetchers) places every thread of the broker, including the ones those
threads start later (executor workers, reapers), while the embedding application's threads
keep their placement.

Values of ``emulator.cpu.affinity``: ``auto`` (default) picks one CPU of the process's allowed
set, by process id so that parallel test workers spread over the machine; ``none`` leaves
placement to the OS; ``2`` or ``2,3`` names CPUs. Where the OS has no ``sched_setaffinity``
(macOS, Windows) every value means ``none``. A bad value is a configuration error
(``ConfigException``) at start-up.

Stateless; ``pinned`` touches only the calling thread.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from kafka_emu.broker.config_def import ConfigException

CONFIG_KEY = "emulator.cpu.affinity"
DEFAULT = "auto"
SUPPORTED = hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


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
    """Run the block with the calling thread on ``cpus``; threads it starts inherit them."""
    if cpus is None or not SUPPORTED:
        yield
        return
    before = os.sched_getaffinity(0)
    if before == cpus:
        yield
        return
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:   # the CPUs went away (cpuset changed, CPU offlined): place nothing
        yield
        return
    try:
        yield
    finally:
        try:
            os.sched_setaffinity(0, before)
        except OSError:
            pass      # some of the caller's CPUs went away meanwhile: it keeps what it has
