"""PushTelemetry (key 72, KIP-714): a client's metrics, in OTLP, for the broker's exporter.

Kafka's ``KafkaApis.handlePushTelemetryRequest``: the broker's ``ClientMetricsManager``
(``broker.server.client_metrics_manager``) validates the push (instance id, terminating, the
push interval, subscription id, compression type, size) and hands the decoded metrics to the
emulator's exporter, the ``/metrics`` endpoint (``kafka_emu_client_telemetry``, labelled by client
instance id).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import ZERO_THROTTLE, respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.apis.get_telemetry_subscriptions import request_context
from kafka_emu.broker.protocol.adapter import build, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.server.kafka_apis import KafkaApis
    from kafka_emu.broker.network.request_channel import Request



def handle_push_telemetry(apis: KafkaApis, request: Request) -> None:
    body = request.body
    manager = apis.client_metrics_manager
    error = Errors.UNSUPPORTED_VERSION if manager is None else manager.push(
        body.client_instance_id, int(body.subscription_id), bool(body.terminating), int(body.compression_type),
        bytes(body.metrics or b""), request_context(request))
    respond(apis, request, build(response_schema(ApiKeys.PUSH_TELEMETRY, request.api_version), throttle_time=ZERO_THROTTLE,
                                 error_code=error))


APIS = (ApiSpec(ApiKeys.PUSH_TELEMETRY, 0, 0, handle_push_telemetry),)
