"""The broker's side of the transaction coordinator: the marker channel's ``TxnMarkerSender`` and
the KIP-890 verification lookup.

``InProcessTxnMarkerSender`` delivers a coordinator's markers to a partition leader as Kafka's
``TransactionMarkerChannelManager`` does, with one WriteTxnMarkers (v1) request per destination
broker, here put straight into the leader's request channel (no sockets): the leader's handler
calls ``ReplicaManager.write_txn_markers``, and the answer (errors per producer id and partition)
goes back to the channel manager. A closed channel, or a request answered with a disconnect
(the broker stopped), is reported as unreachable, so the markers are sent again to whoever leads
the partitions next. Leaders come from the metadata store: None for a partition that no longer
exists, -1 while it has no live leader.

``TransactionVerifier`` is ``ReplicaManager.verify_transaction`` and ``add_to_transaction``: it
finds the transaction coordinator of the transactional id (the live leader of its
``__transaction_state`` partition) and asks it whether the partition is in the producer's ongoing
transaction, or (transaction version 2) has it add the partition. Difference from Kafka
on purpose: the question is an in-process call to that broker's ``TransactionCoordinator``
(registered on its ``BrokerInfo``), not an inter-broker AddPartitionsToTxn v4 ``VerifyOnly``
request; the answers are the same.

Locking: no state of its own.
"""
from __future__ import annotations

import itertools
import threading
import time
from typing import TYPE_CHECKING, Callable, Sequence

import structlog
from kio.index import load_request_schema

from kafka_emu.broker.network.request_channel import Request, Response
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction import TRANSACTION_STATE_TOPIC
from kafka_emu.coordinator.transaction.transaction_marker_channel_manager import NO_LEADER, PartitionErrors
from kafka_emu.coordinator.transaction.transaction_coordinator import TV_2
from kafka_emu.coordinator.transaction.transaction_log import partition_for
from kafka_emu.coordinator.txn_marker import TxnMarkerEntry

if TYPE_CHECKING:
    from kafka_emu.broker.server.metadata_store import MetadataStore
    from kafka_emu.coordinator.transaction import TransactionCoordinator

_log = structlog.get_logger("broker.txn_marker_sender")

WRITE_TXN_MARKERS = 27
WRITE_TXN_MARKERS_VERSION = 1
TopicPartition = tuple[str, int]
_correlation = itertools.count(1)


