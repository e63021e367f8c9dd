"""A SparkSession set up for a small machine with no network: quiet, loopback-only, UI off.

Local mode is the default; ``spark://`` masters work too, in which case the executors must be
able to import this package (the session ships it with ``addPyFile`` when it is not local).
"""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile
from pathlib import Path
from typing import Any

from kafka_emu.loadgen.errors import JavaMissingError, LoadgenError

DEFAULT_MASTER = "local[2]"
EXECUTOR_WAIT_S = 60.0


def check_java() -> str:
    """Path of the java binary Spark will use, or JavaMissingError with what to install."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home, "bin", "java") if java_home else None
    java = str(candidate) if candidate and candidate.exists() else shutil.which("java")
    if not java:
        raise JavaMissingError("Java was not found (Spark needs Java 17 or 21): install a JRE, e.g. "
                               "`apt-get install default-jre-headless`, or set JAVA_HOME")
    try:
        subprocess.run([java, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise JavaMissingError(f"Java at {java} does not run ({exc}); Spark needs Java 17 or 21") from None
    return java


def _package_zip() -> str:
    """What the executors import of ``kafka_emu`` (its top-level modules, ``loadgen`` and
    ``metrics``) zipped for remote executors."""
    import kafka_emu

    out = Path(tempfile.mkdtemp(prefix="loadgen-pyfiles-")) / "kafka_emu_pkgs.zip"
    top = Path(str(kafka_emu.__file__)).resolve().parent
    with zipfile.ZipFile(out, "w") as zf:
        for f in top.glob("*.py"):
            zf.write(f, Path("kafka_emu", f.name))
        for pkg in ("loadgen", "metrics"):
            base = Path(str(importlib.import_module(f"kafka_emu.{pkg}").__file__)).resolve().parent
            for f in base.rglob("*.py"):
                zf.write(f, Path("kafka_emu", pkg, f.relative_to(base)))
    return str(out)


LOG4J2 = """rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
"""


def _log4j_file(level: str) -> str:
    """A log4j2 file at ``level`` (Spark's default prints WARN banners on every start)."""
    text = LOG4J2.format(level=level)
    path = Path(tempfile.gettempdir()) / f"kafka-emu-spark-log4j2-{level}.properties"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return str(path)


def start_session(master: str = DEFAULT_MASTER, app_name: str = "kafka-emu-load",
                  extra_conf: dict[str, str] | None = None, jvm_log: Path | None = None,
                  verbose: bool = False) -> Any:
    """A SparkSession on ``master``.

    ``jvm_log``: a file that gets the Spark JVM's own stdout and stderr (its start-up lines such
    as "Using incubator modules", log4j output at WARN, the Python workers' stderr in local mode)
    instead of the terminal. ``verbose`` keeps them on the terminal, with log4j at INFO.
    """
    check_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warnings.filterwarnings("ignore", message=".*does not yet fully support pandas.*")
    warnings.filterwarnings("ignore", message=".*copy keyword is deprecated.*")
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    level = "info" if verbose else ("warn" if jvm_log is not None else "error")
    conf = (SparkConf().setMaster(master).setAppName(app_name)
            .set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false")
            .set("spark.sql.shuffle.partitions", "2" if local else "16")
            .set("spark.sql.execution.arrow.pyspark.enabled", "true")
            .set("spark.sql.session.timeZone", "UTC")
            .set("spark.driver.memory", "1g")
            .set("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
            .set("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{_log4j_file(level)}")
            .set("spark.executor.extraJavaOptions", f"-Dlog4j.configurationFile=file:{_log4j_file(level)}"))
    if local:
        conf = conf.set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
    for key, value in (extra_conf or {}).items():
        conf = conf.set(key, value)
    try:
        if jvm_log is not None and not verbose and SparkContext._gateway is None:
            jvm_log.parent.mkdir(parents=True, exist_ok=True)
            with open(jvm_log, "ab") as out:   # the JVM keeps its own descriptor
                gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
            SparkContext(conf=conf, gateway=gateway)
        spark = SparkSession.builder.config(conf=conf).getOrCreate()
    except Exception as exc:
        text = str(exc)
        if "JAVA_GATEWAY_EXITED" in text or "Java gateway" in text:
            raise JavaMissingError("the Spark JVM did not start (is a working Java 17/21 installed?)") from None
        raise LoadgenError(f"Spark session did not start: {text.splitlines()[0] if text else type(exc).__name__}") from None
    spark.sparkContext.setLogLevel(level.upper())
    if not local:
        spark.sparkContext.addPyFile(_package_zip())
        wait_for_executors(spark)
    return spark


def registered_executors(spark: Any) -> int:
    """Executors registered with the driver (the driver's own entry excluded)."""
    infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
    return max(0, len(infos) - 1)


def wait_for_executors(spark: Any, timeout_s: float = EXECUTOR_WAIT_S, settle_s: float = 2.0) -> int:
    """On a cluster master, wait until executors have registered and their number has settled.

    A barrier stage is refused while fewer slots than its tasks are registered (Spark retries the
    check every 15 s), and the plan's partition count is read from ``defaultParallelism``, which
    only counts registered cores; so the plan is made once the executors are there.
    """
    if spark.sparkContext.master.startswith("local"):
        return 0
    deadline = time.monotonic() + timeout_s
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = registered_executors(spark)
        if count != seen:
            seen, since = count, time.monotonic()
        elif count > 0 and time.monotonic() - since >= settle_s:
            return count
        time.sleep(0.25)
    if seen <= 0:
        raise LoadgenError(f"no Spark executor registered within {timeout_s:g} s on {spark.sparkContext.master} "
                           "(do the workers have free cores and memory for this application?)")
    return seen
