"""Hands a foreachBatch failure to Spark as a short text and keeps the whole text for the runner.

When a query is stopped in the middle of a batch, Spark 4.1 decides from the batch's failure
text whether the stop interrupted it (``StreamExecution.isInterruptionException``): either the
text matches ``PROXY_ERROR``, ``py4j.protocol.Py4JJavaError: An error occurred while
calling((.|\r\n|\r|\n)*)(\r\n|\r|\n): (java.lang.InterruptedException|...)``, or it names a
``org.apache.spark.SparkException`` about the query's cancelled job group. Java's regex engine
recurses once per character in that group, so a cancelled job's Py4JJavaError text (its Java
stack, tens of kilobytes) overflows the stack (2,000 characters already do on a Py4J thread):
the stream thread dies of a StackOverflowError instead of ending cleanly (seen in CI).

So Spark gets one line, plus the line that marks an interruption, in the shape Spark looks for;
the runner reads the full text from ``failure``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

BatchFunction = Callable[["DataFrame", int], None]

_SHORT = 300
_INTERRUPTED = re.compile(r"(?:\r\n|\r|\n): (java\.lang\.InterruptedException|java\.io\.InterruptedIOException"
                          r"|java\.nio\.channels\.ClosedByInterruptException)")
_CANCELLED = re.compile(r"[^\n]*org\.apache\.spark\.SparkException[^\n]*cancelled[^\n]*")


def short_failure(batch_id: int, exc: BaseException) -> str:
    """A few hundred characters for Spark: what failed, and the mark of an interruption if it is one."""
    text = str(exc)
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    lines = [f"batch {batch_id} failed: {first[:_SHORT]}"]
    interrupted = _INTERRUPTED.search(text)
    if interrupted and type(exc).__name__ == "Py4JJavaError":
        lines.append(f"py4j.protocol.Py4JJavaError: {first[:_SHORT]}\n: {interrupted.group(1)}")
    cancelled = _CANCELLED.search(text)
    if cancelled:
        lines.append(cancelled.group(0).strip()[:_SHORT * 2])
    return "\n".join(lines)


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
            # `from None`: the chained traceback would carry the long text to Spark after all.
            raise BatchFailed(short_failure(batch_id, exc)) from None
