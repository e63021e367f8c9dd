"""Many threads against one purgatory on shared keys: exactly-once completion, no leaks.

Three kinds of operation are mixed on the same 12 keys:
* ``never``: never completable, short timeout: must complete by expiration only;
* ``ready``: made completable by its creator, long timeout: must complete by a trigger only;
* ``race``: made completable and given a short timeout: trigger and expiration race for it.
Besides the creators, hammer threads call ``check_and_complete`` on random keys throughout.
"""
from __future__ import annotations

import random
import threading
import time as _time

import pytest
from timer_support import WAIT_S, live_thread_names

from kafka_emu.timer import DelayedOperation
from kafka_emu.timer.purgatory import DelayedOperationPurgatory

KEYS = [f"key{i}" for i in range(12)]


class _Op(DelayedOperation):
    def __init__(self, kind: str, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.kind = kind
        self.completable = False
        self.completions = 0
        self.expirations = 0
        self.completed_on: str | None = None
        self.done = threading.Event()

    def try_complete(self) -> bool:
        return self.force_complete() if self.completable else False

    def on_complete(self) -> None:
        # runs under the operation lock, so the counter needs no other lock
        self.completions += 1
        self.completed_on = threading.current_thread().name
        self.done.set()

    def on_expiration(self) -> None:
        self.expirations += 1


def _wait_until(cond, timeout_s: float) -> bool:
    deadline = _time.monotonic() + timeout_s
    while not cond():
        if _time.monotonic() > deadline:
            return False
        _time.sleep(0.005)
    return True


@pytest.mark.timeout(60)
def test_hammer_shared_keys_exactly_once() -> None:
    name = "hammer"
    purgatory = DelayedOperationPurgatory(name, broker_id=7, purge_interval=50)
    creators, hammers, per_creator = 8, 4, 250
    all_ops: list[list[_Op]] = [[] for _ in range(creators)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def creator(n: int) -> None:
        rng = random.Random(n)
        try:
            for _ in range(per_creator):
                kind = rng.choice(["never", "ready", "race"])
                delay = 60_000 if kind == "ready" else rng.randint(1, 30)
                op = _Op(kind, delay)
                keys = rng.sample(KEYS, rng.randint(1, 3))
                if kind != "never" and rng.random() < 0.2:
                    op.completable = True  # sometimes completable from the start
                purgatory.try_complete_else_watch(op, keys)
                all_ops[n].append(op)
                if kind != "never":
                    op.completable = True
                    purgatory.check_and_complete(rng.choice(keys))
                if rng.random() < 0.05:
                    _time.sleep(0.001)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def hammer(n: int) -> None:
        rng = random.Random(1000 + n)
        try:
            while not stop.is_set():
                purgatory.check_and_complete(rng.choice(KEYS))
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=creator, args=(i,), name=f"creator-{i}") for i in range(creators)]
    threads += [threading.Thread(target=hammer, args=(i,), name=f"hammer-{i}") for i in range(hammers)]
    try:
        for t in threads:
            t.start()
        for t in threads[:creators]:
            t.join(30)
        stop.set()
        for t in threads[creators:]:
            t.join(WAIT_S)
        assert not errors, errors
        ops = [op for chunk in all_ops for op in chunk]
        assert len(ops) == creators * per_creator
        assert _wait_until(lambda: all(op.done.is_set() for op in ops), 10.0), "not all completed"
        # allow a just-started on_expiration to finish before counting
        assert _wait_until(lambda: purgatory.expiration_count == sum(
            1 for op in ops if op.completed_on == f"executor-{name}") and all(
            op.expirations == (1 if op.completed_on == f"executor-{name}" else 0) for op in ops), WAIT_S)

        for op in ops:
            assert op.completions == 1, (op.kind, op.completions)
            by_timer = op.completed_on == f"executor-{name}"
            assert op.expirations == (1 if by_timer else 0)
            if op.kind == "never":
                assert by_timer, "a never-completable operation can only expire"
            if op.kind == "ready":
                assert not by_timer, "a 60 s operation cannot have expired"
        kinds = {k: sum(1 for op in ops if op.kind == k) for k in ("never", "ready", "race")}
        assert all(kinds.values())

        assert purgatory.num_delayed() == 0
        # Completed operations left on untriggered keys go with the reaper's estimated purge,
        # which (as in Kafka) waits until more than purge_interval of them may exist: a burst
        # of operations completed outside the purgatory pushes the estimate over.
        for i in range(purgatory.purge_interval + 1):
            op = _Op("burst", 60_000)
            purgatory.try_complete_else_watch(op, [KEYS[i % len(KEYS)]])
            assert op.force_complete()
        assert _wait_until(lambda: purgatory.watched() == 0, 5.0), purgatory.watched()
        assert purgatory.purge_count >= 1
        assert purgatory.watched_keys() == 0
    finally:
        stop.set()
        purgatory.shutdown()
    leftover = {n for n in live_thread_names()
                if n in (f"ExpirationReaper-7-{name}", f"executor-{name}")}
    assert not leftover, leftover


