"""Counters the metrics helper reads at scrape time (plain ints, written under a tiny lock)."""
from __future__ import annotations

import threading
from collections import defaultdict


class BrokerTopicStats:
    """Kafka's BrokerTopicStats and ReplicaManager meters for one broker.

    ``_lock`` guards every write (increments from many handler threads); scrapes read the
    ints and copies of the dicts without it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.messages_in: dict[str, int] = defaultdict(int)
        self.bytes_in: dict[str, int] = defaultdict(int)
        self.bytes_out: dict[str, int] = defaultdict(int)
        self.failed_produce_requests = 0
        self.failed_fetch_requests = 0
        self.produce_expirations = 0
        self.produce_expirations_by_partition: dict[tuple[str, int], int] = defaultdict(int)
        self.fetch_expirations = {"follower": 0, "consumer": 0}

    def record_isr_shrink(self) -> None:
        with self._lock:
            self.isr_shrinks += 1

    def record_isr_expand(self) -> None:
        with self._lock:
            self.isr_expands += 1

    def record_bytes_in(self, topic: str, messages: int, nbytes: int) -> None:
        with self._lock:
            self.messages_in[topic] += messages
            self.bytes_in[topic] += nbytes

    def record_bytes_out(self, topic: str, nbytes: int) -> None:
        with self._lock:
            self.bytes_out[topic] += nbytes

    def record_failed_produce(self) -> None:
        with self._lock:
            self.failed_produce_requests += 1

    def record_failed_fetch(self) -> None:
        with self._lock:
            self.failed_fetch_requests += 1

    def record_produce_expiration(self, tp: tuple[str, int]) -> None:
        with self._lock:
            self.produce_expirations += 1
            self.produce_expirations_by_partition[tp] += 1

    def record_fetch_expiration(self, follower: bool) -> None:
        with self._lock:
            self.fetch_expirations["follower" if follower else "consumer"] += 1

    def total_messages_in(self) -> int:
        return sum(list(self.messages_in.values()))

    def total_bytes_in(self) -> int:
        return sum(list(self.bytes_in.values()))
