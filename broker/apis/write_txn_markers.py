"""WriteTxnMarkers: a transaction coordinator asks a partition leader to end a transaction.

Each marker (producer id and epoch, coordinator epoch, COMMIT or ABORT, partitions) becomes a
``TxnMarkerEntry`` handed to ``ReplicaManager.write_txn_markers``, the same entry point the
coordinator's in-process marker channel uses: one control batch per partition appended with
acks=-1, markers on ``__consumer_offsets`` completing the group coordinator's transactional
offsets. The answer (every partition of every marker, Kafka's
``testWriteTxnMarkersShouldAllBeIncludedInTheResponse``) is sent when every append finished.

Version 1 only, as Kafka 4.0: it removed v0, and v2 (the marker's ``TransactionVersion``,
KAFKA-19446) came after 4.0. Transaction version 2 markers need no field here: they carry the
epoch EndTxn bumped, which the producer state accepts as any newer epoch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.security.acl import CLUSTER_NAME
from kafka_emu.broker.server.auth_helper import CLUSTER, Op, deny
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.txn_marker import TxnMarkerEntry

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request


def handle_write_txn_markers(apis: KafkaApis, request: Request) -> None:
    if deny(apis, request, Op.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME, Errors.CLUSTER_AUTHORIZATION_FAILED):
        return
    markers = tuple(
        TxnMarkerEntry(int(m.producer_id), int(m.producer_epoch), int(m.coordinator_epoch),
                       bool(m.transaction_result),
                       tuple((t.name, int(p)) for t in m.topics for p in t.partition_indexes))
        for m in request.body.markers)
    cls = response_schema(ApiKeys.WRITE_TXN_MARKERS, request.api_version)
    marker_cls = item_cls(cls, "markers")
    topic_cls = item_cls(marker_cls, "topics")
    part_cls = item_cls(topic_cls, "partitions")

    def on_done(errors: dict[int, dict[tuple[str, int], int]]) -> None:
        results = []
        for m in request.body.markers:
            codes = errors.get(int(m.producer_id), {})
            topics = tuple(
                build(topic_cls, name=t.name, partitions=tuple(
                    build(part_cls, partition_index=p,
                          error_code=codes.get((t.name, int(p)), Errors.UNKNOWN_SERVER_ERROR))
                    for p in t.partition_indexes))
                for t in m.topics)
            results.append(build(marker_cls, producer_id=m.producer_id, topics=topics))
        # a cluster action: exempt from the request quota, as in Kafka
        apis.request_helper.send_response_exempt_throttle(request, build(cls, markers=tuple(results)))

    apis.replica_manager.write_txn_markers(markers, on_done)


APIS = (ApiSpec(ApiKeys.WRITE_TXN_MARKERS, 1, 1, handle_write_txn_markers),)
