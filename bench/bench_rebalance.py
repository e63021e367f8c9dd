"""``kafka-emu bench rebalance``: N in-process members reaching a stable assignment, with the
classic protocol (JoinGroup/SyncGroup) and with the consumer protocol (KIP-848), and heartbeat
throughput.

For each N (default 10, 100, 1000) a fresh ``GroupCoordinator`` (its own SystemTimers and
reapers, ``group.initial.rebalance.delay.ms=0``, an in-memory ``__consumer_offsets`` log that
acknowledges at once) receives N JoinGroups in one burst, as N clients starting together would
send them. Members behave like the Java client: MEMBER_ID_REQUIRED → rejoin with the id;
JoinGroup answered → SyncGroup (the leader sends an assignment for every member);
REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION on SyncGroup → rejoin; UNKNOWN_MEMBER_ID → rejoin
without an id. Callbacks only enqueue the answer; one driver thread (the members' "network
thread") reacts, so no member ever waits on another. Measured from the first JoinGroup to the
last successful SyncGroup answer: wall time, process CPU time (all threads), request count and
rebalances. Then, with the group Stable, heartbeat throughput: one thread sending heartbeats
round-robin over the members for ``--heartbeat-seconds``.

The naive comparator runs the same driver against ``NaiveCoordinator``: what one writes
without purgatories — one global lock, a dict of members, a full scan of the members on every
JoinGroup ("has everybody rejoined?") and every SyncGroup ("has everybody synced?"), session
deadlines as timestamps swept by nobody during the run. It keeps no log and does no
validation beyond member ids and generations, so it is *less* work per request; the ratio
(naive / emulator, > 1 means the emulator is faster) shows what the scans cost as N grows.

The consumer protocol (``run_consumer_protocol``) on a fresh coordinator of the same kind, a
``bench-topic`` of N partitions: N ConsumerGroupHeartbeats join in one burst (each bumps the
group epoch and runs the uniform assignor); then, as librdkafka does when an answer asks
something of it, every member heartbeats again at once with what it owns, until the group is
Stable (every member at the target epoch, nothing left to revoke or receive). Measured from the
first heartbeat: wall time, CPU time, requests and group epoch.

With real clients (``--confluent-members N``, default 10; 0 skips it): an ``EmbeddedCluster`` of 3
brokers with its defaults, a 30-partition topic (replication factor 3); N confluent-kafka
consumers in a spawn child subscribe at once, with ``group.protocol=consumer`` and then with
``classic`` (its ``group.initial.rebalance.delay.ms`` of 3 s included); measured from the first
subscribe until the members own every partition once.
"""
from __future__ import annotations

import argparse
import queue
import threading
import time
import uuid
from typing import Any, Callable

from kafka_emu.coordinator.group import GroupCoordinator
from kafka_emu.common import errors
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.coordinator_log import LogBatch
from kafka_emu.coordinator.group.records import consumer_subscription, partition_for
from kafka_emu.coordinator.group.results import (
    ConsumerGroupHeartbeatRequest, JoinGroupResult, JoinGroupResultMember, SyncGroupResult,
)
from kafka_emu.coordinator.metadata_image import StaticMetadataImage
from kafka_emu.metrics.progress import progress, progress_enabled
from kafka_emu.bench.bench_util import emit

GROUP = "bench-group"
SESSION_MS = 45_000
REBALANCE_MS = 60_000


