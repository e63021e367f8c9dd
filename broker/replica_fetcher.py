"""ReplicaFetcherManager and ReplicaFetcherThread: followers pull from leaders.

Each follower broker runs one ``ReplicaFetcherThread-<fetcherId>-<leaderBrokerId>`` per
(fetcher id, leader) pair (``num.replica.fetchers`` fetchers per leader, partitions hashed onto
them). A thread builds a kio ``FetchRequest`` (v17: topic ids, ``replica_state.replica_id`` = its
broker id, ``last_fetched_epoch`` for KIP-101/KIP-279 truncation) and sends it through the
LEADER's request channel like any network request, so it is served by the leader's handler
threads, ``fetch_messages`` and the Fetch purgatory (parked for up to
``replica.fetch.wait.max.ms``). It appends the returned batches, takes min(leader HW, LEO) as
its HW, truncates on a diverging epoch, and fetches again at its new LEO, which tells the
leader how far it got.

Locking: each thread's ``_lock`` guards its partition map (``partitions``); the manager's
``_lock`` guards its map of threads. Neither is held while a request is outstanding or while
the replica manager is called.
"""
from __future__ import annotations

import queue
import threading
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import structlog

from broker import errors
from broker.request_channel import Request
from kio.schema.fetch.v17.request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from timer import ShutdownableThread

if TYPE_CHECKING:
    from broker.metadata import MetadataStore
    from broker.replica_manager import ReplicaManager

_log = structlog.get_logger("broker.replica_fetcher")

FETCH_VERSION = 17
TP = tuple[str, int]


@dataclass
class PartitionFetchState:
    topic_id: uuid.UUID
    fetch_offset: int
    delayed_until_ms: int = 0


