"""Kafka's TimerTest ported, plus a placement-and-cascade scenario
(tick 1 ms, 20 slots, clock at 1000 ms) and the emulator's extra guarantees."""
from __future__ import annotations

import threading

import pytest
from timer_support import WAIT_S, FiringLog, FunctionTask, RecordingTask, drain_executor

from kafka_emu.timer import MockTime, TimerTask, TimingWheel
from kafka_emu.timer.timer_task import FIRED, SUBMITTED
from kafka_emu.timer.timer_task_list import TaskCounter


def _outputs(out: list, lock: threading.Lock) -> list:
    with lock:
        return [ident for ident, _ in out]


# --------------------------------------------------------------------------- TimerTest
@pytest.mark.timeout(10)
def test_already_expired_task(make_timer) -> None:
    """Tasks with negative delays go straight to the executor."""
    timer = make_timer("test", tick_ms=1, wheel_size=3)
    out: list = []
    lock = threading.Lock()
    tasks = [RecordingTask(-d, -d, out, lock) for d in range(5, 0, -1)]
    for task in tasks:
        timer.add(task)
    timer.advance_clock(0)
    for task in tasks:
        assert task.ran.wait(3.0), f"task {task.ident} did not run within 3 s"
    assert sorted(_outputs(out, lock)) == [-5, -4, -3, -2, -1]
    assert timer.size() == 0


def _expiration_scenario() -> tuple[list[int], list[int]]:
    """Kafka's mix: delays 0..4 once, 10..99 twice, 100..499 once (ids are the delays)."""
    delays = list(range(0, 5)) + [d for d in range(10, 100) for _ in range(2)] + list(range(100, 500))
    return delays, sorted(delays)


@pytest.mark.timeout(20)
def test_task_expiration(make_timer) -> None:
    """Every task runs exactly once, through several overflow levels (wheel size 3)."""
    timer = make_timer("test", tick_ms=1, wheel_size=3)
    delays, expected = _expiration_scenario()
    out: list = []
    lock = threading.Lock()
    all_ran = threading.Event()

    def check_done() -> None:
        if len(out) >= len(delays):
            all_ran.set()

    for d in delays:
        timer.add(RecordingTask(d, d, out, lock, on_run=check_done))
    assert len(timer._wheel.levels()) >= 5  # 499 ms needs spans 3, 9, 27, 81, 243, 729
    deadline = threading.Event()
    threading.Timer(WAIT_S, deadline.set).start()
    while not all_ran.is_set() and not deadline.is_set():
        timer.advance_clock(20)
    assert all_ran.is_set(), f"only {len(out)} of {len(delays)} ran"
    timer.advance_clock(0)
    drain_executor(timer)
    assert sorted(_outputs(out, lock)) == expected  # each exactly once
    assert timer.size() == 0


@pytest.mark.timeout(10)
def test_task_expiration_with_mock_time(make_timer, mock_time: MockTime) -> None:
    """The same scenario, deterministic: each task runs at its expiration, never before."""
    timer = make_timer("test", tick_ms=1, wheel_size=3, time=mock_time)
    start = mock_time.hi_res_clock_ms()
    delays, expected = _expiration_scenario()
    log = FiringLog(mock_time)
    fired_at, lock, recorder = log.fired, log.lock, log.task

    for i, d in enumerate(delays):
        timer.add(recorder(i, d))
    drain_executor(timer)  # delay 0 is due at once: let it run before the clock moves
    for _ in range(510):
        mock_time.advance(1)
        timer.advance_clock(0)
        drain_executor(timer)
        now = mock_time.hi_res_clock_ms()
        with lock:
            fired = set(fired_at)
        assert all(i in fired for i, d in enumerate(delays) if start + d <= now)
    assert sorted(delays[i] for i in fired_at) == expected
    for i, times in fired_at.items():
        assert times == [start + delays[i]]  # exactly at the expiration, exactly once


# --------------------------------------------------------------------------- A.1 placement
def _where(timer_wheel: TimingWheel, task: TimerTask) -> tuple[int, int]:
    for level, wheel in enumerate(timer_wheel.levels(), start=1):
        for index, bucket in enumerate(wheel.buckets):
            if task in bucket._entries:
                return level, index
    raise AssertionError("task is not linked in any bucket")


