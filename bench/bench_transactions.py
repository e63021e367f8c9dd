"""``kafka-emu bench transactions``: transactions per second and commit latency, in process.

Three brokers, replication factor 3, ``--producers`` transactional producers (one thread each)
sending kio requests straight into the brokers' request channels (the full broker path, no
sockets). A transaction is what a client sends: AddPartitionsToTxn for its partitions, one
Produce (acks=all) with a transactional batch of ``--records`` records per partition, EndTxn
(commit). The next transaction's AddPartitionsToTxn is answered CONCURRENT_TRANSACTIONS while
the previous one's markers are still being written; it is retried after 1 ms, as clients retry
it (the retries are counted). Two shapes run in one invocation: one partition per transaction
and ``--partitions`` partitions per transaction. Reported: transactions/s, records/s, commit
latency (EndTxn round trip) p50/p99, transaction latency p50/p99.

Naive comparator, in the same run: the same Produce requests sent idempotently without a
transaction (no AddPartitionsToTxn, no EndTxn, no markers); the ratio is transactional records/s
over idempotent records/s (what exactly-once costs here). ``--json`` prints one JSON object.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from datetime import timedelta
from typing import Any

from kio.index import load_request_schema

from kafka_emu.bench.bench_util import emit, percentile
from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster
from kafka_emu.broker.cluster.inprocess_client import send
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

TRANSACTIONAL = 0x10
PRODUCE_VERSION = 9
TXN_PARTITIONS = 5


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import non_negative_float, positive_float, positive_int

    parser.add_argument("--seconds", type=positive_float, default=4.0, help="measured seconds per shape and mode")
    parser.add_argument("--warmup", type=non_negative_float, default=0.5, help="unmeasured seconds per shape and mode")
    parser.add_argument("--producers", type=positive_int, default=4, help="concurrent transactional producers")
    parser.add_argument("--partitions", type=positive_int, default=8,
                        help="partitions per transaction of the many-partition shape")
    parser.add_argument("--records", type=positive_int, default=10, help="records per partition per transaction")
    parser.add_argument("--switch-interval-ms", type=non_negative_float, default=1.0,
                        help="sys.setswitchinterval for this process (Python's is 5 ms); 0 keeps Python's")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


class _Producer:
    """One transactional (or idempotent) producer speaking to the brokers' request channels."""

    def __init__(self, cluster: EmbeddedCluster, topic: str, partitions: list[int], records: int,
                 transactional_id: str | None) -> None:
        self.cluster = cluster
        self.topic = topic
        self.partitions = partitions
        self.records = [(None, b"v" * 100)] * records
        self.transactional_id = transactional_id
        self.sequences = dict.fromkeys(partitions, 0)
        self.add_retries = 0
        self.coordinator = cluster.broker(self._find_coordinator() if transactional_id
                                          else cluster.live_brokers()[0]).request_channel
        r = send(self.coordinator, ApiKeys.INIT_PRODUCER_ID, 4, load_request_schema(ApiKeys.INIT_PRODUCER_ID, 4)(
            transactional_id=transactional_id, transaction_timeout=timedelta(seconds=60), producer_id=-1,
            producer_epoch=-1))
        assert r.body.error_code == Errors.NONE, r.body
        self.producer_id, self.epoch = int(r.body.producer_id), int(r.body.producer_epoch)
        self.leaders: dict[int, list[int]] = {}
        for p in partitions:
            self.leaders.setdefault(cluster.leader_of(topic, p), []).append(p)

    def _find_coordinator(self) -> int:
        """FindCoordinator (key type 1), as a client does first; it creates __transaction_state."""
        any_broker = self.cluster.broker(self.cluster.live_brokers()[0]).request_channel
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = send(any_broker, ApiKeys.FIND_COORDINATOR, 1, load_request_schema(ApiKeys.FIND_COORDINATOR, 1)(
                key=self.transactional_id, key_type=1))
            if r.body.error_code == Errors.NONE:
                return int(r.body.node_id)
            time.sleep(0.01)
        raise RuntimeError(f"no transaction coordinator for {self.transactional_id}")

    def _produce(self) -> None:
        cls = load_request_schema(ApiKeys.PRODUCE, PRODUCE_VERSION)
        mod = __import__(cls.__module__, fromlist=["TopicProduceData"])
        for leader, parts in self.leaders.items():
            data = []
            for p in parts:
                batch = build_batch(self.records, producer_id=self.producer_id, producer_epoch=self.epoch,
                                    base_sequence=self.sequences[p],
                                    attributes=TRANSACTIONAL if self.transactional_id else 0)
                self.sequences[p] = (self.sequences[p] + len(self.records)) % 0x80000000
                data.append(mod.PartitionProduceData(index=p, records=batch))
            body = cls(transactional_id=self.transactional_id, acks=-1, timeout=timedelta(seconds=30),
                       topic_data=(mod.TopicProduceData(name=self.topic, partition_data=tuple(data)),))
            r = send(self.cluster.broker(leader).request_channel, ApiKeys.PRODUCE, PRODUCE_VERSION, body)
            codes = [pr.error_code for t in r.body.responses for pr in t.partition_responses]
            assert all(c == Errors.NONE for c in codes), codes

    def transaction(self) -> float:
        """One committed transaction; returns the EndTxn round trip in seconds."""
        add_cls = load_request_schema(ApiKeys.ADD_PARTITIONS_TO_TXN, 3)
        mod = __import__(add_cls.__module__, fromlist=["AddPartitionsToTxnTopic"])
        add = add_cls(v3_and_below_transactional_id=self.transactional_id, v3_and_below_producer_id=self.producer_id,
                      v3_and_below_producer_epoch=self.epoch, v3_and_below_topics=(
                          mod.AddPartitionsToTxnTopic(name=self.topic, partitions=tuple(self.partitions)),))
        while True:
            r = send(self.coordinator, ApiKeys.ADD_PARTITIONS_TO_TXN, 3, add)
            code = r.body.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            if code == Errors.NONE:
                break
            assert code == Errors.CONCURRENT_TRANSACTIONS, code
            self.add_retries += 1
            time.sleep(0.001)
        self._produce()
        t0 = time.perf_counter()
        r = send(self.coordinator, ApiKeys.END_TXN, 3, load_request_schema(ApiKeys.END_TXN, 3)(
            transactional_id=self.transactional_id, producer_id=self.producer_id, producer_epoch=self.epoch,
            committed=True))
        assert r.body.error_code == Errors.NONE, r.body
        return time.perf_counter() - t0

    def idempotent_round(self) -> None:
        self._produce()