class ReplicaFetcherThread(ShutdownableThread):
    def __init__(self, fetcher_id: int, leader_id: int, broker_id: int, replica_manager: "ReplicaManager",
                 metadata: "MetadataStore", config: Any) -> None:
        super().__init__(name=f"ReplicaFetcherThread-{fetcher_id}-{leader_id}", log_context={"broker_id": broker_id})
        self.fetcher_id = fetcher_id
        self.leader_id = leader_id
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.metadata = metadata
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self.partitions: dict[TP, PartitionFetchState] = {}
        self.max_wait = timedelta(milliseconds=config["replica.fetch.wait.max.ms"])
        self.min_bytes = config["replica.fetch.min.bytes"]
        self.max_bytes = config["replica.fetch.max.bytes"]
        self.response_max_bytes = config["replica.fetch.response.max.bytes"]
        self.backoff_s = config["replica.fetch.backoff.ms"] / 1000.0
        # Responses arrive on a C SimpleQueue (fast hand-off from the leader's handler thread);
        # each request carries its own correlation id so a late answer is recognised and dropped.
        self._responses: queue.SimpleQueue = queue.SimpleQueue()
        self._correlation = 0
        self.fetch_requests = 0
        self.paused = False  # tests: a stalled follower (the thread stays alive)

    # ------------------------------------------------------------------ partition map
    def add_partition(self, tp: TP, topic_id: uuid.UUID, fetch_offset: int) -> None:
        with self._cond:
            self.partitions[tp] = PartitionFetchState(topic_id, fetch_offset)
            self._cond.notify_all()

    def remove_partitions(self, tps: list[TP]) -> None:
        with self._lock:
            for tp in tps:
                self.partitions.pop(tp, None)

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
                self._cond.wait(0.05 if self.paused else 0.2)
                return
            snapshot = dict(self.partitions)
        rm = self.replica_manager
        topics: dict[uuid.UUID, list[FetchPartition]] = {}
        for tp, st in snapshot.items():
            partition = rm.get_partition(tp)
            if partition is None:
                continue
            log = partition.log
            topics.setdefault(st.topic_id, []).append(FetchPartition(
                partition=tp[1], current_leader_epoch=partition.leader_epoch, fetch_offset=st.fetch_offset,
                last_fetched_epoch=log.latest_epoch(), log_start_offset=log.log_start_offset,
                partition_max_bytes=self.max_bytes))
        if not topics:
            self._shutdown_initiated.wait(0.05)
            return
        body = FetchRequest(replica_state=ReplicaState(replica_id=self.broker_id, replica_epoch=-1),
                            max_wait=self.max_wait, min_bytes=self.min_bytes, max_bytes=self.response_max_bytes,
                            isolation_level=0, session_id=0, session_epoch=-1,
                            topics=tuple(FetchTopic(topic_id=tid, partitions=tuple(ps)) for tid, ps in topics.items()),
                            forgotten_topics_data=(), rack_id="")
        response = self._send(body)
        if response is None:
            if not self.is_shutdown_initiated():
                self._shutdown_initiated.wait(self.backoff_s)
            return
        self.fetch_requests += 1
        if not self._process(snapshot, response):
            self._shutdown_initiated.wait(self.backoff_s)

    def _send(self, body: FetchRequest) -> Any:
        info = self.metadata.broker(self.leader_id)
        channel = info.request_channel if info is not None and info.live else None
        if channel is None or channel.closed:
            return None
        self._correlation += 1
        correlation = self._correlation
        responses = self._responses

        def respond(response: Any) -> None:
            responses.put((correlation, response.body))

        request = Request(api_key=1, api_version=FETCH_VERSION, correlation_id=correlation,
                          client_id=self.name, body=body, respond=respond,
                          connection_id=f"replica-{self.broker_id}")
        if not channel.send_request(request, timeout_s=5.0):
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

    def _process(self, snapshot: dict[TP, PartitionFetchState], response: Any) -> bool:
        """Apply a fetch response; false if every partition failed (back off)."""
        rm = self.replica_manager
        ok = 0
        for topic in response.responses:
            name = self.metadata.topic_name(topic.topic_id)
            if name is None:
                continue
            for pd in topic.partitions:
                tp = (name, int(pd.partition_index))
                sent = snapshot.get(tp)
                with self._lock:
                    cur = self.partitions.get(tp)
                    if cur is None or sent is None or cur.fetch_offset != sent.fetch_offset:
                        continue  # removed or reset meanwhile
                partition = rm.get_partition(tp)
                if partition is None:
                    continue
                code = int(pd.error_code)
                try:
                    if code == errors.NONE:
                        div = pd.diverging_epoch
                        if div.epoch >= 0 and div.end_offset >= 0:
                            new_offset = self._truncate_on_divergence(partition, div.epoch, div.end_offset)
                        else:
                            rm.append_as_follower(tp, pd.records or b"", int(pd.high_watermark))
                            new_offset = partition.log.log_end_offset
                        ok += 1
                    elif code == errors.OFFSET_OUT_OF_RANGE:
                        new_offset = self._handle_out_of_range(partition, int(pd.high_watermark),
                                                               int(pd.log_start_offset))
                    else:
                        _log.debug("fetch_partition_error", broker_id=self.broker_id, topic=tp[0],
                                   partition=tp[1], error=code, leader=self.leader_id)
                        continue
                except Exception:
                    _log.exception("fetch_processing_failed", broker_id=self.broker_id, topic=tp[0],
                                   partition=tp[1])
                    continue
                with self._lock:
                    cur = self.partitions.get(tp)
                    if cur is not None and cur.fetch_offset == sent.fetch_offset:
                        cur.fetch_offset = new_offset
        return ok > 0 or not snapshot

    def _truncate_on_divergence(self, partition: Any, leader_epoch: int, leader_end: int) -> int:
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

    def _handle_out_of_range(self, partition: Any, leader_hw: int, leader_start: int) -> int:
        log = partition.log
        if log.log_end_offset > leader_hw >= 0:
            partition.truncate_to(leader_hw)
        _log.info("fetch_offset_out_of_range", broker_id=self.broker_id, topic=partition.topic,
                  partition=partition.partition, leo=log.log_end_offset, leader_hw=leader_hw,
                  leader_log_start=leader_start)
        return log.log_end_offset


class ReplicaFetcherManager:
    def __init__(self, broker_id: int, replica_manager: "ReplicaManager", metadata: "MetadataStore",
                 config: Any) -> None:
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
