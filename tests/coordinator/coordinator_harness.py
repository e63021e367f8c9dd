"""Test doubles and helpers for the coordinator tests.

``InMemoryCoordinatorLog`` is a real (tiny) log behind the ``CoordinatorLog`` protocol: appended
records get offsets and are replayed by ``read_records``. Appends answer at once (like the mock
ReplicaManager of Kafka's GroupCoordinatorTest), with ``error`` if set (nothing appended), or are
held until ``complete_pending`` when ``hold`` is set.

``Harness`` mirrors the GroupCoordinatorTest fixture: min session 10 ms, max 600000 ms,
group.max.size 4, rebalance/session timeout 500, initial delay 50, 2 offsets partitions with only
the partition of "groupId" owned, one MockTimer shared by both purgatories.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any, Callable

from kafka_emu.coordinator.group import GroupCoordinator
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.coordinator_log import NO_PRODUCER_ID, LogBatch
from kafka_emu.coordinator.group.records import consumer_subscription, partition_for
from kafka_emu.coordinator.group.results import JoinGroupResult, LeaveGroupResult, OffsetAndMetadata, SyncGroupResult
from kafka_emu.timer import MockTime, MockTimer

GROUP_ID = "groupId"
OTHER_GROUP_ID = "otherGroup"
PROTOCOL_TYPE = "consumer"
CLIENT_ID = "consumer-test"
CLIENT_HOST = "localhost"
SESSION_TIMEOUT = 500
REBALANCE_TIMEOUT = 500
INITIAL_DELAY = 50
MAX_SIZE = 4
NUM_PARTITIONS = 2
PROTOCOLS = [("range", b"\x01\x02"), ("roundrobin", b"\x03")]
PROTOCOL_SUPERSET = [("range", b"\x01\x02"), ("roundrobin", b"\x03")]
LEADER_INSTANCE = "leader"
FOLLOWER_INSTANCE = "follower"


class InMemoryCoordinatorLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches: dict[int, list[LogBatch]] = defaultdict(list)
        self._end_offsets: dict[int, int] = defaultdict(int)
        self.error = Errors.NONE
        self.hold = False
        self.pending: list[Callable[[int], None]] = []
        self.appends = 0

    def append_records(self, partition: int, records: list[tuple[bytes, bytes | None]],
                       timeout_ms: int, lock: Any, callback: Callable[[int], None],
                       producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                       transactional_id: str | None = None) -> None:
        self.appends += 1
        if self.error != Errors.NONE:
            callback(self.error)
            return
        with self._lock:
            self.append_batch(partition, records, producer_id)
            if self.hold:
                self.pending.append(callback)
                return
        callback(Errors.NONE)

    def append_batch(self, partition: int, records: list[tuple[bytes, bytes | None]],
                     producer_id: int = NO_PRODUCER_ID) -> None:
        base = self._end_offsets[partition]
        self._end_offsets[partition] += len(records)
        self.batches[partition].append(LogBatch(producer_id, producer_id != NO_PRODUCER_ID, False, None, tuple(
            (base + i, k, v) for i, (k, v) in enumerate(records))))

    def append_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT control batch, as the partition leader writes it for WriteTxnMarkers."""
        with self._lock:
            self._end_offsets[partition] += 1
            self.batches[partition].append(LogBatch(producer_id, True, True, commit, ()))

    @property
    def partitions(self) -> dict[int, list[tuple[int, bytes, bytes | None]]]:
        """Data records per partition (a copy; tests append with ``append_batch``)."""
        return {p: list(self.read_records(p)) for p in list(self.batches)}

    def complete_pending(self, error: int = Errors.NONE) -> None:
        with self._lock:
            pending, self.pending = self.pending, []
        for cb in pending:
            cb(error)

    def read_batches(self, partition: int) -> list[LogBatch]:
        with self._lock:
            return list(self.batches[partition])

    def read_records(self, partition: int) -> list[tuple[int, bytes, bytes | None]]:
        return [r for b in self.read_batches(partition) if not b.is_control for r in b.records]


