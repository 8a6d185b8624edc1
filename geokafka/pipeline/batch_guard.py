"""Hands a foreachBatch failure to Spark as one short line and keeps the whole text for the runner.

When a query is stopped in the middle of a batch, Spark 4.1 checks the batch's failure against
``StreamExecution.PROXY_ERROR``, ``py4j.protocol.Py4JJavaError: An error occurred while
calling((.|\r\n|\r|\n)*)...``, to tell an interruption from a real error. Java's regex engine
recurses once per character in that group: a cancelled Spark job's Py4JJavaError text (its Java
stack, tens of kilobytes) overflows the stack (2,000 characters already do on a Py4J thread), and
the stream thread dies of a StackOverflowError instead of ending cleanly (seen in CI). A short
one-line failure keeps Spark's check cheap; the runner reads the full text from ``failure``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

BatchFunction = Callable[["DataFrame", int], None]

_SHORT = 300


class BatchFailed(RuntimeError):
    """A batch failed; the driver keeps the full text (``BatchGuard.failure``)."""


class BatchGuard:
    """Wraps a foreachBatch function; after a failure, ``failure`` holds its whole text."""

    def __init__(self, batch_fn: BatchFunction) -> None:
        self._batch_fn = batch_fn
        self.failure: str | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        try:
            self._batch_fn(batch, batch_id)
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            # `from None`: the chained traceback would carry the long text to Spark after all.
            raise BatchFailed(f"batch {batch_id} failed: {first[:_SHORT]}") from None
