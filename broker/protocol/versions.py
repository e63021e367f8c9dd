"""The API versions the broker advertises in ApiVersions and accepts on the wire.

One table, read by the ApiVersions handler (what clients see) and by the network processors
(what they let through to the request channel), so the two can never disagree. Each range is
the intersection of what kio can decode and what our handlers fill correctly; versions newer
than a handler understands are left out rather than half-served.

Deliberately absent: GetTelemetrySubscriptions (librdkafka calls it only when advertised) and
ConsumerGroupHeartbeat (KIP-848; the emulator runs the classic group protocol only).
"""
from __future__ import annotations

from typing import Final

# api_key -> (min_version, max_version)
API_VERSIONS: Final[dict[int, tuple[int, int]]] = {
    0: (3, 13),   # Produce (broker.apis.produce MIN_VERSION..MAX_VERSION)
    1: (4, 18),   # Fetch (broker.apis.fetch MIN_VERSION..MAX_VERSION)
    2: (1, 11),   # ListOffsets
    3: (0, 13),   # Metadata
    8: (2, 9),    # OffsetCommit (v10 names topics by id)
    9: (1, 9),    # OffsetFetch (v10 names topics by id)
    10: (0, 6),   # FindCoordinator
    11: (0, 9),   # JoinGroup
    12: (0, 4),   # Heartbeat
    13: (0, 5),   # LeaveGroup
    14: (0, 5),   # SyncGroup
    15: (0, 6),   # DescribeGroups
    16: (0, 5),   # ListGroups
    18: (0, 4),   # ApiVersions
    19: (2, 7),   # CreateTopics
    20: (1, 6),   # DeleteTopics
    22: (0, 5),   # InitProducerId (v6 is KIP-939 two-phase commit)
    32: (1, 4),   # DescribeConfigs
    42: (0, 2),   # DeleteGroups
    60: (0, 2),   # DescribeCluster
}

API_NAMES: Final[dict[int, str]] = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
    9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup",
    14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups", 18: "ApiVersions",
    19: "CreateTopics", 20: "DeleteTopics", 22: "InitProducerId", 32: "DescribeConfigs",
    42: "DeleteGroups", 60: "DescribeCluster",
}

API_VERSIONS_KEY: Final = 18


def is_supported(api_key: int, api_version: int) -> bool:
    rng = API_VERSIONS.get(api_key)
    return rng is not None and rng[0] <= api_version <= rng[1]


def api_name(api_key: int) -> str:
    return API_NAMES.get(api_key, f"Unknown({api_key})")
