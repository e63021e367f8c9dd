"""``kafka-emu stress rebalance``: member storms with crashes and rejoins against the group coordinator.

A producer keeps writing to a multi-partition topic while a consumer group of member processes
(``loadgen.stress_member``) goes through rounds of churn: each round crashes some members
(SIGKILL, so only the session timeout tells the coordinator), stops others politely
(LeaveGroup) and starts new ones, all at once. After each round the group must reach Stable
with exactly the live members and every partition assigned to one of them.

A watcher thread reads the group's committed offsets (OffsetFetch through the admin client)
all along: a committed offset must never go backwards, whatever the churn.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import structlog

from kafka_emu.loadgen.embedded import close_cluster, start_cluster
from kafka_emu.loadgen.errors import LoadgenError
from kafka_emu.loadgen.target import QUIET, create_topics
from kafka_emu.loadgen.spec import TopicSpec
from kafka_emu.loadgen.verdict import Verdict, add_run_options, run_duration
from kafka_emu.metrics.progress import progress, progress_enabled

_log = structlog.get_logger("loadgen.stress_rebalance")

TOPIC = "stress-rebalance"
GROUP = "stress-rebalance-group"


class Member:
    """A member process and the events it has reported."""

    def __init__(self, name: str, bootstrap: str, session_timeout_ms: int) -> None:
        self.name = name
        job = {"bootstrap": bootstrap, "group": GROUP, "topic": TOPIC, "member": name,
               "session_timeout_ms": session_timeout_ms, "commit_every_s": 0.2}
        self.proc = subprocess.Popen([sys.executable, "-m", "kafka_emu.loadgen.stress_member", json.dumps(job)],
                                     stdout=subprocess.PIPE, text=True)
        self.events: list[dict[str, Any]] = []
        self.reader = threading.Thread(target=self._read, name=f"stress-rebalance-reader-{name}", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                continue
        _log.info("thread_stopped", thread=threading.current_thread().name, reason="member output closed")

    def crash(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def leave(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def alive(self) -> bool:
        return self.proc.poll() is None


class OffsetWatcher(threading.Thread):
    """Polls the group's committed offsets; records every decrease it sees.

    ``covered`` is set once every partition of the topic has a committed offset, so the storm can
    end by waiting for it rather than stopping a member that was given a partition a moment ago.
    """

    def __init__(self, admin: Any, partitions: int) -> None:
        super().__init__(name="stress-rebalance-offsets", daemon=True)
        self.admin = admin
        self.partitions = partitions
        self.stop_event = threading.Event()
        self.covered = threading.Event()
        self.highest: dict[tuple[str, int], int] = {}
        self.backwards: list[str] = []
        self.polls = 0

    def run(self) -> None:
        reason = "stopped"
        try:
            stopping = False
            while not stopping:
                # The members' last commits (on SIGTERM) land after the previous poll: one more
                # poll once stopped, so the verdict judges the final offsets too.
                stopping = self.stop_event.wait(0.2)
                self._poll()
        except Exception as exc:
            reason = f"error: {exc!r}"
        finally:
            _log.info("thread_stopped", thread=self.name, reason=reason)

    def _poll(self) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions

        try:
            fut = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)],
                                                         request_timeout=5)[GROUP]
            parts = fut.result(6).topic_partitions
        except Exception:
            return      # coordinator moving or group not created yet: next poll
        self.polls += 1
        for p in parts:
            if p.offset < 0:
                continue
            key = (p.topic, p.partition)
            if p.offset < self.highest.get(key, -1):
                self.backwards.append(f"{p.topic}-{p.partition}: {self.highest[key]} -> {p.offset}")
            self.highest[key] = max(p.offset, self.highest.get(key, -1))
        if len(self.highest) == self.partitions:
            self.covered.set()


def wait_stable(admin: Any, live: list[str], partitions: int, timeout_s: float) -> tuple[bool, float, str]:
    """Wait until the group is Stable with exactly ``live`` members covering every partition."""
    from confluent_kafka import ConsumerGroupState

    began = time.monotonic()
    last = "no answer"
    while time.monotonic() - began < timeout_s:
        try:
            desc = admin.describe_consumer_groups([GROUP], request_timeout=5)[GROUP].result(6)
            clients = sorted(m.client_id for m in desc.members)
            assigned = [tp for m in desc.members for tp in (m.assignment.topic_partitions if m.assignment else [])]
            last = f"state={desc.state.name} members={len(clients)} assigned={len(assigned)}"
            if (desc.state == ConsumerGroupState.STABLE and clients == sorted(live)
                    and len(assigned) == partitions and len({(t.topic, t.partition) for t in assigned}) == partitions):
                return True, time.monotonic() - began, last
        except Exception as exc:
            last = f"describe failed: {exc}"
        time.sleep(0.1)
    return False, time.monotonic() - began, last


def run_stress(duration_s: float | None, rounds: int | None, members: int, partitions: int,
               session_timeout_ms: int, seed: int, show_progress: bool) -> Verdict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    rng = random.Random(seed)
    cluster = start_cluster(3)
    procs: dict[str, Member] = {}
    everyone: list[Member] = []
    watcher: OffsetWatcher | None = None
    producing = threading.Event()
    producer_thread: threading.Thread | None = None
    results: list[tuple[int, bool, float, str]] = []
    counts = {"crashed": 0, "left": 0, "joined": 0}
    try:
        bootstrap = cluster.bootstrap_servers
        create_topics(bootstrap, (TopicSpec(TOPIC, partitions, 3),), 3)
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})

        def produce() -> None:
            producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, **QUIET})
            n = 0
            while not producing.is_set():
                for _ in range(20):
                    try:
                        producer.produce(TOPIC, b"x" * 64, key=b"%d" % (n % 97))
                        n += 1
                    except BufferError:
                        break
                producer.poll(0.02)
            producer.flush(10)
            _log.info("thread_stopped", thread="stress-rebalance-producer", reason="stopped")

        producer_thread = threading.Thread(target=produce, name="stress-rebalance-producer", daemon=True)
        producer_thread.start()
        watcher = OffsetWatcher(admin, partitions)
        watcher.start()
        next_id = 0

        def spawn() -> None:
            nonlocal next_id
            name = f"member-{next_id}"
            next_id += 1
            procs[name] = Member(name, bootstrap, session_timeout_ms)
            everyone.append(procs[name])

        for _ in range(members):
            spawn()
        settle_timeout = session_timeout_ms / 1000.0 * 2 + 20.0
        ok, took, state = wait_stable(admin, list(procs), partitions, settle_timeout)
        results.append((0, ok, took, state))
        started = time.monotonic()
        limit = duration_s if duration_s is not None else float("inf")
        bar = progress(total=rounds if rounds is not None else int(limit), desc="rebalance", enabled=show_progress,
                       unit="round" if rounds is not None else "s")
        rnd = 0
        try:
            while ok and (rounds is None or rnd < rounds) and time.monotonic() - started < limit:
                rnd += 1
                live = list(procs)
                crash = rng.sample(live, rng.randint(1, max(1, len(live) // 2)))   # at least one per round
                rest = [m for m in live if m not in crash]
                leave = rng.sample(rest, min(len(rest) - 1, rng.randint(0, 1))) if len(rest) > 1 else []
                for name in crash:
                    procs.pop(name).crash()
                    counts["crashed"] += 1
                for name in leave:
                    procs.pop(name).leave()
                    counts["left"] += 1
                for _ in range(max(1, members - len(procs) + rng.randint(-1, 1))):
                    spawn()
                    counts["joined"] += 1
                ok, took, state = wait_stable(admin, list(procs), partitions, settle_timeout)
                results.append((rnd, ok, took, state))
                bar.n = rnd if rounds is not None else min(int(time.monotonic() - started), int(limit))
                bar.refresh()
            if ok:
                # The last round's members have had their partitions for moments only: let the
                # stable group commit every partition before stopping it (judged below).
                watcher.covered.wait(settle_timeout)
        finally:
            bar.close()
    finally:
        producing.set()
        if producer_thread is not None:
            producer_thread.join(15)
        for m in procs.values():
            if m.alive():
                m.leave()
        for m in procs.values():
            try:
                m.proc.wait(15)
            except subprocess.TimeoutExpired:
                m.crash()
        if watcher is not None:
            watcher.stop_event.set()
            watcher.join(10)
        close_cluster(cluster)

    failed_commits = sum(1 for m in everyone for e in m.events if e["event"] == "commit_failed")
    stable_times = [took for _, ok, took, _ in results if ok]
    not_stable = [f"round {r}: {state}" for r, ok, _, state in results if not ok]
    assert watcher is not None
    v = Verdict("stress rebalance")
    v.check("rounds that reached Stable", f"{len(stable_times)}/{len(results)}", "all",
            not not_stable and len(results) > 1)
    v.check("committed offsets that went backwards", len(watcher.backwards), "0", not watcher.backwards)
    v.check("offset observations", watcher.polls, "> 0", watcher.polls > 0)
    v.check("partitions with committed offsets", len(watcher.highest), f"{partitions}",
            len(watcher.highest) == partitions)
    v.stats = {**counts, "rounds": len(results) - 1, "members": members, "partitions": partitions,
               "session_timeout_ms": session_timeout_ms,
               "stable_after_s_max": round(max(stable_times), 2) if stable_times else None,
               "stable_after_s_avg": round(sum(stable_times) / len(stable_times), 2) if stable_times else None,
               "commit_failures": failed_commits}
    if not_stable:
        v.stats["not_stable"] = not_stable[:3]
    if watcher.backwards:
        v.stats["backwards"] = watcher.backwards[:5]
    uncommitted = [p for p in range(partitions) if (TOPIC, p) not in watcher.highest]
    if uncommitted:
        v.stats["partitions_never_committed"] = uncommitted
    return v


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import positive_int

    add_run_options(parser, default_duration=30.0)
    parser.add_argument("--members", type=positive_int, default=4, help="consumer processes in the group")
    parser.add_argument("--partitions", type=positive_int, default=8, help="partitions of the consumed topic")
    parser.add_argument("--session-timeout-ms", type=positive_int, default=1500,
                        help="session.timeout.ms of the members")


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    try:
        verdict = run_stress(run_duration(args), args.count, args.members, args.partitions, args.session_timeout_ms,
                             args.seed, progress_enabled(args))
    except LoadgenError as exc:
        print(f"kafka-emu stress rebalance: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return verdict.emit(args.json)
