"""ReplicaFetcherManager and ReplicaFetcherThread: followers pull from leaders.

Each follower broker runs one ``ReplicaFetcherThread-<fetcherId>-<leaderBrokerId>`` per
(fetcher id, leader) pair (``num.replica.fetchers`` fetchers per leader, partitions hashed onto
them). A thread sends a Fetch request (api key 1, v17: ``replica_id`` = its broker id,
``last_fetched_epoch`` for KIP-101/KIP-279 truncation) to the LEADER's ``KafkaApis``, so it is
served by ``fetch_messages`` and the Fetch purgatory (parked for up to
``replica.fetch.wait.max.ms``) like any network request. It appends the returned
batches, takes min(leader HW, LEO) as its HW, truncates on a diverging epoch, and fetches again
at its new LEO, which tells the leader how far it got. Fetches use an incremental fetch session
(KIP-227, ``broker.server.fetch_session``): one full fetch, then only the partitions whose fetch offset
or log start offset changed and those removed; a session error (FETCH_SESSION_ID_NOT_FOUND,
INVALID_FETCH_SESSION_EPOCH), a failed request or a sessionless answer starts over with a full
fetch. The answer carries only the partitions that changed on the leader.

Difference from Kafka, on purpose: the request body is a :class:`ReplicaFetchRequestData` (the
fetch parameters and per-partition fetch infos, already resolved) and the answer is
``fetch_messages``'s list of ``(topic-partition, LogReadResult)``, not kio FetchRequest and
FetchResponse entities. The bytes would never touch a socket, and building and reading those
entities was most of a follower's cost per produce on a replicated cluster; the thread
structure and the purgatory are Kafka's. Also on purpose: the fetcher thread runs the leader's
request handling itself (``RequestChannel.handle_inline``: ``KafkaApis.handle`` on this
thread) instead of queueing the request for a leader handler thread. A fetch answered at once
(one whose fetch offset moves the leader's HW, which completes the acks=all produce and the
consumers' parked fetches right there) then costs no thread hand-off at all; a parked one is
completed by the thread whose append wakes it and answered on this thread's queue, one
hand-off. Through the channel every fetch cost two more (fetcher to handler, and back), each
the wake-up of a thread that then waits for the interpreter lock. The leader's handler pool
still serves every network request. A topic id that no longer names the topic (deleted and
re-created) drops the partition from the fetch, as the leader's UNKNOWN_TOPIC_ID answer would.

Locking: each thread's ``_lock`` guards its partition map (``partitions``) and its session state
(``session_id``, ``session_epoch``, ``_dirty``, ``_removed``, ``_session_offsets``); the manager's
``_lock`` guards its map of threads. Neither is held while a request is outstanding or while
the replica manager is called.
"""
from __future__ import annotations

import queue
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from kafka_emu.broker.server.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    SessionFetchResponse,
    next_epoch,
)
from kafka_emu.broker.server.fetch_params import ISOLATION_LOG_END, FetchParams, PartitionFetchInfo
from kafka_emu.broker.server.partition import LogReadResult, Partition
from kafka_emu.broker.network.request_channel import Request, Response
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors, KafkaError
from kafka_emu.timer import ShutdownableThread

if TYPE_CHECKING:
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.broker.server.replica_manager import ReplicaManager

_log = structlog.get_logger("broker.replica_fetcher")

FETCH = int(ApiKeys.FETCH)   # an int, as a decoded header's key is
FETCH_NAME = ApiKeys.FETCH.name
FETCH_VERSION = 17
TP = tuple[str, int]


@dataclass(slots=True, eq=False)
class ReplicaFetchRequestData:
    """The body of an in-process follower Fetch (see the module docstring). With the default
    session fields (id 0, epoch -1) it is sessionless and answered with a plain list of
    results; otherwise ``fetch_infos`` are the session's updates and the answer is a
    ``SessionFetchResponse``."""

    params: FetchParams
    fetch_infos: list[tuple[TP, PartitionFetchInfo]]
    session_id: int = INVALID_SESSION_ID
    session_epoch: int = FINAL_EPOCH
    removed: list[TP] = field(default_factory=list)


@dataclass
class PartitionFetchState:
    topic_id: uuid.UUID
    fetch_offset: int
    delayed_until_ms: int = 0


