"""A transaction version 2 producer at request level, for the wire tests (no client library the
tests use speaks TV2): what Kafka's Java producer does once ApiVersions reports
``transaction.version`` 2 (``TransactionManager`` with ``isTransactionV2Enabled``).

InitProducerId, then Produce v12 with transactional batches and no AddPartitionsToTxn (the
partition leader adds the partition), TxnOffsetCommit v5 with no AddOffsetsToTxn, and EndTxn v5,
whose answer carries the producer id and epoch of the next transaction; each new epoch starts
every partition's sequence at 0. Retriable answers (CONCURRENT_TRANSACTIONS while the previous
transaction's markers are written, NOT_ENOUGH_REPLICAS, a coordinator moving) are retried.
"""
from __future__ import annotations

import dataclasses
import time
from datetime import timedelta
from typing import Any

from kio.index import load_request_schema as req_cls

from kafka_emu.broker.cluster.inprocess_client import produce_request
from kafka_emu.broker.protocol.adapter import build, item_cls
from kafka_emu.broker.storage.record_batch import build_batch
from kafka_emu.common.errors import Errors

from wire_helpers import RawClient

TRANSACTIONAL = 0x10
_RETRIABLE = frozenset({Errors.CONCURRENT_TRANSACTIONS, Errors.NOT_ENOUGH_REPLICAS, Errors.COORDINATOR_NOT_AVAILABLE,
                        Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR, Errors.NOT_LEADER_OR_FOLLOWER})


class Tv2Producer:
    def __init__(self, cluster: Any, transactional_id: str, timeout_s: float = 20.0) -> None:
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.timeout_s = timeout_s
        self.producer_id, self.producer_epoch = -1, -1
        self.sequences: dict[tuple[str, int], int] = {}

    # ------------------------------------------------------------------ plumbing
    def _retry(self, attempt: Any, error_of: Any) -> Any:
        deadline = time.monotonic() + self.timeout_s
        while True:
            answer = attempt()
            if int(error_of(answer)) not in _RETRIABLE or time.monotonic() > deadline:
                return answer
            time.sleep(0.02)

    def _send_to(self, broker_id: int, body: object) -> Any:
        client = RawClient(self.cluster.broker(broker_id).bootstrap_server)
        try:
            return client.send(body)
        finally:
            client.close()

    def _coordinator(self, key: str, key_type: int) -> int:
        find = req_cls(10, 1)(key=key, key_type=key_type)
        answer = self._retry(lambda: self._send_to(self.cluster.live_brokers()[0], find), lambda a: a.error_code)
        assert int(answer.error_code) == Errors.NONE, answer
        return int(answer.node_id)

    def _to_coordinator(self, body: object) -> Any:
        return self._send_to(self._coordinator(self.transactional_id, 1), body)

    # ------------------------------------------------------------------ API
    def init(self) -> tuple[int, int]:
        body = req_cls(22, 5)(transactional_id=self.transactional_id, transaction_timeout=timedelta(seconds=60),
                              producer_id=-1, producer_epoch=-1)
        answer = self._retry(lambda: self._to_coordinator(body), lambda a: a.error_code)
        assert int(answer.error_code) == Errors.NONE, answer
        self._new_epoch(int(answer.producer_id), int(answer.producer_epoch))
        return self.producer_id, self.producer_epoch

    def send(self, topic: str, partition: int, values: list[bytes]) -> int:
        """Produce v12 of one transactional batch to the partition's leader; its error code."""
        seq = self.sequences.get((topic, partition), 0)
        batch = build_batch([(b"k", v) for v in values], producer_id=self.producer_id,
                            producer_epoch=self.producer_epoch, base_sequence=seq, attributes=TRANSACTIONAL)
        body = dataclasses.replace(produce_request(topic, partition, batch, acks=-1, version=12),
                                   transactional_id=self.transactional_id)

        def attempt() -> Any:
            return self._send_to(self.cluster.leader_of(topic, partition), body).responses[0].partition_responses[0]

        error = int(self._retry(attempt, lambda a: a.error_code).error_code)
        if error == Errors.NONE:
            self.sequences[(topic, partition)] = seq + len(values)
        return error

    def commit_offsets(self, group: str, topic: str, offsets: dict[int, int]) -> list[int]:
        """TxnOffsetCommit v5 (no AddOffsetsToTxn); the partitions' error codes."""
        cls = req_cls(28, 5)
        topic_cls = item_cls(cls, "topics")
        part_cls = item_cls(topic_cls, "partitions")
        body = build(cls, transactional_id=self.transactional_id, group_id=group, producer_id=self.producer_id,
                     producer_epoch=self.producer_epoch, generation_id=-1, member_id="", group_instance_id=None,
                     topics=(build(topic_cls, name=topic, partitions=tuple(
                         build(part_cls, partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                               committed_metadata="") for p, o in offsets.items())),))
        answer = self._retry(lambda: self._send_to(self._coordinator(group, 0), body),
                             lambda a: a.topics[0].partitions[0].error_code)
        return [int(p.error_code) for t in answer.topics for p in t.partitions]

    def end(self, commit: bool, epoch: int | None = None) -> tuple[int, int, int]:
        """EndTxn v5 (with ``epoch``: a retry with that epoch); (error, producer id, epoch). A
        successful answer becomes the producer's id and epoch."""
        body = req_cls(26, 5)(transactional_id=self.transactional_id, producer_id=self.producer_id,
                              producer_epoch=self.producer_epoch if epoch is None else epoch, committed=commit)
        answer = self._retry(lambda: self._to_coordinator(body), lambda a: a.error_code)
        result = int(answer.error_code), int(answer.producer_id), int(answer.producer_epoch)
        if result[0] == Errors.NONE:
            self._new_epoch(result[1], result[2])
        return result

    def _new_epoch(self, producer_id: int, producer_epoch: int) -> None:
        if (producer_id, producer_epoch) != (self.producer_id, self.producer_epoch):
            self.sequences.clear()
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
