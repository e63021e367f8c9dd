"""The share coordinator's settings under Kafka's property names (``ShareCoordinatorConfig``),
and the ``share.version`` feature (KIP-932).

``DEFAULTS`` states Kafka's default of each key once; the broker's config table takes them from
here. ``emulator.share.version`` is the finalized ``share.version`` level ApiVersions reports and
whether share groups are served at all: 1 (the default as ``emulator.kafka.version=4.2``, what a
new Kafka 4.2 cluster finalizes; settable as 4.1, whose new cluster finalizes 0) serves them; 0
(the only level as 3.9 and 4.0, which list no share APIs) turns them off as
``kafka-features downgrade --feature share.version=0`` does: the share APIs answer
UNSUPPORTED_VERSION.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

SHARE_VERSION = "emulator.share.version"
SHARE_VERSION_FEATURE = "share.version"
MAX_SHARE_VERSION = 1          # ShareVersion.SV_1, Kafka 4.2's latest production level
SHARE_GROUP_STATE_TOPIC = "__share_group_state"

DEFAULTS: dict[str, Any] = {
    "share.coordinator.state.topic.num.partitions": 50,
    "share.coordinator.state.topic.replication.factor": 3,
    "share.coordinator.state.topic.min.isr": 2,
    "share.coordinator.state.topic.segment.bytes": 100 * 1024 * 1024,
    "share.coordinator.snapshot.update.records.per.snapshot": 500,
    "share.coordinator.write.timeout.ms": 5000,
}


@dataclass(frozen=True)
class ShareCoordinatorConfig:
    num_partitions: int = 50
    snapshot_update_records_per_snapshot: int = 500
    write_timeout_ms: int = 5000

    @staticmethod
    def from_mapping(config: Mapping[str, Any] | None) -> "ShareCoordinatorConfig":
        c = {**DEFAULTS, **{k: v for k, v in (config or {}).items() if k in DEFAULTS}}
        return ShareCoordinatorConfig(
            num_partitions=int(c["share.coordinator.state.topic.num.partitions"]),
            snapshot_update_records_per_snapshot=int(c["share.coordinator.snapshot.update.records.per.snapshot"]),
            write_timeout_ms=int(c["share.coordinator.write.timeout.ms"]))


def state_topic_configs(config: Mapping[str, Any]) -> dict[str, Any]:
    """The forced configs of ``__share_group_state`` (Kafka's ``ShareCoordinatorService``):
    compacted, uncompressed, with the share coordinator's min ISR and segment size."""
    return {"cleanup.policy": "compact", "compression.type": "uncompressed",
            "min.insync.replicas": config["share.coordinator.state.topic.min.isr"],
            "segment.bytes": config["share.coordinator.state.topic.segment.bytes"]}