@pytest.mark.timeout(10)
def test_a1_placement_and_cascade(make_timer) -> None:
    """Placement and cascade with tick 1 ms, 20 slots, clock at 1000 ms (``TimingWheel.add``)."""
    time = MockTime(start_ms=1000)
    timer = make_timer("a1", tick_ms=1, wheel_size=20, start_ms=1000, time=time)
    out: list = []
    lock = threading.Lock()
    tasks = {e: RecordingTask(e - 1000, e, out, lock) for e in (1000, 1005, 1019, 1020, 1500)}
    for task in tasks.values():
        timer.add(task)
    wheel = timer._wheel

    assert tasks[1000].ran.wait(WAIT_S)  # already expired: 1000 < 1000 + tick
    assert _where(wheel, tasks[1005]) == (1, 5) and wheel.buckets[5].get_expiration() == 1005
    assert _where(wheel, tasks[1019]) == (1, 19)
    l2 = wheel.overflow_wheel
    assert (l2.tick_ms, l2.current_time_ms, l2.interval) == (20, 1000, 400)
    assert _where(wheel, tasks[1020]) == (2, 11) and l2.buckets[11].get_expiration() == 1020
    l3 = l2.overflow_wheel
    assert (l3.tick_ms, l3.current_time_ms, l3.interval) == (400, 800, 8000)
    assert _where(wheel, tasks[1500]) == (3, 3) and l3.buckets[3].get_expiration() == 1200
    assert timer.size() == 4

    time.advance(200)  # clock 1200: 1005, 1019, 1020 fire; the L3 bucket cascades
    assert timer.advance_clock(0)
    drain_executor(timer)
    assert (wheel.current_time_ms, l2.current_time_ms) == (1200, 1200)
    assert _where(wheel, tasks[1500]) == (2, 15) and l2.buckets[15].get_expiration() == 1500
    assert sorted(_outputs(out, lock)) == [1000, 1005, 1019, 1020]
    assert timer.size() == 1

    time.advance(299)  # 1499: not yet
    timer.advance_clock(0)
    drain_executor(timer)
    assert not tasks[1500].ran.is_set()
    time.advance(1)  # 1500: flushed again, falls in the current tick, runs
    assert timer.advance_clock(0)
    assert tasks[1500].ran.wait(WAIT_S)
    assert timer.size() == 0


@pytest.mark.timeout(10)
def test_a1_placement_on_bare_timing_wheel() -> None:
    """A bare ``TimingWheel`` places the same tasks in the same buckets."""
    offered: list = []
    wheel = TimingWheel(1, 20, 1000, TaskCounter(), offered.append)

    class _T(TimerTask):
        def run(self) -> None:
            pass

    def task(expiration: int) -> TimerTask:
        t = _T(0)
        t._expiration_ms = expiration
        return t

    assert not wheel.add(task(1000))
    t1005, t1020, t1500 = task(1005), task(1020), task(1500)
    assert wheel.add(t1005) and wheel.add(t1020) and wheel.add(t1500)
    assert _where(wheel, t1005) == (1, 5)
    assert _where(wheel, t1020) == (2, 11)
    assert _where(wheel, t1500) == (3, 3)
    assert [b.get_expiration() for b in offered] == [1005, 1020, 1200]
    t1021 = task(1021)
    assert wheel.add(t1021) and _where(wheel, t1021) == (2, 11)
    assert len(offered) == 3  # same bucket, same revolution: not offered again
    wheel.advance_clock(1200)
    assert [w.current_time_ms for w in wheel.levels()] == [1200, 1200, 1200]


# --------------------------------------------------------------------------- cancel, re-add
@pytest.mark.timeout(10)
def test_cancel_is_immediate_and_cancelled_task_never_runs(make_timer, mock_time) -> None:
    timer = make_timer(time=mock_time)
    out: list = []
    lock = threading.Lock()
    tasks = [RecordingTask(d, d, out, lock) for d in (5, 50, 5000, 50_000)]
    for task in tasks:
        timer.add(task)
    assert timer.size() == 4 and not any(t.is_cancelled() for t in tasks)
    tasks[1].cancel()
    tasks[3].cancel()
    tasks[3].cancel()  # idempotent
    assert timer.size() == 2 and tasks[1].is_cancelled()
    mock_time.advance(60_000)
    timer.advance_clock(0)
    drain_executor(timer)
    assert sorted(_outputs(out, lock)) == [5, 5000]


