"""``kafka-emu bench share``: share-group (KIP-932) fetch throughput against a classic group in the
same run, and when an expired acquisition lock makes records deliverable again, on the manual
clock.

Throughput: an ``EmbeddedCluster`` of 3 brokers (its defaults, with
``group.share.partition.max.record.locks`` raised to 5000, see ``MAX_RECORD_LOCKS``, and
``__share_group_state`` created before the run, as the first share group of a cluster creates it),
a one-partition topic with replication factor 3 holding ``--records`` records (``--record-bytes`` each, produced in batches of
500). In a ``spawn`` child (so the clients do not share the brokers' interpreter lock), one
confluent-kafka classic ``Consumer`` reads the partition to its end; then three ``ShareConsumer``s
of one share group (implicit acknowledgement) read it until every record was delivered. Every
member, classic and share alike, polls on its own thread, as applications run one consumer per
thread: a member whose fetch waits for record locks is answered as soon as another member's poll
acknowledges, not when a shared poll loop comes back to it. Each side is timed from its subscribe
to its last record, joining included (``group.initial.rebalance.delay.ms`` is 0 here, so the classic
group's join is not Kafka's 3 s wait; from the first record alone the classic side would time only
what librdkafka prefetched during the join); records/s of both and the ratio share/classic (target: at least 0.5); duplicates (a
record delivered twice) must be 0.

Lock expiry: an ``EmbeddedCluster(brokers=1, time="manual")``; a member acquires 100 records
through the broker's ``SharePartitionManager``; the manual clock is then advanced 1 ms at a time
from ``duration - 2`` until the records are available again; the measured delay must be the
configured ``group.share.record.lock.duration.ms`` within one timer tick (1 ms).
"""
from __future__ import annotations

import argparse
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

from kafka_emu.bench.bench_util import child_result, emit

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message, ShareConsumer

    Member = Consumer | ShareConsumer

TOPIC = "bench-share"
BATCH = 500
# in-flight records per share partition: each ShareConsumer holds the batch it is processing and
# the one librdkafka prefetched (500 records each), so three of them need 3000; at Kafka's default
# of 2000 a member's fetch waits until another member's next poll acknowledges its batch
MAX_RECORD_LOCKS = 5000
LOCK_MS = 15_000
SHARE_MEMBERS = 3
POLL_S = 0.2      # a member's poll timeout: how soon it sees the stop event, not how fast it reads
READ_TIMEOUT_S = 120
THREADING = "one poll thread per member"


class _GroupReaders:
    """The members of one group, each polling on its own named thread, as an application runs one
    consumer per thread (a client's handle is not shared between threads). Every member subscribes,
    polls until ``stop`` is set, then closes its consumer; the distinct offsets delivered are counted
    under ``_lock``. ``all_read`` is set by the member whose poll completes the partition (its time is
    the side's end) and by a member that fails, whose exception ``read`` re-raises on the caller's
    thread after stopping the others, so no member dies unnoticed."""

    def __init__(self, name: str, consumers: list[Member],
                 poll: Callable[[Member], Sequence[Message]], records: int) -> None:
        self._poll = poll
        self._records = records
        self._lock = threading.Lock()
        self.seen: dict[int, int] = {}         # offset -> deliveries, guarded by _lock
        self.finished_at: float | None = None  # perf_counter of the completing poll, guarded by _lock
        self._failures: list[tuple[str, BaseException]] = []   # (thread name, exception), guarded by _lock
        self.stop = threading.Event()
        self.all_read = threading.Event()
        self._threads = [threading.Thread(target=self._member, args=(c,), name=f"{name}-member-{i}", daemon=True)
                         for i, c in enumerate(consumers)]

    def _member(self, consumer: Member) -> None:
        try:
            try:
                consumer.subscribe([TOPIC])
                while not self.stop.is_set():
                    offsets = [m.offset() for m in self._poll(consumer) if m.error() is None]
                    now = time.perf_counter()
                    with self._lock:
                        for offset in offsets:
                            self.seen[offset] = self.seen.get(offset, 0) + 1
                        if len(self.seen) >= self._records and self.finished_at is None:
                            self.finished_at = now
                            self.all_read.set()
            finally:
                consumer.close()
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread by read
            with self._lock:
                self._failures.append((threading.current_thread().name, e))
            self.all_read.set()

    def read(self, timeout_s: float) -> dict[str, Any]:
        """Start the members, wait until every record was delivered (or ``timeout_s``), stop them;
        records (distinct), seconds from the start to the completing poll, duplicates."""
        start = time.perf_counter()
        for t in self._threads:
            t.start()
        self.all_read.wait(timeout_s)
        stopped_at = time.perf_counter()
        self.stop.set()
        for t in self._threads:
            t.join(30)
        alive = [t.name for t in self._threads if t.is_alive()]
        if self._failures:
            name, e = self._failures[0]
            raise RuntimeError(f"{name} failed: {e!r}") from e
        if alive:
            raise RuntimeError(f"{', '.join(alive)} did not stop within 30 s")
        end = stopped_at if self.finished_at is None else self.finished_at
        return {"records": len(self.seen), "seconds": end - start,
                "duplicates": sum(v - 1 for v in self.seen.values())}


