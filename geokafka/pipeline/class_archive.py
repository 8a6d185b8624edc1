"""A class-data-sharing archive of the Spark driver's classes, so a mirror starts in half the CPU.

Starting Spark costs the driver JVM ~18 CPU seconds of class loading, verification and JIT
before the session exists and ~8 more before its first job (measured on this project's
2-core machine). Where brokers and traffic already use most of the CPU, as in the demo, that
stretched a mirror's start to a minute. An application class-data-sharing archive (Java's
AppCDS: ``-XX:ArchiveClassesAtExit`` once, ``-XX:SharedArchiveFile`` after) maps those classes
already parsed and verified: measured, session 10.8 s -> 6.2 s and 17.8 -> 9.7 CPU s; first job
4.6 s -> 2.3 s.

The archive is built once per JDK, pyspark and classpath (``./run`` does it; ``python -m
geokafka.pipeline.class_archive``) by a short training run in a process of its own, written to
a temporary name and renamed when the JVM exited cleanly. Only the local driver (which is
also the local executor) uses it; a JVM that cannot map it falls back to loading classes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from geokafka.infra.jars import cache_root

_SUFFIX = ".jsa"


def _java_identity() -> str:
    """The JDK that will run Spark: its real path and size (an upgrade changes both)."""
    home = os.environ.get("JAVA_HOME")
    java = Path(home) / "bin" / "java" if home else Path(shutil.which("java") or "java")
    real = java.resolve()
    libjvm = next(iter(sorted(real.parent.parent.glob("lib/server/libjvm.so"))), real)
    return f"{real}:{libjvm.stat().st_size if libjvm.exists() else 0}"


def _spark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def archive_path(classpath: Sequence[Path]) -> Path:
    """Where the archive for this JDK, pyspark and extra ``classpath`` lives (it may not exist)."""
    digest = hashlib.sha256(_java_identity().encode())
    for jar in [*sorted(_spark_jars_dir().glob("*.jar")), *classpath]:
        stat = jar.stat()
        digest.update(f"{jar.name}:{stat.st_size}:{int(stat.st_mtime)}\n".encode())
    return cache_root().parent / "class-archives" / f"spark-{digest.hexdigest()[:16]}{_SUFFIX}"


def java_options(classpath: Sequence[Path]) -> list[str]:
    """JVM options that use the archive when it has been built (none otherwise)."""
    path = archive_path(classpath)
    if not path.exists():
        return []
    # -Xlog:cds=off: a JVM that cannot map the archive says so on stdout; it then just runs without it.
    return [f"-XX:SharedArchiveFile={path}", "-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def ensure_archive(classpath: Sequence[Path], timeout_s: float = 300.0) -> Path | None:
    """Build the archive unless it exists; returns its path, or None when the training run failed."""
    path = archive_path(classpath)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob(f"spark-*{_SUFFIX}"):
        old.unlink(missing_ok=True)  # archives of an earlier JDK or classpath are never used again
    fd, staging = tempfile.mkstemp(prefix=".training-", suffix=_SUFFIX, dir=path.parent)
    os.close(fd)
    os.unlink(staging)  # the JVM creates it at exit
    try:
        result = subprocess.run(
            [sys.executable, "-m", "geokafka.pipeline.class_archive", "--train", staging],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )
        if result.returncode != 0 or not Path(staging).exists() or Path(staging).stat().st_size == 0:
            return None
        os.replace(staging, path)
        return path
    except subprocess.TimeoutExpired:
        return None
    finally:
        Path(staging).unlink(missing_ok=True)


def _train(out: str) -> None:
    """Start the local session geokafka uses, run the work a mirror's start does, exit cleanly."""
    from pyspark import SparkContext

    from geokafka.pipeline.spark_session import get_spark

    spark = get_spark("local[2]", "geokafka-class-archive", dump_archive_to=out)
    spark.range(1000).selectExpr("id % 7 AS k", "CAST(id AS STRING) AS v").groupBy("k").count().collect()
    query = spark.readStream.format("rate").option("rowsPerSecond", "100").load().writeStream.format("noop").start()
    query.processAllAvailable()
    query.stop()
    # A Kafka stream the way a flow starts one, against a port where nothing listens: it fails
    # within seconds, after loading the source's, the Kafka client's and the analyzer's classes.
    frame = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
             .option("assign", '{"training": [0]}').option("includeHeaders", "true")
             .option("kafka.default.api.timeout.ms", "2000").option("kafka.request.timeout.ms", "1000")
             .load())
    frame = frame.selectExpr("key", "value", "topic", "partition", "offset", "unix_millis(timestamp) AS ts",
                             "headers")
    query = frame.writeStream.format("noop").start()
    try:
        query.awaitTermination(30)
    except Exception:  # noqa: BLE001 - failing to reach the broker is the point
        pass
    query.stop()
    gateway = SparkContext._gateway
    spark.stop()
    if gateway is not None and gateway.proc is not None:  # the JVM writes the archive as it exits
        gateway.proc.stdin.close()
        gateway.proc.wait(120)


def main(argv: Sequence[str]) -> int:
    """``--train OUT``: the training run (internal); no arguments: build the archive if missing."""
    if len(argv) == 2 and argv[0] == "--train":
        _train(argv[1])
        return 0
    from geokafka.pipeline.spark_session import driver_classpath

    classpath = driver_classpath()
    if archive_path(classpath).exists():
        return 0
    print("==> building the Spark driver's class archive (once, about a minute)", file=sys.stderr)
    if ensure_archive(classpath) is None:
        print("    could not build it; Spark starts without it (slower)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
