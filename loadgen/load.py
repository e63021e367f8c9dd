"""``kafka-emu load``: drive a Spark-generated workload at a cluster and write a report.

Failures users can fix (invalid spec, no Java, unreachable cluster) end with one line on stderr
and a non-zero exit code; everything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_emu.loadgen.errors import LoadgenError, SpecError, UsageError

if TYPE_CHECKING:
    from kafka_emu.loadgen.spec import WorkloadSpec

SCRAPED = ("kafka_",)


def configure(parser: argparse.ArgumentParser) -> None:
    from kafka_emu.cli import positive_float, positive_int
    from kafka_emu.loadgen.spec_cli import DEFAULT_DURATION_S, add_options, add_ramp_options

    parser.add_argument("--spec", help="workload spec (YAML; see examples/workload.yaml; default: from the "
                                       "workload options below)")
    parser.add_argument("--bootstrap-servers",
                        help="target cluster (default: start an embedded cluster of --brokers brokers)")
    parser.add_argument("--brokers", type=positive_int, default=3, help="brokers of the embedded cluster")
    parser.add_argument("--master", default="local[2]",
                        help="Spark master: local[N], spark://host:port, yarn, k8s://https://host:port")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark property for the session, e.g. spark.driver.host=10.0.0.5 (repeatable; default: none)")
    parser.add_argument("--advertised-host", default=None,
                        help="embedded cluster: listen on all interfaces and tell clients to connect to HOST "
                             "(needed when executors run on other machines; default: 127.0.0.1 only)")
    parser.add_argument("--duration", type=positive_float, default=None,
                        help=f"seconds of producing (default: the spec's duration_s, {DEFAULT_DURATION_S:g} without --spec)")
    parser.add_argument("--report-dir", default=None, help="report folder (default: reports/load-<time>)")
    parser.add_argument("--json", action="store_true", help="print summary.json on stdout instead of Markdown")
    parser.add_argument("--connect-timeout", type=positive_float, default=5.0,
                        help="seconds to wait for the target cluster's metadata before giving up")
    parser.add_argument("--metrics-url", default=None,
                        help="Prometheus /metrics of an external cluster (default: none; the embedded cluster's is known)")
    add_options(parser)
    add_ramp_options(parser)


def spark_conf(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def embedded_config(advertised_host: str | None) -> dict[str, str]:
    if not advertised_host:
        return {}
    return {"listeners": "PLAINTEXT://0.0.0.0:0", "advertised.listeners": f"PLAINTEXT://{advertised_host}:0"}


def _fail(message: str, code: int) -> int:
    print(f"kafka-emu load: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    from kafka_emu.loadgen.spec import load_spec, parse_spec
    from kafka_emu.loadgen.spec_cli import ramp_from_args, spec_from_args

    try:
        raw = _raw(load_spec(args.spec)) if args.spec else spec_from_args(args)
        if args.spec and args.duration is not None:
            raw["duration_s"] = args.duration
        raw["ramp"] = ramp_from_args(args, raw.get("ramp"))
        spec = parse_spec(raw)
        check_serializers(spec, external=bool(args.bootstrap_servers))
        conf = spark_conf(args.spark_conf)
        from kafka_emu.loadgen.spark_session import check_java

        check_java()
        return _run(args, spec, conf)
    except LoadgenError as exc:
        return _fail(exc.message, exc.exit_code)


def check_serializers(spec: WorkloadSpec, external: bool) -> None:
    """Before anything starts: an Avro producer needs a registry (the embedded cluster runs one, an
    external cluster's is named by the spec) and confluent-kafka's Avro support on this machine."""
    avro = [i for i, p in enumerate(spec.producers) if p.serializer == "avro"]
    if not avro:
        return
    if external and spec.schema_registry_url is None:
        raise SpecError(f"invalid workload spec: producers[{avro[0]}].serializer: avro against an external "
                        "cluster (--bootstrap-servers) needs the registry's URL in the spec's schema_registry_url")
    try:
        import confluent_kafka.schema_registry.avro  # noqa: F401 - fastavro and the registry client
    except ImportError as exc:
        raise LoadgenError(f"serializer: avro needs confluent-kafka's Avro support ({exc}): "
                           "pip install 'kafka-emu[load]'") from None


def _raw(spec: WorkloadSpec) -> dict:
    raw = json.loads(json.dumps(dataclasses.asdict(spec)))
    if raw.get("ramp") is None:
        raw.pop("ramp", None)
    return raw


class _Stopper:
    """Stops the Spark session on its own thread, so the report is built meanwhile."""

    def __init__(self, spark: object) -> None:
        self._spark = spark
        self._thread: threading.Thread | None = None
        self.seconds: float | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._stop, name="loadgen-spark-stop", daemon=True)
            self._thread.start()

    def _stop(self) -> None:
        began = time.time()
        try:
            self._spark.stop()  # type: ignore[attr-defined]
        finally:
            self.seconds = round(time.time() - began, 2)

    def join(self) -> None:
        self.start()
        assert self._thread is not None
        self._thread.join(60)


def _run(args: argparse.Namespace, spec: WorkloadSpec, conf: dict[str, str]) -> int:
    from kafka_emu.loadgen.driver import run_load
    from kafka_emu.loadgen.ramp import run_ramp
    from kafka_emu.loadgen.report import write_summary
    from kafka_emu.loadgen.spark_session import start_session
    from kafka_emu.loadgen.target import (check_reachable, check_registry_reachable, create_topics, open_target,
                                          scrape_metrics)
    from kafka_emu.metrics.progress import progress_enabled

    wall_began = time.time()
    run_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out_dir = Path(args.report_dir or Path("reports") / f"load-{run_id}")
    show = progress_enabled(args)
    verbose = getattr(args, "log_level", None) == "debug"
    # the embedded cluster runs its registry when an Avro producer needs one the spec does not name
    embedded_registry = bool(spec.avro_producers) and spec.schema_registry_url is None
    with open_target(args.bootstrap_servers, brokers=args.brokers, config=embedded_config(args.advertised_host),
                     timeout_s=args.connect_timeout,
                     schema_registry_host=(args.advertised_host or "127.0.0.1") if embedded_registry else None
                     ) as target:
        brokers = check_reachable(target.bootstrap, args.connect_timeout)
        if spec.avro_producers:
            spec = dataclasses.replace(spec, schema_registry_url=spec.schema_registry_url or target.schema_registry_url)
            check_registry_reachable(spec.schema_registry_url, args.connect_timeout)
        create_topics(target.bootstrap, spec.topics, brokers)
        if show:
            print(f"load: target {target.bootstrap} ({'embedded' if target.embedded else 'external'}, "
                  f"{brokers} brokers); starting Spark ({args.master})", file=sys.stderr, flush=True)
        began = time.time()
        spark = start_session(args.master, extra_conf=conf, jvm_log=out_dir / "spark.log", verbose=verbose)
        spark_start_s = round(time.time() - began, 2)
        stopper = _Stopper(spark)
        try:
            info = {"run_id": run_id, "target": target.bootstrap, "embedded": target.embedded,
                    "brokers": brokers, "master": args.master, "spec_file": args.spec,
                    "metrics_url": target.metrics_url, "spark_start_s": spark_start_s}
            try:
                if spec.ramp is not None:
                    summary = run_ramp(spark, spec, target.bootstrap, out_dir, info,
                                       target.metrics_url or args.metrics_url, show_progress=show)
                    _print(summary, out_dir, args.json)
                    return 0
                summary = run_load(spark, spec, target.bootstrap, out_dir, info,
                                   show_progress=show, after_stage=stopper.start)
            except Exception as exc:
                if type(exc).__module__.startswith(("pyspark", "py4j")):
                    first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
                    raise LoadgenError(f"the Spark job failed: {first[:300]} (Spark's log: {out_dir / 'spark.log'})"
                                       ) from None
                raise
        finally:
            stopper.join()
        metrics = scrape_metrics(target.metrics_url or args.metrics_url, SCRAPED)
        if metrics:
            summary["cluster_metrics"] = metrics
    summary["phases_s"]["spark_stop"] = stopper.seconds
    if (out_dir / "spark.log").exists():
        summary["files"].append("spark.log")
    summary["run"]["wall_s"] = round(time.time() - wall_began, 2)
    write_summary(summary, out_dir)
    _print(summary, out_dir, args.json)
    return 0


def _print(summary: dict, out_dir: Path, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, default=str))
    else:
        print((out_dir / "summary.md").read_text())
    print(f"report: {out_dir.resolve()} (open report.html in a browser)", file=sys.stderr if as_json else sys.stdout)