class Box:
    """Captures a callback's answer and counts invocations."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> None:
        self.values.append(value)

    @property
    def done(self) -> bool:
        return bool(self.values)

    @property
    def value(self) -> Any:
        assert len(self.values) == 1, f"callback fired {len(self.values)} times: {self.values}"
        return self.values[0]


def default_config(**overrides: Any) -> dict[str, Any]:
    cfg = {
        "group.min.session.timeout.ms": 10,
        "group.max.session.timeout.ms": 10 * 60 * 1000,
        "group.max.size": MAX_SIZE,
        "group.initial.rebalance.delay.ms": INITIAL_DELAY,
        "offsets.topic.num.partitions": NUM_PARTITIONS,
    }
    cfg.update(overrides)
    return cfg


class Harness:
    def __init__(self, **config_overrides: Any) -> None:
        self.time = MockTime()
        self.timer = MockTimer(self.time)
        self.log = InMemoryCoordinatorLog()
        self.config = default_config(**config_overrides)
        self.coordinator = GroupCoordinator.create(0, self.config, self.log, self.time, timer=self.timer)
        self.coordinator.startup(enable_metadata_expiration=False)
        self.coordinator.group_manager.add_owned_partition(partition_for(GROUP_ID, NUM_PARTITIONS))

    # ------------------------------------------------------------------ plumbing
    def advance(self, ms: int) -> None:
        self.timer.advance_clock(ms)

    def group(self, group_id: str = GROUP_ID):
        return self.coordinator.group_manager.get_group(group_id)

    def shutdown(self) -> None:
        self.coordinator.shutdown()

    # ------------------------------------------------------------------ requests
    def send_join(self, group_id: str = GROUP_ID, member_id: str = "", protocol_type: str = PROTOCOL_TYPE,
                  protocols: list[tuple[str, bytes]] | None = None, instance_id: str | None = None,
                  session_timeout: int = SESSION_TIMEOUT, rebalance_timeout: int = REBALANCE_TIMEOUT,
                  require_known_member_id: bool = False, supports_skipping_assignment: bool = False) -> Box:
        box = Box()
        self.coordinator.handle_join_group(
            group_id, member_id, instance_id, require_known_member_id, CLIENT_ID, CLIENT_HOST,
            rebalance_timeout, session_timeout, protocol_type,
            PROTOCOLS if protocols is None else protocols, box,
            supports_skipping_assignment=supports_skipping_assignment)
        return box

    def join(self, *args: Any, **kwargs: Any) -> JoinGroupResult:
        box = self.send_join(*args, **kwargs)
        assert box.done, "JoinGroup was parked"
        return box.value

    def dynamic_join(self, group_id: str = GROUP_ID, member_id: str = "", protocol_type: str = PROTOCOL_TYPE,
                     protocols: list[tuple[str, bytes]] | None = None, session_timeout: int = SESSION_TIMEOUT,
                     rebalance_timeout: int = REBALANCE_TIMEOUT, require_known_member_id: bool = True) -> JoinGroupResult:
        """Kafka's ``dynamicJoinGroup``: MEMBER_ID_REQUIRED round trip, then advance 51 ms."""
        if require_known_member_id and member_id == "":
            first = self.join(group_id, "", protocol_type, protocols, session_timeout=session_timeout,
                              rebalance_timeout=rebalance_timeout, require_known_member_id=True)
            if first.error != Errors.MEMBER_ID_REQUIRED:
                return first
            member_id = first.member_id
        box = self.send_join(group_id, member_id, protocol_type, protocols, session_timeout=session_timeout,
                             rebalance_timeout=rebalance_timeout, require_known_member_id=require_known_member_id)
        self.advance(INITIAL_DELAY + 1)
        return box.value

    def static_join(self, group_id: str = GROUP_ID, member_id: str = "", instance_id: str = LEADER_INSTANCE,
                    protocol_type: str = PROTOCOL_TYPE, protocols: list[tuple[str, bytes]] | None = None,
                    session_timeout: int = SESSION_TIMEOUT, rebalance_timeout: int = REBALANCE_TIMEOUT,
                    clock_advance: int = INITIAL_DELAY + 1, supports_skipping_assignment: bool = False) -> JoinGroupResult:
        box = self.send_join(group_id, member_id, protocol_type, protocols, instance_id, session_timeout,
                             rebalance_timeout, supports_skipping_assignment=supports_skipping_assignment)
        self.advance(clock_advance)
        return box.value

    def send_sync(self, group_id: str = GROUP_ID, generation: int = 1, member_id: str = "",
                  assignment: dict[str, bytes] | None = None, instance_id: str | None = None,
                  protocol_type: str | None = PROTOCOL_TYPE, protocol_name: str | None = None) -> Box:
        box = Box()
        self.coordinator.handle_sync_group(group_id, generation, member_id, protocol_type, protocol_name,
                                           instance_id, assignment or {}, box)
        return box

    def sync(self, *args: Any, **kwargs: Any) -> SyncGroupResult:
        box = self.send_sync(*args, **kwargs)
        assert box.done, "SyncGroup was parked"
        return box.value

    def heartbeat(self, group_id: str = GROUP_ID, member_id: str = "", generation: int = 1,
                  instance_id: str | None = None) -> int:
        box = Box()
        self.coordinator.handle_heartbeat(group_id, member_id, instance_id, generation, box)
        return box.value

    def leave(self, group_id: str = GROUP_ID, members: list[tuple[str, str | None, str | None]] | None = None) -> LeaveGroupResult:
        box = Box()
        self.coordinator.handle_leave_group(group_id, members or [], box)
        return box.value

    def leave_one(self, member_id: str, group_id: str = GROUP_ID, instance_id: str | None = None) -> LeaveGroupResult:
        return self.leave(group_id, [(member_id, instance_id, None)])

    def commit(self, group_id: str = GROUP_ID, member_id: str = "", generation: int = -1,
               offsets: dict[tuple[str, int], OffsetAndMetadata] | None = None,
               instance_id: str | None = None) -> dict[tuple[str, int], int]:
        box = Box()
        self.coordinator.handle_commit_offsets(group_id, member_id, instance_id, generation, offsets or {}, box)
        return box.value

    def fetch(self, group_id: str = GROUP_ID, partitions=None, require_stable: bool = False):
        return self.coordinator.handle_fetch_offsets(group_id, require_stable, partitions)

    # ------------------------------------------------------------------ scenarios
    def static_members_join_and_rebalance(self, leader_instance: str = LEADER_INSTANCE,
                                          follower_instance: str = FOLLOWER_INSTANCE,
                                          session_timeout: int = SESSION_TIMEOUT,
                                          rebalance_timeout: int = REBALANCE_TIMEOUT) -> tuple[JoinGroupResult, JoinGroupResult]:
        lbox = self.send_join(GROUP_ID, "", PROTOCOL_TYPE, PROTOCOL_SUPERSET, leader_instance,
                              session_timeout, rebalance_timeout)
        fbox = self.send_join(GROUP_ID, "", PROTOCOL_TYPE, PROTOCOL_SUPERSET, follower_instance,
                              session_timeout, rebalance_timeout)
        self.advance(INITIAL_DELAY + 1)
        self.advance(rebalance_timeout + 1)
        leader, follower = lbox.value, fbox.value
        assert leader.error == Errors.NONE and follower.error == Errors.NONE
        assert leader.generation_id == 1 and follower.generation_id == 1
        lsync = self.sync(GROUP_ID, 1, leader.member_id, {}, leader_instance)
        fsync = self.sync(GROUP_ID, 1, follower.member_id, {}, follower_instance)
        assert lsync.error == Errors.NONE and fsync.error == Errors.NONE
        assert self.group().state.value == "Stable"
        return leader, follower

    def join_and_sync_single(self) -> JoinGroupResult:
        """One dynamic member, joined and synced: Stable, generation 1."""
        join = self.dynamic_join()
        assert join.error == Errors.NONE
        sync = self.sync(GROUP_ID, join.generation_id, join.member_id, {join.member_id: b"a"})
        assert sync.error == Errors.NONE
        return join


def subscription(*topics: str) -> bytes:
    return consumer_subscription(list(topics))
