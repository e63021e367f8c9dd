"""Kafka's DelayedOperationTest ported (real SystemTimer, reaper on), plus the
conformance checks of Kafka's ``DelayedOperationPurgatory`` contract and a purge scenario.

``testDelayedFuture`` is not ported: it tests the Scala-only ``DelayedFuturePurgatory``, which
the emulator does not have.
"""
from __future__ import annotations

import random
import threading
import time as _time
from concurrent.futures import ThreadPoolExecutor

import pytest
from timer_support import WAIT_S, MockDelayedOperation

from kafka_emu.timer import DelayedOperation, MockTime, SystemTimer, TopicPartitionOperationKey
from kafka_emu.timer.purgatory import DelayedOperationPurgatory


@pytest.fixture
def purgatory(make_purgatory) -> DelayedOperationPurgatory:
    return make_purgatory("mock")


# --------------------------------------------------------------------------- Kafka's cases
class _LockCheckingOperation(MockDelayedOperation):
    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.try_complete_calls = 0

    def try_complete(self) -> bool:
        assert self.lock._is_owned(), "try_complete called without the operation lock"
        self.try_complete_calls += 1
        return super().try_complete()

    def safe_try_complete(self) -> bool:
        raise AssertionError("try_complete_else_watch must not call safe_try_complete")


@pytest.mark.timeout(10)
@pytest.mark.parametrize("completable", [False, True])
def test_lock_in_try_complete_else_watch(purgatory, completable: bool) -> None:
    op = _LockCheckingOperation(100_000)
    op.completable = completable
    assert purgatory.try_complete_else_watch(op, ["key"]) is completable
    assert op.try_complete_calls == (1 if completable else 2)
    assert op.is_completed() is completable


@pytest.mark.timeout(10)
def test_safe_try_complete_or_else() -> None:
    op = MockDelayedOperation(100_000)
    ran_else: list[bool] = []

    def else_block() -> None:
        assert op.lock._is_owned()
        ran_else.append(True)

    assert op.safe_try_complete_or_else(else_block) is False
    assert ran_else == [True]

    op2 = MockDelayedOperation(100_000)
    op2.completable = True
    assert op2.safe_try_complete_or_else(lambda: pytest.fail("else block must not run")) is True
    assert op2.is_completed()


@pytest.mark.timeout(10)
def test_request_satisfaction(purgatory) -> None:
    r1, r2 = MockDelayedOperation(100_000), MockDelayedOperation(100_000)
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.check_and_complete("test2") == 0
    assert not purgatory.try_complete_else_watch(r1, ["test1"])
    assert not purgatory.try_complete_else_watch(r2, ["test2"])
    assert purgatory.check_and_complete("test1") == 0
    assert purgatory.check_and_complete("test2") == 0
    r1.completable = True
    assert purgatory.check_and_complete("test1") == 1
    assert purgatory.check_and_complete("test1") == 0
    r2.completable = True
    assert purgatory.check_and_complete("test2") == 1
    assert purgatory.check_and_complete("test2") == 0
    assert r1.events == ["complete"] and r2.events == ["complete"]


@pytest.mark.timeout(10)
def test_request_expiry(purgatory) -> None:
    expiration_ms = 20
    start = _time.monotonic()
    r1, r2 = MockDelayedOperation(expiration_ms), MockDelayedOperation(200_000)
    assert not purgatory.try_complete_else_watch(r1, ["test1"])
    assert not purgatory.try_complete_else_watch(r2, ["test1", "test2"])
    assert r1.done.wait(WAIT_S)
    elapsed_ms = (_time.monotonic() - start) * 1000
    assert r1.is_completed() and not r2.is_completed()
    assert elapsed_ms >= expiration_ms - 1  # at most one tick early, never more
    assert r1.events == ["complete", "expire"]
    assert r1.complete_threads == ["executor-mock"]


