"""The load pipeline on the driver: spec to task DataFrame, barrier stage of clients, report.

The samples DataFrame is persisted before anything reads it: it is the output of a barrier stage
that drives a real cluster, and recomputing it for a second query would run the whole load again.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pyspark import StorageLevel

from kafka_emu.loadgen.executor import START_LEAD_S, partition_runner
from kafka_emu.loadgen.live_progress import LiveProgress
from kafka_emu.loadgen.report import build_report, save_samples
from kafka_emu.loadgen.samples import SPARK_SCHEMA
from kafka_emu.loadgen.spec import TopicSpec, WorkloadSpec
from kafka_emu.loadgen.target import create_topics, delete_topic
from kafka_emu.loadgen.tasks import TASK_SCHEMA, build_tasks


def audiences(spec: WorkloadSpec) -> dict[str, list[str]]:
    out = {g.group_id: list(g.topics) for g in spec.groups}
    out.update({f"consumer:{c.name}": list(c.topics) for c in spec.consumers})
    return out


def run_load(spark: Any, spec: WorkloadSpec, bootstrap: str, report_dir: Path, run_info: dict[str, Any],
             show_progress: bool = True) -> dict[str, Any]:
    """Run the workload against ``bootstrap`` (topics already created) and write the report."""
    control = f"_loadgen-done-{run_info.get('run_id') or int(time.time())}"
    create_topics(bootstrap, (TopicSpec(control, 1, 1),), 1)
    slots = max(1, spark.sparkContext.defaultParallelism)
    partitions = min(len(build_tasks(spec, slots, control)), slots)
    tasks = build_tasks(spec, partitions, control)
    # One Spark partition per slot, exactly as planned (parallelize alone slices by position).
    rdd = (spark.sparkContext.parallelize([(t.slot, t.row()) for t in tasks], partitions)
           .partitionBy(partitions, lambda slot: slot).values())
    task_df = spark.createDataFrame(rdd, TASK_SCHEMA)
    samples = task_df.mapInArrow(partition_runner(bootstrap), SPARK_SCHEMA, barrier=True)
    samples = samples.persist(StorageLevel.MEMORY_AND_DISK)
    topics = sorted({t for p in spec.producers for t in p.topics})
    watcher = LiveProgress(bootstrap, topics, spec.duration_s + spec.drain_s + START_LEAD_S, show_progress)
    watcher.start()
    began = time.time()
    try:
        count = samples.count()
    finally:
        watcher.stop()
        delete_topic(bootstrap, control)
    info = {**run_info, "tasks": len(tasks), "partitions": partitions, "samples": count,
            "load_wall_s": round(time.time() - began, 2), "spec": spec.to_dict()}
    began = time.time()
    try:
        saved = save_samples(samples, report_dir).persist(StorageLevel.MEMORY_AND_DISK)
    finally:
        samples.unpersist()
    try:
        summary = build_report(saved, report_dir, info, audiences(spec))
        summary["run"]["report_s"] = round(time.time() - began, 2)
        return summary
    finally:
        saved.unpersist()
