"""SimpleMemoryPool: the broker's bound on the bytes of requests read but not yet done with.

After Kafka's ``org.apache.kafka.common.memory.SimpleMemoryPool``, which the socket server
builds when ``queued.max.request.bytes`` is positive (``MemoryPool.NONE`` otherwise, which the
emulator spells None). A network processor asks it for a request's size as soon as the 4-byte
size prefix is read; when the pool refuses, the connection is muted (read no further) until
memory is released, so a flood of large requests waits in the clients' sockets instead of in
the broker's memory.

Kafka's non-strict rule: an allocation succeeds while *any* memory is available, so the pool
can be overdrawn by at most one request (``socket.request.max.bytes``), and a request larger
than what is left is never starved by smaller ones. ``is_out_of_memory`` is
``available <= 0``. Zero-byte requests never ask (Kafka reads them into a shared empty buffer).

``on_available`` is called, outside the lock, each time a release takes the pool from out of
memory to available, so muted processors can look again at once (Kafka's selectors poll the
pool on each loop; here a processor waiting in ``epoll`` must be woken). Depleted time (Kafka's
``MemoryPoolDepletedTimeTotal``) accumulates from the first refused allocation to the next
successful allocation or release.

Difference from Kafka on purpose: the pool counts bytes and hands out no buffer (Python
allocates the request's bytes itself); ``release`` takes the size that was allocated.

Locking: ``_lock`` guards ``available``, ``_depleted_since_ns`` and ``depleted_ns``; any thread
may allocate and release.
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class SimpleMemoryPool:
    def __init__(self, size_bytes: int, max_single_allocation: int, strict: bool = False) -> None:
        if size_bytes <= 0 or max_single_allocation <= 0 or max_single_allocation > size_bytes:
            raise ValueError(f"a memory pool needs a positive size and a positive max single allocation no "
                             f"larger than it, got {size_bytes} and {max_single_allocation}")
        self.size = size_bytes
        self.max_single_allocation = max_single_allocation
        self.strict = strict
        self.available = size_bytes
        self.depleted_ns = 0          # total time allocations were refused (MemoryPoolDepletedTimeTotal)
        self._depleted_since_ns = 0   # monotonic start of the refusal in progress, 0 if none
        self._lock = threading.Lock()
        self.on_available: Callable[[], None] | None = None

    def try_allocate(self, size: int) -> bool:
        """Take ``size`` bytes if the pool has memory (non-strict: any; strict: ``size``)."""
        if size < 1:
            raise ValueError(f"requested size {size} <= 0")
        if size > self.max_single_allocation:
            raise ValueError(f"requested size {size} is larger than maxSingleAllocationSize "
                             f"{self.max_single_allocation}")
        with self._lock:
            if self.available < (size if self.strict else 1):
                if not self._depleted_since_ns:
                    self._depleted_since_ns = time.monotonic_ns()
                return False
            self.available -= size
            self._end_depletion()
            return True

    def release(self, size: int) -> None:
        """Give back ``size`` bytes taken by ``try_allocate``."""
        with self._lock:
            was_out = self.available <= 0
            self.available += size
            self._end_depletion()
            woken = was_out and self.available > 0
        if woken and self.on_available is not None:
            self.on_available()

    def _end_depletion(self) -> None:
        if self._depleted_since_ns:
            self.depleted_ns += time.monotonic_ns() - self._depleted_since_ns
            self._depleted_since_ns = 0

    def is_out_of_memory(self) -> bool:
        return self.available <= 0

    @property
    def used(self) -> int:
        """Bytes allocated and not released (Kafka's MemoryPoolUsed)."""
        return self.size - self.available

    def __repr__(self) -> str:
        return f"SimpleMemoryPool(size={self.size}, available={self.available})"