class InstantLog:
    """A CoordinatorLog that stores records in memory and acknowledges at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: dict[int, list[tuple[int, bytes, bytes | None]]] = {}

    def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]], timeout_ms: int,
                       lock: Any, callback: Callable[[int], None], producer_id: int = -1,
                       producer_epoch: int = -1, transactional_id: str | None = None) -> None:
        with self._lock:
            log = self.records.setdefault(partition, [])
            for k, v in records:
                log.append((len(log), k, v))
        callback(Errors.NONE)

    def read_records(self, partition: int):
        with self._lock:
            return list(self.records.get(partition, []))

    def read_batches(self, partition: int) -> list[LogBatch]:
        """One plain batch per record (the benchmark writes no transactional offsets)."""
        return [LogBatch(-1, False, False, None, (r,)) for r in self.read_records(partition)]


# ---------------------------------------------------------------------------- naive comparator
class NaiveCoordinator:
    """A group coordinator as a user would first write it (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.members: dict[str, dict[str, Any]] = {}
        self.pending: set[str] = set()
        self.generation = 0
        self.state = "Empty"
        self.leader: str | None = None
        self.assignment: dict[str, bytes] | None = None
        self.rebalances = 0

    def handle_join_group(self, group_id, member_id, group_instance_id, require_known_member_id, client_id,
                          client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                          callback, reason=None, supports_skipping_assignment=False) -> None:
        answers: list[tuple[Callable, Any]] = []
        with self.lock:
            if member_id == "":
                member_id = f"{client_id}-{uuid.uuid4()}"
                if require_known_member_id:
                    self.pending.add(member_id)
                    answers.append((callback, JoinGroupResult.error_result(member_id, Errors.MEMBER_ID_REQUIRED)))
                    member_id = ""
            elif member_id not in self.members and member_id not in self.pending:
                answers.append((callback, JoinGroupResult.error_result(member_id, Errors.UNKNOWN_MEMBER_ID)))
                member_id = ""
            if member_id:
                self.pending.discard(member_id)
                m = self.members.setdefault(member_id, {"sync": None, "assignment": b""})
                m.update(join=callback, metadata=protocols[0][1], deadline=time.monotonic() + session_timeout_ms / 1000)
                if self.leader is None:
                    self.leader = member_id
                if self.state != "PreparingRebalance":
                    self.state = "PreparingRebalance"
                    self.rebalances += 1
                    for other in self.members.values():  # cancel parked syncs
                        if callable(other["sync"]):
                            answers.append((other["sync"], SyncGroupResult(error=Errors.REBALANCE_IN_PROGRESS)))
                        other["sync"] = None
                # The naive completion check: scan every member on every join.
                if not self.pending and all(m2.get("join") is not None for m2 in self.members.values()):
                    self.generation += 1
                    self.state = "CompletingRebalance"
                    self.assignment = None
                    if self.leader not in self.members:
                        self.leader = next(iter(self.members))
                    listing = [JoinGroupResultMember(mid, None, m2["metadata"]) for mid, m2 in self.members.items()]
                    for mid, m2 in self.members.items():
                        answers.append((m2["join"], JoinGroupResult(
                            listing if mid == self.leader else [], mid, self.generation, "consumer", "range",
                            self.leader, False, Errors.NONE)))
                        m2["join"] = None
        for cb, result in answers:
            cb(result)

    def handle_sync_group(self, group_id, generation, member_id, protocol_type, protocol_name, group_instance_id,
                          group_assignment, callback) -> None:
        answers: list[tuple[Callable, Any]] = []
        with self.lock:
            m = self.members.get(member_id)
            if m is None:
                answers.append((callback, SyncGroupResult(error=Errors.UNKNOWN_MEMBER_ID)))
            elif generation != self.generation:
                answers.append((callback, SyncGroupResult(error=Errors.ILLEGAL_GENERATION)))
            elif self.state == "PreparingRebalance":
                answers.append((callback, SyncGroupResult(error=Errors.REBALANCE_IN_PROGRESS)))
            else:
                m["sync"] = callback
                if member_id == self.leader:
                    self.assignment = dict(group_assignment)
                if self.assignment is not None:
                    # The naive check again: scan all members, answer whoever waits.
                    for mid, m2 in self.members.items():
                        if callable(m2["sync"]):
                            m2["assignment"] = self.assignment.get(mid, b"")
                            answers.append((m2["sync"], SyncGroupResult("consumer", "range", m2["assignment"], Errors.NONE)))
                            m2["sync"] = "done"
                    if all(m2["sync"] == "done" for m2 in self.members.values()):
                        self.state = "Stable"
                        for m2 in self.members.values():
                            m2["sync"] = None
        for cb, result in answers:
            cb(result)

    def handle_heartbeat(self, group_id, member_id, group_instance_id, generation_id, callback) -> None:
        with self.lock:
            m = self.members.get(member_id)
            if m is None:
                err = Errors.UNKNOWN_MEMBER_ID
            elif generation_id != self.generation:
                err = Errors.ILLEGAL_GENERATION
            else:
                m["deadline"] = time.monotonic() + SESSION_MS / 1000
                err = Errors.REBALANCE_IN_PROGRESS if self.state == "PreparingRebalance" else Errors.NONE
        callback(err)


# ---------------------------------------------------------------------------- the members
def run_join_sync(coordinator: Any, n: int, show: bool) -> dict[str, Any]:
    """Drive N members through join and sync; return timings and counts."""
    events: queue.SimpleQueue = queue.SimpleQueue()
    member_ids = [""] * n
    synced_gen = [-1] * n
    requests = 0
    metadata = consumer_subscription(["bench-topic"])

    def join(i: int) -> None:
        nonlocal requests
        requests += 1
        coordinator.handle_join_group(GROUP, member_ids[i], None, True, f"member-{i}", "127.0.0.1",
                                      REBALANCE_MS, SESSION_MS, "consumer", [("range", metadata)],
                                      lambda r, i=i: events.put(("join", i, r)))

    def sync(i: int, r: JoinGroupResult) -> None:
        nonlocal requests
        requests += 1
        assignment = {m.member_id: b"a" for m in r.members} if r.leader_id == r.member_id else {}
        coordinator.handle_sync_group(GROUP, r.generation_id, r.member_id, "consumer", r.protocol_name, None,
                                      assignment, lambda s, i=i, g=r.generation_id: events.put(("sync", i, (g, s))))

    bar = progress(n, f"join/sync {n}", enabled=show, unit="member")
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(n):  # the burst: every client starts at once
        join(i)
    done = 0
    final_gen = -1
    while done < n:
        kind, i, payload = events.get(timeout=60)
        if kind == "join":
            r: JoinGroupResult = payload
            if r.error == Errors.MEMBER_ID_REQUIRED:
                member_ids[i] = r.member_id
                join(i)
            elif r.error == Errors.UNKNOWN_MEMBER_ID:
                member_ids[i] = ""
                join(i)
            elif r.error == Errors.NONE:
                member_ids[i] = r.member_id
                sync(i, r)
            else:
                raise RuntimeError(f"JoinGroup failed: {errors.name(r.error)}")
        else:
            gen, s = payload
            if s.error == Errors.NONE:
                if synced_gen[i] < 0:
                    done += 1
                    bar.update(1)
                synced_gen[i] = gen
                final_gen = max(final_gen, gen)
            elif s.error in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION):
                if synced_gen[i] >= 0:
                    synced_gen[i] = -1
                    done -= 1
                join(i)
            elif s.error == Errors.UNKNOWN_MEMBER_ID:
                member_ids[i] = ""
                join(i)
            else:
                raise RuntimeError(f"SyncGroup failed: {errors.name(s.error)}")
        if done == n and any(g != final_gen for g in synced_gen):
            # Someone synced an older generation that a later rebalance replaced: it rejoins.
            for j, g in enumerate(synced_gen):
                if g != final_gen:
                    synced_gen[j] = -1
                    done -= 1
                    join(j)
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    bar.close()
    return {"members": n, "wall_s": round(wall, 4), "cpu_s": round(cpu, 4), "requests": requests,
            "generation": final_gen, "member_ids": list(member_ids)}


