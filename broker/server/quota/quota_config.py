"""The client quota keys and entity types (Kafka's ``QuotaConfig`` and ``ClientQuotaEntity``).

A client quota entity is a user and/or a client id (or an IP address), each named or the
default (``None`` in the protocol and in the metadata): here a tuple of (entity type, name)
pairs sorted by type, hashable and stable in JSON. Each key has Kafka's type: the byte rates are
LONGs (integral), the request percentage and the mutation rate DOUBLEs.
"""
from __future__ import annotations

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
IP_CONNECTION_RATE = "connection_creation_rate"

# key -> whether its values are integral (Kafka's LONG and INT keys)
USER_AND_CLIENT_QUOTA_KEYS: dict[str, bool] = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
    CONTROLLER_MUTATION_RATE: False,
}
IP_QUOTA_KEYS: dict[str, bool] = {IP_CONNECTION_RATE: True}

# (entity type, name or None for the default), sorted by type
ClientQuotaEntity = tuple[tuple[str, "str | None"], ...]

# broker config keys of the quota windows (Kafka's QuotaConfig)
QUOTA_WINDOW_NUM = "quota.window.num"
QUOTA_WINDOW_SIZE_SECONDS = "quota.window.size.seconds"
CONTROLLER_QUOTA_WINDOW_NUM = "controller.quota.window.num"
CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS = "controller.quota.window.size.seconds"


def entity_of(pairs: list[tuple[str, str | None]] | tuple[tuple[str, str | None], ...]) -> ClientQuotaEntity:
    """The canonical entity of (type, name) pairs (duplicates are the caller's to refuse)."""
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


def describe_entity(entity: ClientQuotaEntity) -> str:
    return "ClientQuotaEntity(entries={" + ", ".join(
        f"{kind}={name if name is not None else '<default>'}" for kind, name in entity) + "})"
