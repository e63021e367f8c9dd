"""One row per client request outcome, the unit every measurement of a load run is built from.

Executors append tuples (cheap, no locking: each task owns its sink and librdkafka callbacks run
on the thread that polls) and convert them to Arrow once, at the end of the task, which is the
form Spark takes back from ``mapInArrow``.

``ts`` is wall-clock seconds when the outcome was known (executors of one run share a clock in
local mode and are NTP-close on a cluster); ``latency_ms`` is what the operation took:
delivery latency for ``produce``, end-to-end (now minus the record's CreateTime) for ``consume``,
callback latency for ``commit``, revoke-to-assign for ``rebalance``, the future's latency for
admin operations.
"""
from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

SAMPLE_FIELDS: list[tuple[str, pa.DataType, str]] = [
    ("ts", pa.float64(), "double"),
    ("task", pa.string(), "string"),
    ("client", pa.string(), "string"),
    ("op", pa.string(), "string"),
    ("topic", pa.string(), "string"),
    ("partition", pa.int32(), "int"),
    ("offset", pa.int64(), "bigint"),
    ("latency_ms", pa.float64(), "double"),
    ("error", pa.string(), "string"),
    ("bytes", pa.int64(), "bigint"),
    ("group_id", pa.string(), "string"),
    ("member", pa.string(), "string"),
    ("detail", pa.string(), "string"),
]
ARROW_SCHEMA = pa.schema([(n, t) for n, t, _ in SAMPLE_FIELDS])
SPARK_SCHEMA = ", ".join(f"`{n}` {s}" for n, _, s in SAMPLE_FIELDS)
OK = ""  # the error column of a successful request


class SampleSink:
    """Samples of one task; ``add`` is called from that task's thread only."""

    def __init__(self, task: str, client: str, group_id: str | None = None, member: str | None = None) -> None:
        self.task = task
        self.client = client
        self.group_id = group_id
        self.member = member
        self.rows: list[tuple[Any, ...]] = []

    def add(self, op: str, latency_ms: float | None = None, *, error: str = OK, topic: str | None = None,
            partition: int | None = None, offset: int | None = None, nbytes: int | None = None,
            detail: str | None = None, ts: float | None = None) -> None:
        self.rows.append((time.time() if ts is None else ts, self.task, self.client, op, topic, partition,
                          offset, latency_ms, error, nbytes, self.group_id, self.member, detail))

    def flush(self) -> None:
        """Hook for sinks that stream rows elsewhere (a crashable member's child process)."""

    def to_arrow(self) -> pa.RecordBatch:
        columns = list(zip(*self.rows)) if self.rows else [[] for _ in SAMPLE_FIELDS]
        return pa.RecordBatch.from_arrays(
            [pa.array(col, type=t) for col, (_, t, _) in zip(columns, SAMPLE_FIELDS)], schema=ARROW_SCHEMA)