@pytest.mark.timeout(10)
def test_request_purge(purgatory) -> None:
    r1, r2, r3 = (MockDelayedOperation(100_000) for _ in range(3))
    purgatory.try_complete_else_watch(r1, ["test1"])
    purgatory.try_complete_else_watch(r2, ["test1", "test2"])
    purgatory.try_complete_else_watch(r3, ["test1", "test2", "test3"])
    assert purgatory.num_delayed() == 3
    assert purgatory.watched() == 6

    r2.completable = True
    r2.try_complete()  # completed outside the purgatory: leaves the timer, not the lists
    assert purgatory.num_delayed() == 2
    assert purgatory.watched() == 6
    r3.completable = True
    r3.try_complete()
    assert purgatory.num_delayed() == 1
    assert purgatory.watched() == 6

    assert purgatory.check_and_complete("test1") == 0  # r2, r3 were completed by others
    assert purgatory.watched() == 4
    assert purgatory.check_and_complete("test2") == 0
    assert purgatory.watched() == 2
    assert purgatory.check_and_complete("test3") == 0
    assert purgatory.watched() == 1


@pytest.mark.timeout(10)
def test_should_cancel_for_key_returning_cancelled_operations(purgatory) -> None:
    purgatory.try_complete_else_watch(MockDelayedOperation(10_000), ["key"])
    purgatory.try_complete_else_watch(MockDelayedOperation(10_000), ["key"])
    purgatory.try_complete_else_watch(MockDelayedOperation(10_000), ["key2"])
    cancelled = purgatory.cancel_for_key("key")
    assert len(cancelled) == 2
    assert all(op.is_cancelled() and not op.is_completed() and op.events == [] for op in cancelled)
    assert purgatory.num_delayed() == 1
    assert purgatory.watched() == 1


@pytest.mark.timeout(10)
def test_should_return_nil_operations_on_cancel_for_key_when_key_doesnt_exist(purgatory) -> None:
    assert purgatory.cancel_for_key("key") == []


class _AttemptOperation(DelayedOperation):
    """Completable only once all its scheduled attempts have started (the last one wins)."""

    def __init__(self, attempts: int) -> None:
        super().__init__(100_000)
        self._remaining = attempts
        self._remaining_lock = threading.Lock()
        self.completions = 0
        self.rng = random.Random()

    def attempt_started(self) -> None:
        with self._remaining_lock:
            self._remaining -= 1

    def try_complete(self) -> bool:
        with self._remaining_lock:
            ready = self._remaining <= 0
        _time.sleep(self.rng.random() * 0.001)  # widen the race window
        return self.force_complete() if ready else False

    def on_complete(self) -> None:
        self.completions += 1


@pytest.mark.timeout(60)
def test_try_complete_with_multiple_threads(purgatory) -> None:
    """No lost wake-up: the last trigger of each operation always completes it."""
    ops = 100
    attempts = 20
    operations = [_AttemptOperation(attempts) for _ in range(ops)]
    for i, op in enumerate(operations):
        assert not purgatory.try_complete_else_watch(op, [f"key{i}"])
    rng = random.Random(7)

    def attempt(i: int, delay_s: float) -> None:
        _time.sleep(delay_s)
        operations[i].attempt_started()
        purgatory.check_and_complete(f"key{i}")

    with ThreadPoolExecutor(max_workers=20, thread_name_prefix="scheduler") as pool:
        futures = [pool.submit(attempt, i, rng.random() * 0.01)
                   for _ in range(attempts) for i in range(ops)]
        for future in futures:
            future.result(30)
    assert all(op.is_completed() for op in operations)
    assert all(op.completions == 1 for op in operations)
    assert purgatory.num_delayed() == 0


# --------------------------------------------------------------------------- checklist 1.12
@pytest.mark.timeout(10)
def test_first_try_success_is_neither_watched_nor_timed(purgatory) -> None:
    op = MockDelayedOperation(100_000)
    op.completable = True
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert purgatory.watched() == 0
    assert purgatory.num_delayed() == 0
    assert purgatory.estimated_total_operations() == 0
    assert op.events == ["complete"]


