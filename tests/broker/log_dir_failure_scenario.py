"""A log directory fills up under acks=all load: run inside a mount namespace by
``test_log_dir_failure.py`` (``python log_dir_failure_scenario.py BASE SIZE jbod|single``).

Broker 0 of a 3-broker cluster has ``BASE/x/broker-0`` as a log directory, a tmpfs of SIZE
mounted here (the namespace is the test's: the mount goes with the process), and with ``jbod``
a second one, ``BASE/y/broker-0``, on the ordinary disk (the other brokers' are all there). A confluent-kafka producer writes acks=all to a
6-partition RF 3 topic (min.insync.replicas 2) until well after the tmpfs is full. Then the
scenario reads everything back and prints one JSON object: what DescribeLogDirs says of broker
0's directories, the partitions' leaders and offline replicas before and after, which
acknowledged messages the log no longer has, and whether broker 0 is still serving.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    base, size, layout = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    small = base / "x" / "broker-0"
    small.mkdir(parents=True)
    log_dirs = f"{base / 'x'},{base / 'y'}" if layout == "jbod" else str(base / "x")
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(small)], check=True)

    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from kafka import KafkaAdminClient

    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    topic, partitions = "filling", 6
    cluster = EmbeddedCluster(brokers=3, config={"log.dirs": log_dirs, "min.insync.replicas": 2, "log.level": "error"})
    out: dict = {}
    try:
        cluster.create_topic(topic, partitions, 3)
        broker0 = cluster.broker(0)
        in_small = sorted(p for (t, p), log in broker0.replica_manager.logs.items()
                          if t == topic and log.dir.parent == small)
        out["partitions_in_small_dir"] = in_small
        out["leaders_before"] = {p: cluster.leader_of(topic, p) for p in range(partitions)}
        acked: list[tuple[int, int, bytes]] = []
        errors: dict[str, int] = {}

        def on_delivery(err: object, msg: object) -> None:
            if err is None:
                acked.append((msg.partition(), msg.offset(), msg.value()))
            else:
                errors[err.name()] = errors.get(err.name(), 0) + 1

        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 30000,
                             "retry.backoff.ms": 50, "log_level": 0})
        value = b"v" * 1000
        sent = 0
        failed_at = None   # messages sent when the directory went offline
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                producer.produce(topic, value=b"%08d" % sent + value, key=b"%d" % sent, on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.05)
                continue
            producer.poll(0)
            sent += 1
            if sent % 100 == 0:
                producer.poll(0.01)
            if failed_at is None and (broker0.replica_manager.log_manager.offline_log_dirs or broker0.stopped):
                failed_at = sent
            if failed_at is not None and sent >= failed_at + 1000:   # and on for a while
                break
        out["unflushed"] = producer.flush(30)
        out["sent"], out["sent_before_failure"] = sent, failed_at
        out["acked"], out["delivery_errors"] = len(acked), errors
        if not broker0.stopped:
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
            try:
                dirs = [r for r in admin.describe_log_dirs() if r["broker"] == 0][0]["log_dirs"]
            finally:
                admin.close()
            out["broker0_log_dirs"] = {d["log_dir"]: {"error_code": d["error_code"], "partitions": sum(
                len(t["partitions"]) for t in d["topics"])} for d in dirs}
        out["small_dir"], out["other_dir"] = str(small), str(base / "y" / "broker-0")
        states = {p: cluster.partition_state(topic, p) for p in range(partitions)}
        out["leaders_after"] = {p: st.leader for p, st in states.items()}
        out["offline_replicas"] = {p: list(st.offline_replicas) for p, st in states.items()}
        out["broker0_stopped"] = broker0.stopped
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "verify",
                             "enable.auto.commit": False, "log_level": 0})
        try:
            ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                    for p in range(partitions)}
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            got: dict[tuple[int, int], bytes] = {}
            read_deadline = time.monotonic() + 30
            while time.monotonic() < read_deadline and sum(ends.values()) > len(got):
                for msg in consumer.consume(1000, 0.5):
                    if msg.error() is None:
                        got[(msg.partition(), msg.offset())] = msg.value()
        finally:
            consumer.close()
        out["lost"] = sum(1 for p, o, v in acked if got.get((p, o)) != v)
        out["in_log"] = len(got)
        # broker 0 still serves the partitions in its healthy directory
        out["broker0_leads"] = sorted(p for p in range(partitions) if cluster.leader_of(topic, p) == 0)
    finally:
        cluster.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
