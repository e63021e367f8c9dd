"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): Kafka's ``ScramFormatter``,
``ScramMessages``, ``ScramCredential`` and ``ScramSaslServer``.

A credential is what the controller keeps per (user, mechanism), never the password: salt,
``StoredKey = H(HMAC(SaltedPassword, "Client Key"))``, ``ServerKey = HMAC(SaltedPassword,
"Server Key"))`` and the iteration count (AlterUserScramCredentials sends the salted
password, and the controller derives the keys, as Kafka's ``ScramControlManager`` does).

The exchange: client-first ``n,[a=authzid],n=<saslname>,r=<nonce>[,ext...]``; server-first
``r=<nonce+server nonce>,s=<salt>,i=<iterations>``; client-final ``c=<binding>,r=<nonce>,
p=<proof>``, checked by recomputing ``StoredKey`` from the proof; server-final
``v=<ServerSignature>``. An unknown user fails at the first message and a wrong proof at the
second, both as ``SaslException`` (the client learns only "invalid credentials"); an
authorization id other than the user name is a ``SaslAuthenticationException`` with Kafka's
message. Delegation tokens (``tokenauth=true``) are not supported: such a login fails as an
unknown token id does in Kafka.
"""
from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from typing import Callable

from kafka_emu.broker.security.sasl_server import SaslAuthenticationException, SaslException, SaslServer

LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
MAX_ITERATIONS = 16384   # ScramControlManager.MAX_ITERATIONS


class ScramMechanism(enum.Enum):
    """Kafka's ``ScramMechanism``: (wire type of the admin APIs, hash, minimum iterations)."""

    SCRAM_SHA_256 = (1, "sha256", 4096)
    SCRAM_SHA_512 = (2, "sha512", 4096)

    @property
    def type(self) -> int:
        return self.value[0]

    @property
    def hash_name(self) -> str:
        return self.value[1]

    @property
    def min_iterations(self) -> int:
        return self.value[2]

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @staticmethod
    def from_type(type_: int) -> "ScramMechanism | None":
        return next((m for m in ScramMechanism if m.type == type_), None)

    @staticmethod
    def from_name(name: str) -> "ScramMechanism | None":
        return next((m for m in ScramMechanism if m.mechanism_name == name), None)


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class ScramFormatter:
    """The RFC 5802 functions for one mechanism's hash."""

    def __init__(self, mechanism: ScramMechanism) -> None:
        self.mechanism = mechanism
        self._hash = mechanism.hash_name

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self._hash, data).digest()

    def hi(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self._hash, password, salt, iterations)

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return self.hi(password.encode("utf-8"), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    def credential_from_salted(self, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
        return ScramCredential(salt, self.stored_key(self.client_key(salted_password)),
                               self.server_key(salted_password), iterations)

    def generate_credential(self, password: str, iterations: int, salt: bytes | None = None) -> ScramCredential:
        salt = salt if salt is not None else secrets.token_bytes(32)
        return self.credential_from_salted(salt, self.salted_password(password, salt, iterations), iterations)

    @staticmethod
    def secure_random_string() -> str:
        return secrets.token_urlsafe(24)


def username(sasl_name: str) -> str:
    """RFC 5802's saslname decoded: ``=2C`` is ',', ``=3D`` is '=' (Kafka's ``ScramFormatter.username``)."""
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
_EXTENSIONS = r"(?:,[A-Za-z]+=[\x01-\x2B\x2D-\x7F]+)*"
CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m=[^,]*,)?n=(?P<saslname>{_SASLNAME}),"
                          rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})")
CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}),"
                          rf"p=(?P<proof>{_BASE64})")


class ScramSaslServer(SaslServer):
    """One SCRAM exchange; ``credentials(user)`` looks a user's credential up (None: unknown)."""

    def __init__(self, mechanism: ScramMechanism, credentials: Callable[[str], ScramCredential | None]) -> None:
        super().__init__()
        self.mechanism = mechanism.mechanism_name
        self.scram = mechanism
        self.formatter = ScramFormatter(mechanism)
        self.credentials = credentials
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._credential: ScramCredential | None = None
        self._failed = False

    def evaluate_response(self, response: bytes) -> bytes:
        if self._failed or self.complete:
            raise SaslException(f"Unexpected challenge in Sasl server state {'FAILED' if self._failed else 'COMPLETE'}")
        try:
            if self._credential is None:
                return self._client_first(response)
            return self._client_final(response)
        except (SaslException, SaslAuthenticationException):
            self._failed = True
            self._credential = None
            raise

    def _client_first(self, response: bytes) -> bytes:
        text = response.decode("utf-8", "replace")
        m = CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise SaslException(f"Invalid SCRAM client first message format: {text}")
        extensions = dict(e.split("=", 1) for e in m.group("extensions").split(",")[1:])
        if extensions.get("tokenauth", "").lower() == "true":
            raise SaslException(f"Token Authentication failed: Invalid tokenId : {username(m.group('saslname'))}")
        user = username(m.group("saslname"))
        credential = self.credentials(user)
        if credential is None:
            raise SaslException("Authentication failed: Invalid user credentials")
        authzid = m.group("authzid")
        if authzid and username(authzid) != user:
            raise SaslAuthenticationException("Authentication failed: Client requested an authorization id that is "
                                              "different from username")
        if credential.iterations < self.scram.min_iterations:
            raise SaslException(f"Iterations {credential.iterations} is less than the minimum "
                                f"{self.scram.min_iterations} for {self.mechanism}")
        self._client_first_bare = text[text.index("n=", 2):]
        self._nonce = m.group("nonce") + self.formatter.secure_random_string()
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        self._credential = credential
        self.authorization_id = user
        return self._server_first.encode()

    def _client_final(self, response: bytes) -> bytes:
        text = response.decode("utf-8", "replace")
        m = CLIENT_FINAL.fullmatch(text)
        if m is None:
            raise SaslException(f"Invalid SCRAM client final message format: {text}")
        if m.group("nonce") != self._nonce:
            raise SaslException("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None
        without_proof = text[:text.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = self.formatter.hmac(credential.stored_key, auth_message)
        proof = base64.b64decode(m.group("proof"))
        if len(proof) != len(signature):
            raise SaslException("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(signature, proof))
        if not hmac.compare_digest(self.formatter.stored_key(client_key), credential.stored_key):
            raise SaslException("Invalid client credentials")
        server_signature = self.formatter.hmac(credential.server_key, auth_message)
        self._credential = None
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)
