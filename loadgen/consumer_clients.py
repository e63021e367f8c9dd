"""The two consumer clients behind one small interface, so the consuming loop is written once.

Each adapter reports rebalances through ``on_revoke``/``on_assign`` callbacks (run on the polling
thread) and answers "has this group committed everything produced?", which is how members know
the load is over: every partition's committed offset has reached its high watermark.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Any, Callable

# (topic, partition, offset, timestamp_ms, nbytes, error)
Record = tuple[str, int, int, int, int, str]


class ConfluentConsumer:
    def __init__(self, bootstrap: str, group_id: str, client_id: str, settings: dict[str, Any],
                 on_commit: Callable[[float, str], None]) -> None:
        from confluent_kafka import Consumer

        self._pending: deque[float] = deque()

        def committed(err: Any, _partitions: Any) -> None:
            started = self._pending.popleft() if self._pending else time.perf_counter()
            on_commit((time.perf_counter() - started) * 1000.0, err.name() if err is not None else "")

        conf = {"bootstrap.servers": bootstrap, "group.id": group_id, "client.id": client_id,
                "enable.auto.commit": False, "auto.offset.reset": "earliest", "on_commit": committed,
                "enable.partition.eof": False, **settings}
        self.consumer = Consumer(conf)

    def subscribe(self, topics: list[str], on_assign: Callable[[int], None], on_revoke: Callable[[], None]) -> None:
        self.consumer.subscribe(topics, on_assign=lambda c, parts: on_assign(len(parts)),
                                on_revoke=lambda c, parts: on_revoke(),
                                on_lost=lambda c, parts: on_revoke())

    def assign_all(self, topics: list[str]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        self.consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self.partitions(topics)])

    def poll_batch(self, timeout_s: float) -> list[Record]:
        out: list[Record] = []
        for m in self.consumer.consume(num_messages=500, timeout=timeout_s):
            err = m.error()
            if err is not None:
                out.append((m.topic() or "", m.partition() or -1, -1, 0, 0, err.name()))
                continue
            value = m.value()
            out.append((m.topic(), m.partition(), m.offset(), m.timestamp()[1], len(value) if value else 0, ""))
        return out

    def commit(self, sync: bool) -> None:
        from confluent_kafka import KafkaException

        self._pending.append(time.perf_counter())
        try:
            self.consumer.commit(asynchronous=not sync)
        except KafkaException:
            pass  # nothing to commit yet (_NO_OFFSET), or a rebalance is in progress: the callback reports it

    def partitions(self, topics: list[str]) -> list[tuple[str, int]]:
        md = self.consumer.list_topics(timeout=10)
        return [(t, p) for t in topics if t in md.topics for p in md.topics[t].partitions]

    def lag(self, topics: list[str], group: bool) -> int:
        """Messages not yet committed (group) or not yet read (standalone) on every partition."""
        from confluent_kafka import TopicPartition

        tps = [TopicPartition(t, p) for t, p in self.partitions(topics)]
        done = self.consumer.committed(tps, timeout=10) if group else self.consumer.position(tps)
        total = 0
        for tp in done:
            _low, high = self.consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10,
                                                             cached=False)
            total += max(0, high - max(tp.offset, 0))
        return total

    def high_watermark(self, topic: str, partition: int) -> int:
        from confluent_kafka import TopicPartition

        return self.consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1]

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonConsumer:
    def __init__(self, bootstrap: str, group_id: str | None, client_id: str, settings: dict[str, Any],
                 on_commit: Callable[[float, str], None]) -> None:
        from kafka import KafkaConsumer

        self._on_commit = on_commit
        self._commit_in_flight = False   # written by the polling thread and by the commit callback (same thread)
        extra = {k.replace(".", "_"): v for k, v in settings.items()}
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=group_id,
                                      client_id=client_id, enable_auto_commit=False,
                                      auto_offset_reset="earliest", **extra)

    def subscribe(self, topics: list[str], on_assign: Callable[[int], None], on_revoke: Callable[[], None]) -> None:
        from kafka import ConsumerRebalanceListener

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                on_revoke()

            def on_partitions_assigned(self, assigned: Any) -> None:
                on_assign(len(assigned))

        self.consumer.subscribe(topics, listener=Listener())

    def assign_all(self, topics: list[str]) -> None:
        from kafka import TopicPartition

        tps = [TopicPartition(t, p) for t, p in self.partitions(topics)]
        self.consumer.assign(tps)
        self.consumer.seek_to_beginning(*tps)

    def poll_batch(self, timeout_s: float) -> list[Record]:
        out: list[Record] = []
        for tp, records in self.consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=500).items():
            for r in records:
                out.append((tp.topic, tp.partition, r.offset, r.timestamp, len(r.value) if r.value else 0, ""))
        return out

    def commit(self, sync: bool) -> None:
        started = time.perf_counter()
        if sync:
            try:
                self.consumer.commit()
                self._on_commit((time.perf_counter() - started) * 1000.0, "")
            except Exception as exc:
                self._on_commit((time.perf_counter() - started) * 1000.0, type(exc).__name__)
            return

        if self._commit_in_flight:
            return  # kafka-python fails commits beyond its in-flight limit (NodeNotReadyError): one at a time

        def done(_offsets: Any, response: Any) -> None:
            self._commit_in_flight = False
            err = type(response).__name__ if isinstance(response, BaseException) else ""
            self._on_commit((time.perf_counter() - started) * 1000.0, err)

        self._commit_in_flight = True
        self.consumer.commit_async(callback=done)

    def partitions(self, topics: list[str]) -> list[tuple[str, int]]:
        return [(t, p) for t in topics for p in sorted(self.consumer.partitions_for_topic(t) or ())]

    def lag(self, topics: list[str], group: bool) -> int:
        from kafka import TopicPartition

        tps = [TopicPartition(t, p) for t, p in self.partitions(topics)]
        ends = self.consumer.end_offsets(tps)
        total = 0
        for tp in tps:
            done = self.consumer.committed(tp) if group else self.consumer.position(tp)
            total += max(0, ends[tp] - (done or 0))
        return total

    def high_watermark(self, topic: str, partition: int) -> int:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        return int(self.consumer.end_offsets([tp])[tp])

    def close(self) -> None:
        self.consumer.close()


def make_consumer(client: str, bootstrap: str, group_id: str | None, client_id: str, settings: dict[str, Any],
                  on_commit: Callable[[float, str], None]) -> ConfluentConsumer | KafkaPythonConsumer:
    if client == "kafka-python":
        return KafkaPythonConsumer(bootstrap, group_id, client_id, settings, on_commit)
    # librdkafka needs a group id even for a consumer that only assigns; it never joins with it.
    return ConfluentConsumer(bootstrap, group_id or f"loadgen-standalone-{client_id}", client_id, settings, on_commit)
