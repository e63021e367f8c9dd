"""SaslServerAuthenticator: a SASL connection's authentication, on its network thread (Kafka's
``SaslServerAuthenticator``).

Until a connection is authenticated its processor hands every frame here instead of to the
request channel. States, as Kafka's: INITIAL_REQUEST and HANDSHAKE_OR_VERSIONS_REQUEST accept
ApiVersions (answered here, with the broker's ranges) and SaslHandshake; HANDSHAKE_REQUEST only
SaslHandshake; then AUTHENTICATE. SaslHandshake v1 makes the tokens travel in SaslAuthenticate
requests (KIP-152); after v0 they are bare size-prefixed tokens, answered the same way. A
mechanism not enabled on the listener is answered UNSUPPORTED_SASL_MECHANISM with the enabled
ones; another request during the handshake closes the connection without an answer (Kafka's
InvalidRequestException); during authentication it is answered ILLEGAL_SASL_STATE. A failed
exchange is answered SASL_AUTHENTICATION_FAILED with the mechanism's client-safe message, or
Kafka's generic "Authentication failed during authentication due to invalid credentials with
SASL mechanism M". Every failure ends with the connection closed after
``connection.failed.authentication.delay.ms`` (the processor's delayed close).

Re-authentication (KIP-368): on completion the session lifetime is the mechanism's
``connections.max.reauth.ms`` (bounded by an OAUTHBEARER token's expiry); SaslAuthenticate v1+
tells the client, and a client that used v1+ may start again with a SaslHandshake on the
authenticated connection (``reauthenticate``), with the same mechanism and ending with the same
principal. A connection whose session expired is closed at its next request (the processor).

The result of each frame is a ``Step``: the bytes to send (framed), and whether the exchange
completed or failed (with the reason for the log). One object per connection, used only by its
processor's thread.
"""
from __future__ import annotations

import enum
import struct
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from kafka_emu.broker.protocol.adapter import build, response_schema
from kafka_emu.broker.protocol.codec import (
    InvalidRequestError,
    RequestHeaderData,
    decode_request_fast,
    decode_request_header,
    encode_response,
)
from kafka_emu.broker.security.auth import USER_TYPE, KafkaPrincipal
from kafka_emu.broker.security.listener_security import ListenerSecurity, ScramLookup
from kafka_emu.broker.security.sasl_server import SaslAuthenticationException, SaslException, SaslServer
from kafka_emu.common.api_keys import ApiKeys
from kafka_emu.common.errors import Errors

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = (int(ApiKeys.API_VERSIONS), int(ApiKeys.SASL_HANDSHAKE),
                                                 int(ApiKeys.SASL_AUTHENTICATE))
_SIZE = struct.Struct(">i")

if TYPE_CHECKING:
    from kafka_emu.broker.network.processor import ApiVersionManager


class SaslState(enum.Enum):
    INITIAL_REQUEST = enum.auto()
    HANDSHAKE_OR_VERSIONS_REQUEST = enum.auto()
    HANDSHAKE_REQUEST = enum.auto()
    AUTHENTICATE = enum.auto()
    REAUTH_PROCESS_HANDSHAKE = enum.auto()
    COMPLETE = enum.auto()
    FAILED = enum.auto()


@dataclass(frozen=True, slots=True)
class Step:
    """What the processor does after one frame: send ``response`` (framed bytes, may be None),
    then: ``complete`` (authenticated), ``failure`` (close after the failed-authentication delay)
    or ``close_now`` (close without waiting: not a Kafka client, or a broken frame)."""

    response: bytes | None = None
    complete: bool = False
    failure: str | None = None
    close_now: bool = False


