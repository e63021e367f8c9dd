"""MemberState: where a member of a modern group is in its reconciliation (Kafka's
``org.apache.kafka.coordinator.group.modern.MemberState``); the value is what the current
assignment record stores."""
from __future__ import annotations

import enum


class MemberState(enum.IntEnum):
    STABLE = 0                  # owns its whole target assignment at the target epoch
    UNREVOKED_PARTITIONS = 1    # must acknowledge revoking partitions before its epoch moves
    UNRELEASED_PARTITIONS = 2   # waits for partitions other members still own
    UNKNOWN = 127               # a state this coordinator does not know (written by a newer one)

    @classmethod
    def of(cls, value: int) -> "MemberState":
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN
