"""The group coordinator's delayed operations (Kafka's DelayedJoin, InitialDelayedJoin,
DelayedSync, DelayedHeartbeat). Each uses its group's lock as the operation lock, so purgatory
completion checks and ``on_complete`` run under the group lock; ``on_expiration`` runs after
``force_complete`` returned (lock released) and re-takes it where it mutates the group.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.timer import DelayedOperation, DelayedOperationPurgatory, GroupJoinKey

if TYPE_CHECKING:
    from kafka_emu.coordinator.group.classic.classic_group_manager import ClassicGroupManager
    from kafka_emu.coordinator.group.classic.group_metadata import GroupMetadata


class DelayedJoin(DelayedOperation):
    """Completes when every known member has rejoined (and no pending member is outstanding) or
    after the group's rebalance timeout."""

    def __init__(self, coordinator: "ClassicGroupManager", group: "GroupMetadata", rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_join(self.group, self.force_complete)

    def on_complete(self) -> None:
        self.coordinator.on_complete_join(self.group)

    def on_expiration(self) -> None:
        # Kafka drains ReplicaManager actions here; the CoordinatorLog completes its own.
        pass


class InitialDelayedJoin(DelayedJoin):
    """The first rebalance of an Empty group: completes only by timeout; while new members keep
    arriving it is replaced by another one (delay ``min(initial, remaining)``), capped by the
    rebalance timeout (Kafka's ``InitialDelayedJoin``, KIP-134)."""

    def __init__(self, coordinator: "ClassicGroupManager", purgatory: DelayedOperationPurgatory,
                 group: "GroupMetadata", configured_rebalance_delay_ms: int, delay_ms: int,
                 remaining_ms: int) -> None:
        super().__init__(coordinator, group, delay_ms)
        self.purgatory = purgatory
        self.configured_rebalance_delay_ms = configured_rebalance_delay_ms
        self.remaining_ms = remaining_ms

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        group = self.group
        with group.lock:
            if group.new_member_added and self.remaining_ms != 0:
                group.new_member_added = False
                delay = min(self.configured_rebalance_delay_ms, self.remaining_ms)
                remaining = max(self.remaining_ms - self.delay_ms, 0)
                self.purgatory.try_complete_else_watch(
                    InitialDelayedJoin(self.coordinator, self.purgatory, group,
                                       self.configured_rebalance_delay_ms, delay, remaining),
                    [GroupJoinKey(group.group_id)])
            else:
                self.coordinator.on_complete_join(group)


class DelayedSync(DelayedOperation):
    """Waits for every member of a generation to send SyncGroup (timeout = rebalance timeout);
    on expiry removes the members that never synced and rebalances."""

    def __init__(self, coordinator: "ClassicGroupManager", group: "GroupMetadata", generation_id: int,
                 rebalance_timeout_ms: int) -> None:
        super().__init__(rebalance_timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group
        self.generation_id = generation_id

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_pending_sync(self.group, self.generation_id, self.force_complete)

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_pending_sync(self.group, self.generation_id)


class DelayedHeartbeat(DelayedOperation):
    """A member's session (or, for a new/pending member, join) deadline."""

    def __init__(self, coordinator: "ClassicGroupManager", group: "GroupMetadata", member_id: str,
                 is_pending: bool, timeout_ms: int) -> None:
        super().__init__(timeout_ms, group.lock)
        self.coordinator = coordinator
        self.group = group
        self.member_id = member_id
        self.is_pending = is_pending

    def try_complete(self) -> bool:
        return self.coordinator.try_complete_heartbeat(self.group, self.member_id, self.is_pending,
                                                       self.force_complete)

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self.coordinator.on_expire_heartbeat(self.group, self.member_id, self.is_pending)
