"""The Spark Structured Streaming query of one flow: geokafka's Kafka source -> geokafka's sink.

Records never pass through Python: read by the JVM source ``readStream.format("geokafka-source")``
(Spark's Kafka source's columns and options) one partition group per Spark task, the source frame
(transforms are Spark SQL expressions) is written by the JVM sink ``writeStream.format("geokafka")``
(``jvm/``), which commits each group's records, with the progress record of every partition that
moved, in one Kafka transaction on the target per commit interval. In real-time mode (the default)
a group's task runs for a whole batch; in micro-batch mode a batch is planned every trigger. The
driver learns the commits from the sink's registry through py4j (:meth:`FlowQuery.poll`).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geokafka import contract, errors
from geokafka.control.connection import ClusterConnection
from geokafka.pipeline.assignment import Assignment
from geokafka.pipeline.failures import classify
from geokafka.pipeline.spark_log import STOPS
from geokafka.pipeline.spark_session import is_local
from geokafka.topology.schema import Flow, Pipeline, Transform

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)

BatchCallback = Callable[[int, list[dict[str, Any]]], None]


def source_options(source: ClusterConnection, assignment: Assignment, flow: Flow, pipeline: Pipeline) -> dict[str, str]:
    """The options of geokafka's Kafka source for one flow, named as Spark's Kafka source names them
    and as the contract declares (may hold the source's secrets: pass them to the reader only)."""

    def name(role: str) -> str:
        return contract.name("source_options", role)

    prefix = name("client_prefix")
    return {
        **{prefix + key: value for key, value in source.java_client().items()},
        # Client metrics pushed to brokers (KIP-714): kafka-clients 3.9.1, the one on Spark's class
        # path, formats a trace message on every poll of every client while trace logging is *off*
        # (an inverted check, fixed in 4.x): see ProducerPool, where the sink's producers turn it off too.
        f"{prefix}enable.metrics.push": "false",
        f"{prefix}isolation.level": "read_committed",
        name("assign"): json.dumps(assignment.partitions),
        name("groups"): json.dumps(assignment.groups),
        name("starting_offsets"): json.dumps(assignment.starting),
        name("max_offsets_per_trigger"): str(pipeline.max_records_per_batch),
        name("poll_timeout_ms"): "15000",  # a dead source fails the batch, not hangs it
        name("hand_over"): str(hands_over(flow.transform)).lower(),
    }


def hands_over(transform: Transform | None) -> bool:
    """Whether a flow's source hands its records to the sink as the consumer read them, its rows naming chunks of
    them (no SQL transform needs the records' columns)."""
    return not (transform and (transform.key or transform.value or transform.filter))


def writer_config(flow: Flow, pipeline: Pipeline) -> dict[str, str]:
    """The Java producer settings of a flow's writer: the pipeline's ``producer_config`` with the flow's
    compression (its own ``compression``, else the pipeline's ``compression.type``, else the contract's default)."""
    config = dict(pipeline.producer_config)
    config["compression.type"] = flow.compression or config.get("compression.type") or contract.WRITER_COMPRESSION
    return config


def sink_options(query_key: str, flow_name: str, flow: Flow, pipeline: Pipeline, target: ClusterConnection,
                 assignment: Assignment, topic_map: dict[str, str], max_message_bytes: dict[str, int],
                 reports: tuple[str, str] = ("", "")) -> dict[str, str]:
    """The options of geokafka's sink for one flow, named as the contract declares (hold the target's secrets).

    ``reports``: the driver's commit-report address and token (cluster masters; empty on local ones, whose tasks
    report in the driver's JVM).
    """

    def name(role: str) -> str:
        return contract.name("sink_options", role)

    return {
        name("flow"): flow_name, name("source_cluster"): flow.source, name("target_cluster"): flow.target,
        name("query_key"): query_key, name("target_config"): json.dumps(target.java_client()),
        name("producer_config"): json.dumps(writer_config(flow, pipeline)), name("topic_map"): json.dumps(topic_map),
        name("groups"): json.dumps(assignment.groups), name("generation"): str(assignment.generation),
        name("expected"): json.dumps({k: list(e) for k, e in assignment.expected.items()}),
        name("state_floor"): str(assignment.state_floor),
        name("commit_interval_ms"): str(pipeline.commit_interval_ms),
        name("caught_up_commit_ms"): str(pipeline.caught_up_commit_ms),
        name("max_message_bytes"): json.dumps(max_message_bytes),
        # local masters run the tasks in the driver's JVM: producers opened there before the first batch,
        # side by side, are the tasks' (elsewhere they would be of no use)
        name("warm_producers"): str(is_local(pipeline.master)).lower(),
        name("report_address"): reports[0], name("report_token"): reports[1],
    }


def source_frame(spark: SparkSession, source: ClusterConnection, assignment: Assignment, flow: Flow,
                 pipeline: Pipeline) -> DataFrame:
    """The flow's source records with the columns the sink expects."""
    reader = spark.readStream.format("geokafka-source")
    for key, value in source_options(source, assignment, flow, pipeline).items():
        reader = reader.option(key, value)
    return reader.load().select(*sink_columns(flow.transform))


def sink_columns(transform: Transform | None) -> list[Column]:
    """The columns the sink expects, from the source's (the class archive's training run uses them too)."""
    from pyspark.sql import functions as F

    if hands_over(transform):
        return [F.col("topic"), F.col("partition"), F.col("chunk")]

    # Columns, not SQL text: Spark's SQL parser, cold in a fresh JVM, took ~0.4 s of a mirror's
    # start for these seven plain columns; a flow's own transforms are SQL and parsed as such.
    key_col = F.expr(f"CAST(({transform.key}) AS BINARY)") if transform and transform.key else F.col("key")
    value_col = F.expr(f"CAST(({transform.value}) AS BINARY)") if transform and transform.value else F.col("value")
    columns = [key_col.alias("key"), value_col.alias("value"), F.col("topic"), F.col("partition"), F.col("offset"),
               F.unix_millis(F.col("timestamp")).alias("ts"), F.col("headers")]
    if transform and transform.filter:
        # Filtered records still advance progress, so the sink sees every row with a `keep` flag.
        columns.append(F.expr(f"CAST(({transform.filter}) AS BOOLEAN)").alias("keep"))
    return columns


def jvm_gone(exc: BaseException) -> bool:
    """True when a py4j call failed because Spark's JVM is no longer there (by the error's class)."""
    from py4j.protocol import Py4JNetworkError

    return isinstance(exc, (ConnectionError, Py4JNetworkError))


def stop_failure(exc: BaseException) -> str:
    """What a failed ``StreamingQuery.stop()`` means, in geokafka's words (py4j's own first line is
    "An error occurred while calling o95.stop."), decided by the Java exception's class."""
    java = getattr(exc, "java_exception", None)
    try:
        name = java.getClass().getName() if java is not None else None
    except Exception:  # noqa: BLE001 - the JVM may be gone
        name = None
    if name == "java.util.concurrent.TimeoutException":
        return ("its query did not stop within spark.sql.streaming.stopTimeout (a task still waits on a cluster "
                "that does not answer) and is left to end on its own; its writers are fenced by the next start "
                "or by failover")
    detail = str(java if java is not None else exc).strip().splitlines()
    return f"its query did not stop cleanly: {(detail[0] if detail else type(exc).__name__)[:200]}"


class FlowQuery:
    """A running query of one flow."""

    def __init__(
        self,
        spark: SparkSession,
        flow_name: str,
        flow: Flow,
        pipeline: Pipeline,
        source: ClusterConnection,
        target: ClusterConnection,
        assignment: Assignment,
        topic_map: dict[str, str],
        on_batch: BatchCallback,
        max_message_bytes: dict[str, int] | None = None,
    ) -> None:
        self.flow_name = flow_name
        self._spark = spark
        self._on_batch = on_batch
        self._key = f"{flow_name}-{uuid.uuid4().hex[:8]}"
        self.writing = False
        """A task writer of the query runs (its producer open): known on local masters, where tasks run in
        the driver's JVM, as soon as the first batch's tasks start."""
        checkpoints = Path(pipeline.state_dir) / "spark-checkpoints"
        checkpoints.mkdir(parents=True, exist_ok=True)
        # Resume positions come from the target's state topic, so each query starts a fresh checkpoint.
        self._checkpoint = tempfile.mkdtemp(prefix=f"{flow_name}-", dir=checkpoints)
        frame = source_frame(spark, source, assignment, flow, pipeline)
        registry = self._registry()
        options = sink_options(self._key, flow_name, flow, pipeline, target, assignment, topic_map,
                               max_message_bytes or {}, ("", "") if is_local(pipeline.master) else self._report_endpoint())
        registry.register(self._key)
        if options[contract.name("sink_options", "warm_producers")] == "true":
            # the producers open while Spark plans the query and generates its code, not after
            registry.warmAhead(json.dumps(options))
        writer = frame.writeStream.queryName(f"geokafka-{flow_name}").format("geokafka")
        for key, value in options.items():
            writer = writer.option(key, value)
        writer = writer.option("checkpointLocation", self._checkpoint)
        if pipeline.mode == "real-time":
            # PySpark 4.1 has no Python name for the trigger; a real-time query runs in update mode, which
            # the sink takes as append (a replication query has no state to update)
            jvm = spark._jvm
            assert jvm is not None  # a classic (py4j) session, as get_spark builds
            writer = writer.outputMode("update")
            trigger = jvm.org.apache.spark.sql.streaming.Trigger.RealTime(f"{int(pipeline.realtime_batch_s * 1000)} milliseconds")
            writer._jwrite = writer._jwrite.trigger(trigger)
        else:
            writer = writer.trigger(processingTime=f"{pipeline.trigger_ms} milliseconds")
        self.query: StreamingQuery = writer.start()

    def _spark_stopped(self, exc: BaseException) -> bool:
        """True when ``exc`` came from a Spark that stopped on its own (its JVM got the stop signal too)."""
        if jvm_gone(exc):
            return True
        try:
            return bool(self._spark.sparkContext._jsc.sc().isStopped())
        except Exception:  # noqa: BLE001 - the JVM went away meanwhile
            return True

    def _report_endpoint(self) -> tuple[str, str]:
        """Where executors post each commit as it happens (the driver's host, as Spark tells executors), and the
        token they show."""
        conf = self._spark.sparkContext.getConf()
        host = conf.get("spark.driver.host") or "localhost"
        endpoint = json.loads(self._registry().listen(conf.get("spark.driver.bindAddress") or host, host))
        return str(endpoint["address"]), str(endpoint["token"])

    def _registry(self) -> Any:
        return self._spark.sparkContext._jvm.io.geokafka.spark.SinkRegistry  # type: ignore[union-attr]

    def poll(self) -> int:
        """Hand every commit reported since the last poll to ``on_batch``; returns how many."""
        registry = self._registry()
        if not self.writing:
            self.writing = int(registry.writers(self._key)) > 0
        epochs = json.loads(registry.drain(self._key))
        for epoch in epochs:
            self._on_batch(int(epoch["epoch"]), epoch["partitions"])
        return len(epochs)

    def failure_error(self) -> errors.GeokafkaError:
        """Why the query stopped, as the geokafka error it stands for (see :mod:`geokafka.pipeline.failures`)."""
        found = self.failure()
        if found is None:
            return errors.KafkaOperationError(f"flow {self.flow_name}: the query stopped")
        java_exception, typed = found
        if not hasattr(java_exception, "getCause"):  # a Python-side failure
            return errors.KafkaOperationError(str(java_exception).splitlines()[0][:300])
        return classify(java_exception, typed, self._spark.sparkContext._jvm)

    def failure(self) -> tuple[Any, dict[str, Any] | None] | None:
        """The query's failure: (the Java exception, the source's or sink's typed failure in its causes or None)."""
        # PySpark's exception() keeps only the message and the cause, not the Java exception
        # itself: read it from the JVM query, the cause chain is walked there.
        found = self.query._jsq.exception()
        if not found.isDefined():
            return None
        origin = found.get()
        typed = self._registry().typedFailure(origin)
        return origin, (dict(typed) if typed is not None else None)

    @property
    def active(self) -> bool:
        """True while the query runs."""
        return bool(self.query.isActive)

    def stop(self) -> None:
        """Stop the query; a task interrupted mid-way aborts its open transactions.

        A query stuck on a dead cluster may not stop within spark.sql.streaming.stopTimeout;
        it is then abandoned (its writers are fenced by the next start or by failover).
        """
        try:
            self.poll()
            with STOPS.stopping():  # its tasks' interrupts are no errors (see geokafka.pipeline.spark_log)
                self.query.stop()
        except Exception as exc:  # noqa: BLE001 - a stuck query must not stall the runner
            if self._spark_stopped(exc):
                log.info("flow %s: Spark had stopped already (its shutdown hook stops the query)", self.flow_name)
            else:
                log.warning("flow %s: %s", self.flow_name, stop_failure(exc))
        finally:
            try:
                self._registry().forget(self._key)
            except Exception:  # noqa: BLE001 - the JVM may be gone at exit
                pass
            shutil.rmtree(self._checkpoint, ignore_errors=True)
