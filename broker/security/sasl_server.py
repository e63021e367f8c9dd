"""The SASL server interface the authenticator drives (Java's ``javax.security.sasl.SaslServer``)
and the two failures Kafka tells apart.

``evaluate_response`` takes the client's token and returns the server's (b"" for none); once
``complete``, ``authorization_id`` names the user and ``credential_lifetime_ms`` (OAUTHBEARER)
may bound the session. ``SaslAuthenticationException`` carries a message the client may see;
``SaslException`` does not (the client is told only that its credentials were invalid,
Kafka's ``SaslServerAuthenticator`` rule, so nothing leaks whether a user exists).
"""
from __future__ import annotations


class SaslException(Exception):
    """A failure whose message stays in the broker's log."""


class SaslAuthenticationException(Exception):
    """A failure whose message is sent to the client."""


class SaslServer:
    mechanism = ""

    def __init__(self) -> None:
        self.complete = False
        self.authorization_id: str | None = None
        self.credential_expiration_ms: int | None = None   # absolute, epoch ms (OAUTHBEARER tokens)

    def evaluate_response(self, response: bytes) -> bytes:
        raise NotImplementedError
