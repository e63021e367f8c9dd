"""``kafka-emu bench share``: share-group (KIP-932) fetch throughput against a classic group in the
same run, and when an expired acquisition lock makes records deliverable again, on the manual
clock.

Throughput: an ``EmbeddedCluster`` of 3 brokers (its defaults, with
``group.share.partition.max.record.locks`` raised to 5000, see ``MAX_RECORD_LOCKS``, and
``__share_group_state`` created before the run, as the first share group of a cluster creates it),
a one-partition topic with replication factor 3 holding ``--records`` records (``--record-bytes`` each, produced in batches of
500). In a ``spawn`` child (so the clients do not share the brokers' interpreter lock), one
confluent-kafka classic ``Consumer`` reads the partition to its end; then three ``ShareConsumer``s
of one share group (implicit acknowledgement, polled in turn on one thread, as the issue's target
states) read it until every record was delivered. Each side is timed from its subscribe to its
last record, joining included (``group.initial.rebalance.delay.ms`` is 0 here, so the classic
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
from typing import Any

from kafka_emu.bench.bench_util import child_result, emit

TOPIC = "bench-share"
BATCH = 500
# in-flight records per share partition: each ShareConsumer holds the batch it is processing and
# the one librdkafka prefetched (500 records each), so three of them need 3000; Kafka's default
# of 2000 makes a member's fetch wait for another's acknowledgements, which this one-thread poll
# loop sends only when the waiting member's poll times out
MAX_RECORD_LOCKS = 5000
LOCK_MS = 15_000


def _read_child(bootstrap: str, records: int, out: Any) -> None:
    """In a spawn child: the classic reader, then the three share consumers; their timings."""
    from confluent_kafka import Consumer, ShareConsumer

    result: dict[str, Any] = {}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-classic", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    start = time.perf_counter()
    c.subscribe([TOPIC])
    n = 0
    while n < records and time.perf_counter() - start < 120:
        n += len([m for m in c.consume(1000, 0.2) if m.error() is None])
    result["classic"] = {"records": n, "seconds": time.perf_counter() - start}
    c.close()
    consumers = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "bench-share"}) for _ in range(3)]
    seen: dict[int, int] = {}
    start = time.perf_counter()
    for s in consumers:
        s.subscribe([TOPIC])
    while len(seen) < records and time.perf_counter() - start < 120:
        for s in consumers:
            for m in s.poll(0.05) or []:
                if m.error() is None:
                    seen[m.offset()] = seen.get(m.offset(), 0) + 1
    result["share"] = {"records": len(seen), "seconds": time.perf_counter() - start,
                       "duplicates": sum(v - 1 for v in seen.values())}
    for s in consumers:
        s.close()
    out.put(result)


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
        timings = child_result(_read_child, (cluster.bootstrap_servers, records), "bench-share-readers", 300)
    out: dict[str, Any] = {"records": records, "record_bytes": record_bytes, "max_record_locks": max_record_locks}
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
