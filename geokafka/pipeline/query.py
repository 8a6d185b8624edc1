"""The Spark Structured Streaming query of one flow: Kafka source -> exactly-once writer."""

from __future__ import annotations

import json
import logging
import shutil
import time
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from geokafka.control.connection import ClusterConnection
from geokafka.pipeline.assignment import Assignment
from geokafka.pipeline.batch_guard import BatchGuard
from geokafka.pipeline.writer import OUTPUT_SCHEMA, WriterSpec, write_batches
from geokafka.topology.schema import Flow, Pipeline

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)

BatchCallback = Callable[[int, list[dict[str, Any]]], None]


def source_frame(spark: SparkSession, source: ClusterConnection, assignment: Assignment, flow: Flow,
                 pipeline: Pipeline) -> DataFrame:
    """The flow's source records with the columns the writer expects."""
    reader = spark.readStream.format("kafka")
    for key, value in source.spark_options().items():
        reader = reader.option(key, value)
    frame = (
        reader.option("assign", json.dumps(assignment.partitions))
        .option("startingOffsets", json.dumps(assignment.starting))
        .option("includeHeaders", "true")
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "false" if flow.skip_gaps else "true")
        .option("maxOffsetsPerTrigger", str(pipeline.max_records_per_batch))
        .option("kafkaConsumer.pollTimeoutMs", "15000")  # a dead source fails the batch, not hangs it
        .load()
    )
    transform = flow.transform
    key_expr = f"CAST(({transform.key}) AS BINARY)" if transform and transform.key else "key"
    value_expr = f"CAST(({transform.value}) AS BINARY)" if transform and transform.value else "value"
    columns = [f"{key_expr} AS key", f"{value_expr} AS value", "topic", "partition", "offset",
               "unix_millis(timestamp) AS ts", "headers"]
    if transform and transform.filter:
        # Filtered records still advance progress, so the writer sees every row with a `keep` flag.
        columns.append(f"CAST(({transform.filter}) AS BOOLEAN) AS keep")
    return frame.selectExpr(*columns)


class FlowQuery:
    """A running query; each micro-batch is written by :func:`write_batches` on the executors."""

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
    ) -> None:
        self.flow_name = flow_name
        self.expected = dict(assignment.expected)
        self._on_batch = on_batch
        self._write_tasks = pipeline.write_tasks
        self._base_spec = WriterSpec(
            flow=flow_name, source_cluster=flow.source, target_cluster=flow.target,
            target_conf=target.librdkafka(), topic_map=topic_map, expected={}, producer_conf={},
        )
        checkpoints = Path(pipeline.state_dir) / "spark-checkpoints"
        checkpoints.mkdir(parents=True, exist_ok=True)
        # Resume positions come from the target's state topic, so each query starts a fresh checkpoint.
        self._checkpoint = tempfile.mkdtemp(prefix=f"{flow_name}-", dir=checkpoints)
        frame = source_frame(spark, source, assignment, flow, pipeline)
        self._guard = BatchGuard(self._write_batch)
        writer = frame.writeStream.queryName(f"geokafka-{flow_name}").foreachBatch(self._guard)
        writer = writer.option("checkpointLocation", self._checkpoint)
        self.query: StreamingQuery = writer.trigger(processingTime=f"{pipeline.trigger_ms} milliseconds").start()

    def _write_batch(self, batch: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        spec = WriterSpec(**{**self._base_spec.__dict__, "expected": dict(self.expected)})
        # Few tasks, each writing several source partitions: a Spark task costs a fixed ~0.3 s
        # here (Arrow stream, Python worker round trip, scheduling), far more than a partition's
        # transaction; coalescing keeps each partition's rows contiguous and in offset order.
        tasks = self._write_tasks or batch.sparkSession.sparkContext.defaultParallelism
        frame = batch.coalesce(tasks).mapInArrow(partial(write_batches, spec), OUTPUT_SCHEMA)
        rows = [row.asDict() for row in frame.collect()]
        log.debug("flow %s: batch %d wrote %d records in %.2fs", self.flow_name, batch_id,
                  sum(r["written"] for r in rows), time.monotonic() - started)
        for row in rows:
            key = f"{row['topic']}/{row['partition']}"
            hint = row["state_offset"] if row["state_offset"] >= 0 else self.expected.get(key, (-1, 0))[1]
            self.expected[key] = (row["next_offset"], hint)
        self._on_batch(batch_id, rows)

    def exception(self) -> str | None:
        """The query's failure, as text, if it has failed (a failed batch's whole text)."""
        exc = self.query.exception()
        if exc is None:
            return None
        return self._guard.failure or str(exc)

    @property
    def active(self) -> bool:
        """True while the query runs."""
        return bool(self.query.isActive)

    def stop(self) -> None:
        """Stop the query; an interrupted batch's transactions are never committed.

        A query stuck on a dead cluster may not stop within spark.sql.streaming.stopTimeout;
        it is then abandoned (its writers are fenced by the next start or by failover).
        """
        try:
            self.query.stop()
        except Exception as exc:  # noqa: BLE001 - a stuck query must not stall the runner
            log.warning("flow %s: query did not stop cleanly: %s", self.flow_name, str(exc).splitlines()[0][:200])
        finally:
            shutil.rmtree(self._checkpoint, ignore_errors=True)
