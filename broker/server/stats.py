"""BrokerTopicStats: Kafka's BrokerTopicMetrics meters (per topic) and ReplicaManager meters.

Failed produce and fetch counts follow Kafka's ``ReplicaManager``: they are meant to show
unexpected failures of the broker, so the errors a healthy broker answers routinely (unknown
partition, not the leader, record too large, fenced epoch, offset out of range...) are not
counted (``appendToLocalLog`` and ``readFromLog`` leave the meters alone for those exceptions);
every other error on a partition counts once for its topic. Appends refused before the partition
is looked up (an internal topic without permission) are not counted either, as in Kafka.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Mapping

from kafka_emu.common.errors import Errors

# ``ReplicaManager.appendToLocalLog``'s known exceptions: answered without FailedProduceRequestsPerSec.
EXPECTED_PRODUCE_ERRORS = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.MESSAGE_TOO_LARGE,
    Errors.RECORD_LIST_TOO_LARGE, Errors.CORRUPT_MESSAGE, Errors.KAFKA_STORAGE_ERROR,
    Errors.DUPLICATE_SEQUENCE_NUMBER, Errors.UNKNOWN_TOPIC_ID,
})
# ``ReplicaManager.readFromLog``'s known exceptions: answered without FailedFetchRequestsPerSec.
EXPECTED_FETCH_ERRORS = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_LEADER_EPOCH,
    Errors.FENCED_LEADER_EPOCH, Errors.REPLICA_NOT_AVAILABLE, Errors.KAFKA_STORAGE_ERROR,
    Errors.INCONSISTENT_TOPIC_ID, Errors.OFFSET_OUT_OF_RANGE, Errors.UNKNOWN_TOPIC_ID,
})


@dataclass
class TopicStats:
    """One topic's BrokerTopicMetrics counts (a frozen copy of it is what a snapshot holds)."""

    messages_in: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    failed_produce_requests: int = 0
    failed_fetch_requests: int = 0

    def copy(self) -> "TopicStats":
        return TopicStats(self.messages_in, self.bytes_in, self.bytes_out,
                          self.failed_produce_requests, self.failed_fetch_requests)


@dataclass(frozen=True, slots=True)
class BrokerTopicStatsSnapshot:
    topics: Mapping[str, TopicStats] = field(default_factory=dict)   # copies, one per topic seen
    isr_shrinks: int = 0
    isr_expands: int = 0
    produce_expirations: int = 0
    fetch_expirations_follower: int = 0
    fetch_expirations_consumer: int = 0
    delete_records_expirations: int = 0


class BrokerTopicStats:
    """Kafka's BrokerTopicStats and ReplicaManager meters for one broker.

    Locking: ``_lock`` guards every write (increments from many handler threads) and the copy a
    snapshot takes, so a snapshot is consistent across topics.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._topics: dict[str, TopicStats] = defaultdict(TopicStats)
        self._isr_shrinks = 0
        self._isr_expands = 0
        self._produce_expirations = 0
        self._fetch_expirations = {True: 0, False: 0}   # is follower -> count
        self._delete_records_expirations = 0

    def record_isr_shrink(self) -> None:
        with self._lock:
            self._isr_shrinks += 1

    def record_isr_expand(self) -> None:
        with self._lock:
            self._isr_expands += 1

    def record_bytes_in(self, topic: str, messages: int, nbytes: int) -> None:
        with self._lock:
            stats = self._topics[topic]
            stats.messages_in += messages
            stats.bytes_in += nbytes

    def record_bytes_out(self, topic: str, nbytes: int) -> None:
        with self._lock:
            self._topics[topic].bytes_out += nbytes

    def record_failed_produce(self, topic: str, error: int) -> None:
        """A partition of a produce request failed with ``error`` (see the module docstring)."""
        if error in EXPECTED_PRODUCE_ERRORS:
            return
        with self._lock:
            self._topics[topic].failed_produce_requests += 1

    def record_failed_fetch(self, topic: str, error: int) -> None:
        """A partition of a fetch request failed with ``error`` (see the module docstring)."""
        if error in EXPECTED_FETCH_ERRORS:
            return
        with self._lock:
            self._topics[topic].failed_fetch_requests += 1

    def record_produce_expiration(self) -> None:
        """One partition of an acks=all produce was still waiting when the request expired."""
        with self._lock:
            self._produce_expirations += 1

    def record_fetch_expiration(self, follower: bool) -> None:
        with self._lock:
            self._fetch_expirations[follower] += 1

    def record_delete_records_expiration(self) -> None:
        """One partition of a DeleteRecords was still waiting for its followers at expiry."""
        with self._lock:
            self._delete_records_expirations += 1

    def remove_topic(self, topic: str) -> None:
        """A deleted topic's series go (Kafka's ``BrokerTopicStats.removeMetrics``)."""
        with self._lock:
            self._topics.pop(topic, None)

    def snapshot(self) -> BrokerTopicStatsSnapshot:
        with self._lock:
            return BrokerTopicStatsSnapshot(
                {topic: stats.copy() for topic, stats in self._topics.items()},
                self._isr_shrinks, self._isr_expands, self._produce_expirations,
                self._fetch_expirations[True], self._fetch_expirations[False],
                self._delete_records_expirations)
