"""Security protocols and principals (Kafka's ``org.apache.kafka.common.security.auth``).

``SecurityProtocol`` is what a listener speaks (``listener.security.protocol.map`` maps listener
names to it); ``KafkaPrincipal`` is who a connection authenticated as: ``User:<name>`` from SASL,
``User:<mapped DN>`` from a TLS client certificate, ``User:ANONYMOUS`` otherwise (Kafka's
``DefaultKafkaPrincipalBuilder``). Immutable values; safe from any thread.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class SecurityProtocol(enum.Enum):
    """Kafka's ``SecurityProtocol``: whether a listener encrypts (TLS) and authenticates (SASL)."""

    PLAINTEXT = (False, False)
    SSL = (True, False)
    SASL_PLAINTEXT = (False, True)
    SASL_SSL = (True, True)

    @property
    def uses_tls(self) -> bool:
        return self.value[0]

    @property
    def uses_sasl(self) -> bool:
        return self.value[1]


USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``<type>:<name>``, e.g. ``User:alice`` (Kafka's ``KafkaPrincipal``); ACLs name principals
    in this form, and ``User:*`` matches every user."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @staticmethod
    def parse(text: str) -> "KafkaPrincipal":
        """``User:alice`` -> KafkaPrincipal; ValueError without a ``:`` (Kafka's
        ``SecurityUtils.parseKafkaPrincipal``)."""
        if not text:
            raise ValueError("principal must not be empty")
        kind, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected a string in format principalType:principalName but got {text}")
        return KafkaPrincipal(kind, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
WILDCARD_PRINCIPAL = KafkaPrincipal(USER_TYPE, "*")
