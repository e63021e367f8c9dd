"""Helpers shared by the wire API handlers (not an API themselves).

Handlers reach the broker through the ``KafkaApis`` instance they are registered on; these
helpers keep the attribute lookups in one place so the handler modules read like Kafka's
``KafkaApis.handleXxx`` methods.
"""
from __future__ import annotations

import re
import threading
from datetime import timedelta
from typing import Any

import structlog

from kio.schema.errors import ErrorCode

from kafka_emu.broker.protocol.error_response import build_error_response

_log = structlog.get_logger("broker.apis")

ZERO_THROTTLE = timedelta(0)
AUTHORIZED_OPS_OMITTED = -2147483648   # Kafka's "not requested" marker for authorized operations
OFFSETS_TOPIC = "__consumer_offsets"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
_offsets_topic_lock = threading.Lock()   # serialises the creation of __consumer_offsets


def respond(apis: Any, request: Any, body: Any) -> None:
    """Answer ``request`` through the broker's request channel (metrics see every response)."""
    apis.request_channel.send_response(request, body)


def respond_error(apis: Any, request: Any, error_code: int) -> None:
    respond(apis, request, build_error_response(request.api_key, request.api_version, request.body, error_code))


def topic_name_error(name: str | None) -> int:
    """Kafka's ``Topic.validate``: INVALID_TOPIC_EXCEPTION for illegal names."""
    if not name or name in (".", "..") or len(name) > 249 or not _LEGAL_TOPIC.match(name):
        return int(ErrorCode.invalid_topic_exception)
    return 0


def live_brokers(apis: Any) -> list[Any]:
    return apis.metadata.live_brokers()


def broker_endpoint(info: Any) -> tuple[str, int]:
    return info.host or "127.0.0.1", int(info.port or 0)


def ensure_offsets_topic(apis: Any) -> bool:
    """Create ``__consumer_offsets`` on first use, as Kafka's FindCoordinator does.

    Difference from Kafka on purpose: the replication factor is capped at the number of live
    brokers (Kafka answers COORDINATOR_NOT_AVAILABLE until enough brokers are up), so a one-broker
    embedded cluster works with the default ``offsets.topic.replication.factor=3``.
    """
    md = apis.metadata
    if md.topic(OFFSETS_TOPIC) is not None:
        return True
    with _offsets_topic_lock:
        if md.topic(OFFSETS_TOPIC) is not None:
            return True
        live = len(md.live_broker_ids())
        if live == 0:
            return False
        partitions = apis.config["offsets.topic.num.partitions"]
        rf = min(apis.config["offsets.topic.replication.factor"], live)
        try:
            md.create_topic(OFFSETS_TOPIC, partitions, rf,
                            configs={"cleanup.policy": "compact"}, internal=True)
        except ValueError:
            return md.topic(OFFSETS_TOPIC) is not None
        _log.info("offsets_topic_created", partitions=partitions, replication_factor=rf)
        return True
