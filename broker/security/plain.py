"""PlainSaslServer: SASL/PLAIN (RFC 4616) with users from the listener's JAAS options (Kafka's
``PlainSaslServer`` and ``PlainServerCallbackHandler``: ``user_<name>="<password>"``).

The client's one message is ``[authzid] NUL authcid NUL password``; an authorization id other
than the user name is refused. Failures raise ``SaslAuthenticationException`` with Kafka's
messages, which reach the client as SaslAuthenticate's error message. Immutable users; one
server object per authentication, used by one processor thread.
"""
from __future__ import annotations

import hmac
from typing import Mapping

from kafka_emu.broker.security.sasl_server import SaslAuthenticationException, SaslServer

MECHANISM = "PLAIN"
LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
USER_PREFIX = "user_"


def users_of(options: Mapping[str, str]) -> dict[str, str]:
    """user name -> password from the JAAS options (``user_alice="secret"``)."""
    return {k[len(USER_PREFIX):]: v for k, v in options.items() if k.startswith(USER_PREFIX)}


class PlainSaslServer(SaslServer):
    mechanism = MECHANISM

    def __init__(self, users: Mapping[str, str]) -> None:
        super().__init__()
        self.users = users

    def evaluate_response(self, response: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationException("Authentication failed: PLAIN authentication already complete")
        tokens = response.decode("utf-8", "replace").split("\0")
        if len(tokens) != 3:
            raise SaslAuthenticationException(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        authorization_id, username, password = tokens
        if not username:
            raise SaslAuthenticationException("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationException("Authentication failed: password not specified")
        expected = self.users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationException("Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != username:
            raise SaslAuthenticationException("Authentication failed: Client requested an authorization id that "
                                              "is different from username")
        self.authorization_id = username
        self.complete = True
        return b""
