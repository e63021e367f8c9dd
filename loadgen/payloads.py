"""Message keys and values drawn from a spec's distributions.

Values are slices of one random buffer: generating fresh random bytes per message would cost more
CPU than the client itself on a 2-core machine, and the broker does not look at the content.
"""
from __future__ import annotations

import math
import os
import random
from typing import Any


class PayloadSource:
    def __init__(self, size: dict[str, Any], keys: dict[str, Any], seed: int) -> None:
        self._rng = random.Random(seed)
        self._size = size
        self._keys = keys
        self._buffer = os.urandom(int(size["max"]) * 2 + 1)
        self._seq = 0
        mean = max(float(size["mean"]), 1.0)
        sigma = float(size["sigma"])
        self._mu = math.log(mean) - sigma * sigma / 2   # so the lognormal's mean is ``mean``

    def next_size(self) -> int:
        s, rng = self._size, self._rng
        dist = s["dist"]
        if dist == "fixed":
            n = s["mean"]
        elif dist == "uniform":
            n = rng.uniform(s["min"], s["max"])
        elif dist == "normal":
            n = rng.gauss(s["mean"], s["sigma"])
        else:
            n = rng.lognormvariate(self._mu, s["sigma"])
        return int(min(max(round(n), s["min"]), s["max"]))

    def next_value(self) -> bytes:
        n = self.next_size()
        start = self._rng.randrange(0, len(self._buffer) - n) if n < len(self._buffer) else 0
        return self._buffer[start:start + n]

    def next_key(self) -> bytes | None:
        mode = self._keys["mode"]
        if mode == "none":
            return None
        if mode == "sequential":
            self._seq += 1
            return b"key-%d" % (self._seq % self._keys["cardinality"])
        return b"key-%d" % self._rng.randrange(self._keys["cardinality"])
