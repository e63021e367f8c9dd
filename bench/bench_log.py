"""``kafka-emu bench log``: the segment log against the old single-list log, and RSS under retention.

Three measurements in one run, on one thread (the log is always used under its partition lock):

* append: ``--batches`` client batches of ``--records`` records of ``--value-bytes`` each,
  uncompressed, appended with ``UnifiedLog.append_as_leader`` (parse, CRC, LogValidator, producer
  state, segment roll and index) and with ``ListLog`` (parse, CRC, header rewrite, list append);
* read: a consumer's sequential fetches (``--fetch-bytes`` each) over the whole log, then random
  fetch offsets, on both logs;
* sustained: ``--sustain-seconds`` of appends to a log with ``retention.bytes`` =
  ``--retention-mib`` and ``segment.bytes`` = ``--segment-mib``, the retention task run every
  ``--retention-every`` appends (as ``kafka-log-retention`` would); RSS is sampled every second
  and should stay flat once the retention limit is reached (``rss_growth_mib`` after warm-up).

The ratios (segment log / list log) are what to compare across runs on a loaded machine.

``--log-dir DIR`` adds the same append and sequential-read measurements for a persisted log
(``PersistentLog`` in a new directory under DIR, with ``--flush-messages``; default: Kafka's,
leave it to the OS), next to the in-memory segment log of the same run.
"""
from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kafka_emu.bench.bench_util import emit, mib, rss_bytes
from kafka_emu.bench.list_log import ListLog
from kafka_emu.broker.storage.unified_log import UnifiedLog
from kafka_emu.broker.storage.log_config import LogConfig
from kafka_emu.broker.storage.log_manager import release_free_memory
from kafka_emu.broker.storage.persistent_log import PersistentLog
from kafka_emu.broker.storage.record_batch import build_batch


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import positive_float, positive_int

    parser.add_argument("--batches", type=positive_int, default=50_000, help="batches appended to each log")
    parser.add_argument("--records", type=positive_int, default=5, help="records per batch")
    parser.add_argument("--value-bytes", type=positive_int, default=200, help="bytes per record value")
    parser.add_argument("--fetch-bytes", type=positive_int, default=1 << 20, help="max bytes per read")
    parser.add_argument("--random-reads", type=positive_int, default=20_000, help="reads at random offsets")
    parser.add_argument("--segment-mib", type=positive_int, default=16, help="segment.bytes in MiB")
    parser.add_argument("--retention-mib", type=positive_int, default=64,
                        help="retention.bytes in MiB of the sustained run")
    parser.add_argument("--retention-every", type=positive_int, default=2000,
                        help="appends between retention checks in the sustained run")
    parser.add_argument("--sustain-seconds", type=positive_float, default=20.0,
                        help="length of the sustained run")
    parser.add_argument("--log-dir", default=None,
                        help="also measure a persisted log in a new directory under this one (default: memory only)")
    parser.add_argument("--flush-messages", type=positive_int, default=None,
                        help="flush.messages of the persisted log (default: Kafka's, no fsync per append)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _batches(args: argparse.Namespace) -> list[bytes]:
    value = b"v" * args.value_bytes
    return [build_batch([(b"key-%d" % (i % 1000), value)] * args.records, timestamp_ms=int(time.time() * 1000))
            for i in range(min(args.batches, 1000))]


def _append(log: Any, batches: list[bytes], n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        log.append_as_leader(batches[i % len(batches)], 0)
    return time.perf_counter() - start


def _read_sequential(log: Any, end: int, fetch_bytes: int) -> tuple[float, int]:
    start = time.perf_counter()
    offset = 0
    nbytes = 0
    reads = 0
    while offset < end:
        data = log.read(offset, fetch_bytes)
        nbytes += len(data)
        reads += 1
        # the next fetch offset: one past the last batch returned (its header says where)
        pos = 0
        last = offset
        while pos + 61 <= len(data):
            base = int.from_bytes(data[pos:pos + 8], "big", signed=True)
            length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
            delta = int.from_bytes(data[pos + 23:pos + 27], "big", signed=True)
            last = base + delta
            pos += length + 12
        offset = last + 1
    return time.perf_counter() - start, nbytes


def _read_random(log: Any, end: int, n: int, fetch_bytes: int, seed: int = 7) -> float:
    rng = random.Random(seed)
    offsets = [rng.randrange(end) for _ in range(n)]
    start = time.perf_counter()
    for off in offsets:
        log.read(off, fetch_bytes)
    return time.perf_counter() - start


def _sustained(args: argparse.Namespace, batches: list[bytes]) -> dict[str, Any]:
    config = LogConfig.for_topic({"segment.bytes": args.segment_mib << 20,
                                  "retention.bytes": args.retention_mib << 20})
    log = UnifiedLog("bench", 0, config=config)
    samples: list[tuple[float, int]] = []
    start = time.perf_counter()
    next_sample = start
    appended = 0
    deleted = 0
    while True:
        now = time.perf_counter()
        if now >= next_sample:
            samples.append((round(now - start, 1), rss_bytes()))
            next_sample += 1.0
        if now - start >= args.sustain_seconds:
            break
        for _ in range(200):
            log.append_as_leader(batches[appended % len(batches)], 0)
            appended += 1
        log.high_watermark = log.log_end_offset
        if appended % args.retention_every < 200:
            freed = log.delete_old_segments()
            if freed:
                deleted += freed
                release_free_memory()
    warm = [rss for t, rss in samples if t >= args.sustain_seconds / 2] or [samples[-1][1]]
    return {"seconds": args.sustain_seconds, "appended_batches": appended,
            "appended_mib": mib(appended * len(batches[0])), "deleted_mib": mib(deleted),
            "log_mib": mib(log.size_bytes), "retention_mib": args.retention_mib,
            "rss_mib_samples": [mib(r) for _, r in samples],
            "rss_growth_mib_second_half": mib(max(warm) - min(warm)),
            "log_start_offset": log.log_start_offset}


def _persisted(args: argparse.Namespace, batches: list[bytes], t_memory: float, t_memory_read: float) -> dict[str, Any]:
    """Append and sequential read of a ``PersistentLog`` (``--log-dir``), as ratios to the
    in-memory segment log's times of the same run."""
    configs: dict[str, object] = {"segment.bytes": args.segment_mib << 20}
    if args.flush_messages is not None:
        configs["flush.messages"] = args.flush_messages
    directory = Path(tempfile.mkdtemp(prefix="bench-log-", dir=args.log_dir))
    try:
        log = PersistentLog(directory / "bench-0", "bench", 0, config=LogConfig.for_topic(configs))
        t_append = _append(log, batches, args.batches)
        t_read, nbytes = _read_sequential(log, log.log_end_offset, args.fetch_bytes)
        log.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return {"flush_messages": args.flush_messages or "default", "append_batches_per_s": round(args.batches / t_append),
            "append_ratio": round(t_memory / t_append, 2), "read_mib_per_s": round(nbytes / t_read / (1 << 20), 1),
            "read_ratio": round(t_memory_read / t_read, 2)}


def run(args: argparse.Namespace) -> int:
    batches = _batches(args)
    batch_bytes = len(batches[0])
    result: dict[str, Any] = {"bench": "log", "batch_bytes": batch_bytes, "records_per_batch": args.records,
                              "batches": args.batches}
    seg_log = UnifiedLog("bench", 0, config=LogConfig.for_topic({"segment.bytes": args.segment_mib << 20}))
    list_log = ListLog()
    t_seg = _append(seg_log, batches, args.batches)
    t_list = _append(list_log, batches, args.batches)
    seg_log.high_watermark = seg_log.log_end_offset
    result["append"] = {"segment_batches_per_s": round(args.batches / t_seg), "list_batches_per_s": round(args.batches / t_list),
                        "ratio": round(t_list / t_seg, 2), "segments": seg_log.num_segments()}
    end = seg_log.log_end_offset
    ts, nbytes = _read_sequential(seg_log, end, args.fetch_bytes)
    tl, _ = _read_sequential(list_log, end, args.fetch_bytes)
    result["read_sequential"] = {"segment_mib_per_s": round(nbytes / ts / (1 << 20), 1),
                                 "list_mib_per_s": round(nbytes / tl / (1 << 20), 1), "ratio": round(tl / ts, 2)}
    rs = _read_random(seg_log, end, args.random_reads, args.fetch_bytes)
    rl = _read_random(list_log, end, args.random_reads, args.fetch_bytes)
    result["read_random"] = {"segment_reads_per_s": round(args.random_reads / rs),
                             "list_reads_per_s": round(args.random_reads / rl), "ratio": round(rl / rs, 2)}
    del seg_log, list_log
    release_free_memory()
    if args.log_dir:
        result["persisted"] = _persisted(args, batches, t_seg, ts)
    result["sustained"] = _sustained(args, batches)
    a, r, q, s = result["append"], result["read_sequential"], result["read_random"], result["sustained"]
    table: list[tuple[str, ...]] = [
        ("measurement", "segment log", "list log", "ratio"),
        ("append batches/s", f"{a['segment_batches_per_s']:,}", f"{a['list_batches_per_s']:,}", f"{a['ratio']}x"),
        ("sequential read MiB/s", f"{r['segment_mib_per_s']}", f"{r['list_mib_per_s']}", f"{r['ratio']}x"),
        ("random reads/s", f"{q['segment_reads_per_s']:,}", f"{q['list_reads_per_s']:,}", f"{q['ratio']}x"),
        (f"sustained {s['seconds']}s: appended {s['appended_mib']} MiB, deleted {s['deleted_mib']} MiB, "
         f"log {s['log_mib']} MiB (retention.bytes {s['retention_mib']} MiB)",),
        (f"RSS MiB each second: {s['rss_mib_samples']}",),
        (f"RSS growth over the second half: {s['rss_growth_mib_second_half']} MiB",),
    ]
    if "persisted" in result:
        p = result["persisted"]
        table.append((f"persisted (flush.messages {p['flush_messages']}): append {p['append_batches_per_s']:,} "
                      f"batches/s ({p['append_ratio']}x the in-memory log), sequential read "
                      f"{p['read_mib_per_s']} MiB/s ({p['read_ratio']}x)",))
    emit(result, args.json, table)
    return 0
