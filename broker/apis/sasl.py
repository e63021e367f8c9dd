"""SaslHandshake and SaslAuthenticate as KafkaApis sees them: only on a connection that is
already authenticated, or on a listener without SASL (the authenticator,
``broker.network.sasl_server_authenticator``, answers them while a SASL connection
authenticates, and a re-authentication starts there too). Kafka's
``handleSaslHandshakeRequest``/``handleSaslAuthenticateRequest``: ILLEGAL_SASL_STATE.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_emu.broker.apis._common import respond
from kafka_emu.broker.apis.api_spec import ApiSpec
from kafka_emu.broker.protocol.adapter import build, response_schema
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.network.request_channel import Request
    from kafka_emu.broker.server.kafka_apis import KafkaApis

SASL_HANDSHAKE, SASL_AUTHENTICATE = int(ApiKeys.SASL_HANDSHAKE), int(ApiKeys.SASL_AUTHENTICATE)


def handle_sasl_handshake(apis: KafkaApis, request: Request) -> None:
    respond(apis, request, build(response_schema(SASL_HANDSHAKE, request.api_version),
                                 error_code=Errors.ILLEGAL_SASL_STATE, mechanisms=()))


def handle_sasl_authenticate(apis: KafkaApis, request: Request) -> None:
    respond(apis, request, build(response_schema(SASL_AUTHENTICATE, request.api_version),
                                 error_code=Errors.ILLEGAL_SASL_STATE, auth_bytes=b"",
                                 error_message="SaslAuthenticate request received after successful authentication"))


APIS = (ApiSpec(ApiKeys.SASL_HANDSHAKE, 0, 1, handle_sasl_handshake),
        ApiSpec(ApiKeys.SASL_AUTHENTICATE, 0, 2, handle_sasl_authenticate))
