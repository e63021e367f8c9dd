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
REBALANCE_PROTOCOLS = "group.coordinator.rebalance.protocols"
CLASSIC, CONSUMER, SHARE = "classic", "consumer", "share"
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")   # ConsumerGroupMigrationPolicy

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
    # the consumer group protocol (KIP-848); the protocols' default is Kafka 4.0's, which has no
    # streams groups (see broker.server.config)
    REBALANCE_PROTOCOLS: [CLASSIC, CONSUMER],
    "group.consumer.session.timeout.ms": 45_000,
    "group.consumer.min.session.timeout.ms": 45_000,
    "group.consumer.max.session.timeout.ms": 60_000,
    "group.consumer.heartbeat.interval.ms": 5_000,
    "group.consumer.min.heartbeat.interval.ms": 5_000,
    "group.consumer.max.heartbeat.interval.ms": 15_000,
    "group.consumer.max.size": INT_MAX,
    "group.consumer.assignors": ["uniform", "range"],
    "group.consumer.migration.policy": "bidirectional",
    # share groups (KIP-932): Kafka 4.1's GroupCoordinatorConfig and ShareGroupConfig defaults
    "group.share.session.timeout.ms": 45_000,
    "group.share.min.session.timeout.ms": 45_000,
    "group.share.max.session.timeout.ms": 60_000,
    "group.share.heartbeat.interval.ms": 5_000,
    "group.share.min.heartbeat.interval.ms": 5_000,
    "group.share.max.heartbeat.interval.ms": 15_000,
    "group.share.max.size": 200,
    "group.share.assignors": ["simple"],
    "group.share.record.lock.duration.ms": 30_000,
    "group.share.min.record.lock.duration.ms": 15_000,
    "group.share.max.record.lock.duration.ms": 60_000,
    "group.share.delivery.count.limit": 5,
    "group.share.min.delivery.count.limit": 2,
    "group.share.max.delivery.count.limit": 10,
    "group.share.partition.max.record.locks": 2_000,
    "group.share.max.share.sessions": 2_000,
}


# the group.share.* keys the coordinator reads (each a ``share_group_<rest>`` field below)
SHARE_GROUP_INT_KEYS = tuple(f"group.share.{k}" for k in (
    "session.timeout.ms", "min.session.timeout.ms", "max.session.timeout.ms", "heartbeat.interval.ms",
    "min.heartbeat.interval.ms", "max.heartbeat.interval.ms", "max.size", "record.lock.duration.ms",
    "min.record.lock.duration.ms", "max.record.lock.duration.ms", "delivery.count.limit",
    "min.delivery.count.limit", "max.delivery.count.limit", "partition.max.record.locks"))


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
    rebalance_protocols: tuple[str, ...]
    consumer_group_session_timeout_ms: int
    consumer_group_min_session_timeout_ms: int
    consumer_group_max_session_timeout_ms: int
    consumer_group_heartbeat_interval_ms: int
    consumer_group_min_heartbeat_interval_ms: int
    consumer_group_max_heartbeat_interval_ms: int
    consumer_group_max_size: int
    consumer_group_assignors: tuple[str, ...]
    consumer_group_migration_policy: str
    share_group_session_timeout_ms: int = 45_000
    share_group_min_session_timeout_ms: int = 45_000
    share_group_max_session_timeout_ms: int = 60_000
    share_group_heartbeat_interval_ms: int = 5_000
    share_group_min_heartbeat_interval_ms: int = 5_000
    share_group_max_heartbeat_interval_ms: int = 15_000
    share_group_max_size: int = 200
    share_group_record_lock_duration_ms: int = 30_000
    share_group_min_record_lock_duration_ms: int = 15_000
    share_group_max_record_lock_duration_ms: int = 60_000
    share_group_delivery_count_limit: int = 5
    share_group_min_delivery_count_limit: int = 2
    share_group_max_delivery_count_limit: int = 10
    share_group_partition_max_record_locks: int = 2_000

    @property
    def consumer_protocol_enabled(self) -> bool:
        return CONSUMER in self.rebalance_protocols

    def is_upgrade_enabled(self) -> bool:
        """Non-empty classic groups may become consumer groups (Kafka's ``isUpgradeEnabled``)."""
        return self.consumer_group_migration_policy in ("upgrade", "bidirectional")

    def is_downgrade_enabled(self) -> bool:
        return self.consumer_group_migration_policy in ("downgrade", "bidirectional")

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
            rebalance_protocols=tuple(c[REBALANCE_PROTOCOLS]),
            consumer_group_session_timeout_ms=int(c["group.consumer.session.timeout.ms"]),
            consumer_group_min_session_timeout_ms=int(c["group.consumer.min.session.timeout.ms"]),
            consumer_group_max_session_timeout_ms=int(c["group.consumer.max.session.timeout.ms"]),
            consumer_group_heartbeat_interval_ms=int(c["group.consumer.heartbeat.interval.ms"]),
            consumer_group_min_heartbeat_interval_ms=int(c["group.consumer.min.heartbeat.interval.ms"]),
            consumer_group_max_heartbeat_interval_ms=int(c["group.consumer.max.heartbeat.interval.ms"]),
            consumer_group_max_size=int(c["group.consumer.max.size"]),
            consumer_group_assignors=tuple(c["group.consumer.assignors"]),
            consumer_group_migration_policy=str(c["group.consumer.migration.policy"]).lower(),
            **{"share_group_" + key[len("group.share."):].replace(".", "_"): int(c[key])
               for key in SHARE_GROUP_INT_KEYS},
        )