@pytest.mark.timeout(30)
def test_concurrent_adds_cancels_and_expirations_on_one_timer() -> None:
    """Timer-level hammering: 8 threads add and cancel while the reaper expires."""
    from kafka_emu.timer import SystemTimer, SystemTimerReaper, TimerTask

    fired: dict[int, int] = {}
    fired_lock = threading.Lock()

    class _T(TimerTask):
        def __init__(self, ident: int, delay_ms: int) -> None:
            super().__init__(delay_ms)
            self.ident = ident

        def run(self) -> None:
            with fired_lock:
                fired[self.ident] = fired.get(self.ident, 0) + 1

    timer = SystemTimerReaper("ExpirationReaper-0-wheel", SystemTimer("wheel"))
    cancelled: list[set[int]] = [set() for _ in range(8)]
    kept: list[set[int]] = [set() for _ in range(8)]

    def worker(n: int) -> None:
        rng = random.Random(n)
        pending: list[_T] = []
        for i in range(3000):
            task = _T(n * 1_000_000 + i, rng.randint(0, 25))
            timer.add(task)
            pending.append(task)
            if rng.random() < 0.5:
                victim = pending.pop(rng.randrange(len(pending)))
                victim.cancel()
                cancelled[n].add(victim.ident)
        kept[n].update(t.ident for t in pending)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        all_kept = set().union(*kept)
        all_cancelled = set().union(*cancelled)
        # a cancel may lose the race against an expiration that already ran; it must then
        # have run exactly once, and a kept task must run exactly once
        assert _wait_until(lambda: all_kept <= set(fired), 10.0)
        with fired_lock:
            assert all(count == 1 for count in fired.values())
            assert set(fired) <= all_kept | all_cancelled
        assert _wait_until(lambda: timer.size() == 0, WAIT_S)
    finally:
        timer.close()
    assert "executor-wheel" not in live_thread_names()
    assert "ExpirationReaper-0-wheel" not in live_thread_names()


@pytest.mark.timeout(10)
def test_thread_names(make_purgatory) -> None:
    purgatory = make_purgatory("Produce", broker_id=3)
    assert "ExpirationReaper-3-Produce" in live_thread_names()

    names: list[str] = []
    done = threading.Event()

    class _Expiring(DelayedOperation):
        def try_complete(self) -> bool:
            return False

        def on_complete(self) -> None:
            names.append(threading.current_thread().name)

        def on_expiration(self) -> None:
            done.set()

    purgatory.try_complete_else_watch(_Expiring(5), ["k"])
    assert done.wait(WAIT_S)  # fired by the reaper thread's advance_clock, no help from us
    assert names == ["executor-Produce"]
    purgatory.shutdown()
    assert not {"ExpirationReaper-3-Produce", "executor-Produce"} & live_thread_names()


@pytest.mark.timeout(10)
def test_shutdown_on_mock_time_is_prompt() -> None:
    """The reaper blocked on a mock clock must still stop at once on shutdown."""
    from kafka_emu.timer import MockTime, SystemTimer

    time = MockTime()
    purgatory = DelayedOperationPurgatory("mockreap", timer=SystemTimer("mockreap", time=time))
    started = _time.monotonic()
    purgatory.shutdown()
    assert _time.monotonic() - started < 2.0
    assert not {"ExpirationReaper-0-mockreap", "executor-mockreap"} & live_thread_names()
