"""FindCoordinator: which broker coordinates a group (key type 0) or a transactional id (key type 1).

The coordinator of group G is the leader of ``__consumer_offsets`` partition
``Utils.abs(G.hashCode()) % offsets.topic.num.partitions`` (the group coordinator's
``partition_for``); that of transactional id T the leader of ``__transaction_state`` partition
``Utils.abs(T.hashCode()) % transaction.state.log.num.partitions``. Each topic is created on
first use, as Kafka does (``__transaction_state`` with Kafka's forced configs: compacted,
uncompressed, ``min.insync.replicas`` = ``transaction.state.log.min.isr``, ``segment.bytes`` =
``transaction.state.log.segment.bytes``). v0-v3 carry one key; v4+ batch several
(``coordinator_keys``) and answer one entry per key. Key type 2 (KIP-932) finds a share
partition's share coordinator: the key is ``group:topicId:partition`` (else INVALID_REQUEST) and
its coordinator the leader of ``__share_group_state`` partition ``abs(hash(key)) %
share.coordinator.state.topic.num.partitions`` (created on first use like the others; before v6
INVALID_REQUEST; CLUSTER_ACTION on the cluster needed, else CLUSTER_AUTHORIZATION_FAILED; answered
whatever ``share.version``, as Kafka does). Other key types get INVALID_REQUEST. A partition without a live leader answers COORDINATOR_NOT_AVAILABLE so clients
retry, as Kafka does during an election.
"""
from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, broker_endpoint, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.server.auth_helper import CLUSTER, GROUP, TRANSACTIONAL_ID, Op, authorize
from kafka_emu.broker.server.metadata_store import OFFSETS_TOPIC
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.coordinator.group import records
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.share.config import SHARE_GROUP_STATE_TOPIC, state_topic_configs
from kafka_emu.coordinator.transaction import TRANSACTION_STATE_TOPIC
from kafka_emu.coordinator.transaction.transaction_log import partition_for as txn_partition_for

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2
FIRST_SHARE_KEY_VERSION = 6   # KIP-932: key type 2 from FindCoordinator v6


def partition_for(apis: KafkaApis, group_id: str) -> int:
    coordinator = apis.group_coordinator
    if coordinator is not None:
        return coordinator.partition_for(group_id)
    return records.partition_for(group_id, apis.config["offsets.topic.num.partitions"])


def lookup(apis: KafkaApis, request: Request, key_type: int, key: str) -> tuple[int, int, str, int, str | None]:
    """(error, node_id, host, port, message) for one coordinator key."""
    md = apis.metadata
    cfg = apis.config
    if key_type == GROUP_KEY_TYPE:
        if not authorize(apis, request, Op.DESCRIBE, GROUP, key):
            return Errors.GROUP_AUTHORIZATION_FAILED, -1, "", -1, None
        if not key:
            return Errors.INVALID_REQUEST, -1, "", -1, "empty group id"
        if not md.ensure_offsets_topic(cfg["offsets.topic.num.partitions"],
                                       cfg["offsets.topic.replication.factor"]):
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None
        return _leader(apis, OFFSETS_TOPIC, partition_for(apis, key), request.listener)
    if key_type == TRANSACTION_KEY_TYPE:
        if not authorize(apis, request, Op.DESCRIBE, TRANSACTIONAL_ID, key):
            return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, "", -1, None
        if not key:
            return Errors.INVALID_REQUEST, -1, "", -1, "empty transactional id"
        if apis.transaction_coordinator is None:
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None
        num_partitions = cfg["transaction.state.log.num.partitions"]
        if not md.ensure_internal_topic(TRANSACTION_STATE_TOPIC, num_partitions,
                                        cfg["transaction.state.log.replication.factor"],
                                        {"cleanup.policy": "compact", "compression.type": "uncompressed",
                                         "min.insync.replicas": cfg["transaction.state.log.min.isr"],
                                         "segment.bytes": cfg["transaction.state.log.segment.bytes"]}):
            return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None
        return _leader(apis, TRANSACTION_STATE_TOPIC, txn_partition_for(key, num_partitions), request.listener)
    if key_type == SHARE_KEY_TYPE and request.api_version < FIRST_SHARE_KEY_VERSION:
        return Errors.INVALID_REQUEST, -1, "", -1, None
    if key_type == SHARE_KEY_TYPE:
        if not authorize(apis, request, Op.CLUSTER_ACTION, CLUSTER):
            return Errors.CLUSTER_AUTHORIZATION_FAILED, -1, "", -1, None
        return _share_coordinator(apis, request, key)
    return Errors.INVALID_REQUEST, -1, "", -1, f"Invalid coordinator type {key_type}"


def _share_coordinator(apis: KafkaApis, request: Request, key: str) -> tuple[int, int, str, int, str | None]:
    """Kafka's ``SharePartitionKey.validate`` then the share coordinator's partition leader."""
    parts = key.rsplit(":", 2)
    valid = len(parts) == 3 and parts[0] != "" and parts[2].isdigit()
    if valid:
        try:
            valid = len(base64.urlsafe_b64decode(parts[1] + "==")) == 16
        except (ValueError, binascii.Error):
            valid = False
    if not valid:
        return Errors.INVALID_REQUEST, -1, "", -1, f"Share coordinator key {key} is not of the form group:topicId:partition"
    cfg = apis.config
    num_partitions = cfg["share.coordinator.state.topic.num.partitions"]
    if not apis.metadata.ensure_internal_topic(
            SHARE_GROUP_STATE_TOPIC, num_partitions, cfg["share.coordinator.state.topic.replication.factor"],
            state_topic_configs(cfg)):
        return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None
    return _leader(apis, SHARE_GROUP_STATE_TOPIC, records.partition_for(key, num_partitions), request.listener)


def _leader(apis: KafkaApis, topic: str, partition: int, listener: str | None
            ) -> tuple[int, int, str, int, str | None]:
    md = apis.metadata
    st = md.partition_state(topic, partition)
    if st is None or st.leader < 0 or not md.is_live(st.leader):
        return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None
    host, port = broker_endpoint(md.broker(st.leader), listener)
    return Errors.NONE, st.leader, host, port, None


def handle_find_coordinator(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(ApiKeys.FIND_COORDINATOR, request.api_version)
    key_type = int(getattr(body, "key_type", GROUP_KEY_TYPE))
    if request.api_version >= 4:
        entry_cls = item_cls(cls, "coordinators")
        entries = []
        for key in body.coordinator_keys:
            err, node, host, port, msg = lookup(apis, request, key_type, key)
            entries.append(build(entry_cls, key=key, node_id=node, host=host, port=port,
                                 error_code=err, error_message=msg))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, coordinators=tuple(entries)))
        return
    err, node, host, port, msg = lookup(apis, request, key_type, body.key)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=err,
                                 error_message=msg, node_id=node, host=host, port=port))


APIS = (ApiSpec(ApiKeys.FIND_COORDINATOR, 0, 6, handle_find_coordinator),)
