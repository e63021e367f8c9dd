"""GroupCoordinatorConfig: the coordinator's settings under Kafka's property names.

``DEFAULTS`` states Kafka's default of each key once; the broker's config table
(``broker.server.config.KAFKA_CONFIG_DEF``) takes them from here, adds types and validation, and passes
the coordinator typed values. ``from_mapping`` also accepts a partial mapping (coordinator tests).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

INT_MAX = 2**31 - 1
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

DEFAULTS: dict[str, Any] = {
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1_800_000,
    "group.initial.rebalance.delay.ms": 3000,
    "group.max.size": INT_MAX,
    "offsets.topic.num.partitions": 50,
    "offsets.commit.timeout.ms": 5000,
    "offset.metadata.max.bytes": 4096,
    "offsets.retention.minutes": 10080,
    "offsets.retention.check.interval.ms": 600_000,
}


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_initial_rebalance_delay_ms: int
    group_max_size: int
    offsets_topic_num_partitions: int
    offsets_commit_timeout_ms: int
    offset_metadata_max_bytes: int
    offsets_retention_ms: int  # minutes * 60000, computed as a Python int (no overflow)
    offsets_retention_check_interval_ms: int

    @staticmethod
    def from_mapping(config: Mapping[str, Any] | None) -> "GroupCoordinatorConfig":
        c = dict(DEFAULTS)
        for k, v in (config or {}).items():
            if k in DEFAULTS:
                c[k] = v
        return GroupCoordinatorConfig(
            group_min_session_timeout_ms=int(c["group.min.session.timeout.ms"]),
            group_max_session_timeout_ms=int(c["group.max.session.timeout.ms"]),
            group_initial_rebalance_delay_ms=int(c["group.initial.rebalance.delay.ms"]),
            group_max_size=int(c["group.max.size"]),
            offsets_topic_num_partitions=int(c["offsets.topic.num.partitions"]),
            offsets_commit_timeout_ms=int(c["offsets.commit.timeout.ms"]),
            offset_metadata_max_bytes=int(c["offset.metadata.max.bytes"]),
            offsets_retention_ms=int(c["offsets.retention.minutes"]) * 60 * 1000,
            offsets_retention_check_interval_ms=int(c["offsets.retention.check.interval.ms"]),
        )
