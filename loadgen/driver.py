"""The load pipeline on the driver: spec to task DataFrame, barrier stage of clients, report.

The samples come back from the barrier stage in one action (``toArrow``): the stage drives a
real cluster, so nothing may ever ask Spark to compute it twice, and once the samples are on the
driver the report needs no further Spark job (``aggregate``). ``after_stage`` lets the caller
release Spark (stop the session) while the report is being built.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa

from kafka_emu.loadgen.executor import partition_runner
from kafka_emu.loadgen.live_progress import LiveProgress
from kafka_emu.loadgen.live_stats import StatsReceiver
from kafka_emu.loadgen.report import build_report, save_samples, write_summary
from kafka_emu.loadgen.samples import SPARK_SCHEMA
from kafka_emu.loadgen.spec import TopicSpec, WorkloadSpec
from kafka_emu.loadgen.target import create_topics, delete_topic, set_group_configs, set_share_group_configs
from kafka_emu.loadgen.tasks import TASK_SCHEMA, Task, build_tasks


def audiences(spec: WorkloadSpec) -> dict[str, list[str]]:
    out = {g.group_id: list(g.topics) for g in spec.groups}
    out.update({g.group_id: list(g.topics) for g in spec.share_groups})
    out.update({f"consumer:{c.name}": list(c.topics) for c in spec.consumers})
    return out


def driver_host(spark: Any) -> str:
    """The address executors reach the driver at (Spark's own spark.driver.host)."""
    return spark.sparkContext.getConf().get("spark.driver.host", "127.0.0.1")


def run_stage(spark: Any, tasks: list[Task], partitions: int, bootstrap: str, stats: StatsReceiver | None) -> pa.Table:
    """Run ``tasks`` as one barrier stage of ``partitions`` and return every sample."""
    # One Spark partition per slot, exactly as planned: parallelize slices a list of as many
    # elements as partitions one element each, so no shuffle (another stage) is needed.
    per_slot = [[t.row() for t in tasks if t.slot == slot] for slot in range(partitions)]
    rdd = spark.sparkContext.parallelize(per_slot, partitions).flatMap(lambda rows: rows)
    task_df = spark.createDataFrame(rdd, TASK_SCHEMA)
    stats_addr = stats.address if stats is not None else None
    return task_df.mapInArrow(partition_runner(bootstrap, stats_addr), SPARK_SCHEMA, barrier=True).toArrow()


def plan(spark: Any, spec: WorkloadSpec, control: str) -> tuple[list[Task], int]:
    slots = max(1, spark.sparkContext.defaultParallelism)
    partitions = min(len(build_tasks(spec, slots, control)), slots)
    return build_tasks(spec, partitions, control), partitions


def run_load(spark: Any, spec: WorkloadSpec, bootstrap: str, report_dir: Path, run_info: dict[str, Any],
             show_progress: bool = True, after_stage: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run the workload against ``bootstrap`` (topics already created) and write the report."""
    control = f"_loadgen-done-{run_info.get('run_id') or int(time.time())}"
    create_topics(bootstrap, (TopicSpec(control, 1, 1),), 1)
    refused = set_group_configs(bootstrap, spec.groups)
    refused.update(set_share_group_configs(bootstrap, spec.share_groups))
    tasks, partitions = plan(spark, spec, control)
    stats = StatsReceiver(driver_host(spark))
    watcher = LiveProgress(stats, spec.duration_s, show_progress)
    watcher.start()
    submitted = time.time()
    try:
        table = run_stage(spark, tasks, partitions, bootstrap, stats)
        done = time.time()
    finally:
        watcher.stop()
        stats.close()
        delete_topic(bootstrap, control)
    if after_stage is not None:
        after_stage()
    began = time.time()
    info = {**run_info, "tasks": len(tasks), "partitions": partitions, "stage_submit_ts": round(submitted, 3),
            "stage_done_ts": round(done, 3),
            "spec": spec.to_dict(), "group_configs_refused": refused}
    save_samples(table, report_dir)
    summary = build_report(table, report_dir, info, audiences(spec))
    summary["phases_s"]["report"] = round(time.time() - began, 2)
    write_summary(summary, report_dir)
    return summary