class SaslServerAuthenticator:
    def __init__(self, security: ListenerSecurity, scram_credentials: ScramLookup,
                 api_versions: ApiVersionManager) -> None:
        self.security = security
        self.scram_credentials = scram_credentials
        self.api_versions = api_versions
        self.state = SaslState.INITIAL_REQUEST
        self.mechanism: str | None = None
        self.server: SaslServer | None = None
        self.kafka_headers = True            # SaslHandshake v1+: tokens inside SaslAuthenticate
        self.client_supports_reauth = False  # the client used SaslAuthenticate v1+
        self.principal: KafkaPrincipal | None = None
        self.session_lifetime_ms = 0
        self.session_expiration_ns: int | None = None
        self.previous: tuple[str, KafkaPrincipal] | None = None   # re-authentication: (mechanism, principal)

    @property
    def reauthenticating(self) -> bool:
        return self.previous is not None

    def _what(self) -> str:
        return "re-authentication" if self.reauthenticating else "authentication"

    def reauthenticate(self, frame: bytes) -> Step:
        """Begin KIP-368 re-authentication with the SaslHandshake ``frame`` of an authenticated
        connection."""
        assert self.mechanism is not None and self.principal is not None
        self.previous = (self.mechanism, self.principal)
        self.server = None
        self.state = SaslState.REAUTH_PROCESS_HANDSHAKE
        return self.handle(frame)

    # ------------------------------------------------------------------ frames
    def handle(self, frame: bytes) -> Step:
        try:
            if self.state is SaslState.AUTHENTICATE:
                return self._token(frame)
            if self.state in (SaslState.INITIAL_REQUEST, SaslState.HANDSHAKE_OR_VERSIONS_REQUEST,
                              SaslState.HANDSHAKE_REQUEST, SaslState.REAUTH_PROCESS_HANDSHAKE):
                return self._kafka_request(frame)
            return self._fail(None, f"unexpected frame in SASL state {self.state.name}")
        except InvalidRequestError as exc:
            self.state = SaslState.FAILED
            return Step(close_now=True, failure=f"invalid request during SASL {self._what()}: {exc}")

    def _fail(self, response: bytes | None, reason: str) -> Step:
        self.state = SaslState.FAILED
        return Step(response, failure=reason)

    def _kafka_request(self, frame: bytes) -> Step:
        try:
            header = decode_request_header(frame)
        except InvalidRequestError as exc:
            if self.state is SaslState.INITIAL_REQUEST:
                raise InvalidRequestError("Invalid request, potential reasons: kafka client configured with the "
                                          "wrong security protocol, it does not support KIP-43 or it is not a "
                                          f"kafka client. ({exc})") from None
            raise
        if header.api_key not in (API_VERSIONS, SASL_HANDSHAKE) or \
                (header.api_key == API_VERSIONS and self.state not in (SaslState.INITIAL_REQUEST,
                                                                       SaslState.HANDSHAKE_OR_VERSIONS_REQUEST)):
            raise InvalidRequestError(f"Unexpected Kafka request of type {header.api_key} during SASL handshake.")
        if self.state is SaslState.INITIAL_REQUEST:
            self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        if header.api_key == API_VERSIONS:
            body = decode_request_fast(header, frame) if self._served(header) else None
            answer = self.api_versions.api_versions_response(header.api_version, body)
            if body is not None and int(answer.error_code) == Errors.NONE:
                self.state = SaslState.HANDSHAKE_REQUEST
            return Step(encode_response(header.correlation_id, answer))
        if not self._served(header):
            raise InvalidRequestError(f"SaslHandshake version {header.api_version} is not supported")
        body = decode_request_fast(header, frame)
        mechanism = str(body.mechanism)
        enabled = self.security.mechanisms
        self.kafka_headers = header.api_version >= 1
        cls = response_schema(SASL_HANDSHAKE, header.api_version)
        if mechanism not in enabled:
            response = encode_response(header.correlation_id, build(
                cls, error_code=Errors.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled))
            return self._fail(response, f"Unsupported SASL mechanism {mechanism}")
        response = encode_response(header.correlation_id, build(cls, error_code=Errors.NONE, mechanisms=enabled))
        if self.previous is not None and self.previous[0] != mechanism:
            return self._fail(response, f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                        f"re-authentication of mechanism '{self.previous[0]}'")
        self.mechanism = mechanism
        self.server = self.security.sasl_server(mechanism, self.scram_credentials)
        self.state = SaslState.AUTHENTICATE
        return Step(response)

    def _token(self, frame: bytes) -> Step:
        assert self.server is not None and self.mechanism is not None
        if not self.kafka_headers:   # SaslHandshake v0: bare tokens both ways
            try:
                token = self.server.evaluate_response(frame)
                if self.server.complete:
                    self._complete()
            except (SaslException, SaslAuthenticationException) as exc:
                return self._fail(None, str(exc))
            return Step(_SIZE.pack(len(token)) + token, complete=self.state is SaslState.COMPLETE)
        header = decode_request_header(frame)
        if header.api_key != SASL_AUTHENTICATE:
            error = build_error_response_for(header, frame, Errors.ILLEGAL_SASL_STATE) if self._served(header) else None
            return self._fail(error, f"Unexpected Kafka request of type {header.api_key} during SASL authentication.")
        if not self._served(header):
            raise InvalidRequestError(f"Version {header.api_version} is not supported for apiKey SASL_AUTHENTICATE")
        self.client_supports_reauth = self.client_supports_reauth or header.api_version > 0
        body = decode_request_fast(header, frame)
        cls = response_schema(SASL_AUTHENTICATE, header.api_version)
        try:
            token = self.server.evaluate_response(bytes(body.auth_bytes))
            lifetime = self._complete() if self.server.complete else 0
        except SaslAuthenticationException as exc:
            return self._fail(self._auth_failed(header, cls, str(exc)), str(exc))
        except SaslException as exc:
            message = (f"Authentication failed during {self._what()} due to invalid credentials with SASL "
                       f"mechanism {self.mechanism}")
            return self._fail(self._auth_failed(header, cls, message), f"{message}: {exc}")
        response = build(cls, error_code=Errors.NONE, error_message=None, auth_bytes=token,
                         session_lifetime=timedelta(milliseconds=lifetime))
        return Step(encode_response(header.correlation_id, response), complete=self.state is SaslState.COMPLETE)

    def _served(self, header: RequestHeaderData) -> bool:
        return self.api_versions.enabled_api_name(header.api_key, header.api_version) is not None

    @staticmethod
    def _auth_failed(header: RequestHeaderData, cls: type, message: str) -> bytes:
        return encode_response(header.correlation_id, build(cls, error_code=Errors.SASL_AUTHENTICATION_FAILED,
                                                            error_message=message, auth_bytes=b""))

    def _complete(self) -> int:
        """The exchange succeeded: the principal, the session lifetime (ms, 0 = none) and its end."""
        server = self.server
        assert server is not None and server.authorization_id is not None and self.mechanism is not None
        principal = KafkaPrincipal(USER_TYPE, server.authorization_id)
        if self.previous is not None and self.previous[1] != principal:
            raise SaslAuthenticationException(
                f"Cannot change principals during re-authentication from {self.previous[1].principal_type}."
                f"{self.previous[1].name}: {principal.principal_type}.{principal.name}")
        now_ns = time.monotonic_ns()
        max_reauth = self.security.reauth_ms.get(self.mechanism, 0)
        lifetime: int | None = None
        if server.credential_expiration_ms is not None:
            left = max(0, server.credential_expiration_ms - int(time.time() * 1000))
            lifetime = min(left, max_reauth) if max_reauth > 0 else left
        elif max_reauth > 0:
            lifetime = max_reauth
        self.session_expiration_ns = None if lifetime is None else now_ns + lifetime * 1_000_000
        self.session_lifetime_ms = lifetime or 0
        self.principal = principal
        self.state = SaslState.COMPLETE
        return self.session_lifetime_ms


def build_error_response_for(header: RequestHeaderData, frame: bytes, code: int) -> bytes | None:
    """The error answer of a served request (Kafka's ``getErrorResponse``), None if none can be built."""
    from kafka_emu.broker.protocol.error_response import build_error_response

    try:
        body = decode_request_fast(header, frame)
        return encode_response(header.correlation_id, build_error_response(header.api_key, header.api_version,
                                                                           body, code))
    except Exception:  # noqa: BLE001 - no answer: the connection is closed anyway
        return None
