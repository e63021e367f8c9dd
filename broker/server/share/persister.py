"""InProcessPersister: how a share-partition leader reaches share-partition state (Kafka's
``DefaultStatePersister`` with its ``PersisterStateManager``).

The state of (group, topic id, partition) is kept by the share coordinator that leads partition
``abs(hash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions`` of
``__share_group_state`` (created on first use with Kafka's forced configs: compacted,
uncompressed, ``min.insync.replicas`` from ``share.coordinator.state.topic.min.isr``). Each call
is one ReadShareGroupState, InitializeShareGroupState, WriteShareGroupState or
DeleteShareGroupState request put into that broker's request channel, as the transaction
coordinator's markers travel (no sockets; test control sees and records them like any request).
A coordinator that is not there yet (no leader, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS, a closed channel) is asked again after ``RETRY_BACKOFF_MS`` on the
share timer, until ``request.timeout.ms`` has passed; then the caller gets the last error.

Locking: no state of its own.
"""
from __future__ import annotations

import itertools
import uuid
from typing import TYPE_CHECKING, Any, Callable

import structlog
from kio.index import load_request_schema

from kafka_emu.broker.network.request_channel import Request, Response
from kafka_emu.common.errors import Errors
from kafka_emu.coordinator.group.records import partition_for
from kafka_emu.coordinator.share.config import SHARE_GROUP_STATE_TOPIC, state_topic_configs
from kafka_emu.coordinator.share.share_coordinator import ReadStateResult
from kafka_emu.coordinator.share.share_coordinator_records import ShareStateKey, StateBatch
from kafka_emu.timer import Time, Timer, TimerTask

if TYPE_CHECKING:
    from kafka_emu.broker.server.config import KafkaConfig
    from kafka_emu.broker.server.metadata_store import MetadataStore

_log = structlog.get_logger("broker.share_persister")

INITIALIZE, READ, WRITE, DELETE = 83, 84, 85, 86
VERSIONS = {INITIALIZE: 0, READ: 0, WRITE: 1, DELETE: 0}
NAMES = {INITIALIZE: "InitializeShareGroupState", READ: "ReadShareGroupState", WRITE: "WriteShareGroupState",
         DELETE: "DeleteShareGroupState"}
RETRY_BACKOFF_MS = 50
RETRIABLE = frozenset((Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                       Errors.REQUEST_TIMED_OUT, Errors.NOT_ENOUGH_REPLICAS))
_correlation = itertools.count(1)


class _Retry(TimerTask):
    def __init__(self, delay_ms: int, fn: Callable[[], None]) -> None:
        super().__init__(delay_ms)
        self.fn = fn

    def run(self) -> None:
        self.fn()