class ReplicaFetcherThread(ShutdownableThread):
    def __init__(self, fetcher_id: int, leader_id: int, broker_id: int, replica_manager: "ReplicaManager",
                 metadata: "MetadataStore", config: KafkaConfig) -> None:
        super().__init__(name=f"ReplicaFetcherThread-{fetcher_id}-{leader_id}", log_context={"broker_id": broker_id})
        self.fetcher_id = fetcher_id
        self.leader_id = leader_id
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.metadata = metadata
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self.partitions: dict[TP, PartitionFetchState] = {}
        self.params = FetchParams(replica_id=broker_id, max_wait_ms=config["replica.fetch.wait.max.ms"],
                                  min_bytes=config["replica.fetch.min.bytes"],
                                  max_bytes=config["replica.fetch.response.max.bytes"],
                                  isolation=ISOLATION_LOG_END)
        self.max_bytes = config["replica.fetch.max.bytes"]
        self.backoff_s = config["replica.fetch.backoff.ms"] / 1000.0
        # Responses arrive on a C SimpleQueue (fast hand-off from the leader's handler thread);
        # each request carries its own correlation id so a late answer is recognised and dropped.
        self._responses: queue.SimpleQueue = queue.SimpleQueue()
        self._correlation = 0
        self.fetch_requests = 0
        self.paused = False  # tests: a stalled follower (the thread stays alive)
        # Kafka's FetchSessionHandler, reduced to what an incremental fetch needs: the session
        # (id, next epoch; epoch 0 = send a full fetch next), the partitions whose fetch state
        # changed since the last request (``_dirty``) or that were dropped (``_removed``), and
        # the fetch offset the leader's session holds for each partition (``_session_offsets``).
        self.session_id = INVALID_SESSION_ID
        self.session_epoch = INITIAL_EPOCH
        self._dirty: set[TP] = set()
        self._removed: set[TP] = set()
        self._session_offsets: dict[TP, int] = {}

    # ------------------------------------------------------------------ partition map
    def add_partition(self, tp: TP, topic_id: uuid.UUID, fetch_offset: int) -> None:
        with self._cond:
            self.partitions[tp] = PartitionFetchState(topic_id, fetch_offset)
            self._dirty.add(tp)
            self._removed.discard(tp)
            self._cond.notify_all()

    def remove_partitions(self, tps: list[TP]) -> None:
        with self._lock:
            for tp in tps:
                if self.partitions.pop(tp, None) is not None:
                    self._dirty.discard(tp)
                    self._removed.add(tp)

    def _reset_session(self) -> None:
        """Lock held. Send a full fetch next (closing the current session on the leader)."""
        self.session_epoch = INITIAL_EPOCH
        self._removed.clear()
        self._session_offsets.clear()

    def partition_count(self) -> int:
        return len(self.partitions)

    def on_initiate_shutdown(self) -> None:
        self._responses.put((-1, None))
        with self._cond:
            self._cond.notify_all()

    # ------------------------------------------------------------------ loop
    def do_work(self) -> None:
        with self._cond:
            if not self.partitions or self.paused:
                if not self.partitions and self.session_epoch != INITIAL_EPOCH:
                    self._reset_session()
                self._cond.wait(0.05 if self.paused else 0.2)
                return
            full = self.session_epoch == INITIAL_EPOCH
            sending = {tp: self.partitions[tp].fetch_offset
                       for tp in (self.partitions if full else self._dirty) if tp in self.partitions}
            removed = list(self._removed)
            self._dirty.clear()
            self._removed.clear()
            session_id, epoch = self.session_id, self.session_epoch
        rm = self.replica_manager
        topic_name = self.metadata.topic_name
        infos: list[tuple[TP, PartitionFetchInfo]] = []
        for tp, offset in sending.items():
            partition = rm.get_partition(tp)
            st = self.partitions.get(tp)
            if partition is None or st is None or topic_name(st.topic_id) != tp[0]:
                removed.append(tp)   # dropped from this fetch, as the leader's UNKNOWN_TOPIC_ID would
                continue
            log = partition.log
            infos.append((tp, PartitionFetchInfo(
                fetch_offset=offset, max_bytes=self.max_bytes, log_start_offset=log.log_start_offset,
                current_leader_epoch=partition.leader_epoch, last_fetched_epoch=log.latest_epoch())))
        if full and not infos:
            self._shutdown_initiated.wait(0.05)
            return
        response = self._send(ReplicaFetchRequestData(self.params, infos, session_id, epoch,
                                                      [] if full else removed))
        if not isinstance(response, SessionFetchResponse):
            # no answer, or an error response from a failing handler: start over with a full fetch
            with self._lock:
                self._reset_session()
            if not self.is_shutdown_initiated():
                self._shutdown_initiated.wait(self.backoff_s)
            return
        self.fetch_requests += 1
        with self._lock:
            if response.error != Errors.NONE:   # FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
                _log.info("fetch_session_error", broker_id=self.broker_id, leader=self.leader_id,
                          session_id=session_id, epoch=epoch, error=response.error)
                self.session_id = INVALID_SESSION_ID
                self._reset_session()
                return
            if full:
                self._session_offsets.clear()
            self._session_offsets.update((tp, info.fetch_offset) for tp, info in infos)
            for tp in removed:
                self._session_offsets.pop(tp, None)
            self.session_id = response.session_id
            if response.session_id == INVALID_SESSION_ID:
                self.session_epoch = INITIAL_EPOCH   # sessionless answer (no free slot): full again
            elif self.session_epoch == epoch:       # not reset meanwhile
                self.session_epoch = next_epoch(epoch)
        if not self._process(response.results):
            self._shutdown_initiated.wait(self.backoff_s)

    def _send(self, body: ReplicaFetchRequestData) -> object:
        """The leader's answer (``fetch_messages``'s results, or an error response), None if none came."""
        info = self.metadata.broker(self.leader_id)
        channel = info.request_channel if info is not None and info.live else None
        if channel is None or channel.closed:
            return None
        self._correlation += 1
        correlation = self._correlation
        responses = self._responses

        def respond(response: Response) -> None:
            responses.put((correlation, response.body))

        request = Request(api_key=FETCH, api_version=FETCH_VERSION, correlation_id=correlation,
                          client_id=self.name, body=body, respond=respond, api_name=FETCH_NAME,
                          connection_id=f"replica-{self.broker_id}", replica_id=body.params.replica_id)
        if not channel.handle_inline(request):   # answered now (on the queue already) or parked
            return None
        while True:
            try:
                cid, resp = responses.get(timeout=0.5)
            except queue.Empty:
                if self.is_shutdown_initiated() or channel.closed:
                    return None
                continue
            if cid == correlation:
                return resp
            if cid == -1 or self.is_shutdown_initiated():
                return None

    def _process(self, results: list[tuple[TP, LogReadResult]]) -> bool:
        """Apply a fetch answer (the partitions that changed); false if every partition of a
        non-empty answer failed (back off). A partition whose fetch offset changed is sent
        in the next incremental fetch."""
        rm = self.replica_manager
        ok = 0
        for tp, r in results:
            with self._lock:
                cur = self.partitions.get(tp)
                sent = self._session_offsets.get(tp)
                if cur is None or sent is None or cur.fetch_offset != sent:
                    continue  # removed or reset meanwhile
            partition = rm.get_partition(tp)
            if partition is None:
                continue
            log_start = partition.log.log_start_offset
            try:
                new_offset = self._apply(tp, partition, r)
            except Exception as exc:
                if isinstance(exc, KafkaError) and exc.code == Errors.KAFKA_STORAGE_ERROR:
                    # its log directory failed: the partition stops being fetched (Kafka's
                    # markPartitionFailed); the directory goes offline on the failure handler's thread
                    _log.warning("fetch_partition_failed", broker_id=self.broker_id, topic=tp[0],
                                 partition=tp[1], reason=exc.message)
                    self.remove_partitions([tp])
                else:
                    _log.exception("fetch_processing_failed", broker_id=self.broker_id, topic=tp[0],
                                   partition=tp[1])
                continue
            if new_offset is None:
                continue
            if r.error == Errors.NONE:
                ok += 1
            with self._lock:
                cur = self.partitions.get(tp)
                if cur is not None and cur.fetch_offset == sent and new_offset != sent:
                    cur.fetch_offset = new_offset
                    self._dirty.add(tp)
                elif cur is not None and partition.log.log_start_offset != log_start:
                    self._dirty.add(tp)   # the leader's low watermark counts this replica's log start
        return ok > 0 or not results

    def _apply(self, tp: TP, partition: Partition, r: LogReadResult) -> int | None:
        """One partition's answer; the next fetch offset, or None to leave it unchanged."""
        if r.error == Errors.NONE:
            div = r.diverging_epoch
            if div is not None and div[0] >= 0 and div[1] >= 0:
                return self._truncate_on_divergence(partition, div[0], div[1])
            log = partition.log
            if not r.records and r.high_watermark == log.high_watermark and \
                    r.log_start_offset <= log.log_start_offset:
                return log.log_end_offset   # nothing new (most partitions of most fetches)
            self.replica_manager.append_as_follower(tp, r.records or b"", r.high_watermark, r.log_start_offset)
            return log.log_end_offset
        if r.error == Errors.OFFSET_OUT_OF_RANGE:
            return self._handle_out_of_range(partition, r.high_watermark, r.log_start_offset)
        _log.debug("fetch_partition_error", broker_id=self.broker_id, topic=tp[0],
                   partition=tp[1], error=r.error, leader=self.leader_id)
        return None

    def _truncate_on_divergence(self, partition: Partition, leader_epoch: int, leader_end: int) -> int:
        log = partition.log
        f_epoch, f_end = log.end_offset_for_epoch(leader_epoch)
        if f_epoch < 0 or f_end < 0:
            target = log.high_watermark
        elif f_epoch == leader_epoch:
            target = min(leader_end, f_end)
        else:
            target = f_end
        target = min(target, log.log_end_offset)
        if partition.truncate_to(target):
            _log.info("truncated_on_divergence", broker_id=self.broker_id, topic=partition.topic,
                      partition=partition.partition, offset=target, leader_epoch=leader_epoch,
                      leader_end_offset=leader_end)
        return log.log_end_offset

    def _handle_out_of_range(self, partition: Partition, leader_hw: int, leader_start: int) -> int:
        """Kafka's ``fetchOffsetAndTruncate``: ahead of the leader, truncate; behind the
        leader's log start offset (retention deleted what this replica needs), start over there."""
        log = partition.log
        if log.log_end_offset > leader_hw >= 0:
            partition.truncate_to(leader_hw)
        elif leader_start > log.log_end_offset:
            partition.truncate_fully_and_start_at(leader_start)
        _log.info("fetch_offset_out_of_range", broker_id=self.broker_id, topic=partition.topic,
                  partition=partition.partition, leo=log.log_end_offset, leader_hw=leader_hw,
                  leader_log_start=leader_start)
        return log.log_end_offset


