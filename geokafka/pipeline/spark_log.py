"""Spark's stderr in geokafka's log, with what geokafka's own stops make told apart from real errors.

Stopping a query cancels its Spark job, and Spark interrupts the job's task threads: each task logs
``ERROR Utils: Aborting task`` with the interrupted Kafka call's stack trace, its writer logs
``Aborting commit`` / ``Aborted commit``, the write logs ``Data source write support ... is
aborting``. A query restart (a topic joined the selection, a mode change) and every clean stop do
this; none of it is an error, and geokafka says the restart or stop in its own words. Such records,
made while geokafka stops a query or Spark (or after a stop signal, which Spark's JVM may get too),
go to the debug level; every other record, and any of them outside a stop, stays at info level,
where ``--log-level info`` shows Spark's lines. A record whose innermost cause is not an interrupt
is a real error whenever it comes, but for four that Spark's own stop makes: its scheduler failing the
running job, a task completing after its broadcast was dropped, a call into its stopped RPC environment
(which can kill a query's thread: the JVM prints that exception as ``Exception in thread "..."``), and work
handed to one of its thread pools after that pool was shut down.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

from geokafka.infra.signals import STOP_SIGNALLED

SPARK_LOG = logging.getLogger("geokafka.spark")
"""The Spark JVM's stderr (its error log, JVM warnings, Python worker output), at info level:
geokafka reports a flow's failure itself, once; ``--log-level info`` shows Spark's own lines."""

_HEADER = re.compile(r"^\d\d:\d\d:\d\d (?P<level>[A-Z]+) (?P<logger>[\w$.-]+): (?P<message>.*)$")
"""A record's first line, as ``spark-log4j2.properties`` lays it out."""
_UNCAUGHT = re.compile(r'^Exception in thread "(?P<thread>.*)" (?P<message>[A-Za-z_$][\w$]*(?:\.[\w$]+)+(?::.*)?)$')
"""The first line of an exception no code caught, as the JVM prints it for a thread that died of it: an error record
(a thread of the JVM's, not a logger) with its stack trace after it."""
_CAUSE = re.compile(r"^(?:Caused by: )?(?P<cls>[A-Za-z_$][\w$]*(?:\.[\w$]+)+)(?::|$)")
"""A stack trace's exception or one of its causes (suppressed exceptions are indented)."""
_CONTINUED = re.compile(r"^(\s|Caused by: )")

INTERRUPTS = frozenset({
    "java.lang.InterruptedException", "org.apache.kafka.common.errors.InterruptException",
    "java.nio.channels.ClosedByInterruptException", "java.io.InterruptedIOException",
    "org.apache.spark.TaskKilledException",
})
"""Exceptions that say a thread was interrupted or its task killed: what cancelling a job does."""

ABORTS = (("DataWritingSparkTask", "Aborting commit for partition"), ("DataWritingSparkTask", "Aborted commit for partition"),
          ("WriteToDataSourceV2Exec", "Data source write support"))
"""Records without a stack trace that a cancelled write makes (its cause is in another record)."""

SCHEDULER_STOPPED = "org.apache.spark.scheduler.DAGScheduler.cleanUpAfterSchedulerStop"
"""The frame that fails every running job when Spark itself stops (its shutdown hook, on the stop signal every process
of a service gets): a query's job cancelled that way is stopped, not failed."""

SPARK_STOPPED = frozenset({"org.apache.spark.rpc.RpcEnvStoppedException"})
"""Root causes that say Spark itself has stopped under the caller (a query's thread still ending when Spark's
shutdown hook, on the stop signal every process of a service gets, stopped its RPC environment)."""

POOL_SHUT = re.compile(
    r"^(?:Caused by: )?java\.util\.concurrent\.RejectedExecutionException: .* rejected from .*\[(Terminated|Shutting down),")
"""A task handed to a thread pool Spark's stop already shut down (a task's status arriving after the scheduler's result
getter ended; the query's thread asking through an RPC environment whose timeout pool had ended, the exception's
cause): like a stopped RPC environment, Spark stopped under the caller."""

BROADCAST_GONE = "org.apache.spark.broadcast.TorrentBroadcast.$anonfun$releaseBlockManagerLock"
"""The frame of a task that completed after Spark's block manager dropped the task's broadcast, which Spark's stop
does under a task still running (``Error in TaskCompletionListener``: ``Block broadcast_0 does not exist``)."""

GRACE_S = 5.0
"""A stop's records can reach the pipe a little after the stop returned."""
IDLE_S = 0.5
"""A record is complete when its next line has not come for this long (a stack trace comes at once)."""


@dataclass
class SparkRecord:
    """One record of Spark's stderr: a log line and its stack trace, or a line of the JVM's own."""

    lines: list[str]
    level: str | None = None
    logger: str | None = None
    message: str = ""

    @classmethod
    def starting(cls, line: str) -> SparkRecord:
        """A record whose first line is ``line``."""
        header = _HEADER.match(line)
        if header is not None:
            return cls([line], header["level"], header["logger"], header["message"])
        uncaught = _UNCAUGHT.match(line)
        if uncaught is not None:
            return cls([line], "ERROR", f"thread {uncaught['thread']}", uncaught["message"])
        return cls([line])

    def continued_by(self, line: str) -> bool:
        """Whether ``line`` belongs to this record (its stack trace), not to a new one."""
        if _HEADER.match(line) or _UNCAUGHT.match(line):
            return False
        return self.level is not None and (_CONTINUED.match(line) is not None or _CAUSE.match(line) is not None)

    @property
    def causes(self) -> list[str]:
        """The exception classes of its stack trace, outermost first."""
        return [m["cls"] for line in self.lines[1:] if (m := _CAUSE.match(line))]

    @property
    def innermost_cause(self) -> str | None:
        """The root cause's class, None without a stack trace."""
        causes = self.causes
        return causes[-1] if causes else None


