"""KafkaStore: the registry's log, the compacted ``_schemas`` topic of the cluster it runs in.

As Confluent's ``KafkaStore``: every change is one record whose key and value are Confluent's
JSON (``SchemaKey`` ``{"keytype":"SCHEMA","subject":...,"version":...,"magic":1}``,
``ConfigKey``/``ModeKey``/``DeleteSubjectKey``/``ClearSubjectKey`` with ``"magic":0``, a null
value a tombstone), written to partition 0 of a one-partition topic with
``cleanup.policy=compact``; at start the topic is created if missing and read from its log start
to its high watermark, each record handed to ``apply`` in order. A JSON registry written by
Confluent's server reads back here, and the other way round.

The registry reaches the cluster only as a client would, through in-process requests: records
are produced with ``acks=-1`` to the partition's current leader (``EmbeddedCluster.produce``) and
read back with Fetch (``EmbeddedCluster.fetch``), so replication, leader moves, injected faults
and ``log.dirs`` persistence apply to it like to any topic.

Difference from Confluent on purpose: there is one registry per cluster and no reader thread
tailing the topic; a write is applied to the registry's memory once the cluster acknowledged
it (``put`` returns), and only a start replays the topic. A write the cluster refuses (no
leader, not enough replicas) raises ``StoreError`` after ``timeout_s`` of retries on retriable
errors, and is not applied.

Locking: none; the registry serialises writes under its own lock.
"""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Callable

import structlog

from kafka_emu.broker.cluster.inprocess_client import BrokerUnavailable
from kafka_emu.broker.storage.record_batch import iter_records
from kafka_emu.common.errors import Errors

if TYPE_CHECKING:
    from kafka_emu.broker.cluster.embedded_cluster import EmbeddedCluster

_log = structlog.get_logger("broker.schema_registry.store")

TOPIC = "_schemas"
FETCH_MAX_BYTES = 1 << 20
# errors on which a write is retried until the timeout (a leader moving, a restarted broker)
_RETRIABLE = {Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE, Errors.NOT_ENOUGH_REPLICAS,
              Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, Errors.REQUEST_TIMED_OUT,
              Errors.UNKNOWN_TOPIC_OR_PARTITION}

Json = dict[str, Any]
Apply = Callable[[Json, "Json | None"], None]


class StoreError(Exception):
    """A write or read the cluster refused."""


def encode(doc: Json | None) -> bytes | None:
    return None if doc is None else json.dumps(doc, separators=(",", ":")).encode()


class KafkaStore:
    def __init__(self, cluster: "EmbeddedCluster", topic: str = TOPIC, timeout_s: float = 5.0) -> None:
        self.cluster = cluster
        self.topic = topic
        self.timeout_s = timeout_s

    def ensure_topic(self) -> None:
        """Create the compacted one-partition topic unless it exists (replication factor: the
        cluster's ``default.replication.factor`` capped at its live brokers, Confluent's
        ``kafkastore.topic.replication.factor`` being 3 with the same cap in development)."""
        if self.cluster.metadata.topics.get(self.topic) is not None:
            return
        live = len(self.cluster.live_brokers())
        wanted = int(self.cluster.broker_config(0)["default.replication.factor"])
        try:
            self.cluster.create_topic(self.topic, 1, max(1, min(wanted, live)),
                                      {"cleanup.policy": "compact"})
        except ValueError:   # created meanwhile
            if self.cluster.metadata.topics.get(self.topic) is None:
                raise

    def replay(self, apply: Apply) -> int:
        """Read the topic from its start to its high watermark; the records applied."""
        deadline = time.monotonic() + self.timeout_s
        offset, applied = 0, 0
        while True:
            try:
                part = self.cluster.fetch(self.topic, 0, offset, max_bytes=FETCH_MAX_BYTES)
            except (KeyError, TimeoutError, BrokerUnavailable) as exc:   # no leader yet
                part, error = None, str(exc)
            else:
                error = Errors(int(part.error_code)).name if part.error_code else ""
            if part is None or error:
                if time.monotonic() > deadline:
                    raise StoreError(f"cannot read {self.topic}: {error}")
                time.sleep(0.05)
                continue
            if int(part.log_start_offset) > offset:
                offset = int(part.log_start_offset)
            high = int(part.high_watermark)
            records = bytes(part.records or b"")
            for record_offset, key, value in iter_records(records):
                if record_offset < offset or record_offset >= high:
                    continue
                offset = record_offset + 1
                if key is None:
                    continue
                try:
                    apply(json.loads(key), None if value is None else json.loads(value))
                    applied += 1
                except (ValueError, TypeError) as exc:
                    _log.warning("schemas_record_skipped", offset=record_offset, error=str(exc))
            if offset >= high or not records:
                return applied

    def put(self, key: Json, value: Json | None) -> int:
        """Produce one record (acks=-1); its offset. StoreError when the cluster refuses it."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                error, offset = self.cluster.produce(self.topic, 0, [(encode(key), encode(value))], acks=-1,
                                                     timeout_ms=int(self.timeout_s * 1000))
            except (TimeoutError, BrokerUnavailable):
                error, offset = Errors.REQUEST_TIMED_OUT, -1
            if error == Errors.NONE:
                return offset
            if error not in _RETRIABLE or time.monotonic() > deadline:
                raise StoreError(f"producing to {self.topic} failed: {Errors(error).name}")
            time.sleep(0.05)