@pytest.mark.timeout(10)
def test_readding_supersedes_the_old_entry(make_timer, mock_time) -> None:
    timer = make_timer(time=mock_time)
    out: list = []
    lock = threading.Lock()
    task = RecordingTask(10, "t", out, lock)
    timer.add(task)
    timer.add(task)  # same expiration: still one entry
    assert timer.size() == 1
    mock_time.advance(5)
    task.delay_ms = 100
    timer.add(task)  # moved to 1105
    assert timer.size() == 1
    mock_time.advance(10)
    timer.advance_clock(0)
    drain_executor(timer)
    assert out == []
    mock_time.advance(100)
    timer.advance_clock(0)
    drain_executor(timer)
    assert _outputs(out, lock) == ["t"]


@pytest.mark.timeout(10)
def test_cancel_after_hand_off_prevents_the_run(make_timer) -> None:
    """The emulator re-checks on the executor thread: cancelled after hand-off, never run."""
    timer = make_timer()
    gate = threading.Event()
    started = threading.Event()

    def block() -> None:
        started.set()
        gate.wait(WAIT_S)

    timer.add(FunctionTask(0, block))
    timer.advance_clock(0)
    assert started.wait(WAIT_S)  # the single executor thread is now busy
    out: list = []
    lock = threading.Lock()
    task = RecordingTask(0, "late", out, lock)
    timer.add(task)
    timer.advance_clock(0)  # the wheel clock may lag real time: hand the due task over now
    assert task._bucket is SUBMITTED and not task.is_cancelled()
    task.cancel()
    assert task.is_cancelled()
    gate.set()
    drain_executor(timer)
    assert out == []


@pytest.mark.timeout(10)
def test_never_scheduled_task_reports_cancelled() -> None:
    class _T(TimerTask):
        def run(self) -> None:
            pass

    task = _T(10)
    assert task.is_cancelled()  # as in Kafka: no entry means cancelled
    task.cancel()  # harmless


@pytest.mark.timeout(10)
def test_task_may_add_tasks_from_its_run(make_timer, mock_time) -> None:
    timer = make_timer(time=mock_time)
    second = threading.Event()
    timer.add(FunctionTask(5, lambda: timer.add(FunctionTask(5, second.set))))
    mock_time.advance(5)
    timer.advance_clock(0)
    drain_executor(timer)
    assert timer.size() == 1
    mock_time.advance(5)
    timer.advance_clock(0)
    assert second.wait(WAIT_S)


@pytest.mark.timeout(10)
def test_failing_task_does_not_stop_the_executor(make_timer, mock_time) -> None:
    timer = make_timer(time=mock_time)

    def boom() -> None:
        raise RuntimeError("boom")

    after = threading.Event()
    timer.add(FunctionTask(1, boom))
    timer.add(FunctionTask(2, after.set))
    mock_time.advance(2)
    timer.advance_clock(0)
    assert after.wait(WAIT_S)


# --------------------------------------------------------------------------- clock, threads
@pytest.mark.timeout(10)
def test_advance_clock_returns_false_when_nothing_expires(make_timer) -> None:
    timer = make_timer()
    assert timer.advance_clock(0) is False
    assert timer.advance_clock(5) is False
    timer.add(FunctionTask(1, lambda: None))
    assert timer.advance_clock(500) is True  # returns as soon as the bucket is due


@pytest.mark.timeout(10)
def test_advance_clock_waits_for_mock_time(make_timer, mock_time) -> None:
    """A poller blocked on a MockTime deadline wakes when the test advances the clock."""
    timer = make_timer(time=mock_time)
    fired = threading.Event()
    timer.add(FunctionTask(50, fired.set))
    result: list[bool] = []
    poller = threading.Thread(target=lambda: result.append(timer.advance_clock(200)))
    poller.start()
    mock_time.advance(50)
    poller.join(WAIT_S)
    assert result == [True] and fired.wait(WAIT_S)


@pytest.mark.timeout(10)
def test_wakeup_releases_a_blocked_poller(make_timer, mock_time) -> None:
    timer = make_timer(time=mock_time)
    result: list[bool] = []
    poller = threading.Thread(target=lambda: result.append(timer.advance_clock(10_000)))
    poller.start()
    timer.wakeup()
    poller.join(WAIT_S)
    assert not poller.is_alive() and result == [False]


@pytest.mark.timeout(10)
def test_executor_thread_name_and_close(make_timer) -> None:
    timer = make_timer("Produce")
    names: list[str] = []
    done = threading.Event()
    timer.add(FunctionTask(0, lambda: (names.append(threading.current_thread().name), done.set())))
    timer.advance_clock(0)  # due now even if the wheel clock lags real time
    assert done.wait(WAIT_S)
    assert names == ["executor-Produce"]
    pending = RecordingTask(60_000, "p", [], threading.Lock())
    timer.add(pending)
    timer.close()
    timer.close()  # idempotent
    assert "executor-Produce" not in {t.name for t in threading.enumerate()}
    assert not pending.ran.is_set()


