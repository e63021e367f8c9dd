"""DelayedShareFetch: a ShareFetch parked in the ``ShareFetch`` purgatory until records can be
acquired or ``max_wait_ms`` passes (Kafka's ``DelayedShareFetch``).

Watch keys (Kafka's ``DelayedShareFetchPartitionKey`` and ``DelayedShareFetchGroupKey``): each
partition's ``TopicPartitionOperationKey`` (new records: the replica manager checks it when the
high watermark moves, as for DelayedFetch) and a ``DelayedShareFetchGroupKey`` per share partition
(records became available again: a release, a lock expiry, an initialization finished).

``try_complete`` tries to acquire (``SharePartitionManager.try_acquire``: the share partitions'
fetch locks taken without blocking, the log read from each one's next fetch offset); anything
acquired, or an error, completes the operation. At expiry a last attempt is made and the answer
goes out with whatever it found (possibly nothing), as Kafka's ``onComplete`` does.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from kafka_emu.timer import DelayedOperation

if TYPE_CHECKING:
    from kafka_emu.broker.server.share.share_partition_manager import PartitionResult, ShareFetchRequestState


@dataclass(frozen=True, slots=True)
class DelayedShareFetchGroupKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


class DelayedShareFetch(DelayedOperation):
    def __init__(self, delay_ms: int, state: ShareFetchRequestState,
                 try_acquire: Callable[[ShareFetchRequestState], bool],
                 respond: Callable[[dict[tuple[uuid.UUID, int], PartitionResult]], None]) -> None:
        super().__init__(delay_ms)
        self.state = state
        self._try_acquire = try_acquire
        self._respond = respond

    def try_complete(self) -> bool:
        if self._try_acquire(self.state):
            return self.force_complete()
        return False

    def on_expiration(self) -> None:
        pass

    def on_complete(self) -> None:
        if not self.state.results:
            self._try_acquire(self.state)
        self._respond(self.state.results)
