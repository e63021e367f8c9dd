"""SASL/OAUTHBEARER (RFC 7628) with Kafka's unsecured-JWT validator (``OAuthBearerSaslServer``,
``OAuthBearerUnsecuredJws``, ``OAuthBearerUnsecuredValidatorCallbackHandler``,
``OAuthBearerValidationUtils``).

The client's message is ``n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A]...^A``. The token is
an unsecured JWS, ``base64url(header).base64url(claims).`` with an empty signature; its claims
must name the principal (JAAS option ``unsecuredValidatorPrincipalClaimName``, default ``sub``),
carry an ``exp`` not in the past and an ``iat`` (if any) not in the future, beyond
``unsecuredValidatorAllowableClockSkewMs``, and hold every scope of
``unsecuredValidatorRequiredScope`` in its scope claim (``unsecuredValidatorScopeClaimName``,
default ``scope``: a string of space-separated scopes or a list). A token that fails is answered
with RFC 7628's error challenge (``{"status":"invalid_token"}``, ``insufficient_scope`` with the
scope); the client's ``^A`` reply then fails the authentication with that message. The token's
``exp`` bounds the session (KIP-368 re-authentication): ``credential_expiration_ms``.

Difference from Kafka on purpose: only the unsecured validator; a JWKS-validating callback
handler (``sasl.server.callback.handler.class``) is refused at start-up.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import time
from typing import Any, Mapping

from kafka_emu.broker.security.sasl_server import SaslAuthenticationException, SaslException, SaslServer

MECHANISM = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_SEP = "\x01"
_MESSAGE = re.compile(r"n,(?:a=(?P<authzid>(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,"
                      r"\x01(?P<kvpairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]*\x01)*)\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")


class OAuthBearerIllegalTokenException(Exception):
    """A token the validator refuses: ``status`` (RFC 7628) and the scope it lacked, if any."""

    def __init__(self, message: str, status: str = "invalid_token", scope: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.scope = scope


def _b64url(part: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise OAuthBearerIllegalTokenException("JWS part is not base64url encoded") from None


def unsecured_jws_claims(token: str) -> dict[str, Any]:
    """The claims of an unsecured JWS (Kafka's ``OAuthBearerUnsecuredJws``)."""
    parts = token.split(".")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise OAuthBearerIllegalTokenException("Unsecured JWS compact serializations must have 3 dot-separated "
                                               "Base64URL-encoded values")
    if parts[2]:
        raise OAuthBearerIllegalTokenException("Unsecured JWS must not contain a digital signature")
    try:
        header, claims = json.loads(_b64url(parts[0])), json.loads(_b64url(parts[1]))
    except (ValueError, UnicodeDecodeError):
        raise OAuthBearerIllegalTokenException("JWS header or claims are not JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise OAuthBearerIllegalTokenException("JWS header and claims must be JSON objects")
    if header.get("alg") != "none":
        raise OAuthBearerIllegalTokenException("Unsecured JWS must have alg=none")
    return claims


def _number(claims: Mapping[str, Any], name: str, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise OAuthBearerIllegalTokenException(f"Required claim missing: {name}")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OAuthBearerIllegalTokenException(f"The claim {name} is not a number: {value}")
    return float(value)


def _scopes(value: Any) -> set[str]:
    if value is None:
        return set()
    if isinstance(value, str):
        return set(value.split())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return set(value)
    raise OAuthBearerIllegalTokenException(f"The scope claim is neither a string nor a list of strings: {value}")


class UnsecuredValidator:
    """The JAAS options of the listener's OAUTHBEARER entry, applied to each token."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "sub").strip() or "sub"
        self.scope_claim = options.get("unsecuredValidatorScopeClaimName", "scope").strip() or "scope"
        self.required_scope = [s for s in re.split(r"[ ,]+", options.get("unsecuredValidatorRequiredScope", "")) if s]
        try:
            self.clock_skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0"))
        except ValueError:
            raise ValueError("unsecuredValidatorAllowableClockSkewMs must be an integer") from None

    def validate(self, token: str, now_ms: float) -> tuple[str, int]:
        """(principal name, expiration in epoch ms) of a valid token."""
        claims = unsecured_jws_claims(token)
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise OAuthBearerIllegalTokenException(f"Required claim missing or not a string: {self.principal_claim}")
        exp = _number(claims, "exp", True)
        iat = _number(claims, "iat", False)
        if iat is not None and iat * 1000 > now_ms + self.clock_skew_ms:
            raise OAuthBearerIllegalTokenException(f"The indicated time ({iat * 1000:.0f} ms) is too far in the "
                                                   f"future (now {now_ms:.0f} ms, skew {self.clock_skew_ms} ms)")
        if exp * 1000 <= now_ms - self.clock_skew_ms:
            raise OAuthBearerIllegalTokenException(f"The indicated time ({exp * 1000:.0f} ms) is too far in the past "
                                                   f"(now {now_ms:.0f} ms, skew {self.clock_skew_ms} ms)")
        if iat is not None and exp <= iat:
            raise OAuthBearerIllegalTokenException("The token's expiration time is not after its issue time")
        missing = [s for s in self.required_scope if s not in _scopes(claims.get(self.scope_claim))]
        if missing:
            raise OAuthBearerIllegalTokenException(f"The provided scope lacks the required scope(s): {missing}",
                                                   "insufficient_scope", " ".join(self.required_scope))
        return principal, int(exp * 1000)


class OAuthBearerSaslServer(SaslServer):
    mechanism = MECHANISM

    def __init__(self, validator: UnsecuredValidator) -> None:
        super().__init__()
        self.validator = validator
        self._error: str | None = None

    def evaluate_response(self, response: bytes) -> bytes:
        if response == _SEP.encode() and self._error is not None:
            raise SaslAuthenticationException(self._error)
        self._error = None
        m = _MESSAGE.fullmatch(response.decode("utf-8", "replace"))
        pairs = dict(kv.split("=", 1) for kv in m.group("kvpairs").split(_SEP) if kv) if m else {}
        auth = _AUTH.fullmatch(pairs.get("auth", ""))
        if m is None or auth is None:
            raise SaslException("Invalid OAUTHBEARER client first message")
        if auth.group("scheme").lower() != "bearer":
            raise SaslException(f"Invalid scheme in OAUTHBEARER client first message: {auth.group('scheme')}")
        try:
            principal, expiration_ms = self.validator.validate(auth.group("token"), time.time() * 1000)
        except OAuthBearerIllegalTokenException as exc:
            error = {"status": exc.status, **({"scope": exc.scope} if exc.scope else {})}
            self._error = json.dumps(error, separators=(",", ":"))
            return self._error.encode()
        authzid = m.group("authzid") or ""
        if authzid and authzid != principal:
            raise SaslAuthenticationException(f"Authentication failed: Client requested an authorization id "
                                              f"({authzid}) that is different from the token's principal name "
                                              f"({principal})")
        self.authorization_id = principal
        self.credential_expiration_ms = expiration_ms
        self.complete = True
        return b""
