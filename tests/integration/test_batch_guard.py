"""The batch guard on real Spark: a failed batch keeps its cause for the runner, and a query
stopped mid-batch still ends as stopped (see geokafka/pipeline/batch_guard.py for why Spark
4.1 needs the failure text kept short).
"""

from __future__ import annotations

import threading
import time

import pytest

from geokafka import errors
from geokafka.pipeline.batch_guard import BatchGuard
from geokafka.pipeline.runner import classify_failure

pytestmark = pytest.mark.integration


def _batch_failing_with(failure: str):  # type: ignore[no-untyped-def]
    """A foreachBatch function whose Spark job fails in its Python worker, as a writer can."""

    def batch_fn(batch, batch_id):  # type: ignore[no-untyped-def]
        from pyspark.sql.types import LongType, StructField, StructType

        def worker(batches):  # type: ignore[no-untyped-def]
            import os

            from geokafka import errors as worker_errors
            for _ in batches:
                if failure == "crash":
                    os._exit(3)  # the job fails on the JVM side: a raw Py4JJavaError in the driver
                detail = "; ".join(f"partition {p} holds a record of 3000000 bytes" for p in range(500))
                raise worker_errors.RecordTooLargeError(f"east.orders: {detail}")
            yield from ()

        batch.mapInArrow(worker, StructType([StructField("value", LongType())])).collect()

    return batch_fn


def _run_until_failed(spark, batch_fn):  # type: ignore[no-untyped-def]
    query = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
             .writeStream.foreachBatch(batch_fn).start())
    try:
        query.awaitTermination(120)
    except Exception:  # noqa: BLE001 - the failure is what the tests look at
        pass
    finally:
        query.stop()
    assert not query.isActive
    return query


@pytest.mark.parametrize("failure, expected, starts", [
    ("too-large", errors.RecordTooLargeError, "east.orders: partition 0 holds a record of 3000000 bytes"),
    ("crash", errors.KafkaOperationError, "a Spark Python worker crashed during a batch"),
])
def test_a_failed_batch_keeps_its_cause(spark, failure, expected, starts):  # type: ignore[no-untyped-def]
    guard = BatchGuard(_batch_failing_with(failure))
    query = _run_until_failed(spark, guard)
    # Spark recorded the failure: the stream thread did not die of a StackOverflowError ...
    assert query.exception() is not None, "the query ended without an exception: its cause is lost"
    assert len(str(query.exception())) < 20_000
    # ... and the runner learns what it was from the guard's full text.
    cause = classify_failure(guard.failure or "")
    assert isinstance(cause, expected), cause
    assert str(cause).startswith(starts), cause


def test_a_query_stopped_mid_batch_ends_as_stopped_not_failed(spark):  # type: ignore[no-untyped-def]
    """Spark must still recognise the stop's interruption in the short text (or it logs an error)."""
    started = threading.Event()

    def slow_batch(batch, batch_id):  # type: ignore[no-untyped-def]
        from pyspark.sql.types import LongType, StructField, StructType

        def worker(batches):  # type: ignore[no-untyped-def]
            import time as worker_time
            for _ in batches:
                busy_until = worker_time.monotonic() + 120  # until the stop cancels the task
                while worker_time.monotonic() < busy_until:
                    worker_time.sleep(0.5)
            yield from ()

        started.set()
        batch.mapInArrow(worker, StructType([StructField("value", LongType())])).collect()

    guard = BatchGuard(slow_batch)
    query = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
             .writeStream.foreachBatch(guard).start())
    try:
        assert started.wait(60), "no batch started"
        time.sleep(2)  # the job's tasks are running
    finally:
        query.stop()
    assert not query.isActive
    assert guard.failure is not None  # the batch was interrupted (InterruptedException or a cancelled job) ...
    assert query.exception() is None  # ... and Spark took it for the stop it was