def _run_shape(cluster: EmbeddedCluster, args: argparse.Namespace, n_partitions: int, transactional: bool,
               shape: str) -> dict[str, Any]:
    topic = f"bench-{shape}-{'txn' if transactional else 'idem'}"
    cluster.create_topic(topic, max(n_partitions, args.producers), 3)
    producers = [_Producer(cluster, topic, [(i + k) % max(n_partitions, args.producers) for k in range(n_partitions)],
                           args.records, f"bench-{topic}-{i}" if transactional else None)
                 for i in range(args.producers)]
    lock = threading.Lock()
    state = {"measuring": False, "stop": False}
    commits: list[float] = []
    totals: list[float] = []
    count = [0]
    failures: list[BaseException] = []

    def loop(p: _Producer) -> None:
        while not state["stop"]:
            t0 = time.perf_counter()
            try:
                commit = p.transaction() if transactional else (p.idempotent_round() or 0.0)
            except BaseException as e:  # noqa: BLE001 - re-raised on the bench's thread below
                failures.append(e)
                return
            elapsed = time.perf_counter() - t0
            with lock:
                if state["measuring"]:
                    count[0] += 1
                    commits.append(commit)
                    totals.append(elapsed)

    threads = [threading.Thread(target=loop, args=(p,), name=f"bench-producer-{i}", daemon=True)
               for i, p in enumerate(producers)]
    for t in threads:
        t.start()
    time.sleep(args.warmup)
    with lock:
        state["measuring"] = True
    t0 = time.perf_counter()
    time.sleep(args.seconds)
    with lock:
        state["measuring"] = False
        n = count[0]
    elapsed = time.perf_counter() - t0
    state["stop"] = True
    for t in threads:
        t.join(30)
    if failures:
        raise RuntimeError(f"a {shape} producer failed: {failures[0]!r}") from failures[0]
    commits.sort()
    totals.sort()
    records = n * n_partitions * args.records
    return {"rounds": n, "rounds_per_s": round(n / elapsed, 1), "records_per_s": round(records / elapsed, 1),
            "commit_ms_p50": round(percentile(commits, 50) * 1000, 3) if transactional else None,
            "commit_ms_p99": round(percentile(commits, 99) * 1000, 3) if transactional else None,
            "round_ms_p50": round(percentile(totals, 50) * 1000, 3),
            "round_ms_p99": round(percentile(totals, 99) * 1000, 3),
            "add_partitions_retries": sum(p.add_retries for p in producers)}


def _ratio(ratio: float | None) -> str:
    """The ratio cell; a run too short for the comparator to land a record has none."""
    return "n/a" if ratio is None else f"{ratio:.2f}"


def run(args: argparse.Namespace) -> int:
    if args.switch_interval_ms > 0:
        sys.setswitchinterval(args.switch_interval_ms / 1000.0)
    config = {"listeners": "", "num.io.threads": 4, "transaction.state.log.num.partitions": TXN_PARTITIONS}
    result: dict[str, Any] = {"producers": args.producers, "records_per_partition": args.records, "shapes": {}}
    with EmbeddedCluster(brokers=3, config=config) as cluster:
        for shape, n_partitions in (("one_partition", 1), (f"{args.partitions}_partitions", args.partitions)):
            txn = _run_shape(cluster, args, n_partitions, True, shape)
            idem = _run_shape(cluster, args, n_partitions, False, shape)
            result["shapes"][shape] = {
                "partitions_per_transaction": n_partitions, "transactional": txn, "idempotent": idem,
                "transactional_over_idempotent_records": round(txn["records_per_s"] / idem["records_per_s"], 3)
                if idem["records_per_s"] else None}
    table: list[tuple[str, ...]] = [("shape", "tx/s", "records/s", "commit p50 ms", "commit p99 ms",
                                     "idempotent records/s", "ratio")]
    for shape, r in result["shapes"].items():
        t, i = r["transactional"], r["idempotent"]
        table.append((shape, f"{t['rounds_per_s']:.1f}", f"{t['records_per_s']:.0f}", f"{t['commit_ms_p50']:.2f}",
                      f"{t['commit_ms_p99']:.2f}", f"{i['records_per_s']:.0f}",
                      _ratio(r["transactional_over_idempotent_records"])))
    emit(result, args.json, table)
    return 0
