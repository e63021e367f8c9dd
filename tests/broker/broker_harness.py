"""A threadless ReplicaManager harness on MockTime/MockTimer (Kafka's ReplicaManagerTest style)."""
from __future__ import annotations

from kafka_emu.broker.server.config import KafkaConfig
from kafka_emu.broker.server.metadata_store import BrokerInfo, MetadataStore
from kafka_emu.broker.server.fetch_params import (
    ISOLATION_HIGH_WATERMARK,
    ISOLATION_LOG_END,
    FetchParams,
    PartitionFetchInfo,
)
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.broker.server.replica_manager import ReplicaManager
from kafka_emu.timer import DelayedOperationPurgatory, MockTime, MockTimer

TOPIC = "t"
TP = (TOPIC, 0)


class Harness:
    def __init__(self, replicas=(0, 1, 2), min_isr: int = 1, lag_ms: int = 30000, **props) -> None:
        self.time = MockTime()
        self.timer = MockTimer(self.time)
        self.metadata = MetadataStore()
        for b in (0, 1, 2):
            self.metadata.register_broker(BrokerInfo(b))
        cfg = KafkaConfig({"broker.id": 0, "min.insync.replicas": min_isr,
                           "replica.lag.time.max.ms": lag_ms,
                           # Kafka refuses a follower fetch wait longer than the lag time
                           "replica.fetch.wait.max.ms": min(500, lag_ms), **props})
        self.produce_purgatory = DelayedOperationPurgatory("Produce", timer=self.timer, reaper_enabled=False,
                                                           time=self.time)
        self.fetch_purgatory = DelayedOperationPurgatory("Fetch", timer=self.timer, reaper_enabled=False,
                                                         time=self.time)
        self.delete_records_purgatory = DelayedOperationPurgatory("DeleteRecords", timer=self.timer,
                                                                  reaper_enabled=False, time=self.time)
        self.rm = ReplicaManager(cfg, self.metadata, self.time, produce_purgatory=self.produce_purgatory,
                                 fetch_purgatory=self.fetch_purgatory,
                                 delete_records_purgatory=self.delete_records_purgatory)
        info = self.metadata.create_topic(TOPIC, 1, len(replicas))
        self.state = info.partitions[0]
        self.rm.apply_partition_states([self.state])
        self.partition = self.rm.get_partition(TP)

    def produce(self, n: int = 1, acks: int = -1, timeout_ms: int = 1000, **kw):
        box = {}
        self.rm.append_records(timeout_ms, acks, {TP: build_batch([(b"k", b"v" * 10)] * n, **kw)},
                               lambda st: box.update(st))
        return box

    def drain(self) -> int:
        return self.rm.action_queue.try_complete_actions()

    def follower_fetch(self, replica: int, offset: int, max_wait_ms: int = 0, min_bytes: int = 1,
                       leader_epoch: int = -1, last_fetched_epoch: int = -1):
        box = []
        params = FetchParams(replica_id=replica, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
                             isolation=ISOLATION_LOG_END)
        self.rm.fetch_messages(params, [(TP, PartitionFetchInfo(offset, 1 << 20, 0, leader_epoch,
                                                               last_fetched_epoch))],
                               lambda r: box.extend(r))
        return box

    def consumer_fetch(self, offset: int, max_wait_ms: int = 0, min_bytes: int = 1, leader_epoch: int = -1,
                       isolation: int = ISOLATION_HIGH_WATERMARK):
        box = []
        params = FetchParams(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, isolation=isolation)
        self.rm.fetch_messages(params, [(TP, PartitionFetchInfo(offset, 1 << 20, -1, leader_epoch))],
                               lambda r: box.extend(r))
        return box

    def advance(self, ms: int) -> None:
        self.timer.advance_clock(ms)

    def become_follower(self, leader: int = 1) -> None:
        from dataclasses import replace
        st = self.metadata.partition_state(TOPIC, 0)
        new = replace(st, leader=leader, leader_epoch=st.leader_epoch + 1)
        self.rm.apply_partition_states([new])
