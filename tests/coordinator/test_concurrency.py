"""Many members joining, syncing, heartbeating and leaving from many threads at once.

Real ``SystemTimer``s (the purgatories' reapers run), a log whose appends complete on another
thread (like replication acks), short timeouts. Checks: every callback fires exactly once, the
group's generation never decreases, every transition is legal (an illegal one raises), and the
group ends Empty once everybody has left.
"""
from __future__ import annotations

import itertools
import random
import queue
import threading
import time as _time

import pytest

from kafka_emu.coordinator.group import GroupCoordinator
from kafka_emu.common import errors
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.classic.group_metadata import VALID_PREVIOUS_STATES, Empty
from kafka_emu.coordinator.group.records import partition_for
from coordinator_harness import InMemoryCoordinatorLog

GROUP = "concurrent-group"
MEMBERS = 50
ROUNDS = 2  # minimum successful syncs per member before it leaves (2-4, staggered)


class ThreadedLog(InMemoryCoordinatorLog):
    """Appends at once; acknowledges on a separate 'replication' thread."""

    def __init__(self) -> None:
        super().__init__()
        self._acks: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="fake-replication", daemon=True)
        self._thread.start()

    def append_records(self, partition, records, timeout_ms, lock, callback, producer_id=-1, producer_epoch=-1,
                       transactional_id=None) -> None:
        super().append_records(partition, records, timeout_ms, lock, lambda err: self._acks.put((callback, err)),
                               producer_id, producer_epoch)

    def _run(self) -> None:
        while True:
            item = self._acks.get()
            if item is None:
                return
            cb, err = item
            cb(err)

    def close(self) -> None:
        self._acks.put(None)
        self._thread.join(5)


class Tracker:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self.fired: dict[int, int] = {}
        self.issued = 0

    def wrap(self, event: threading.Event, slot: list):
        rid = next(self._ids)
        with self._lock:
            self.issued += 1
            self.fired[rid] = 0

        def cb(result) -> None:
            with self._lock:
                self.fired[rid] += 1
            slot.append(result)
            event.set()
        return cb


@pytest.mark.timeout(90)
def test_fifty_members_churn_from_many_threads() -> None:
    log = ThreadedLog()
    config = {"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 30,
              "offsets.topic.num.partitions": 1}
    coordinator = GroupCoordinator.create(0, config, log)
    coordinator.startup(enable_metadata_expiration=False)
    coordinator.group_manager.add_owned_partition(partition_for(GROUP, 1))
    tracker = Tracker()
    generations: list[int] = []
    transitions: list[tuple[str, str]] = []
    gen_lock = threading.Lock()
    original = coordinator._on_transition

    def on_transition(group, previous, new, reason) -> None:
        with gen_lock:
            generations.append(group.generation_id)
            transitions.append((previous.value, new.value))
        original(group, previous, new, reason)

    coordinator.group_manager._on_transition = on_transition
    failures: list[BaseException] = []
    start = threading.Barrier(MEMBERS)

    def call(fn, *args):
        ev, slot = threading.Event(), []
        fn(*args, tracker.wrap(ev, slot))
        assert ev.wait(20), f"{fn.__name__} not answered"
        return slot[0]

    def member(i: int) -> None:
        try:
            start.wait()
            rng = random.Random(i)
            _time.sleep(rng.random() * 0.05)  # staggered arrivals
            rounds = ROUNDS + i % 3
            member_id, synced, seen_gen = "", 0, -1
            while synced < rounds:
                j = call(coordinator.handle_join_group, GROUP, member_id, None, True, f"c{i}", "h",
                         2000, 3000, "consumer", [("range", b"%d-%d" % (i, synced))])
                if j.error == Errors.MEMBER_ID_REQUIRED:
                    member_id = j.member_id
                    continue
                if j.error == Errors.UNKNOWN_MEMBER_ID:
                    member_id = ""
                    continue
                assert j.error == Errors.NONE, errors.name(j.error)
                assert j.generation_id >= seen_gen
                seen_gen = j.generation_id
                assignment = {m.member_id: b"x" for m in j.members} if j.leader_id == member_id else {}
                s = call(coordinator.handle_sync_group, GROUP, j.generation_id, member_id, "consumer",
                         j.protocol_name, None, assignment)
                if s.error == Errors.UNKNOWN_MEMBER_ID:
                    member_id = ""
                    continue
                if s.error != Errors.NONE:
                    assert s.error in (Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION), errors.name(s.error)
                    continue
                synced += 1
                for _ in range(5):  # heartbeat until told to rejoin
                    hb = call(coordinator.handle_heartbeat, GROUP, member_id, None, j.generation_id)
                    if hb != Errors.NONE:
                        break
                    _time.sleep(0.005)
            r = call(coordinator.handle_leave_group, GROUP, [(member_id, None, "done")])
            assert r.top_level_error == Errors.NONE
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=member, args=(i,), name=f"member-{i}") for i in range(MEMBERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(80)
    try:
        assert not failures, failures[:3]
        assert all(not t.is_alive() for t in threads)
        # Every callback fired exactly once.
        assert tracker.issued == len(tracker.fired)
        assert set(tracker.fired.values()) == {1}
        # Generation only grows; every recorded transition is legal.
        assert generations == sorted(generations)
        for prev, new in transitions:
            assert any(p.value == prev for p in VALID_PREVIOUS_STATES[next(s for s in VALID_PREVIOUS_STATES if s.value == new)])
        group = coordinator.group_manager.get_group(GROUP)
        deadline = _time.monotonic() + 5
        while not group.is_(Empty) and _time.monotonic() < deadline:
            _time.sleep(0.01)
        assert group.is_(Empty) and group.size() == 0 and not group.pending_members
        assert coordinator.rebalance_count >= ROUNDS
        assert coordinator.rebalances_started >= ROUNDS
    finally:
        coordinator.shutdown()
        log.close()
