"""TxnMarkerEntry: one transaction's COMMIT or ABORT marker for a set of partitions.

It is the unit the transaction coordinator's marker channel hands to a partition leader and the
unit a WriteTxnMarkers request carries (Kafka's ``WriteTxnMarkersRequest.TxnMarkerEntry``). Both
sides share this type so the coordinator never imports ``broker``: the coordinator builds entries,
the broker appends one control batch per partition (``ControlRecordType`` COMMIT or ABORT, written
by the partition leader with acks=-1) and answers an error code per partition.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TxnMarkerEntry:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    committed: bool                          # transaction_result: True = COMMIT, False = ABORT
    partitions: tuple[tuple[str, int], ...]  # (topic, partition) pairs the marker goes to
