"""Time and delayed work: Kafka's hierarchical timing wheel and delayed-operation purgatory, and
the broker's ``KafkaScheduler`` (``timer.scheduler``), as in Kafka's server-common.

This package imports nothing else of the project but the leaf ``kafka_emu.logsetup``. Each timer
and purgatory describes itself for metrics with ``snapshot()`` (``TimerSnapshot``,
``PurgatorySnapshot``).
"""
from kafka_emu.timer.delayed_operation import DelayedOperation
from kafka_emu.timer.mock_timer import MockTimer
from kafka_emu.timer.operation_keys import (
    DelayedOperationKey,
    GroupJoinKey,
    GroupSyncKey,
    MemberKey,
    TopicPartitionOperationKey,
)
from kafka_emu.timer.purgatory import DelayedOperationPurgatory, PurgatorySnapshot
from kafka_emu.timer.reaper import SystemTimerReaper
from kafka_emu.timer.shutdownable_thread import ShutdownableThread
from kafka_emu.timer.system_timer import SystemTimer, Timer, TimerSnapshot
from kafka_emu.timer.time import MockTime, Time
from kafka_emu.timer.timer_task import TimerTask
from kafka_emu.timer.timer_task_list import TaskCounter, TimerTaskList
from kafka_emu.timer.timing_wheel import TimingWheel

__all__ = [
    "DelayedOperation", "DelayedOperationKey", "DelayedOperationPurgatory", "GroupJoinKey",
    "PurgatorySnapshot", "TimerSnapshot",
    "GroupSyncKey", "MemberKey", "MockTime", "MockTimer", "ShutdownableThread", "SystemTimer",
    "SystemTimerReaper", "TaskCounter", "Time", "Timer", "TimerTask", "TimerTaskList",
    "TimingWheel", "TopicPartitionOperationKey",
]
