"""Building the Spark driver's class archive: a training run in a process of its own (``./run`` does it once)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from geokafka import contract
from geokafka.artifacts import class_archives
from geokafka.pipeline.class_archive import archive_path
from geokafka.pipeline.query import hands_over, sink_columns
from geokafka.pipeline.spark_session import driver_classpath, get_spark


def ensure_archive(classpath: Sequence[Path], timeout_s: float = 300.0) -> Path | None:
    """Build the archive unless it exists; returns its path, or None when the training run failed."""

    def train(staging: Path) -> bool:
        try:
            result = subprocess.run(
                [sys.executable, "-m", "geokafka.pipeline.class_archive_build", "--train", str(staging)],
                capture_output=True, text=True, timeout=timeout_s, check=False,
            )
        except subprocess.TimeoutExpired:
            return False
        return result.returncode == 0

    return class_archives.build(archive_path(classpath), train)


def _train(out: str) -> None:
    """Start the local session geokafka uses, run the work a mirror's start does, exit cleanly."""
    from pyspark import SparkContext

    spark = get_spark("local[2]", "geokafka-class-archive", dump_archive_to=out)
    spark.range(1000).selectExpr("id % 7 AS k", "CAST(id AS STRING) AS v").groupBy("k").count().collect()
    query = spark.readStream.format("rate").option("rowsPerSecond", "100").load().writeStream.format("noop").start()
    query.processAllAvailable()
    query.stop()
    # A Kafka stream the way a flow starts one, against a port where nothing listens: it fails
    # within seconds, after loading the source's, the Kafka client's and the analyzer's classes.
    frame = (spark.readStream.format("geokafka-source").option("kafka.bootstrap.servers", "127.0.0.1:9")
             .option("assign", '{"training": [0]}').option("startingOffsets", '{"training": {"0": 0}}')
             .option("kafka.default.api.timeout.ms", "2000").option("kafka.request.timeout.ms", "1000")
             .option(contract.name("source_options", "hand_over"), str(hands_over(None)).lower())
             .load())
    query = frame.select(*sink_columns(None)).writeStream.format("noop").start()
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
    classpath = driver_classpath()
    if archive_path(classpath).exists():
        return 0
    print("==> building the Spark driver's class archive (once, about a minute)", file=sys.stderr)
    if ensure_archive(classpath) is None:
        print("    could not build it; Spark starts without it (slower)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
