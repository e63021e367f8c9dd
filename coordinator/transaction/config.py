"""TransactionConfig: the transaction coordinator's settings under Kafka's property names.

``DEFAULTS`` states Kafka's default of each key once (``TransactionStateManagerConfig``,
``TransactionLogConfig``); the broker's config table (``broker.server.config.KAFKA_CONFIG_DEF``) takes
them from here, adds types and validation, and passes the coordinator typed values.
``from_mapping`` also accepts a partial mapping (coordinator tests).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

TRANSACTION_STATE_TOPIC = "__transaction_state"
# The finalized ``transaction.version`` feature level (Kafka's ``TransactionVersion``): 0 and 1
# are transaction version 1 for clients (1 writes flexible log values), 2 is KIP-890 part 2.
TRANSACTION_VERSION = "emulator.transaction.version"
TRANSACTION_VERSION_FEATURE = "transaction.version"
MAX_TRANSACTION_VERSION = 2
# TransactionVersion.LATEST_PRODUCTION of Kafka 4.0: what a newly formatted 4.0 cluster finalizes
LATEST_PRODUCTION_TRANSACTION_VERSION = 2

DEFAULTS: dict[str, Any] = {
    "transaction.max.timeout.ms": 900_000,
    "transactional.id.expiration.ms": 604_800_000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10_000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3_600_000,
    "transaction.state.log.num.partitions": 50,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.state.log.segment.bytes": 104_857_600,
}


@dataclass(frozen=True)
class TransactionConfig:
    transaction_max_timeout_ms: int
    transactional_id_expiration_ms: int
    abort_timed_out_transactions_interval_ms: int
    remove_expired_transactional_ids_interval_ms: int
    transaction_log_num_partitions: int
    transaction_log_replication_factor: int
    transaction_log_min_isr: int
    transaction_log_segment_bytes: int
    transaction_version_level: int = LATEST_PRODUCTION_TRANSACTION_VERSION

    @staticmethod
    def from_mapping(config: Mapping[str, Any] | None) -> "TransactionConfig":
        c = dict(DEFAULTS)
        for k, v in (config or {}).items():
            if k in DEFAULTS or k == TRANSACTION_VERSION:
                c[k] = v
        return TransactionConfig(
            transaction_max_timeout_ms=int(c["transaction.max.timeout.ms"]),
            transactional_id_expiration_ms=int(c["transactional.id.expiration.ms"]),
            abort_timed_out_transactions_interval_ms=int(
                c["transaction.abort.timed.out.transaction.cleanup.interval.ms"]),
            remove_expired_transactional_ids_interval_ms=int(
                c["transaction.remove.expired.transaction.cleanup.interval.ms"]),
            transaction_log_num_partitions=int(c["transaction.state.log.num.partitions"]),
            transaction_log_replication_factor=int(c["transaction.state.log.replication.factor"]),
            transaction_log_min_isr=int(c["transaction.state.log.min.isr"]),
            transaction_log_segment_bytes=int(c["transaction.state.log.segment.bytes"]),
            transaction_version_level=int(c.get(TRANSACTION_VERSION) if c.get(TRANSACTION_VERSION) is not None
                                          else LATEST_PRODUCTION_TRANSACTION_VERSION),
        )