@pytest.mark.timeout(10)
def test_empty_watch_keys_rejected(purgatory) -> None:
    with pytest.raises(ValueError):
        purgatory.try_complete_else_watch(MockDelayedOperation(1000), [])


@pytest.mark.timeout(10)
def test_second_try_success_stays_watched_until_checked(purgatory) -> None:
    """Completed on the re-check after watching: on the lists, never in the timer."""

    class _SecondTry(MockDelayedOperation):
        calls = 0

        def try_complete(self) -> bool:
            self.calls += 1
            return self.force_complete() if self.calls == 2 else False

    op = _SecondTry(100_000)
    assert purgatory.try_complete_else_watch(op, ["a", "b"]) is True
    assert purgatory.num_delayed() == 0
    assert purgatory.watched() == 2
    assert purgatory.estimated_total_operations() == 1
    assert purgatory.check_and_complete("a") == 0
    assert purgatory.watched() == 1


@pytest.mark.timeout(10)
def test_completion_outside_purgatory(purgatory) -> None:
    op = MockDelayedOperation(100_000)
    purgatory.try_complete_else_watch(op, ["k", "j"])
    op.completable = True
    assert op.try_complete()
    assert purgatory.num_delayed() == 0  # at once
    assert purgatory.watched() == 2  # not yet
    assert purgatory.check_and_complete("k") == 0
    assert purgatory.watched() == 1  # removed from list k only


@pytest.mark.timeout(10)
def test_check_and_complete_counts_only_its_own_completions(purgatory) -> None:
    assert purgatory.check_and_complete("unknown") == 0
    stuck, done_elsewhere, ready = (MockDelayedOperation(100_000) for _ in range(3))
    for op in (stuck, done_elsewhere, ready):
        purgatory.try_complete_else_watch(op, ["k"])
    assert purgatory.check_and_complete("k") == 0
    assert purgatory.watched() == 3
    done_elsewhere.force_complete()
    ready.completable = True
    assert purgatory.check_and_complete("k") == 1
    assert purgatory.watched() == 1 and not stuck.is_completed()


@pytest.mark.timeout(10)
def test_expired_operation_completes_once_then_expires(make_purgatory) -> None:
    time = MockTime()
    purgatory = make_purgatory("expiry", timer=SystemTimer("expiry", time=time),
                               reaper_enabled=False)
    seen: list[DelayedOperation] = []
    purgatory.expiration_listeners.append(seen.append)
    op = MockDelayedOperation(30)
    purgatory.try_complete_else_watch(op, [TopicPartitionOperationKey("t", 0)])
    time.advance(29)
    purgatory.advance_clock(0)
    assert not op.done.wait(0.05)
    time.advance(1)
    purgatory.advance_clock(0)
    assert op.done.wait(WAIT_S)
    _wait_for(lambda: op.events == ["complete", "expire"])
    assert purgatory.expiration_count == 1 and seen == [op]
    assert not op.force_complete()  # exactly once
    op.completable = True
    assert purgatory.check_and_complete(TopicPartitionOperationKey("t", 0)) == 0
    assert op.events == ["complete", "expire"]


@pytest.mark.timeout(10)
def test_completed_before_timeout_never_expires(make_purgatory) -> None:
    time = MockTime()
    purgatory = make_purgatory("early", timer=SystemTimer("early", time=time),
                               reaper_enabled=False)
    op = MockDelayedOperation(30)
    purgatory.try_complete_else_watch(op, ["k"])
    op.completable = True
    assert purgatory.check_and_complete("k") == 1
    time.advance(100)
    purgatory.advance_clock(0)
    assert op.events == ["complete"] and purgatory.expiration_count == 0


