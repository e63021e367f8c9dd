"""Test doubles for the consumer group protocol (KIP-848) tests, after Kafka's
``GroupMetadataManagerTestContext``: a ``GroupCoordinator`` over an in-memory
``__consumer_offsets`` (``InMemoryCoordinatorLog``) and a ``MockTimer``, with a small metadata
image of topics (``StaticMetadataImage``) standing in for the broker's ``MetadataStore``.

``ConsumerHarness.heartbeat(...)`` sends one ConsumerGroupHeartbeat and returns its answer (the
log acknowledges at once, so the callback fires before it returns); ``advance(ms)`` moves the
mock clock and runs the timeouts that fell due; ``reloaded()`` is a second coordinator that loads
the same log (failover).
"""
from __future__ import annotations

import uuid
from typing import Any

from kafka_emu.coordinator.group import GroupCoordinator
from kafka_emu.coordinator.group.modern.consumer.consumer_group import ConsumerGroup
from kafka_emu.coordinator.group.records import partition_for
from kafka_emu.coordinator.group.results import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResult
from kafka_emu.coordinator.metadata_image import StaticMetadataImage
from kafka_emu.timer import MockTime, MockTimer

from coordinator_harness import Box, InMemoryCoordinatorLog

GROUP = "fooup"
NUM_PARTITIONS = 1
REBALANCE_TIMEOUT = 5000
SESSION_TIMEOUT = 45000


def consumer_config(**overrides: Any) -> dict[str, Any]:
    config = {"offsets.topic.num.partitions": NUM_PARTITIONS, "group.min.session.timeout.ms": 10,
              "group.initial.rebalance.delay.ms": 0}
    config.update(overrides)
    return config


class ConsumerHarness:
    def __init__(self, image: StaticMetadataImage | None = None, log: InMemoryCoordinatorLog | None = None,
                 time: MockTime | None = None, group_config: dict[str, dict[str, int]] | None = None,
                 **config: Any) -> None:
        self.image = image or StaticMetadataImage()
        self.log = log or InMemoryCoordinatorLog()
        self.time = time or MockTime()
        self.timer = MockTimer(self.time)
        self.config = consumer_config(**config)
        self.group_configs = group_config if group_config is not None else {}
        self.coordinator = GroupCoordinator.create(0, self.config, self.log, self.time, timer=self.timer,
                                                   image=self.image,
                                                   group_config=lambda gid: self.group_configs.get(gid, {}))
        self.coordinator.startup(enable_metadata_expiration=False)

    def own(self, group_id: str = GROUP) -> "ConsumerHarness":
        self.coordinator.group_manager.add_owned_partition(partition_for(group_id, NUM_PARTITIONS))
        return self

    def load(self, epoch: int = 1) -> "ConsumerHarness":
        self.coordinator.on_elected(partition_for(GROUP, NUM_PARTITIONS), epoch)
        return self

    def reloaded(self, epoch: int = 2) -> "ConsumerHarness":
        """A coordinator on the same log and clock that loads the partition (failover)."""
        return ConsumerHarness(self.image, self.log, self.time, self.group_configs, **self.config).load(epoch)

    def heartbeat(self, group_id: str = GROUP, member_id: str = "", member_epoch: int = 0, **fields: Any
                  ) -> ConsumerGroupHeartbeatResult:
        if member_epoch == 0:
            fields.setdefault("rebalance_timeout_ms", REBALANCE_TIMEOUT)
            fields.setdefault("topic_partitions", ())
        fields.setdefault("api_version", 1)
        box = Box()
        self.coordinator.handle_consumer_group_heartbeat(
            ConsumerGroupHeartbeatRequest(group_id, member_id, member_epoch, **fields), box)
        return box.value

    def join(self, member_id: str, topics: tuple[str, ...] = ("foo",), **fields: Any) -> ConsumerGroupHeartbeatResult:
        return self.heartbeat(member_id=member_id, member_epoch=0, subscribed_topic_names=topics, **fields)

    def group(self, group_id: str = GROUP) -> ConsumerGroup:
        group = self.coordinator.group_manager.get_group(group_id)
        assert isinstance(group, ConsumerGroup), group
        return group

    def advance(self, ms: int) -> None:
        self.timer.advance_clock(ms)


def owned(result: ConsumerGroupHeartbeatResult) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...]:
    """The partitions a member reports owning once it applied ``result``'s assignment."""
    assert result.assignment is not None
    return tuple((t, tuple(sorted(ps))) for t, ps in result.assignment.items())


def settle(h: ConsumerHarness, members: dict[str, tuple[int, tuple]], rounds: int = 10) -> dict[str, tuple[int, tuple]]:
    """Heartbeat every member (member id -> (epoch, owned)) until nothing changes, as clients
    acknowledging each answer would; the members' final (epoch, owned)."""
    for _ in range(rounds):
        changed = False
        for member_id, (epoch, have) in list(members.items()):
            r = h.heartbeat(member_id=member_id, member_epoch=epoch, topic_partitions=have)
            assert r.error == 0, (member_id, r)
            new = (r.member_epoch, owned(r) if r.assignment is not None else have)
            if new != members[member_id]:
                members[member_id] = new
                changed = True
        if not changed:
            return members
    raise AssertionError(f"members did not settle: {members}")
