"""Time and delayed work: Kafka's hierarchical timing wheel and delayed-operation purgatory.

This package imports nothing else of the project (only ``metrics`` may sit below it).
"""
from kafka_emu.timer.delayed_operation import DelayedOperation
from kafka_emu.timer.mock_timer import MockTimer
from kafka_emu.timer.operation_keys import (
    DelayedOperationKey,
    GroupJoinKey,
    GroupSyncKey,
    MemberKey,
    TopicKey,
    TopicPartitionOperationKey,
)
from kafka_emu.timer.purgatory import DelayedOperationPurgatory
from kafka_emu.timer.reaper import SystemTimerReaper
from kafka_emu.timer.shutdownable_thread import ShutdownableThread
from kafka_emu.timer.system_timer import SystemTimer, Timer
from kafka_emu.timer.time import MockTime, Time
from kafka_emu.timer.timer_task import TimerTask
from kafka_emu.timer.timer_task_list import TaskCounter, TimerTaskList
from kafka_emu.timer.timing_wheel import TimingWheel

__all__ = [
    "DelayedOperation", "DelayedOperationKey", "DelayedOperationPurgatory", "GroupJoinKey",
    "GroupSyncKey", "MemberKey", "MockTime", "MockTimer", "ShutdownableThread", "SystemTimer",
    "SystemTimerReaper", "TaskCounter", "Time", "Timer", "TimerTask", "TimerTaskList",
    "TimingWheel", "TopicKey", "TopicPartitionOperationKey",
]
