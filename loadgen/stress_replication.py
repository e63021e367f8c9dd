"""``kafka-emu stress replication``: acks=all production while brokers are stopped and restarted.

An idempotent confluent-kafka producer writes numbered messages with acks=all to a topic with
replication factor 3 and ``min.insync.replicas=2``, while a fault thread repeatedly stops one
broker (a partition leader when it can) and starts it again, never more than one down at a time.
Afterwards, with every broker back, a consumer reads every partition from the beginning.

Checked: every acknowledged message is in the log exactly once, at the offset its
acknowledgement reported, and each partition holds the producer's messages in sequence order.
Deliveries that failed are allowed (and counted): the contract is about what was acknowledged.
"""
from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from typing import Any

import structlog

from kafka_emu.loadgen.embedded import close_cluster, start_cluster
from kafka_emu.loadgen.errors import LoadgenError
from kafka_emu.loadgen.pacing import Pacer
from kafka_emu.loadgen.target import QUIET, create_topics
from kafka_emu.loadgen.spec import TopicSpec
from kafka_emu.loadgen.verdict import Verdict, add_run_options, run_duration
from kafka_emu.metrics.progress import progress, progress_enabled

_log = structlog.get_logger("loadgen.stress_replication")

TOPIC = "stress-replication"


class FaultInjector(threading.Thread):
    """Stops one broker, waits, starts it again, waits; ``rounds`` times or until stopped."""

    def __init__(self, cluster: Any, broker_ids: list[int], down_s: float, up_s: float, rounds: int | None,
                 seed: int, leaders: Any) -> None:
        super().__init__(name="stress-replication-faults", daemon=True)
        self.cluster = cluster
        self.broker_ids = broker_ids
        self.down_s = down_s
        self.up_s = up_s
        self.rounds = rounds
        self.rng = random.Random(seed)
        self.leaders = leaders
        self.stop_event = threading.Event()
        self.done = 0
        self.errors: list[str] = []

    def run(self) -> None:
        reason = "stopped"
        try:
            while not self.stop_event.is_set() and (self.rounds is None or self.done < self.rounds):
                if self.stop_event.wait(self.up_s):
                    break
                leaders = [b for b in self.leaders() if b in self.broker_ids]
                victim = self.rng.choice(leaders or self.broker_ids)
                self.cluster.stop_broker(victim)
                self.stop_event.wait(self.down_s)   # stopping early still restarts the broker
                self.cluster.start_broker(victim)
                self.done += 1
        except Exception as exc:
            reason = f"error: {exc!r}"
            self.errors.append(repr(exc))
            _log.exception("fault_injector_failed", thread=self.name)
        finally:
            _log.info("thread_stopped", thread=self.name, reason=reason)


def _broker_ids(cluster: Any) -> list[int]:
    brokers = getattr(cluster, "brokers", None)
    if callable(brokers):
        brokers = brokers()
    if isinstance(brokers, dict):
        return sorted(int(k) for k in brokers)
    if brokers is not None:
        return [getattr(b, "broker_id", i) for i, b in enumerate(brokers)]
    return list(range(3))


