"""FindCoordinator: which broker coordinates a group.

The coordinator of group G is the leader of ``__consumer_offsets`` partition
``Utils.abs(G.hashCode()) % offsets.topic.num.partitions`` (the group coordinator's
``partition_for``). The topic is created on first use, as Kafka does. v0-v3 carry one key;
v4+ batch several (``coordinator_keys``) and answer one entry per key.

Transaction coordinators (key type 1) are not emulated: COORDINATOR_NOT_AVAILABLE (see
``init_producer_id``). A partition without a live leader answers COORDINATOR_NOT_AVAILABLE so
clients retry, as Kafka does during an election.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, broker_endpoint, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.metadata import OFFSETS_TOPIC
from kafka_emu.broker.protocol.adapter import build, item_cls, response_schema
from kafka_emu.coordinator import records
from kafka_emu.coordinator.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.kafka_apis import KafkaApis
    from kafka_emu.broker.request_channel import Request

API_KEY = 10
GROUP_KEY_TYPE = 0


def partition_for(apis: KafkaApis, group_id: str) -> int:
    coordinator = apis.group_coordinator
    if coordinator is not None:
        return coordinator.partition_for(group_id)
    return records.partition_for(group_id, apis.config["offsets.topic.num.partitions"])


def lookup(apis: KafkaApis, key_type: int, key: str) -> tuple[int, int, str, int, str | None]:
    """(error, node_id, host, port, message) for one coordinator key."""
    if key_type != GROUP_KEY_TYPE:
        return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, "transactions are not emulated"
    if not key:
        return Errors.INVALID_REQUEST, -1, "", -1, "empty group id"
    md = apis.metadata
    if not md.ensure_offsets_topic(apis.config["offsets.topic.num.partitions"],
                                   apis.config["offsets.topic.replication.factor"]):
        return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None
    st = md.partition_state(OFFSETS_TOPIC, partition_for(apis, key))
    if st is None or st.leader < 0 or not md.is_live(st.leader):
        return Errors.COORDINATOR_NOT_AVAILABLE, -1, "", -1, None
    info = md.broker(st.leader)
    host, port = broker_endpoint(info)
    return Errors.NONE, st.leader, host, port, None


def handle_find_coordinator(apis: KafkaApis, request: Request) -> None:
    body = request.body
    cls = response_schema(API_KEY, request.api_version)
    key_type = int(getattr(body, "key_type", GROUP_KEY_TYPE))
    if request.api_version >= 4:
        entry_cls = item_cls(cls, "coordinators")
        entries = []
        for key in body.coordinator_keys:
            err, node, host, port, msg = lookup(apis, key_type, key)
            entries.append(build(entry_cls, key=key, node_id=node, host=host, port=port,
                                 error_code=err, error_message=msg))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, coordinators=tuple(entries)))
        return
    err, node, host, port, msg = lookup(apis, key_type, body.key)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=err,
                                 error_message=msg, node_id=node, host=host, port=port))


APIS = (ApiSpec(API_KEY, "FindCoordinator", 0, 6, handle_find_coordinator),)
