"""Time and delayed work: Kafka's hierarchical timing wheel and delayed-operation purgatory.

This package imports nothing else of the project (only ``metrics`` may sit below it).
"""
from timer.delayed_operation import DelayedOperation
from timer.mock_timer import MockTimer
from timer.operation_keys import (
    DelayedOperationKey,
    GroupJoinKey,
    GroupSyncKey,
    MemberKey,
    TopicKey,
    TopicPartitionOperationKey,
)
from timer.purgatory import DelayedOperationPurgatory
from timer.reaper import SystemTimerReaper
from timer.shutdownable_thread import ShutdownableThread
from timer.system_timer import SystemTimer, Timer
from timer.time import MockTime, Time
from timer.timer_task import TimerTask
from timer.timer_task_list import TaskCounter, TimerTaskList
from timer.timing_wheel import TimingWheel

__all__ = [
    "DelayedOperation", "DelayedOperationKey", "DelayedOperationPurgatory", "GroupJoinKey",
    "GroupSyncKey", "MemberKey", "MockTime", "MockTimer", "ShutdownableThread", "SystemTimer",
    "SystemTimerReaper", "TaskCounter", "Time", "Timer", "TimerTask", "TimerTaskList",
    "TimingWheel", "TopicKey", "TopicPartitionOperationKey",
]