def _read_all(bootstrap: str, partitions: int, timeout_s: float) -> dict[int, list[tuple[int, bytes]]]:
    """Every (offset, value) of every partition, read from the beginning up to the high watermark."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "stress-replication-verify",
                         "enable.auto.commit": False, "isolation.level": "read_uncommitted", **QUIET})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=15, cached=False)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any((got[p][-1][0] + 1 if got[p] else 0) < ends[p] for p in got):
            for m in consumer.consume(500, 0.5):
                if m.error() is None:
                    got[m.partition()].append((m.offset(), m.value()))
        return got
    finally:
        consumer.close()


def run_stress(duration_s: float | None, rounds: int | None, rate: float, partitions: int, down_s: float,
               up_s: float, seed: int, show_progress: bool) -> Verdict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    cluster = start_cluster(3, {"min.insync.replicas": 2})
    try:
        bootstrap = cluster.bootstrap_servers
        create_topics(bootstrap, (TopicSpec(TOPIC, partitions, 3),), 3)
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})

        def leaders() -> list[int]:
            try:
                md = admin.list_topics(TOPIC, timeout=2)
                return sorted({p.leader for p in md.topics[TOPIC].partitions.values() if p.leader >= 0})
            except Exception:
                return []

        acked: dict[bytes, tuple[int, int]] = {}
        failed: dict[str, int] = {}

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                acked[msg.value()] = (msg.partition(), msg.offset())
            else:
                failed[err.name()] = failed.get(err.name(), 0) + 1

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 2, "message.timeout.ms": 60000, "retry.backoff.ms": 50, **QUIET})
        faults = FaultInjector(cluster, _broker_ids(cluster), down_s, up_s, rounds, seed, leaders)
        stop = threading.Event()
        started = time.time()
        limit = duration_s if duration_s is not None else float("inf")
        pacer = Pacer(rate, started, started + limit, stop)
        bar = progress(total=rounds if rounds is not None else int(limit), desc="replication",
                       enabled=show_progress, unit="round" if rounds is not None else "s")
        faults.start()
        seq = 0
        try:
            while pacer.running() and (rounds is None or faults.is_alive()):
                for _ in range(pacer.due()):
                    try:
                        producer.produce(TOPIC, value=b"%010d" % seq, key=b"%d" % (seq % 64),
                                         on_delivery=on_delivery)
                    except BufferError:
                        producer.poll(0.05)
                        continue
                    seq += 1
                    pacer.sent += 1
                producer.poll(0)
                bar.n = faults.done if rounds is not None else int(time.time() - started)
                bar.refresh()
                pacer.wait_next()
        finally:
            faults.stop_event.set()
            faults.join(30)
            bar.close()
        unsent = producer.flush(60)
        elapsed = time.time() - started
        got = _read_all(bootstrap, partitions, timeout_s=60)
    finally:
        close_cluster(cluster)

    where: dict[bytes, list[tuple[int, int]]] = {}
    for p, records in got.items():
        for offset, value in records:
            where.setdefault(value, []).append((p, offset))
    lost = [v for v in acked if v not in where]
    moved = [v for v, at in acked.items() if v in where and at not in where[v]]
    duplicated = sum(1 for places in where.values() if len(places) > 1)
    out_of_order = 0
    for records in got.values():
        seqs = [int(v) for _, v in records]
        out_of_order += sum(1 for a, b in zip(seqs, seqs[1:]) if b <= a)
    v = Verdict("stress replication")
    v.check("messages acknowledged", len(acked), "> 0", len(acked) > 0)
    v.check("broker stop/start rounds", faults.done, f">= {rounds if rounds is not None else 1}",
            faults.done >= (rounds if rounds is not None else 1) and not faults.errors)
    v.check("acknowledged but lost", len(lost), "0", not lost)
    v.check("acknowledged at another offset", len(moved), "0", not moved)
    v.check("duplicated in the log", duplicated, "0", duplicated == 0)
    v.check("out of order within a partition", out_of_order, "0", out_of_order == 0)
    v.check("unflushed at the end", unsent, "0", unsent == 0)
    v.stats = {"sent": seq, "acked": len(acked), "failed": sum(failed.values()),
               "failed_by_error": failed, "in_log": sum(len(r) for r in got.values()),
               "seconds": round(elapsed, 1), "partitions": partitions}
    if lost:
        v.stats["first_lost"] = [x.decode() for x in lost[:5]]
    return v


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import positive_float, positive_int

    add_run_options(parser, default_duration=20.0)
    parser.add_argument("--rate", type=positive_float, default=500.0, help="messages per second")
    parser.add_argument("--partitions", type=positive_int, default=3, help="partitions of the produced topic")
    parser.add_argument("--down", type=positive_float, default=2.0, help="seconds a stopped broker stays down")
    parser.add_argument("--up", type=positive_float, default=2.0,
                        help="seconds between a restart and the next stop")


def run(args: argparse.Namespace) -> int:
    try:
        verdict = run_stress(run_duration(args), args.count, args.rate, args.partitions, args.down, args.up,
                             args.seed, progress_enabled(args))
    except LoadgenError as exc:
        print(f"kafka-emu stress replication: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return verdict.emit(args.json)
