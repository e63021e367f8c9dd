"""ShareStateAdmin: the share-group admin operations that span brokers, in process (Kafka's
``GroupCoordinatorService`` calling its ``Persister`` for ``describeShareGroupOffsets``,
``alterShareGroupOffsets``, ``deleteShareGroupOffsets`` and the state of a deleted group).

A share partition's state lives with the share coordinator leading its ``__share_group_state``
partition; this helper finds it through the metadata (``BrokerInfo.share_coordinator``) and
drops the share-partition leaders' cached copies (``BrokerInfo.share_partition_manager``) after a
change, so the next fetch reads the new state. Each call is synchronous up to the coordinator's
append; ``done`` runs once every partition is answered.

Locking: no state of its own.
"""
from __future__ import annotations

import threading
import uuid
from typing import TYPE_CHECKING, Callable

from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.records import partition_for
from kafka_emu.coordinator.share.config import SHARE_GROUP_STATE_TOPIC
from kafka_emu.coordinator.share.share_coordinator import ReadStateResult, ShareCoordinator
from kafka_emu.coordinator.share.share_coordinator_records import ShareStateKey

if TYPE_CHECKING:
    from kafka_emu.broker.server.metadata_store import MetadataStore

TopicIdPartition = tuple[uuid.UUID, int]


class ShareStateAdmin:
    def __init__(self, metadata: MetadataStore, num_partitions: int) -> None:
        self.metadata = metadata
        self.num_partitions = num_partitions

    def _coordinator(self, key: ShareStateKey) -> ShareCoordinator | None:
        md = self.metadata
        st = md.partition_state(SHARE_GROUP_STATE_TOPIC, partition_for(key.coordinator_key(), self.num_partitions))
        if st is None or st.leader < 0 or not md.is_live(st.leader):
            return None
        info = md.broker(st.leader)
        return info.share_coordinator if info is not None else None

    def group_partitions(self, group_id: str) -> list[TopicIdPartition]:
        """Every share partition of ``group_id`` with state, across the live coordinators."""
        out: set[TopicIdPartition] = set()
        for broker_id in self.metadata.live_broker_ids():
            info = self.metadata.broker(broker_id)
            if info is not None and info.share_coordinator is not None:
                out.update((k.topic_id, k.partition) for k in info.share_coordinator.states_of_group(group_id))
        return sorted(out, key=lambda tp: (str(tp[0]), tp[1]))

    def read(self, group_id: str, tp: TopicIdPartition) -> ReadStateResult:
        key = ShareStateKey(group_id, *tp)
        coordinator = self._coordinator(key)
        if coordinator is None:
            return ReadStateResult(Errors.COORDINATOR_NOT_AVAILABLE)
        return coordinator.read_state(key, -1)

    def forget(self, group_id: str, topic_ids: set[uuid.UUID] | None = None) -> None:
        """Drop the leaders' cached share partitions of the group (of ``topic_ids`` only if given)."""
        for broker_id in self.metadata.live_broker_ids():
            info = self.metadata.broker(broker_id)
            if info is not None and info.share_partition_manager is not None:
                info.share_partition_manager.forget_group(group_id, topic_ids)

    def _each(self, group_id: str, partitions: list[TopicIdPartition],
              operation: Callable[[ShareCoordinator, ShareStateKey, Callable[[int, str | None], None]], None],
              done: Callable[[dict[TopicIdPartition, int]], None]) -> None:
        results: dict[TopicIdPartition, int] = {}
        lock = threading.Lock()

        def one(tp: TopicIdPartition, error: int) -> None:
            with lock:
                results[tp] = error
                finished = len(results) == len(partitions)
            if finished:
                done(results)

        if not partitions:
            done(results)
            return
        for tp in partitions:
            key = ShareStateKey(group_id, *tp)
            coordinator = self._coordinator(key)
            if coordinator is None:
                one(tp, Errors.COORDINATOR_NOT_AVAILABLE)
            else:
                operation(coordinator, key, lambda error, _m, tp=tp: one(tp, error))

    def alter(self, group_id: str, offsets: dict[TopicIdPartition, int],
              done: Callable[[dict[TopicIdPartition, int]], None]) -> None:
        """A new start offset per share partition, with a new state epoch (Kafka's
        ``alterShareGroupOffsets``: InitializeShareGroupState), so a leader's old state is fenced."""
        def initialize(c: ShareCoordinator, key: ShareStateKey, cb: Callable[[int, str | None], None]) -> None:
            current = c.read_state(key, -1)
            epoch = current.state_epoch + 1 if current.error == Errors.NONE else 0
            c.initialize_state(key, epoch, offsets[(key.topic_id, key.partition)], cb)
        self.forget(group_id, {t for t, _ in offsets})
        self._each(group_id, list(offsets), initialize, done)

    def delete(self, group_id: str, partitions: list[TopicIdPartition],
               done: Callable[[dict[TopicIdPartition, int]], None]) -> None:
        """Delete the state of these share partitions (Kafka's DeleteShareGroupState)."""
        self.forget(group_id, {t for t, _ in partitions})
        self._each(group_id, partitions, lambda c, key, cb: c.delete_state(key, cb), done)