def run_heartbeats(coordinator: Any, member_ids: list[str], generation: int, seconds: float) -> dict[str, Any]:
    got: list[int] = []
    cb = got.append
    n = len(member_ids)
    count = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    deadline = wall0 + seconds
    while True:
        for _ in range(200):
            coordinator.handle_heartbeat(GROUP, member_ids[count % n], None, generation, cb)
            count += 1
        if time.perf_counter() >= deadline:
            break
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    bad = sum(1 for e in got if e != Errors.NONE)
    return {"heartbeats": count, "per_s": round(count / wall), "cpu_us_per_heartbeat": round(cpu / count * 1e6, 2),
            "errors": bad}


def run_consumer_protocol(n: int, show: bool) -> dict[str, Any]:
    """N consumer-protocol members to a Stable group (see the module docstring)."""
    image = StaticMetadataImage()
    image.add_topic("bench-topic", n)
    coordinator = GroupCoordinator.create(0, {"offsets.topic.num.partitions": 1}, InstantLog(), image=image)
    coordinator.startup(enable_metadata_expiration=False)
    coordinator.group_manager.add_owned_partition(partition_for(GROUP, 1))
    requests = 0
    members: dict[str, tuple[int, tuple]] = {}

    def heartbeat(member_id: str, epoch: int, owned: tuple) -> None:
        nonlocal requests
        requests += 1
        answers: list = []
        fields: dict[str, Any] = {"topic_partitions": owned}
        if epoch == 0:
            fields.update(subscribed_topic_names=("bench-topic",), rebalance_timeout_ms=REBALANCE_MS)
        coordinator.handle_consumer_group_heartbeat(
            ConsumerGroupHeartbeatRequest(GROUP, member_id, epoch, client_id=member_id, **fields), answers.append)
        r = answers[0]
        if r.error != Errors.NONE:
            raise RuntimeError(f"ConsumerGroupHeartbeat failed: {errors.name(r.error)}")
        if r.assignment is not None:
            owned = tuple((t, tuple(sorted(ps))) for t, ps in r.assignment.items())
        members[member_id] = (r.member_epoch, owned)

    bar = progress(n, f"consumer protocol {n}", enabled=show, unit="member")
    try:
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for i in range(n):   # the burst
            heartbeat(f"member-{i}", 0, ())
            bar.update(1)
        group = coordinator.group_manager.get_group(GROUP)
        while group.state_name() != "Stable":
            for member_id, (epoch, owned) in list(members.items()):
                heartbeat(member_id, epoch, owned)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        owned_total = sum(len(ps) for _, owned in members.values() for _, ps in owned)
        assert owned_total == n and len(members) == n, (owned_total, len(members))
        return {"members": n, "wall_s": round(wall, 4), "cpu_s": round(cpu, 4), "requests": requests,
                "group_epoch": group.group_epoch}
    finally:
        bar.close()
        coordinator.shutdown()