@pytest.mark.timeout(10)
def test_fired_task_state(make_timer, mock_time) -> None:
    timer = make_timer(time=mock_time)
    task = FunctionTask(3, lambda: None)
    timer.add(task)
    mock_time.advance(3)
    timer.advance_clock(0)
    drain_executor(timer)
    assert task._bucket is FIRED and not task.is_cancelled()
    assert timer.size() == 0 and timer.expired_task_count == 2  # the task and the drain marker


# --------------------------------------------------------------------------- staged cascades
@pytest.mark.timeout(20)
def test_large_cascade_is_staged_without_changing_semantics(make_timer, mock_time) -> None:
    """A coarse bucket bigger than the cascade chunk is placed over several advance_clock
    calls; staged tasks can be cancelled or re-added, and each fires exactly once, on time."""
    timer = make_timer(time=mock_time)
    timer._cascade_chunk = 16
    start = mock_time.hi_res_clock_ms()
    log = FiringLog(mock_time)
    fired, lock, task = log.fired, log.lock, log.task

    # expirations 1800..2199 fall in the level-3 buckets [1600, 2000) and [2000, 2400)
    tasks = [task(i, 800 + i % 400) for i in range(600)]
    for t in tasks:
        timer.add(t)
    assert timer.size() == 600
    mock_time.advance(800)
    timer.advance_clock(0)  # cascades [1600, 2000): urgent ones placed, the rest staged
    assert timer._staged, "the cascade should have been staged"
    assert timer.size() == 598  # the two expiring at 1800 were handed to the executor
    staged = set().union(*(bucket._entries for bucket, _ in timer._staged))
    assert all(t in staged for t in tasks[100:160])
    drain_executor(timer)  # let the two due ones run while the clock still reads 1800
    cancelled = {t.ident for t in tasks[100:150]}
    for t in tasks[100:150]:
        t.cancel()
    moved = tasks[150:160]
    for t in moved:
        t.delay_ms = 2000
        timer.add(t)  # re-added from the staged bucket
    assert timer.size() == 548
    expected = {t.ident: start + 800 + t.ident % 400 for t in tasks if t.ident not in cancelled}
    for t in moved:
        expected[t.ident] = start + 800 + 2000
    for _ in range(2100):
        mock_time.advance(1)
        timer.advance_clock(0)
        drain_executor(timer)
        now = mock_time.hi_res_clock_ms()
        with lock:
            missing = [(i, at) for i, at in expected.items() if at <= now and i not in fired]
            assert not missing, (now, missing[:5], len(timer._staged))
    assert not timer._staged and timer.size() == 0
    assert set(fired) == set(expected)
    wrong = {i: (times, expected[i]) for i, times in fired.items() if times != [expected[i]]}
    assert not wrong, wrong


@pytest.mark.timeout(20)
@pytest.mark.parametrize("steps", [[45, 45, 45], [7] * 60])
def test_staged_cascade_is_placed_in_time_whatever_the_poller_pace(
        make_timer, mock_time, steps) -> None:
    """Staged tasks are placed in deadline order over several calls; whatever the gaps between
    advance_clock calls, every task due by a call has fired by then, exactly once, never early."""
    timer = make_timer(time=mock_time)
    timer._cascade_chunk = 8
    log = FiringLog(mock_time)
    fired, lock, task = log.fired, log.lock, log.task

    start = mock_time.hi_res_clock_ms()
    expected = {i: start + 400 + (i * 7) % 800 for i in range(800)}
    for i, at in expected.items():
        timer.add(task(i, at - start))
    for step in [600] + steps + [2000]:  # the level-3 bucket [1600, 2000) cascades at 1600
        mock_time.advance(step)
        timer.advance_clock(0)
        drain_executor(timer)
        now = mock_time.hi_res_clock_ms()
        with lock:
            missing = [i for i, at in expected.items() if at <= now and i not in fired]
            early = [i for i, times in fired.items() if min(times) < expected[i] - 1]
        assert not missing and not early, (now, missing[:5], early[:5])
    assert not timer._staged and timer.size() == 0
    assert all(len(times) == 1 for times in fired.values()) and set(fired) == set(expected)
