"""Kafka's TimerTaskListTest, ported: buckets sharing one counter, moves, cancels, delays."""
from __future__ import annotations

import threading

import pytest

from kafka_emu.timer import MockTime, TaskCounter, TimerTask, TimerTaskList


class _Task(TimerTask):
    def run(self) -> None:  # never scheduled on a timer here
        raise AssertionError("a bucket never runs tasks")


def _sizes(*lists: TimerTaskList) -> list[int]:
    return [len(bucket) for bucket in lists]


@pytest.mark.timeout(10)
def test_all() -> None:
    """Adds count once per task; re-adding moves a task (the old entry is superseded)."""
    counter = TaskCounter()
    lock = threading.Lock()  # one timer's lock is shared by all of its buckets
    list1, list2, list3 = (TimerTaskList(counter, lock) for _ in range(3))
    tasks = [_Task(10) for _ in range(10)]

    for i, task in enumerate(tasks, start=1):
        list1.add(task)
        assert counter.value == i

    for task in tasks[:4]:
        list2.add(task)  # a new placement of a linked task supersedes the old one
    assert counter.value == 10
    assert _sizes(list1, list2, list3) == [6, 4, 0]

    for task in tasks[4:]:
        list3.add(task)
    assert counter.value == 10
    assert _sizes(list1, list2, list3) == [0, 4, 6]

    seen: list[TimerTask] = []
    list1.foreach(seen.append)
    assert seen == []
    list2.foreach(lambda t: t.cancel())
    assert counter.value == 6 and _sizes(list1, list2, list3) == [0, 0, 6]
    list3.foreach(lambda t: t.cancel())
    assert counter.value == 0 and _sizes(list1, list2, list3) == [0, 0, 0]
    assert all(task.is_cancelled() for task in tasks)


@pytest.mark.timeout(10)
def test_get_delay() -> None:
    time = MockTime()
    bucket = TimerTaskList(TaskCounter())
    assert bucket.set_expiration(time.hi_res_clock_ms() + 10_000)
    time.advance(5_000)
    assert bucket.get_delay_ms(time.hi_res_clock_ms()) // 1000 == 5
    time.advance(6_000)
    assert bucket.get_delay_ms(time.hi_res_clock_ms()) == 0  # never negative


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
    lock = threading.Lock()
    a, b = TimerTaskList(counter, lock), TimerTaskList(counter, lock)
    task = _Task(1)
    a.add(task)
    b.remove(task)
    assert _sizes(a, b) == [1, 0] and counter.value == 1
    a.remove(task)
    assert counter.value == 0 and task.is_cancelled()


@pytest.mark.timeout(10)
def test_flush_unlinks_every_task_and_resets_expiration() -> None:
    counter = TaskCounter()
    bucket = TimerTaskList(counter)
    tasks = [_Task(1) for _ in range(5)]
    for task in tasks:
        bucket.add(task)
    bucket.set_expiration(42)
    flushed: list[TimerTask] = []
    bucket.flush(flushed.append)
    assert flushed == tasks  # insertion order, like Kafka's linked list
    assert counter.value == 0 and len(bucket) == 0 and bucket.get_expiration() == -1
