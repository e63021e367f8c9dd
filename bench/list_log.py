"""The emulator's log before segments, kept only as the ``log`` benchmark's comparator.

One Python list of batches (immutable ``bytes``) per partition with a parallel list of base
offsets searched with ``bisect``; an append parses and CRC-checks the batches, writes their
offsets into the header and appends; a read returns whole batches from the one holding the
offset up to ``max_bytes``. No segments, indexes, validation of records, retention or limits:
memory only grows. Single-threaded use only.
"""
from __future__ import annotations

from bisect import bisect_right

from kafka_emu.broker.storage.record_batch import parse_batches, rewrite_batch_header


class ListLog:
    def __init__(self) -> None:
        self.log_end_offset = 0
        self._bases: list[int] = []
        self._batches: list[bytes] = []

    def append_as_leader(self, data: bytes, leader_epoch: int) -> int:
        infos = parse_batches(data)
        buf = bytearray(data)
        first = offset = self.log_end_offset
        for info in infos:
            rewrite_batch_header(buf, info.position, offset, leader_epoch)
            self._bases.append(offset)
            self._batches.append(bytes(buf[info.position:info.position + info.size]))
            offset += info.last_offset_delta + 1
        self.log_end_offset = offset
        return first

    def read(self, fetch_offset: int, max_bytes: int) -> bytes:
        i = max(bisect_right(self._bases, fetch_offset) - 1, 0)
        out: list[bytes] = []
        size = 0
        while i < len(self._bases):
            b = self._batches[i]
            if out and size + len(b) > max_bytes:
                break
            out.append(b)
            size += len(b)
            i += 1
        return b"".join(out)
