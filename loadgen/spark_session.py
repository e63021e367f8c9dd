"""A SparkSession set up for a small machine with no network: quiet, loopback-only, UI off.

Local mode is the default; ``spark://`` masters work too, in which case the executors must be
able to import this package (the session ships it with ``addPyFile`` when it is not local).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any

from kafka_emu.loadgen.errors import JavaMissingError, LoadgenError

DEFAULT_MASTER = "local[2]"


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
    """This project's packages zipped for remote executors."""
    root = Path(__file__).resolve().parent.parent
    out = Path(tempfile.mkdtemp(prefix="loadgen-pyfiles-")) / "kafka_emu_pkgs.zip"
    with zipfile.ZipFile(out, "w") as zf:
        for pkg in ("loadgen", "metrics"):
            for f in (root / pkg).rglob("*.py"):
                zf.write(f, f.relative_to(root))
    return str(out)


LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log4j() -> str:
    """A log4j2 file that keeps only errors (Spark's default prints WARN banners on every start)."""
    path = Path(tempfile.gettempdir()) / "kafka-emu-spark-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        path.write_text(LOG4J2)
    return str(path)


def start_session(master: str = DEFAULT_MASTER, app_name: str = "kafka-emu-load",
                  extra_conf: dict[str, str] | None = None) -> Any:
    check_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    local = master.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    warnings.filterwarnings("ignore", message=".*does not yet fully support pandas.*")
    warnings.filterwarnings("ignore", message=".*copy keyword is deprecated.*")
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2" if local else "16")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "1g")
               .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
               .config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{_quiet_log4j()}"))
    if local:
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1"))
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        text = str(exc)
        if "JAVA_GATEWAY_EXITED" in text or "Java gateway" in text:
            raise JavaMissingError("the Spark JVM did not start (is a working Java 17/21 installed?)") from None
        raise LoadgenError(f"Spark session did not start: {text.splitlines()[0] if text else type(exc).__name__}") from None
    spark.sparkContext.setLogLevel("ERROR")
    if not local:
        spark.sparkContext.addPyFile(_package_zip())
    return spark
