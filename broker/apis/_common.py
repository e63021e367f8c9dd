"""Helpers shared by the wire API handlers (not an API themselves).

Handlers reach the broker through the ``KafkaApis`` instance they are registered on; these
helpers keep the recurring lookups in one place so the handler modules read like Kafka's
``KafkaApis.handleXxx`` methods.
"""
from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Union
from uuid import UUID

from kafka_emu.broker.protocol.adapter import build, response_schema
from kafka_emu.broker.protocol.error_response import build_error_response
from kafka_emu.broker.server.quota.controller_mutation_quota_manager import UNBOUNDED, ControllerMutationQuota
from kafka_emu.broker.server.request_handler_helper import quota_user
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.server.metadata_store import BrokerInfo, MetadataStore
    from kafka_emu.broker.network.request_channel import Request

ZERO_THROTTLE = timedelta(0)
AUTHORIZED_OPS_OMITTED = -2147483648   # Kafka's "not requested" marker for authorized operations
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
_MS = timedelta(milliseconds=1)

TopicKey = Union[str, UUID]   # a Produce/Fetch topic as the client named it: by name, or by id (v13+)


def respond(apis: KafkaApis, request: Request, body: object) -> None:
    """Answer ``request`` through the broker's request channel (metrics see every response),
    within the client's request quota (Kafka's ``sendResponseMaybeThrottle``)."""
    apis.request_helper.send_response_maybe_throttle(request, body)


def controller_mutation_quota(apis: KafkaApis, request: Request, strict_since_version: int
                              ) -> ControllerMutationQuota:
    """The request's controller mutation quota (Kafka's ``newQuotaFor``): strict from
    ``strict_since_version``; unbounded for in-process requests and without quotas."""
    if not apis.request_helper.applies_to(request):
        return UNBOUNDED
    assert apis.quotas is not None
    return apis.quotas.controller_mutation.new_quota_for(quota_user(request), request.client_id or "",
                                                         request.api_version, strict_since_version)


def permissive_controller_mutation_quota(apis: KafkaApis, request: Request) -> ControllerMutationQuota:
    """The request's permissive controller mutation quota (auto topic creation)."""
    if not apis.request_helper.applies_to(request):
        return UNBOUNDED
    assert apis.quotas is not None
    return apis.quotas.controller_mutation.new_permissive_quota_for(quota_user(request), request.client_id or "")


def respond_error(apis: KafkaApis, request: Request, error_code: int) -> None:
    respond(apis, request, build_error_response(request.api_key, request.api_version, request.body, error_code))


def fenced_error_for(version: int, min_version_with_fenced: int, error: int) -> int:
    """PRODUCER_FENCED as the transaction APIs' older versions know it (INVALID_PRODUCER_EPOCH)."""
    if error == Errors.PRODUCER_FENCED and version < min_version_with_fenced:
        return Errors.INVALID_PRODUCER_EPOCH
    return error


def error_code_answer(apis: KafkaApis, request: Request, api_key: int,
                      fenced_since: int = 2) -> Callable[..., None]:
    """How the transaction APIs whose answer is one error code answer (AddOffsetsToTxn, EndTxn,
    InitProducerId): PRODUCER_FENCED as INVALID_PRODUCER_EPOCH before version ``fenced_since``;
    ``fields`` the version has (EndTxn v5's producer id and epoch) are filled too, the others
    take their defaults (-1 for ids and epochs)."""
    cls = response_schema(api_key, request.api_version)

    def answer(error: int, **fields: int) -> None:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE,
                                     error_code=fenced_error_for(request.api_version, fenced_since, error),
                                     **fields))
    return answer


def topic_name_error(name: str | None) -> int:
    """Kafka's ``Topic.validate``: INVALID_TOPIC_EXCEPTION for illegal names."""
    if not name or name in (".", "..") or len(name) > 249 or not _LEGAL_TOPIC.match(name):
        return Errors.INVALID_TOPIC_EXCEPTION
    return Errors.NONE


def broker_endpoint(info: BrokerInfo, listener: str | None = None) -> tuple[str, int]:
    """Where clients reach broker ``info`` on ``listener`` (the listener a request came in on,
    as Kafka answers each listener with its own endpoints; None or a listener the broker does
    not have: its first)."""
    host, port = info.endpoints.get(listener, (info.host, info.port)) if listener else (info.host, info.port)
    return host or "127.0.0.1", int(port or 0)


def duration_ms(value: timedelta | int) -> int:
    """A kio duration field (``timedelta``, or a plain int from the fast Produce codec) in ms."""
    if isinstance(value, timedelta):
        return value // _MS   # exact (total_seconds() * 1000 can be off by one)
    return int(value)


def topic_key_and_name(topic: Any, by_id: bool, metadata: MetadataStore,
                       name_field: str) -> tuple[TopicKey, str | None]:
    """(key as the client sent it, topic name or None if unknown) of a Produce/Fetch topic entry
    (a versioned kio entity: any version's class). From Produce v13 and Fetch v13 clients name
    topics by id; older versions by name, in field ``name_field``."""
    if by_id:
        return topic.topic_id, metadata.topic_name(topic.topic_id)
    name = getattr(topic, name_field)
    return name, name