def _read_child(bootstrap: str, records: int, out: Any) -> None:
    """In a spawn child: the classic reader, then the share group's members, each member on its own
    thread; their timings, or the first member's failure as {"error": ...} (the parent raises it)."""
    from confluent_kafka import Consumer, ShareConsumer

    try:
        classic = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-classic",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 50})
        c = _GroupReaders("bench-classic", [classic], lambda m: m.consume(1000, POLL_S), records).read(READ_TIMEOUT_S)
        share = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "bench-share"})
                 for _ in range(SHARE_MEMBERS)]
        s = _GroupReaders("bench-share", share, lambda m: m.poll(POLL_S) or [], records).read(READ_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - handed to the parent, which raises it
        out.put({"error": repr(e)})
        raise
    out.put({"classic": {"records": c["records"], "seconds": c["seconds"]}, "share": s})


def run_throughput(records: int, record_bytes: int, max_record_locks: int = MAX_RECORD_LOCKS) -> dict[str, Any]:
    import confluent_kafka  # noqa: F401 - refuse now, with one line, if the extra is missing
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    from kafka_emu.coordinator.share.config import SHARE_GROUP_STATE_TOPIC, state_topic_configs

    config = {"log.level": "warning", "group.initial.rebalance.delay.ms": 0,
              "group.share.partition.max.record.locks": max_record_locks}
    with EmbeddedCluster(brokers=3, config=config) as cluster:
        cluster.create_topic(TOPIC, 1, 3)
        broker = cluster.broker_config(0)
        cluster.metadata.ensure_internal_topic(   # the share coordinators' topic, as a first share group creates it
            SHARE_GROUP_STATE_TOPIC, broker["share.coordinator.state.topic.num.partitions"],
            broker["share.coordinator.state.topic.replication.factor"], state_topic_configs(broker))
        payload = b"x" * record_bytes
        for base in range(0, records, BATCH):
            error, _ = cluster.produce(TOPIC, 0, [(None, payload)] * min(BATCH, records - base))
            assert error == 0, error
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        resource = ConfigResource(ResourceType.GROUP, "bench-share", incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)
        timings = child_result(_read_child, (cluster.bootstrap_servers, records), "bench-share-readers",
                               2 * READ_TIMEOUT_S + 60)
    if "error" in timings:
        raise RuntimeError(f"bench share: a reader failed: {timings['error']}")
    out: dict[str, Any] = {"records": records, "record_bytes": record_bytes, "max_record_locks": max_record_locks,
                           "threading": THREADING}
    for side in ("classic", "share"):
        t = timings[side]
        out[side] = {**t, "seconds": round(t["seconds"], 3),
                     "records_per_s": round(t["records"] / t["seconds"]) if t["seconds"] else None}
    classic, share = out["classic"]["records_per_s"], out["share"]["records_per_s"]
    out["ratio_share_classic"] = round(share / classic, 3) if classic and share else None
    out["ok"] = (out["ratio_share_classic"] is not None and out["ratio_share_classic"] >= 0.5
                 and out["share"]["records"] == records and out["share"]["duplicates"] == 0)
    return out


def run_lock_expiry(lock_ms: int = LOCK_MS) -> dict[str, Any]:
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
    from kafka_emu.broker.server.share.share_partition import RecordState
    from kafka_emu.broker.server.share.share_partition_manager import ShareFetchRequestState

    config = {"log.level": "warning", "listeners": "", "share.coordinator.state.topic.num.partitions": 1,
              "group.share.record.lock.duration.ms": lock_ms}
    with EmbeddedCluster(brokers=1, config=config, time="manual") as cluster:
        cluster.create_topic("bench-lock", 1, 1)
        cluster.metadata.alter_group_configs("bench-lock", lambda c: {**c, "share.auto.offset.reset": "earliest"})
        cluster.produce("bench-lock", 0, [(None, b"v")] * 100)
        manager = cluster.servers[0].share_partition_manager
        topic_id = cluster.metadata.topic_id("bench-lock")
        answered = threading.Event()
        state = ShareFetchRequestState("bench-lock", "m1", [(topic_id, 0)], 1 << 20, 500, False)
        acquired_at = cluster.time.milliseconds()
        deadline = time.monotonic() + 30
        while not state.results and time.monotonic() < deadline:   # the first fetch initializes the partition
            manager.fetch(state, 0, lambda results: answered.set())
            time.sleep(0.01)
            acquired_at = cluster.time.milliseconds()
        sp = manager.share_partition("bench-lock", topic_id, 0)[1]
        assert sp is not None and sp.in_flight()[0][2] is RecordState.ACQUIRED
        cluster.advance_time(lock_ms - 2)
        steps = lock_ms - 2
        while sp.in_flight()[0][2] is RecordState.ACQUIRED and steps < lock_ms + 10:
            cluster.advance_time(1)
            steps += 1
        measured = cluster.time.milliseconds() - acquired_at
    return {"lock_duration_ms": lock_ms, "available_after_ms": measured, "tick_ms": 1,
            "ok": abs(measured - lock_ms) <= 1}


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import positive_int

    parser.add_argument("--records", type=positive_int, default=100_000,
                        help="records on the one partition read by the classic consumer and the share group")
    parser.add_argument("--record-bytes", type=positive_int, default=100, help="bytes of each record's value")
    parser.add_argument("--max-record-locks", type=positive_int, default=MAX_RECORD_LOCKS,
                        help="group.share.partition.max.record.locks of the cluster (Kafka's default: 2000)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    throughput = run_throughput(args.records, args.record_bytes, args.max_record_locks)
    lock = run_lock_expiry()
    result = {"benchmark": "share", "throughput": throughput, "lock_expiry": lock}
    c, s = throughput["classic"], throughput["share"]
    table = [("reader", "records", "seconds", "records/s"),
             ("classic group (1 consumer)", str(c["records"]), str(c["seconds"]), str(c["records_per_s"])),
             ("share group (3 consumers)", str(s["records"]), str(s["seconds"]), str(s["records_per_s"])),
             (f"share/classic {throughput['ratio_share_classic']} (target >= 0.5), share duplicates "
              f"{s['duplicates']}",),
             (f"lock expiry: records available again {lock['available_after_ms']} ms after acquisition "
              f"(lock duration {lock['lock_duration_ms']} ms, tick 1 ms)",)]
    emit(result, args.json, table)
    return 0 if throughput["ok"] and lock["ok"] else 1
