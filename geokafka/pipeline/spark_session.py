"""The SparkSession geokafka's queries run in, with the Kafka connector on its classpath."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geokafka.artifacts.jars import sink_jar, spark_kafka_jars
from geokafka.artifacts.spark_home import spark_home
from geokafka.infra.orphans import adopt_orphans, reap_orphans
from geokafka.infra.processes import LATE_OPTIMIZING_JIT, extra_jvm_options
from geokafka.pipeline.class_archive import java_options
from geokafka.pipeline.spark_log import STOPS, SparkLogForwarder

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOG4J = Path(__file__).with_name("spark-log4j2.properties")
_DEFAULTS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.stopGracefullyOnShutdown": "true",
    # records stream through (nothing is cached) and each group's producer holds up to 64 MB. G1
    # commits all of the heap a busy run lets it grow to (2 GB: a 2-GB mirror; 1 GB: 1.3-1.5 GB
    # in all, the class archive's 166 MB and G1's own 80 MB beside the heap); 768 MB: 1.28 GB,
    # at the same speed (2,000,000 x 1 KiB, two runs each, load 8-13)
    "spark.driver.memory": "768m",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    # One Spark task per partition group: a speculative copy would be a second writer of its partitions.
    "spark.speculation": "false",
    # Real-time mode checks that every sink and operator of a query is on Spark's allowlist (Kafka and
    # foreach sinks); geokafka's sink takes its writes exactly once in that mode too.
    "spark.sql.streaming.realTimeMode.allowlistCheck": "false",
    # Stopping a query whose source or target died must not wait forever for its thread.
    "spark.sql.streaming.stopTimeout": "15000",
    # Every micro-batch writes two checkpoint files. Spark's default manager goes through Hadoop's
    # FileContext: on a local disk without Hadoop's native library each file costs a forked `chmod`
    # and `readlink` (a fork of the driver) and extra status calls; walCommit + commitOffsets took
    # 250-450 ms of each ~1-s batch at 2,000 rec/s. The FileSystem manager (one `chmod` left per
    # file): 50-100 ms. Its rename is atomic on local disks and HDFS, and geokafka resumes from the
    # target's progress records, never from a checkpoint.
    "spark.sql.streaming.checkpointFileManagerClass":
        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
}


def driver_classpath() -> list[Path]:
    """The jars geokafka adds to Spark's own: the Kafka connector and its client, and geokafka's sink."""
    return [*spark_kafka_jars(), sink_jar()]


SPARK_JVM_OPTIONS_ENV = "GEOKAFKA_SPARK_JVM_OPTS"
"""Extra JVM options for Spark's driver and executors (space-separated). The test suite starts
dozens of short sessions with the quick compiler only (``-XX:TieredStopAtLevel=1``: a session in
6 instead of 10-12 CPU s); a long-running mirror needs none."""


def is_local(master: str) -> bool:
    """True for ``local``, ``local[N]``, ``local[*]`` and ``local[N,F]``: driver and executor in one JVM."""
    return master == "local" or master.startswith("local[")


def get_spark(master: str = "local[*]", app_name: str = "geokafka", conf: Mapping[str, str] | None = None,
              *, quick_jit: bool = False, dump_archive_to: str | None = None) -> SparkSession:
    """Create (or return the running) SparkSession for ``master`` with the Kafka connector.

    A local session puts the jars on the driver's class path (its executor is the same JVM:
    nothing to ship, and the classes can come from the class archive, see
    :mod:`geokafka.pipeline.class_archive`); other masters ship them with ``spark.jars``.
    ``quick_jit`` runs driver and executors with the quick compiler only (topology ``jit: quick``).
    ``dump_archive_to`` is for the archive's training run only.
    """
    # pyspark's Spark without MLlib (see geokafka.artifacts.spark_home): a session ~1.5 s sooner
    os.environ.setdefault("SPARK_HOME", str(spark_home()))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    jars = driver_classpath()
    builder = SparkSession.builder.master(master).appName(app_name)
    log_conf = f"-Dlog4j2.configurationFile={_LOG4J}"
    driver_options = [log_conf]
    if is_local(master):
        builder = builder.config("spark.driver.extraClassPath", os.pathsep.join(str(p) for p in jars))
        if dump_archive_to is not None:
            driver_options.append(f"-XX:ArchiveClassesAtExit={dump_archive_to}")
        else:
            driver_options.extend(java_options(jars))
    else:
        builder = builder.config("spark.jars", ",".join(str(p) for p in jars))
    # an OutOfMemoryError ends the JVM (the mirror then names it and stops every flow) instead of leaving a
    # JVM whose threads died one by one reported as running
    extra = ["-XX:+ExitOnOutOfMemoryError",
             *extra_jvm_options(quick_jit, SPARK_JVM_OPTIONS_ENV, full_jit=LATE_OPTIMIZING_JIT)]
    builder = builder.config("spark.driver.extraJavaOptions", " ".join([*driver_options, *extra]))
    builder = builder.config("spark.executor.extraJavaOptions", " ".join([log_conf, *extra]))
    for key, value in {**_DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    _start_context(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def live_task_slots(spark: SparkSession) -> int | None:
    """Tasks the application can run at once now: its live executors' cores over the cores a task takes (the
    count Spark checks barrier stages against; a local master's threads). None when Spark does not answer."""
    try:
        context = spark.sparkContext._jsc.sc()
        return int(context.maxNumConcurrentTasks(context.resourceProfileManager().defaultResourceProfile()))
    except Exception:  # noqa: BLE001 - a JVM going away: the caller keeps what it knew
        return None


