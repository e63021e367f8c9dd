"""Kafka's TimerTaskListTest, ported: buckets sharing one counter, moves, cancels; and the
bucket operations the timer's cascade uses (flush, take, retiring a bucket from its wheel)."""
from __future__ import annotations

import pytest

from kafka_emu.timer import MockTime, SystemTimer, TaskCounter, TimerTask, TimerTaskList, TimingWheel


class _Task(TimerTask):
    def run(self) -> None:
        pass


def _sizes(*lists: TimerTaskList) -> list[int]:
    return [len(bucket) for bucket in lists]


def _linked(wheel: TimingWheel, *expirations: int) -> list[_Task]:
    """Tasks with the given expirations, placed by ``TimingWheel.add`` (clock 0, tick 1)."""
    tasks = []
    for expiration in expirations:
        task = _Task(expiration)
        task._expiration_ms = expiration
        assert wheel.add(task)
        tasks.append(task)
    return tasks


@pytest.mark.timeout(10)
def test_all() -> None:
    """TimerTaskListTest.testAll: adds count once per task in the counter every bucket of the
    timer shares; re-adding moves a task (the old entry is superseded); cancel unlinks."""
    time = MockTime(start_ms=0)
    timer = SystemTimer("task-list", tick_ms=1, wheel_size=20, time=time)
    try:
        list1, list2, list3 = timer._wheel.buckets[10:13]
        tasks = [_Task(10) for _ in range(10)]
        for i, task in enumerate(tasks, start=1):
            timer.add(task)
            assert timer.size() == i
        for task in tasks[:4]:
            task.delay_ms = 11
            timer.add(task)  # a new placement of a linked task supersedes the old one
        assert timer.size() == 10
        assert _sizes(list1, list2, list3) == [6, 4, 0]
        for task in tasks[4:]:
            task.delay_ms = 12
            timer.add(task)
        assert timer.size() == 10
        assert _sizes(list1, list2, list3) == [0, 4, 6]

        for task in list(list2._entries):
            task.cancel()
        assert timer.size() == 6 and _sizes(list1, list2, list3) == [0, 0, 6]
        for task in list(list3._entries):
            task.cancel()
        assert timer.size() == 0 and _sizes(list1, list2, list3) == [0, 0, 0]
        assert all(task.is_cancelled() for task in tasks)
    finally:
        timer.close()


@pytest.mark.timeout(10)
def test_set_expiration_reports_change_only() -> None:
    """Only a changed expiration re-enqueues a bucket: once per wheel revolution."""
    bucket = TimerTaskList(TaskCounter())
    assert bucket.get_expiration() == -1
    assert bucket.set_expiration(1020)
    assert not bucket.set_expiration(1020)
    assert bucket.set_expiration(1040)


@pytest.mark.timeout(10)
def test_remove_of_task_in_other_bucket_is_noop() -> None:
    counter = TaskCounter()
    wheel = TimingWheel(1, 20, 0, counter, lambda bucket: None)
    (task,) = _linked(wheel, 5)
    a, b = wheel.buckets[5], wheel.buckets[6]
    b.remove(task)
    assert _sizes(a, b) == [1, 0] and counter.value == 1 and task._bucket is a
    a.remove(task)
    assert counter.value == 0 and task.is_cancelled()


@pytest.mark.timeout(10)
def test_flush_unlinks_every_task_and_resets_expiration() -> None:
    counter = TaskCounter()
    wheel = TimingWheel(1, 20, 0, counter, lambda bucket: None)
    tasks = _linked(wheel, *[5] * 5)
    bucket = wheel.buckets[5]
    assert bucket.get_expiration() == 5
    assert list(bucket.flush()) == tasks  # insertion order, like Kafka's linked list
    assert counter.value == 0 and len(bucket) == 0 and bucket.get_expiration() == -1
    assert all(task.is_cancelled() for task in tasks)  # unlinked until placed again


@pytest.mark.timeout(10)
def test_take_and_take_expiring_before_unlink_what_they_return() -> None:
    """The staged cascade's two ways of emptying a retired bucket."""
    counter = TaskCounter()
    wheel = TimingWheel(1, 20, 0, counter, lambda bucket: None)
    tasks = _linked(wheel, *range(400, 800, 40))  # ten tasks, all in level-3 bucket [400, 800)
    bucket = wheel.overflow_wheel.overflow_wheel.buckets[1]
    assert len(bucket) == 10 and counter.value == 10

    early = bucket.take_expiring_before(520)
    assert sorted(t.expiration_ms for t in early) == [400, 440, 480]
    assert counter.value == 7 and len(bucket) == 7
    some = bucket.take(5)
    assert len(some) == 5 and counter.value == 2 and len(bucket) == 2
    rest = bucket.take(5)
    assert len(rest) == 2 and counter.value == 0 and len(bucket) == 0
    assert {id(t) for t in early + some + rest} == {id(t) for t in tasks}
    assert all(task.is_cancelled() for task in tasks)


@pytest.mark.timeout(10)
def test_retire_bucket_gives_its_slot_a_fresh_bucket() -> None:
    counter = TaskCounter()
    wheel = TimingWheel(1, 20, 0, counter, lambda bucket: None)
    (task,) = _linked(wheel, 500)  # level-3 bucket [400, 800)
    level2 = wheel.overflow_wheel
    level3 = level2.overflow_wheel
    bucket = level3.buckets[1]
    assert wheel.cascade_target(bucket) is level2  # its tasks fall into level 2 when it expires
    assert wheel.cascade_target(wheel.buckets[0]) is None  # the finest wheel's tasks are due
    level3.retire_bucket(bucket)
    assert level3.buckets[1] is not bucket and len(level3.buckets[1]) == 0
    assert bucket.get_expiration() == -1
    assert task._bucket is bucket and len(bucket) == 1 and counter.value == 1  # still linked
    assert wheel.cascade_target(bucket) is None  # in no wheel any more