def made_by_a_stop(record: SparkRecord) -> bool:
    """True for an ERROR record that cancelling a query's job makes: a stack trace whose root cause is an
    interrupt (a task's thread interrupted in a Kafka call, a killed task) or Spark's stopped RPC environment,
    that Spark's scheduler failed the job as Spark stopped, that a task completed after its broadcast was
    dropped or that work went to a pool Spark had shut down, or a cancelled write's abort lines. Pure; whether a
    stop was under way is the caller's to know."""
    if record.level not in ("ERROR", "FATAL"):
        return False
    cause = record.innermost_cause
    if cause is not None:
        return (cause in INTERRUPTS or cause in SPARK_STOPPED
                or any(SCHEDULER_STOPPED in line or BROADCAST_GONE in line or POOL_SHUT.match(line)
                       for line in record.lines[1:]))
    return any(record.logger == logger and record.message.startswith(start) for logger, start in ABORTS)


class Stops:
    """Stops of queries or of Spark that geokafka is making now or made within :data:`GRACE_S`, and a stop
    signal (after one the whole process is stopping). Process-wide, as Spark's stderr is."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, signalled: threading.Event = STOP_SIGNALLED) -> None:
        self._clock = clock
        self._signalled = signalled
        self._lock = threading.Lock()
        self._under_way = 0
        self._ended_at: float | None = None
        self._changed = threading.Condition(self._lock)

    @contextmanager
    def stopping(self) -> Iterator[None]:
        """Within the block geokafka stops a query or Spark: the interrupts that makes are expected."""
        with self._changed:
            self._under_way += 1
            self._changed.notify_all()
        try:
            yield
        finally:
            with self._changed:
                self._under_way -= 1
                self._ended_at = self._clock()

    def active(self) -> bool:
        """A stop is under way, ended less than :data:`GRACE_S` ago, or a stop signal came."""
        with self._lock:
            return self._active()

    def _active(self) -> bool:
        if self._under_way or self._signalled.is_set():
            return True
        return self._ended_at is not None and self._clock() - self._ended_at < GRACE_S

    def wait_active(self, timeout_s: float) -> bool:
        """Whether a stop is (or within ``timeout_s`` becomes) active: Spark's JVM may get a stop signal and
        write its first lines before this process's handler ran."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not self._active():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.05))
            return True


STOPS = Stops()
"""geokafka's stops of this process's Spark (:mod:`geokafka.pipeline.query`, :mod:`geokafka.pipeline.spark_session`)."""


@dataclass
class SparkLogForwarder:
    """Reads Spark's stderr and logs each record on :data:`SPARK_LOG`: at info level, or at debug level when
    a stop of geokafka's own made it (:func:`made_by_a_stop` while :data:`STOPS` is active)."""

    stops: Stops = field(default_factory=lambda: STOPS)
    log: logging.Logger = field(default_factory=lambda: SPARK_LOG)
    signal_wait_s: float = 1.0
    expected: int = 0
    """Records logged at debug level as made by a stop."""

    def forward(self, stream: IO[bytes]) -> None:
        """Log every record of ``stream`` until it ends (Spark's JVM exited)."""
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_read, args=(stream, lines), name="spark-stderr-read", daemon=True).start()
        self.forward_lines(_until_none(lines))

    def forward_lines(self, lines: Iterable[str | None]) -> None:
        """Log the records of ``lines``; a None says no line came for :data:`IDLE_S` (the record so far is whole)."""
        pending: SparkRecord | None = None
        for line in lines:
            if pending is not None and (line is None or not pending.continued_by(line)):
                self._emit(pending)
                pending = None
            if line is not None:
                if pending is None:
                    pending = SparkRecord.starting(line)
                else:
                    pending.lines.append(line)
                if pending.level is None:  # a line of the JVM's own has no stack trace to wait for
                    self._emit(pending)
                    pending = None
        if pending is not None:
            self._emit(pending)

    def _emit(self, record: SparkRecord) -> None:
        expected = made_by_a_stop(record) and self.stops.wait_active(self.signal_wait_s)
        if expected:
            self.expected += 1
        for line in record.lines:
            self.log.log(logging.DEBUG if expected else logging.INFO, "spark: %s", line)


def _read(stream: IO[bytes], lines: queue.Queue[str | None]) -> None:
    for raw in stream:
        lines.put(raw.decode(errors="replace").rstrip())
    lines.put(_END)


_END = "\x00end"


def _until_none(lines: queue.Queue[str | None]) -> Iterator[str | None]:
    while True:
        try:
            line = lines.get(timeout=IDLE_S)
        except queue.Empty:
            yield None
            continue
        if line == _END:
            return
        yield line
