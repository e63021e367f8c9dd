"""GetTelemetrySubscriptions (key 71, KIP-714): the metrics a client is asked to push, and how.

Kafka's ``KafkaApis.handleGetTelemetrySubscriptionsRequest``: answered by the broker's
``ClientMetricsManager`` (``broker.server.client_metrics_manager``: instance ids, subscriptions
from the CLIENT_METRICS config resources, the throttling of early requests). An error answer
carries the error alone, as Kafka's ``getErrorResponse``.

Kafka advertises this API and PushTelemetry only when a telemetry exporter plugin is configured;
the emulator always has one (its ``/metrics``), so a broker of every release lists them.
"""
from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, response_schema
from kafka_emu.broker.server.client_metrics_manager import (
    ACCEPTED_COMPRESSION_TYPES, ZERO_UUID, RequestContext,
)
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request



def request_context(request: Request) -> RequestContext:
    return RequestContext(request.client_id, request.connection_id, request.client_host)


def handle_get_telemetry_subscriptions(apis: KafkaApis, request: Request) -> None:
    cls = response_schema(ApiKeys.GET_TELEMETRY_SUBSCRIPTIONS, request.api_version)
    manager = apis.client_metrics_manager
    if manager is None:
        answer_error, answer = Errors.UNSUPPORTED_VERSION, None
    else:
        answer = manager.get_subscription(request.body.client_instance_id, request_context(request))
        answer_error = answer.error
    if answer is None or answer_error != Errors.NONE:
        respond(apis, request, build(cls, throttle_time=ZERO_THROTTLE, error_code=answer_error,
                                     client_instance_id=ZERO_UUID, subscription_id=0, accepted_compression_types=(),
                                     push_interval=timedelta(0), telemetry_max_bytes=0, delta_temporality=False,
                                     requested_metrics=()))
        return
    respond(apis, request, build(
        cls, throttle_time=ZERO_THROTTLE, error_code=Errors.NONE, client_instance_id=answer.client_instance_id,
        subscription_id=answer.subscription_id, accepted_compression_types=ACCEPTED_COMPRESSION_TYPES,
        push_interval=timedelta(milliseconds=answer.push_interval_ms), telemetry_max_bytes=manager.telemetry_max_bytes,
        delta_temporality=True, requested_metrics=answer.requested_metrics))


APIS = (ApiSpec(ApiKeys.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, handle_get_telemetry_subscriptions),)