def _request_body(entries: Sequence[TxnMarkerEntry]) -> object:
    cls = load_request_schema(WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION)
    mod = __import__(cls.__module__, fromlist=["WritableTxnMarker", "WritableTxnMarkerTopic"])
    markers = []
    for e in entries:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in e.partitions:
            by_topic.setdefault(topic, []).append(partition)
        markers.append(mod.WritableTxnMarker(
            producer_id=e.producer_id, producer_epoch=e.producer_epoch, transaction_result=e.committed,
            topics=tuple(mod.WritableTxnMarkerTopic(name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items()),
            coordinator_epoch=e.coordinator_epoch))
    return cls(markers=tuple(markers))


class InProcessTxnMarkerSender:
    def __init__(self, broker_id: int, metadata: MetadataStore) -> None:
        self.broker_id = broker_id
        self.metadata = metadata

    def partition_leader(self, tp: TopicPartition) -> int | None:
        topic = self.metadata.topic(tp[0])
        if topic is None or tp[1] not in topic.partitions:
            return None
        leader = topic.partitions[tp[1]].leader
        return leader if leader >= 0 and self.metadata.is_live(leader) else NO_LEADER

    def send_markers(self, broker_id: int, entries: Sequence[TxnMarkerEntry],
                     callback: Callable[[list[PartitionErrors] | None], None]) -> None:
        info = self.metadata.broker(broker_id)
        channel = info.request_channel if info is not None and info.live else None
        if channel is None or channel.closed:
            callback(None)
            return

        def on_response(response: Response) -> None:
            body = response.body
            if body is None:
                callback(None)
                return
            by_producer: dict[int, PartitionErrors] = {}
            for m in body.markers:
                codes = by_producer.setdefault(int(m.producer_id), {})
                for t in m.topics:
                    for p in t.partitions:
                        codes[(t.name, int(p.partition_index))] = int(p.error_code)
            callback([{tp: by_producer.get(e.producer_id, {}).get(tp, Errors.UNKNOWN_SERVER_ERROR)
                       for tp in e.partitions} for e in entries])

        request = Request(api_key=WRITE_TXN_MARKERS, api_version=WRITE_TXN_MARKERS_VERSION,
                          correlation_id=next(_correlation), client_id=f"broker-{self.broker_id}-txn-marker-sender",
                          body=_request_body(entries), respond=on_response,
                          connection_id=f"txn-markers-{self.broker_id}")
        if not channel.send_request(request, timeout_s=5.0):
            callback(None)


class TransactionVerifier:
    """``ReplicaManager.verify_transaction`` (called) and ``add_to_transaction`` (``add``)
    against the cluster's transaction coordinators.

    ``add`` is transaction version 2's implicit add (Kafka's AddPartitionsToTxn v4+ with
    ``VerifyOnly=false``, sent by ``AddPartitionsToTxnManager``): the coordinator appends the
    partition to the transaction and ``add`` waits for that write, up to ``request_timeout_ms``
    (then NETWORK_EXCEPTION, which the producer retries). CONCURRENT_TRANSACTIONS (the previous
    transaction's markers are still being written) is asked again every ``retry_backoff_ms``
    until ``retry_backoff_max_ms`` (capped by the request timeout) have passed, as Kafka's
    ``ReplicaManager`` does, then returned. The wait blocks the calling request handler thread
    (Kafka parks the request and resumes it on a handler thread)."""

    def __init__(self, metadata: MetadataStore, num_txn_partitions: int, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 20, retry_backoff_max_ms: int = 100) -> None:
        self.metadata = metadata
        self.num_txn_partitions = num_txn_partitions
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_timeout_ms = min(retry_backoff_max_ms, request_timeout_ms)

    def _coordinator(self, transactional_id: str) -> TransactionCoordinator | None:
        state = self.metadata.partition_state(TRANSACTION_STATE_TOPIC,
                                              partition_for(transactional_id, self.num_txn_partitions))
        if state is None or state.leader < 0 or not self.metadata.is_live(state.leader):
            return None
        info = self.metadata.broker(state.leader)
        coordinator = info.transaction_coordinator if info is not None else None
        return coordinator if coordinator is not None and coordinator.is_active() else None

    def __call__(self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition) -> int:
        coordinator = self._coordinator(transactional_id)
        if coordinator is None:
            return Errors.COORDINATOR_NOT_AVAILABLE
        return coordinator.handle_verify_partitions_in_transaction(
            transactional_id, producer_id, producer_epoch, {tp})[tp]

    def add(self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition) -> int:
        deadline = time.monotonic() + self.retry_timeout_ms / 1000
        while True:
            code = self._add_once(transactional_id, producer_id, producer_epoch, tp)
            if code != Errors.CONCURRENT_TRANSACTIONS or time.monotonic() >= deadline:
                return code
            time.sleep(self.retry_backoff_ms / 1000)

    def _add_once(self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition) -> int:
        coordinator = self._coordinator(transactional_id)
        if coordinator is None:
            return Errors.COORDINATOR_NOT_AVAILABLE
        answered = threading.Event()
        answer: list[int] = []

        def on_added(error: int) -> None:
            answer.append(error)
            answered.set()

        coordinator.handle_add_partitions_to_transaction(transactional_id, producer_id, producer_epoch, {tp},
                                                         on_added, client_transaction_version=TV_2)
        if not answered.wait(self.request_timeout_ms / 1000):
            return Errors.NETWORK_EXCEPTION
        return answer[0]