class InProcessPersister:
    """The ``share_partition.Persister`` of a broker (see the module docstring)."""

    def __init__(self, broker_id: int, config: KafkaConfig, metadata: MetadataStore, timer: Timer,
                 time: Time) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.timer = timer
        self.time = time
        self.num_partitions = int(config["share.coordinator.state.topic.num.partitions"])   # type: ignore[arg-type]
        self.replication_factor = int(config["share.coordinator.state.topic.replication.factor"])   # type: ignore[arg-type]
        self.topic_configs = state_topic_configs(config)
        self.timeout_ms = int(config["request.timeout.ms"])   # type: ignore[arg-type]
        self.closed = False

    # ------------------------------------------------------------------ Persister
    def read_state(self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                   callback: Callable[[ReadStateResult], None]) -> None:
        def answer(error: int, p: Any) -> None:
            if p is None:
                callback(ReadStateResult(error))
                return
            callback(ReadStateResult(error, p.error_message, int(p.state_epoch), leader_epoch, int(p.start_offset),
                                     tuple(StateBatch(int(b.first_offset), int(b.last_offset), int(b.delivery_state),
                                                      int(b.delivery_count)) for b in p.state_batches)))
        self._send(READ, ShareStateKey(group_id, topic_id, partition), {"leader_epoch": leader_epoch}, answer)

    def initialize_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                         start_offset: int, callback: Callable[[int], None]) -> None:
        self._send(INITIALIZE, ShareStateKey(group_id, topic_id, partition),
                   {"state_epoch": state_epoch, "start_offset": start_offset}, lambda error, _p: callback(error))

    def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int, leader_epoch: int,
                    start_offset: int, batches: list[StateBatch], callback: Callable[[int], None]) -> None:
        self._send(WRITE, ShareStateKey(group_id, topic_id, partition),
                   {"state_epoch": state_epoch, "leader_epoch": leader_epoch, "start_offset": start_offset,
                    "delivery_complete_count": -1, "state_batches": batches}, lambda error, _p: callback(error))

    def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int, callback: Callable[[int], None]) -> None:
        self._send(DELETE, ShareStateKey(group_id, topic_id, partition), {}, lambda error, _p: callback(error))

    # ------------------------------------------------------------------ transport
    def coordinator_partition(self, key: ShareStateKey) -> int:
        return partition_for(key.coordinator_key(), self.num_partitions)

    def _coordinator_channel(self, key: ShareStateKey) -> Any:
        md = self.metadata
        if not md.ensure_internal_topic(SHARE_GROUP_STATE_TOPIC, self.num_partitions, self.replication_factor,
                                        self.topic_configs):
            return None
        st = md.partition_state(SHARE_GROUP_STATE_TOPIC, self.coordinator_partition(key))
        if st is None or st.leader < 0 or not md.is_live(st.leader):
            return None
        info = md.broker(st.leader)
        channel = info.request_channel if info is not None else None
        return channel if channel is not None and not channel.closed else None

    def _body(self, api_key: int, key: ShareStateKey, fields: dict[str, Any]) -> object:
        cls = load_request_schema(api_key, VERSIONS[api_key])
        mod = __import__(cls.__module__, fromlist=["PartitionData"])
        values = dict(fields)
        if "state_batches" in values:
            values["state_batches"] = tuple(mod.StateBatch(
                first_offset=b.first_offset, last_offset=b.last_offset, delivery_state=b.delivery_state,
                delivery_count=b.delivery_count) for b in values["state_batches"])
        part = _build(mod.PartitionData, partition=key.partition, **values)
        topic_cls = next(getattr(mod, n) for n in ("InitializeStateData", "ReadStateData", "WriteStateData",
                                                  "DeleteStateData") if hasattr(mod, n))
        return cls(group_id=key.group_id, topics=(topic_cls(topic_id=key.topic_id, partitions=(part,)),))

    def _send(self, api_key: int, key: ShareStateKey, fields: dict[str, Any],
              answer: Callable[[int, Any], None], deadline_ms: int | None = None) -> None:
        now = self.time.milliseconds()
        deadline = deadline_ms if deadline_ms is not None else now + self.timeout_ms

        def retry(error: int) -> None:
            if self.closed or self.time.milliseconds() >= deadline:
                answer(error, None)
                return
            self.timer.add(_Retry(RETRY_BACKOFF_MS, lambda: self._send(api_key, key, fields, answer, deadline)))

        channel = self._coordinator_channel(key)
        if channel is None:
            retry(Errors.COORDINATOR_NOT_AVAILABLE)
            return

        def on_response(response: Response) -> None:
            body = response.body
            if body is None:
                retry(Errors.COORDINATOR_NOT_AVAILABLE)
                return
            p = body.results[0].partitions[0]
            error = int(p.error_code)
            if error in RETRIABLE:
                retry(error)
                return
            answer(error, p)

        request = Request(api_key=api_key, api_version=VERSIONS[api_key], correlation_id=next(_correlation),
                          client_id=f"broker-{self.broker_id}-share-persister", body=self._body(api_key, key, fields),
                          respond=on_response, api_name=NAMES[api_key],
                          connection_id=f"share-persister-{self.broker_id}")
        if not channel.send_request(request, timeout_s=5.0):
            retry(Errors.COORDINATOR_NOT_AVAILABLE)

    def close(self) -> None:
        self.closed = True


def _build(cls: type, **values: Any) -> Any:
    names = getattr(cls, "__dataclass_fields__", {})
    return cls(**{k: v for k, v in values.items() if k in names})