CLIENT_PARTITIONS = 30


def _confluent_members_child(bootstrap: str, n: int, protocol: str, out: Any) -> None:
    """In a spawn child: N confluent-kafka consumers subscribe at once; seconds until they own
    every partition of ``bench-topic`` once (None after 30 s)."""
    from confluent_kafka import Consumer
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{protocol}",
                           "group.protocol": protocol}) for _ in range(n)]
    start = time.perf_counter()
    took = None
    for c in consumers:
        c.subscribe(["bench-topic"])
    while time.perf_counter() - start < 30:
        for c in consumers:
            c.poll(0.001)
        owned = [{tp.partition for tp in c.assignment()} for c in consumers]
        if sum(len(o) for o in owned) == CLIENT_PARTITIONS and len(set().union(*owned)) == CLIENT_PARTITIONS:
            took = time.perf_counter() - start
            break
    for c in consumers:
        c.close()
    out.put(took)


def run_confluent_members(n: int) -> dict[str, Any]:
    """N real consumers on 3 brokers (embedded defaults), per protocol (see the module docstring)."""
    import confluent_kafka  # noqa: F401 - refuse now, with one line, if the extra is missing

    from kafka_emu.bench.bench_util import child_result
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

    out: dict[str, Any] = {"members": n, "partitions": CLIENT_PARTITIONS}
    with EmbeddedCluster(brokers=3, config={"log.level": "warning"}) as cluster:
        cluster.create_topic("bench-topic", CLIENT_PARTITIONS, 3)
        cluster.ensure_offsets_topic()
        for protocol in ("consumer", "classic"):
            took = child_result(_confluent_members_child, (cluster.bootstrap_servers, n, protocol),
                                f"bench-rebalance-{protocol}", 60)
            out[f"{protocol}_s"] = None if took is None else round(took, 3)
    out["consumer_under_1s"] = out["consumer_s"] is not None and out["consumer_s"] <= 1.0
    return out