def _gateway_process() -> Any:
    """The process of this interpreter's Spark JVM (py4j's gateway), or None."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    return None if gateway is None else getattr(gateway, "proc", None)


def jvm_exit() -> int | None:
    """The exit status of this interpreter's Spark JVM once it ended, None while it runs (or none started)."""
    proc = _gateway_process()
    return None if proc is None else proc.poll()


def shutdown_spark(timeout_s: float = 5.0) -> None:
    """Stop this interpreter's Spark and wait for its JVM to exit (a command that started Spark leaves no
    process behind); a JVM that does not exit within ``timeout_s`` is terminated, then killed."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is not None:
        with STOPS.stopping(), contextlib.suppress(Exception):  # a JVM that is gone already
            context.stop()
    proc = _gateway_process()
    if proc is not None and proc.poll() is None:
        _end(proc, timeout_s)
    reap_orphans()  # the launcher's helper the JVM never waited for


def kill_spark(timeout_s: float = 2.0) -> None:
    """End this interpreter's Spark JVM at once (SIGKILL) and reap it and the launcher's helper, so that a
    process about to exit leaves no zombie behind; waits at most ``timeout_s`` for the JVM to go."""
    proc = _gateway_process()
    if proc is not None and proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout_s)
    reap_orphans()


def _end(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    with contextlib.suppress(OSError):
        proc.stdin.close()  # type: ignore[union-attr]  # py4j's gateway exits when its stdin closes
    for end in (proc.terminate, proc.kill):
        try:
            proc.wait(timeout_s)
            return
        except subprocess.TimeoutExpired:
            end()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout_s)


def _start_context(builder: SparkSession.Builder) -> None:
    """Start the JVM with its stderr piped into geokafka's log (:mod:`geokafka.pipeline.spark_log`), unless a
    SparkContext runs already.

    The JVM writes to stderr before any log configuration applies ("Using incubator modules",
    printed for the ``--add-modules`` Spark's launcher always passes), so only a pipe keeps it
    off the console.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._active_spark_context is not None:
            return
    conf = SparkConf(loadDefaults=False).setAll(list(builder._options.items()))
    adopt_orphans()
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=SparkLogForwarder().forward, args=(gateway.proc.stderr,), name="spark-stderr",
                     daemon=True).start()
    SparkContext(conf=conf, gateway=gateway)