class ReplicaFetcherManager:
    def __init__(self, broker_id: int, replica_manager: "ReplicaManager", metadata: "MetadataStore",
                 config: KafkaConfig) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.metadata = metadata
        self.config = config
        self.num_fetchers = max(1, int(config["num.replica.fetchers"]))
        self._lock = threading.Lock()
        self.fetchers: dict[tuple[int, int], ReplicaFetcherThread] = {}
        self._closed = False
        self._paused = False

    def _fetcher_id(self, tp: TP) -> int:
        return (hash(tp[0]) * 31 + tp[1]) % self.num_fetchers

    def add_partition(self, tp: TP, leader_id: int, topic_id: uuid.UUID, fetch_offset: int) -> None:
        with self._lock:
            if self._closed:
                return
            key = (self._fetcher_id(tp), leader_id)
            thread = self.fetchers.get(key)
            if thread is None:
                thread = ReplicaFetcherThread(key[0], leader_id, self.broker_id, self.replica_manager,
                                              self.metadata, self.config)
                thread.paused = self._paused
                self.fetchers[key] = thread
                thread.start()
            for other_key, other in self.fetchers.items():
                if other_key != key:
                    other.remove_partitions([tp])
            thread.add_partition(tp, topic_id, fetch_offset)

    def remove_partitions(self, tps: list[TP]) -> None:
        with self._lock:
            threads = list(self.fetchers.values())
        for t in threads:
            t.remove_partitions(tps)

    def shutdown_idle_fetchers(self) -> None:
        with self._lock:
            idle = [(k, t) for k, t in self.fetchers.items() if t.partition_count() == 0]
            for k, _ in idle:
                del self.fetchers[k]
        for _, t in idle:
            t.initiate_shutdown()
        for _, t in idle:
            t.await_shutdown()

    def set_paused(self, paused: bool, leader_id: int | None = None) -> None:
        """Test hook: stall (or resume) this broker's fetchers (threads stay alive)."""
        with self._lock:
            threads = [t for (fid, lid), t in self.fetchers.items() if leader_id is None or lid == leader_id]
            self._paused = paused
        for t in threads:
            t.paused = paused

    def shutdown(self) -> None:
        with self._lock:
            self._closed = True
            threads = list(self.fetchers.values())
            self.fetchers.clear()
        for t in threads:
            t.initiate_shutdown()
        for t in threads:
            t.await_shutdown()