def bench_one(n: int, heartbeat_seconds: float, show: bool) -> dict[str, Any]:
    config = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 1}
    coordinator = GroupCoordinator.create(0, config, InstantLog())
    coordinator.startup(enable_metadata_expiration=False)
    coordinator.group_manager.add_owned_partition(partition_for(GROUP, 1))
    try:
        js = run_join_sync(coordinator, n, show)
        group = coordinator.group_manager.get_group(GROUP)
        assert group is not None and group.state.value == "Stable" and group.size() == n, group
        hb = run_heartbeats(coordinator, js.pop("member_ids"), js["generation"], heartbeat_seconds)
        js["rebalances"] = coordinator.rebalances_started
    finally:
        coordinator.shutdown()
    naive = NaiveCoordinator()
    njs = run_join_sync(naive, n, show)
    nhb = run_heartbeats(naive, njs.pop("member_ids"), njs["generation"], heartbeat_seconds)
    njs["rebalances"] = naive.rebalances
    consumer = run_consumer_protocol(n, show)
    return {
        "members": n,
        "emulator": {"join_sync": js, "heartbeat": hb},
        "consumer_protocol": consumer,
        "naive": {"join_sync": njs, "heartbeat": nhb},
        "ratio_join_sync_wall": float(f"{njs['wall_s'] / js['wall_s']:.3g}") if js["wall_s"] else None,
        "ratio_heartbeat_rate": float(f"{hb['per_s'] / nhb['per_s']:.3g}") if nhb["per_s"] else None,
        "under_2s": js["wall_s"] < 2.0 and consumer["wall_s"] < 2.0,
    }


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import non_negative_int, positive_float, positive_int

    parser.add_argument("--members", type=positive_int, nargs="+", default=[10, 100, 1000],
                        help="group sizes to run (default: 10 100 1000)")
    parser.add_argument("--heartbeat-seconds", type=positive_float, default=1.0,
                        help="how long to send heartbeats to the Stable group, per size and implementation")
    parser.add_argument("--confluent-members", type=non_negative_int, default=10,
                        help="confluent-kafka consumers joining one group on 3 brokers, per protocol (0: skip)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    show = progress_enabled(args)
    results = [bench_one(n, args.heartbeat_seconds, show) for n in args.members]
    result: dict[str, Any] = {"benchmark": "rebalance", "initial_rebalance_delay_ms": 0, "results": results}
    clients = run_confluent_members(args.confluent_members) if args.confluent_members else None
    if clients is not None:
        result["confluent_kafka"] = clients
    table = [("members", "join+sync wall s", "cpu s", "requests", "rebalances", "consumer proto wall s",
              "cpu s", "requests", "naive wall s", "ratio naive/emu", "hb/s", "naive hb/s", "ratio emu/naive")]
    for r in results:
        e, c, nv = r["emulator"], r["consumer_protocol"], r["naive"]
        table.append((str(r["members"]), f"{e['join_sync']['wall_s']:.3f}", f"{e['join_sync']['cpu_s']:.3f}",
                      str(e["join_sync"]["requests"]), str(e["join_sync"]["rebalances"]),
                      f"{c['wall_s']:.3f}", f"{c['cpu_s']:.3f}", str(c["requests"]),
                      f"{nv['join_sync']['wall_s']:.3f}", f"{r['ratio_join_sync_wall']}",
                      str(e["heartbeat"]["per_s"]), str(nv["heartbeat"]["per_s"]), f"{r['ratio_heartbeat_rate']}"))
    if clients is not None:
        table.append((f"{clients['members']} confluent-kafka members, {clients['partitions']} partitions, 3 brokers: "
                      f"all owned in {clients['consumer_s']} s (consumer protocol), {clients['classic_s']} s (classic)",))
    emit(result, args.json, table)
    ok = all(r["under_2s"] for r in results if r["members"] <= 1000)
    return 0 if ok and (clients is None or clients["consumer_under_1s"]) else 1
