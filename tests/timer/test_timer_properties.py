"""Property tests: the timing wheel against a plain model, on a mock clock.

The model knows, for every task, whether it is scheduled (and for when), cancelled or fired.
Random sequences of add / cancel / re-add / advance drive both; after each step the wheel must
agree: nothing fires before its expiration minus one tick, nothing fires twice per scheduling,
nothing cancelled fires, every task due by now has fired (the mock clock makes that exact), and
``size()`` equals the number of scheduled tasks. A second property checks that ``add``'s direct
jump to a wheel level places tasks exactly where Kafka's level-by-level climb would.
"""
from __future__ import annotations

import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from timer_support import drain_executor

from kafka_emu.timer import MockTime, SystemTimer, TimerTask

TICK_MS = 1


class _ModelTask(TimerTask):
    def __init__(self, ident: int, fired: list, lock: threading.Lock, time: MockTime) -> None:
        super().__init__(0)
        self.ident = ident
        self.fired = fired
        self.lock = lock
        self.time = time

    def run(self) -> None:
        with self.lock:
            self.fired.append((self.ident, self.time.hi_res_clock_ms()))


# Small delays and one-millisecond steps are over-weighted: off-by-one-tick bugs live there.
_delays = st.one_of(st.integers(-2, 6), st.integers(-5, 3_000))
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), _delays),
        st.tuples(st.just("cancel"), st.integers(0, 1_000)),
        st.tuples(st.just("readd"), st.integers(0, 1_000), _delays),
        st.tuples(st.just("advance"), st.one_of(st.integers(0, 3), st.integers(0, 700))),
    ),
    min_size=1,
    max_size=60,
)


@pytest.mark.timeout(120)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_ops, wheel_size=st.sampled_from([2, 3, 20]), tick_ms=st.sampled_from([1, 3]),
       cascade_chunk=st.sampled_from([None, 1, 2]))
def test_wheel_matches_model(ops: list[tuple], wheel_size: int, tick_ms: int,
                             cascade_chunk: int | None) -> None:
    time = MockTime(start_ms=10_000)
    timer = SystemTimer("prop", tick_ms=tick_ms, wheel_size=wheel_size, time=time)
    if cascade_chunk is not None:
        timer._cascade_chunk = cascade_chunk  # stage every cascade bigger than this
    fired: list[tuple[int, int]] = []
    lock = threading.Lock()
    tasks: list[_ModelTask] = []
    # ident -> expiration while scheduled; cancelled/fired tasks are absent
    scheduled: dict[int, int] = {}
    fire_count: dict[int, int] = {}
    try:
        def schedule(task: _ModelTask, delay: int) -> None:
            task.delay_ms = delay
            timer.add(task)
            scheduled[task.ident] = time.hi_res_clock_ms() + delay
            # a due task is handed to the executor at once: settle it before the next step
            drain_executor(timer)
            reconcile()

        def reconcile() -> None:
            with lock:
                events, fired[:] = list(fired), []
            for ident, at in events:
                assert ident in scheduled, f"task {ident} fired while cancelled or already fired"
                assert at >= scheduled[ident] - tick_ms, "fired earlier than expiration - tick"
                del scheduled[ident]
                fire_count[ident] = fire_count.get(ident, 0) + 1
            now = time.hi_res_clock_ms()
            overdue = [i for i, exp in scheduled.items() if exp <= now]
            assert not overdue, f"due tasks did not fire: {overdue}"
            assert timer.size() == len(scheduled)

        for op in ops:
            if op[0] == "add":
                task = _ModelTask(len(tasks), fired, lock, time)
                tasks.append(task)
                schedule(task, op[1])
            elif op[0] == "cancel" and tasks:
                task = tasks[op[1] % len(tasks)]
                task.cancel()
                scheduled.pop(task.ident, None)
                assert task.is_cancelled()
                reconcile()
            elif op[0] == "readd" and tasks:
                schedule(tasks[op[1] % len(tasks)], op[2])
            elif op[0] == "advance":
                time.advance(op[1])
                timer.advance_clock(0)
                drain_executor(timer)
                reconcile()
        # run everything out: whatever is still scheduled fires exactly once, on time
        time.advance(4_000)
        timer.advance_clock(0)
        drain_executor(timer)
        reconcile()
        assert scheduled == {} and timer.size() == 0
    finally:
        timer.close()


def _reference_level(timer: SystemTimer, expiration: int) -> tuple[int, int]:
    """Kafka's placement: climb from the finest wheel to the first whose span covers it."""
    for level, wheel in enumerate(timer._wheel.levels()):
        if expiration < wheel.current_time_ms + wheel.interval:
            return level, (expiration // wheel.tick_ms) % wheel.wheel_size
    raise AssertionError("no level covers the expiration")


def _placement(timer: SystemTimer, task: TimerTask) -> tuple[int, int]:
    for level, wheel in enumerate(timer._wheel.levels()):
        for index, bucket in enumerate(wheel.buckets):
            if bucket is task._bucket:
                assert task in bucket._entries
                return level, index
    raise AssertionError("task not linked")


class _Noop(TimerTask):
    def run(self) -> None:
        pass


@pytest.mark.timeout(60)
@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(0, 900), st.integers(1, 200_000)), min_size=1, max_size=40),
    wheel_size=st.sampled_from([2, 3, 7, 20]),
    tick_ms=st.sampled_from([1, 2, 5]),
)
def test_direct_level_jump_equals_climb(steps: list[tuple[int, int]], wheel_size: int,
                                         tick_ms: int) -> None:
    time = MockTime(start_ms=7_777)
    timer = SystemTimer("jump", tick_ms=tick_ms, wheel_size=wheel_size, time=time)
    try:
        live: list[TimerTask] = []
        for advance, delay in steps:
            time.advance(advance)
            timer.advance_clock(0)
            task = _Noop(delay)
            timer.add(task)
            if task._bucket.__class__.__name__ == "TimerTaskList":
                expected = _reference_level(timer, task.expiration_ms)
                assert _placement(timer, task) == expected
                live.append(task)
            # the wheel invariants Kafka relies on
            levels = timer._wheel.levels()
            for finer, coarser in zip(levels, levels[1:]):
                assert coarser.current_time_ms == finer.current_time_ms - finer.current_time_ms % coarser.tick_ms
            for t in live:
                if t._bucket.__class__.__name__ == "TimerTaskList":
                    start = t._bucket.get_expiration()
                    level, _ = _placement(timer, t)
                    assert start <= t.expiration_ms < start + levels[level].tick_ms
    finally:
        timer.close()
