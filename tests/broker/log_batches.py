"""Test helper: v2 record batches with any codec, timestamps and offset deltas (what real
producers send, including malformed variants the broker must refuse)."""
from __future__ import annotations

import struct

from crc32c import crc32c

from kafka_emu.broker.storage import compression
from kafka_emu.broker.storage.record_batch import MAGIC, NO_PRODUCER_ID, NO_SEQUENCE, write_record


def encode_records(records, timestamps=None, offset_deltas=None, base_ts=None) -> tuple[bytes, int]:
    """The records section (uncompressed) and the base timestamp."""
    timestamps = timestamps or [0] * len(records)
    base = timestamps[0] if base_ts is None else base_ts
    body = bytearray()
    for i, (key, value) in enumerate(records):
        write_record(body, timestamps[i] - base, i if offset_deltas is None else offset_deltas[i], key, value)
    return bytes(body), base


def make_batch(section: bytes, count: int, *, codec: int = compression.NONE, base_ts: int = 0,
               max_ts: int | None = None, attributes: int = 0, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = -1, base_sequence: int = NO_SEQUENCE, base_offset: int = 0) -> bytes:
    """A batch around an already encoded (and possibly compressed) records section, valid CRC."""
    attrs = attributes | codec
    tail = struct.pack(">hiqqqhii", attrs, count - 1, base_ts, base_ts if max_ts is None else max_ts,
                       producer_id, producer_epoch, base_sequence, count) + section
    head = struct.pack(">qiibI", base_offset, len(tail) + 9, -1, MAGIC, crc32c(tail))
    return head + tail


def compressed_batch(codec: int, records, timestamps=None, offset_deltas=None, **kw) -> bytes:
    section, base = encode_records(records, timestamps, offset_deltas)
    max_ts = max(timestamps) if timestamps else base
    if codec != compression.NONE:
        section = compression.compress(codec, section)
    return make_batch(section, len(records), codec=codec, base_ts=base, max_ts=max_ts, **kw)


def append_txn(log, pid: int, seq: int, n: int = 1, epoch: int = 0, timestamp_ms: int = 0):
    """A leader append of a transactional batch, verified as a coordinator would (the log's
    own verification guard)."""
    from kafka_emu.broker.storage.record_batch import build_batch

    guard = log.maybe_start_transaction_verification(pid, epoch)
    return log.append_as_leader(build_batch([(b"k", b"t")] * n, timestamp_ms=timestamp_ms, producer_id=pid,
                                            producer_epoch=epoch, base_sequence=seq, attributes=0x10),
                                0, verification_guard=guard)


def append_end_txn(log, pid: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0, timestamp_ms: int = 0):
    """A leader append of a COMMIT/ABORT marker (origin COORDINATOR, as WriteTxnMarkers does)."""
    from kafka_emu.broker.storage.control_record import end_txn_marker_batch
    from kafka_emu.broker.storage.producer_state import AppendOrigin

    return log.append_as_leader(end_txn_marker_batch(pid, epoch, coordinator_epoch, commit, timestamp_ms), 0,
                                origin=AppendOrigin.COORDINATOR)
