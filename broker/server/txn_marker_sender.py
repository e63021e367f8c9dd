"""The broker's side of the transaction coordinator's marker channel: ``TxnMarkerSender``.

``InProcessTxnMarkerSender`` delivers a coordinator's markers to a partition leader as Kafka's
``TransactionMarkerChannelManager`` does, with one WriteTxnMarkers (v1) request per destination
broker, here put straight into the leader's request channel (no sockets): the leader's handler
calls ``ReplicaManager.write_txn_markers``, and the answer (errors per producer id and partition)
goes back to the channel manager. A closed channel, or a request answered with a disconnect
(the broker stopped), is reported as unreachable, so the markers are sent again to whoever leads
the partitions next. Leaders come from the metadata store: None for a partition that no longer
exists, -1 while it has no live leader. (The KIP-890 verification lookup is
``broker.server.transaction_verification``.)

Locking: no state of its own.
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Callable, Sequence

import structlog
from kio.index import load_request_schema

from kafka_emu.broker.network.request_channel import Request, Response
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.transaction.transaction_marker_channel_manager import NO_LEADER, PartitionErrors
from kafka_emu.coordinator.txn_marker import TxnMarkerEntry

if TYPE_CHECKING:
    from kafka_emu.broker.server.metadata_store import MetadataStore

_log = structlog.get_logger("broker.txn_marker_sender")

WRITE_TXN_MARKERS_VERSION = 1
TopicPartition = tuple[str, int]
_correlation = itertools.count(1)


def _request_body(entries: Sequence[TxnMarkerEntry]) -> object:
    cls = load_request_schema(ApiKeys.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION)
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

        request = Request(api_key=int(ApiKeys.WRITE_TXN_MARKERS), api_version=WRITE_TXN_MARKERS_VERSION,
                          correlation_id=next(_correlation), client_id=f"broker-{self.broker_id}-txn-marker-sender",
                          body=_request_body(entries), respond=on_response, api_name=ApiKeys.WRITE_TXN_MARKERS.name,
                          connection_id=f"txn-markers-{self.broker_id}")
        if not channel.send_request(request, timeout_s=5.0):
            callback(None)