@pytest.mark.timeout(10)
def test_group_lock_is_the_operation_lock(purgatory) -> None:
    """Operations of one group share the group lock; completion runs under it."""
    group_lock = threading.RLock()
    held: list[bool] = []

    class _GroupOp(MockDelayedOperation):
        def on_complete(self) -> None:
            held.append(group_lock._is_owned())
            super().on_complete()

    op = _GroupOp(100_000, lock=group_lock)
    purgatory.try_complete_else_watch(op, ["g"])
    op.completable = True
    assert purgatory.check_and_complete("g") == 1
    assert held == [True]


@pytest.mark.timeout(10)
def test_expiration_on_complete_waits_for_running_try_complete(make_purgatory) -> None:
    """KAFKA-19312's intent: the expiration's on_complete cannot overlap a try_complete."""
    time = MockTime()
    purgatory = make_purgatory("overlap", timer=SystemTimer("overlap", time=time),
                               reaper_enabled=False)
    inside = threading.Event()
    release = threading.Event()
    trace: list[str] = []

    class _SlowTry(MockDelayedOperation):
        def try_complete(self) -> bool:
            if self.completable:
                trace.append("try-start")
                inside.set()
                release.wait(WAIT_S)
                trace.append("try-end")
            return False

        def on_complete(self) -> None:
            trace.append("on-complete")
            super().on_complete()

    op = _SlowTry(10)
    purgatory.try_complete_else_watch(op, ["k"])
    op.completable = True
    checker = threading.Thread(target=purgatory.check_and_complete, args=("k",))
    checker.start()
    assert inside.wait(WAIT_S)
    time.advance(10)
    purgatory.advance_clock(0)  # the expiration is handed to the executor, which must wait
    _time.sleep(0.02)
    assert trace == ["try-start"]
    release.set()
    checker.join(WAIT_S)
    assert op.done.wait(WAIT_S)
    assert trace == ["try-start", "try-end", "on-complete"]


# --------------------------------------------------------------------------- A.4 purge
def _wait_for(cond, timeout_s: float = WAIT_S) -> None:
    deadline = _time.monotonic() + timeout_s
    while not cond():
        assert _time.monotonic() < deadline, "condition not reached in time"
        _time.sleep(0.001)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("completed, purges", [(1500, True), (900, False)])
def test_a4_purge_trigger(make_purgatory, completed: int, purges: bool) -> None:
    time = MockTime()
    purgatory = make_purgatory("purge", timer=SystemTimer("purge", time=time),
                               reaper_enabled=False, purge_interval=1000)
    ops = [MockDelayedOperation(60_000) for _ in range(completed)]
    for i, op in enumerate(ops):
        purgatory.try_complete_else_watch(op, [f"k{i % 7}"])
    for op in ops:
        assert op.force_complete()
    assert purgatory.num_delayed() == 0
    assert purgatory.watched() == completed
    purgatory.advance_clock(0)  # one reaper iteration
    if purges:
        assert purgatory.purge_count == 1
        assert purgatory.estimated_total_operations() == 0
        assert purgatory.watched() == 0 and purgatory.watched_keys() == 0
    else:
        assert purgatory.purge_count == 0
        assert purgatory.watched() == completed  # PurgatorySize stays large until more arrive


@pytest.mark.timeout(10)
def test_purge_keeps_pending_operations(make_purgatory) -> None:
    time = MockTime()
    purgatory = make_purgatory("keep", timer=SystemTimer("keep", time=time),
                               reaper_enabled=False, purge_interval=10)
    pending = [MockDelayedOperation(60_000) for _ in range(5)]
    finished = [MockDelayedOperation(60_000) for _ in range(20)]
    for op in pending + finished:
        purgatory.try_complete_else_watch(op, ["shared", object()])
    for op in finished:
        op.force_complete()
    purgatory.advance_clock(0)
    assert purgatory.purge_count == 1
    assert purgatory.num_delayed() == 5
    assert purgatory.watched() == 10  # the five pending ones, on two keys each
    assert purgatory.estimated_total_operations() == 5
