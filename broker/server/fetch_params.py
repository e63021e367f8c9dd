"""What a fetch asks for: the request's parameters (``FetchParams``), one partition's
(``PartitionFetchInfo``) and how far it may read (the isolation), as Kafka's ``FetchParams``,
``FetchRequest.PartitionData`` and ``FetchIsolation``.

The isolation bounds a read: a follower reads to the log end offset, a read_uncommitted consumer
to the high watermark, a read_committed one to the last stable offset (the first offset of the
earliest open transaction). Fetch and ListOffsets derive it from the replica id and the
request's isolation level (``isolation_for``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

ISOLATION_LOG_END = 0       # follower fetches
ISOLATION_HIGH_WATERMARK = 1  # read_uncommitted consumers
ISOLATION_TXN_COMMITTED = 2   # read_committed consumers: up to the LSO


def isolation_for(replica_id: int, isolation_level: int) -> int:
    """Kafka's ``FetchIsolation.of``: a replica reads to the log end, a consumer per its
    ``isolation_level`` (1: read_committed)."""
    if replica_id >= 0:
        return ISOLATION_LOG_END
    return ISOLATION_TXN_COMMITTED if isolation_level == 1 else ISOLATION_HIGH_WATERMARK


@dataclass(frozen=True)
class FetchParams:
    replica_id: int = -1
    max_wait_ms: int = 0
    min_bytes: int = 1
    max_bytes: int = 0x7FFFFFFF
    isolation: int = ISOLATION_HIGH_WATERMARK
    replica_epoch: int = -1
    # Fetch v0-v2 (before KIP-74): the max bytes are a hard limit, a first batch larger than
    # them is not returned whole (Kafka's FetchParams.hardMaxBytesLimit)
    hard_max_bytes_limit: bool = False

    @property
    def is_follower(self) -> bool:
        return self.replica_id >= 0


class PartitionFetchInfo(NamedTuple):
    """One partition of a fetch (a NamedTuple: built for every partition of every fetch, and a
    frozen dataclass's constructor sets each field through a call)."""

    fetch_offset: int
    max_bytes: int
    log_start_offset: int = -1
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
