"""DelayedFetch (and DelayedSessionFetch): a fetch waiting for ``min_bytes`` of new data or ``max_wait_ms``.

One operation per request, watched on one ``TopicPartitionOperationKey`` per partition in the
``Fetch`` purgatory. ``try_complete`` follows Kafka's cases: the partition is gone (C) or not
led here (A/B), the leader epoch is fenced (E), the end offset for the fetch isolation (LEO for
followers, HW for consumers, LSO for read_committed, so a read_committed fetch completes when
the LSO moves) fell below the fetch offset (F,
truncation), a diverging epoch (H), or enough bytes accumulated (G). ``on_complete`` re-reads
every partition (without updating follower state) and calls back.

Locking: the operation lock guards completion; partition state is read without partition
locks (ints).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from kafka_emu.timer import DelayedOperation

if TYPE_CHECKING:
    from kafka_emu.broker.server.fetch_session import FetchSession
    from kafka_emu.broker.server.partition import LogReadResult
    from kafka_emu.broker.server.fetch_params import FetchParams, PartitionFetchInfo
    from kafka_emu.broker.server.replica_manager import ReplicaManager


class DelayedFetch(DelayedOperation):
    def __init__(self, delay_ms: int, params: "FetchParams",
                 fetch_infos: list[tuple[tuple[str, int], "PartitionFetchInfo"]],
                 replica_manager: "ReplicaManager",
                 response_callback: Callable[[list], None]) -> None:
        super().__init__(delay_ms)
        self.params = params
        self.fetch_infos = fetch_infos
        self.replica_manager = replica_manager
        self.response_callback = response_callback

    def try_complete(self) -> bool:
        rm = self.replica_manager
        params = self.params
        isolation = params.isolation
        accumulated = 0
        for tp, info in self.fetch_infos:
            partition = rm.get_partition(tp)
            if partition is None or not partition.online:
                return self.force_complete()  # (C)
            if not partition.is_leader:
                return self.force_complete()  # (A/B)
            if info.current_leader_epoch >= 0 and info.current_leader_epoch != partition.leader_epoch:
                return self.force_complete()  # (E)
            log = partition.log
            end = partition.end_offset_for(isolation)
            offset = info.fetch_offset
            if offset > end or offset < log.log_start_offset:
                return self.force_complete()  # (F) truncated under us, or deleted by retention
            if offset < end:
                accumulated += min(log.bytes_between(offset, end, info.max_bytes), info.max_bytes)
            if info.last_fetched_epoch >= 0 and params.is_follower:
                epoch, end_off = log.end_offset_for_epoch(info.last_fetched_epoch)
                if epoch < info.last_fetched_epoch or end_off < offset:
                    return self.force_complete()  # (H) diverging
        if accumulated >= params.min_bytes:
            return self.force_complete()  # (G)
        return False

    def on_expiration(self) -> None:
        self.replica_manager.stats.record_fetch_expiration(self.params.is_follower)

    def on_complete(self) -> None:
        results = self.replica_manager.read_from_local_log(self.params, self.fetch_infos,
                                                           update_fetch_state=False)
        self.response_callback(results)


class DelayedSessionFetch(DelayedOperation):
    """A follower's session fetch (``broker.server.fetch_session``) with nothing to send yet.

    Watched under its session alone; completes when a partition of the session gets new data or
    changes role (``FetchSession.changed``), when the session closes, or after ``max_wait_ms``.
    ``on_complete`` reads the changed partitions (without updating follower state, as Kafka's
    purgatory re-reads) and answers with them and the partitions of the first read.
    """

    def __init__(self, delay_ms: int, params: "FetchParams", session: "FetchSession",
                 first_read: list[tuple[tuple[str, int], "LogReadResult"]],
                 replica_manager: "ReplicaManager",
                 response_callback: Callable[[list], None]) -> None:
        super().__init__(delay_ms)
        self.params = params
        self.session = session
        self.first_read = first_read
        self.replica_manager = replica_manager
        self.response_callback = response_callback

    def try_complete(self) -> bool:
        if self.session.changed or self.session.closed:
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        self.replica_manager.stats.record_fetch_expiration(True)

    def on_complete(self) -> None:
        rm = self.replica_manager
        results = rm.read_session(self.params, self.session, update_fetch_state=False)
        if self.first_read:
            again = {tp for tp, _ in results}
            results = [r for r in self.first_read if r[0] not in again] + results
        self.response_callback(results)
