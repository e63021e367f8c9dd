"""FindCoordinator (key 10): which broker coordinates a group.

The coordinator of group G is the leader of ``__consumer_offsets`` partition
``abs(java_hash(G)) % offsets.topic.num.partitions`` (the group coordinator's
``partition_for``). The topic is created on first use, as Kafka does. v0-v3 carry one key;
v4+ batch several (``coordinator_keys``) and answer one entry per key.

Transaction coordinators (key type 1) are not emulated: COORDINATOR_NOT_AVAILABLE (see
``init_producer_id``). A partition without a live leader answers COORDINATOR_NOT_AVAILABLE so
clients retry, as Kafka does during an election.
"""
from __future__ import annotations

from typing import Any

from kafka_emu.broker.protocol.codec import response_schema
from kio.schema.errors import ErrorCode

from kafka_emu.broker.apis._common import OFFSETS_TOPIC, ZERO_THROTTLE, broker_endpoint, ensure_offsets_topic, respond
from kafka_emu.broker.protocol.adapter import build, item_cls

API_KEY = 10
GROUP_KEY_TYPE = 0


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(apis: Any, group_id: str) -> int:
    coordinator = getattr(apis, "group_coordinator", None)
    if coordinator is not None and hasattr(coordinator, "partition_for"):
        return int(coordinator.partition_for(group_id))
    n = apis.config["offsets.topic.num.partitions"]
    h = java_string_hash(group_id)
    return (abs(h) if h != -(1 << 31) else 0) % n


def lookup(apis: Any, key_type: int, key: str) -> tuple[int, int, str, int, str | None]:
    """(error, node_id, host, port, message) for one coordinator key."""
    if key_type != GROUP_KEY_TYPE:
        return int(ErrorCode.coordinator_not_available), -1, "", -1, "transactions are not emulated"
    if not key:
        return int(ErrorCode.invalid_request), -1, "", -1, "empty group id"
    md = apis.metadata
    if not ensure_offsets_topic(apis):
        return int(ErrorCode.coordinator_not_available), -1, "", -1, None
    st = md.partition_state(OFFSETS_TOPIC, partition_for(apis, key))
    if st is None or st.leader < 0 or not md.is_live(st.leader):
        return int(ErrorCode.coordinator_not_available), -1, "", -1, None
    info = md.broker(st.leader)
    host, port = broker_endpoint(info)
    return 0, st.leader, host, port, None


def handle_find_coordinator(apis: Any, request: Any) -> None:
    body = request.body
    cls = response_schema(API_KEY, request.api_version)
    key_type = int(getattr(body, "key_type", GROUP_KEY_TYPE))
    if request.api_version >= 4:
        entry_cls = item_cls(cls, "coordinators")
        entries = []
        for key in body.coordinator_keys:
            err, node, host, port, msg = lookup(apis, key_type, key)
            entries.append(build(entry_cls, key=key, node_id=node, host=host, port=port,
                                 error_code=ErrorCode(err), error_message=msg))
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, coordinators=tuple(entries)))
        return
    err, node, host, port, msg = lookup(apis, key_type, body.key)
    respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=ErrorCode(err),
                                 error_message=msg, node_id=node, host=host, port=port))


def register(apis: Any) -> None:
    apis.register(API_KEY, handle_find_coordinator)
