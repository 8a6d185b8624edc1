"""The driver side of one flow: start its query, watch it, restart it, stop it.

Shaped like the guard (model / decide / observe / act): :class:`~geokafka.pipeline.flow_machine.FlowMachine`
decides (pure), :class:`~geokafka.pipeline.flow_start.FlowStarter` prepares a start (the control plane's
half), the periodic jobs (:mod:`geokafka.pipeline.flow_jobs`) look at the clusters on schedules of their
own and say what they found through :class:`~geokafka.pipeline.flow_jobs.FlowSignals`, and
:class:`FlowRunner` acts: its :meth:`~FlowRunner.tick` reads the query and the signals, tells the machine,
and starts, restarts or stops the query. Every collaborator can be injected (unit tests pass fakes).

Transient failures (a broker restart, a target down for a minute, a fenced writer) restart the query
from durable state with backoff; fatal ones (data loss, oversize record, auth, a JVM that failed,
partition mismatch) stop the flow with the error recorded in the target's state topic.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from geokafka import contract, errors
from geokafka.control.connection import connection
from geokafka.control.flow_states import FlowState
from geokafka.control.state_records import Role
from geokafka.control.state_store import KafkaStateStore, StateStore
from geokafka.control.topic_identity import recreations
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.assignment import data_loss_error, find_gaps
from geokafka.pipeline.flow_clients import FlowClients
from geokafka.pipeline.flow_jobs import FlowJobs, FlowSignals
from geokafka.pipeline.flow_machine import FlowMachine, ended_state, loss_outcome
from geokafka.pipeline.flow_start import FlowStarter, Prepared
from geokafka.pipeline.jvm_look import JvmClusterLook
from geokafka.pipeline.repeated_failure import RepeatedFailure
from geokafka.pipeline.scheduler import Scheduler, ThreadScheduler
from geokafka.pipeline.slots import Mode
from geokafka.pipeline.startup import StartupTimeline
from geokafka.secrets import redact
from geokafka.topology.schema import Topology

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
_SUMMARY: dict[str, str] = contract.spec()["commit_summary"]

BatchCallback = Callable[[int, list[dict[str, Any]]], None]


class RunningQuery(Protocol):
    """A flow's running query, as the runner uses it (:class:`~geokafka.pipeline.query.FlowQuery`)."""

    @property
    def active(self) -> bool: ...

    writing: bool
    """The query's writers run (producers open, code generated): it replicates what comes."""

    def poll(self) -> int: ...

    def failure_error(self) -> errors.GeokafkaError: ...

    def stop(self) -> None: ...


QueryFactory = Callable[[Prepared, BatchCallback], RunningQuery]


@dataclass
class PartitionProgress:
    """What the pipeline has done for one source partition in this process."""

    next_offset: int = -1
    written: int = 0
    bytes: int = 0
    duplicates_skipped: int = 0
    """Records a task skipped because an earlier writer of its group had committed them (a retried or
    replacement task, a query restarted mid-batch)."""
    last_timestamp: int = -1
    updated_at: float = 0.0


@dataclass(frozen=True)
class RunnerView:
    """A flow's runner as every other thread sees it (the console, the mirror's loop, the flow's own jobs):
    published by the runner's owner after each tick and never changed; a newer one replaces it whole."""

    name: str
    status: FlowState
    error: errors.GeokafkaError | None
    restarts: int
    mode: Mode
    replicating: bool
    writing: bool
    ever_started: bool
    pairs: list[TopicPair]
    topic_ids: Mapping[str, str]
    progress: Mapping[tuple[str, int], PartitionProgress]
    """Copies: the runner's own entries change as commits are reported."""
    counters: Mapping[str, Any]
    job_runs_by_name: Mapping[str, int]
    startup: Mapping[str, Any]

    @property
    def recorded_state(self) -> str:
        """What the heartbeat records."""
        return str(self.status)

    def summary(self) -> dict[str, Any]:
        """The mirror's counters and identity, as the heartbeat records them."""
        return dict(self.counters)

    @property
    def gaps_skipped(self) -> int:
        """Records of source gaps skipped (``skip_gaps``)."""
        return int(self.counters.get("gaps_skipped", 0))

    def job_runs(self, name: str) -> int:
        """How many times the flow's periodic job ``name`` had run when this view was published."""
        return self.job_runs_by_name.get(name, 0)

    def ended(self) -> RunnerView:
        """What this flow ends as if its runner never gets to stop it (a start still waiting on a cluster that does
        not answer when the mirror stops): see :func:`~geokafka.pipeline.flow_machine.ended_state`."""
        return replace(self, status=ended_state(self.status, self.error, self.ever_started))


@dataclass
class FlowRunner:
    """Runs one flow's query and keeps it healthy (see the module's doc).

    One owner: the thread that ticks it (its supervisor) is the only one that changes it. Other threads post to it
    (:meth:`post_failure`, :meth:`spark_started`, :meth:`run_in`, :meth:`request_stop`) and read :attr:`view`, an
    immutable :class:`RunnerView` published after each tick.

    ``clock`` (monotonic seconds), ``clients``, ``store``, ``scheduler``, ``prepare`` (a start's control-plane
    half) and ``query_factory`` default to the real ones.
    """

    topology: Topology
    name: str
    group_count: int = 1
    """Partition groups of this flow (the mirror shares the master's task slots among its flows)."""
    clock: Callable[[], float] = time.monotonic
    clients: FlowClients | None = None
    store: StateStore | None = None
    scheduler: Scheduler | None = None
    prepare: Callable[[], Prepared] | None = None
    query_factory: QueryFactory | None = None
    spark: SparkSession | None = None
    """Set by the mirror once Spark runs (:attr:`spark_ready`); a start prepares meanwhile."""
    startup: StartupTimeline = field(default_factory=StartupTimeline.of_process)
    machine: FlowMachine = field(default_factory=FlowMachine)
    progress: dict[tuple[str, int], PartitionProgress] = field(default_factory=dict)
    gaps_skipped: int = 0
    batches: int = 0
    """Commit reports of the sink (a transaction of each group, or a micro-batch's)."""

    def __post_init__(self) -> None:
        self.flow = self.topology.flows[self.name]
        self.source = connection(self.topology, self.flow.source)
        self.target = connection(self.topology, self.flow.target)
        self._clients = self.clients or FlowClients.connect(self.topology, self.name)
        self._own_store = self.store is None
        """No store was given: the runner made its target's and closes it when it stops."""
        self._store: StateStore = self.store or KafkaStateStore(self.target)
        self._scheduler = self.scheduler or ThreadScheduler(f"flow {self.name}", self.clock)
        self._prepare = self.prepare or FlowStarter(self.name, self.flow, self.target, self._clients, self._store,
                                                    self.group_count, self.startup).prepare
        self.spark_ready = threading.Event()
        self._spark_handoff: tuple[SparkSession, float] | None = None
        self._posted: queue.SimpleQueue[errors.GeokafkaError] = queue.SimpleQueue()
        self._changed: set[tuple[str, int]] = set()
        """Progress entries changed since the last view was published."""
        self._stopping = threading.Event()
        self._signals = FlowSignals()
        self._query: RunningQuery | None = None
        self._pairs: list[TopicPair] = []
        self._topic_ids: dict[str, str] = {}
        self._jobs: FlowJobs | None = None
        self._mode = self.topology.pipeline.mode
        """The mode the next query runs in: the topology's, or micro-batches while the mirror lacks task slots."""
        self._mode_said: Mode | None = None
        # works again when a commit is reported: a start that succeeds can still fail its first batch
        self._replication = RepeatedFailure(log, f"flow {self.name}: replication",
                                            f"with backoff up to {self.machine.backoff.max_s:g}s")
        self.view = self._published()

    # -- what the mirror, the console and the jobs read ----------------------------------------

    @property
    def status(self) -> FlowState:
        """The flow's state."""
        return self.machine.shown

    @property
    def error(self) -> errors.GeokafkaError | None:
        """Why it is retrying or stopped, if it is."""
        return self.machine.error

    @property
    def restarts(self) -> int:
        """Query restarts after failures or changes."""
        return self.machine.restarts

    @property
    def replicating(self) -> bool:
        """The query runs."""
        return self.machine.status == FlowState.RUNNING and self._query is not None

    @property
    def writing(self) -> bool:
        """The query runs and its writers are open, or it committed: records that come are replicated now."""
        query = self._query
        return self.replicating and query is not None and (query.writing or self.batches > 0)

    @property
    def mode(self) -> Mode:
        """The mode the flow's query runs in (or its next start will)."""
        return self._mode

    @property
    def recorded_state(self) -> str:
        """What the heartbeat records."""
        return str(self.machine.shown)

    @property
    def pairs(self) -> list[TopicPair]:
        """The topic pairs the running query replicates."""
        return list(self._pairs)

    @property
    def topic_ids(self) -> dict[str, str]:
        """Source topic -> the ID the running query replicates."""
        return dict(self._topic_ids)

    def job_runs(self, name: str) -> int:
        """How many times the flow's periodic job ``name`` ran (0 before it was scheduled)."""
        job = self._scheduler.jobs.get(name)
        return 0 if job is None else job.runs

    def _published(self) -> RunnerView:
        """This runner as it is now, for other threads (see :class:`RunnerView`)."""
        return RunnerView(
            name=self.name, status=self.status, error=self.error, restarts=self.restarts, mode=self._mode,
            replicating=self.replicating, writing=self.writing, ever_started=self.machine.ever_started,
            pairs=list(self._pairs), topic_ids=dict(self._topic_ids),
            progress=self._progress_copies(), counters=self.summary(),
            job_runs_by_name={name: job.runs for name, job in self._scheduler.jobs.items()},
            startup=self.startup.as_dict())

    def _progress_copies(self) -> dict[tuple[str, int], PartitionProgress]:
        """Copies of the progress entries for a view: the last view's, with those changed since made again (at
        thousands of partitions a tick changes few)."""
        previous = getattr(self, "view", None)
        if previous is None or len(previous.progress) > len(self.progress):
            copies = {key: replace(entry) for key, entry in self.progress.items()}
        else:
            copies = dict(previous.progress)
            for key in self._changed:
                copies[key] = replace(self.progress[key])
        self._changed.clear()
        return copies

    def summary(self) -> dict[str, Any]:
        """The mirror's counters and identity, as the heartbeat records them."""
        error = self.machine.error
        reason = {"reason": str(error), "error": type(error).__name__} if error else {}
        done = list(self.progress.values())
        return {
            **reason,
            "written": sum(p.written for p in done),
            "bytes": sum(p.bytes for p in done),
            "duplicates_skipped": sum(p.duplicates_skipped for p in done),
            "restarts": self.machine.restarts,
            "gaps_skipped": self.gaps_skipped,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "master": self.topology.pipeline.master,
        }

    # -- lifecycle -------------------------------------------------------------------------

    def tick(self) -> None:
        """Start when due, watch the query, act on what the jobs and other threads posted; then publish the view."""
        try:
            self._tick()
        finally:
            self.view = self._published()

    def _tick(self) -> None:
        if self._jobs is None:
            self._jobs = FlowJobs(self.topology, lambda: self.view, self._clients, self._store, self._signals)
            self._jobs.schedule(self._scheduler)
        self._take_posted()
        self._adopt_spark()
        now = self.clock()
        self._scheduler.run_due(now)
        machine = self.machine
        if machine.status.final:
            return
        if self._signals.failed_over.is_set():
            self._failed_over_elsewhere()
            return
        wanted = self._signals.take_mode()
        if wanted is not None and wanted != self._mode:
            self._mode = wanted
            if self._query is not None:
                self._restart(now)
                return
        if machine.status == FlowState.RETRYING:
            if machine.start_due(now):
                self._start()
            return
        query = self._query
        if query is None:
            return
        query.poll()
        if query.writing:
            self.startup.reached("writers started")
        if not query.active:
            self._query_stopped(query.failure_error(), now)
            return
        recreated = self._signals.take_recreated()
        if recreated:
            # a start names every partition of it (DataLossError), or skips to the new log under skip_gaps
            log.warning("flow %s: source topic %s was re-created; stopping its query", self.name, ", ".join(recreated))
            self._restart(now)
            return
        if self._signals.take_reselected() is not None:
            log.info("flow %s: topic selection changed, restarting its query", self.name)
            self._restart(now)

    def post_failure(self, exc: errors.GeokafkaError) -> None:
        """From any thread: stop the flow for good with ``exc`` (Spark's JVM died under it); its owner does it at its
        next tick, or as it stops."""
        self._posted.put(exc)

    def spark_started(self, spark: SparkSession, took_s: float) -> None:
        """From the mirror's thread, once: Spark runs (a start waiting for it goes on)."""
        self._spark_handoff = (spark, took_s)
        self.spark_ready.set()

    def run_in(self, mode: Mode) -> None:
        """Run the query in ``mode`` from now on, restarting it if it runs in the other (from any thread)."""
        self._signals.run_in(mode)

    def request_stop(self) -> None:
        """Make a start that waits for Spark give up (the mirror is stopping)."""
        self._stopping.set()

    def stop(self, final_state: FlowState = FlowState.STOPPED) -> None:
        """Stop the jobs and the query, record the final state on the target when it answers (after the last
        heartbeat: none is written after it), close the clients."""
        self._stopping.set()
        self._take_posted()
        self._scheduler.close()
        if self._jobs is not None:
            self._jobs.retire()
        self._stop_query()
        recorded = self.machine.status == FlowState.ERROR  # written when the flow entered it, reason and all
        state = self.machine.final_state(final_state)
        if state is not None and not recorded:
            self._record_final_state(state, **self.summary())
        self._clients.close()
        self.view = self._published()
        if self._own_store:
            self._store.close()

    def fail(self, exc: errors.GeokafkaError) -> None:
        """Stop the flow for good with ``exc`` (its owner's thread; other threads :meth:`post_failure`)."""
        self._stop_query()
        self.machine.fail(exc)
        self._record_final_state(FlowState.ERROR, **self.summary())
        self.view = self._published()

    def settle(self) -> None:
        """Act on what was posted after the supervisor's last tick: called by whoever owns the runner once its
        supervisor is done (the mirror, after joining it)."""
        self._take_posted()

    def _take_posted(self) -> None:
        """Act on what other threads posted: a failure stops the flow for good. Spark's JVM dying explains any other
        error the flow met meanwhile (a bridge to a JVM that is gone fails first): it replaces it."""
        while True:
            try:
                exc = self._posted.get_nowait()
            except queue.Empty:
                return
            status, current = self.machine.status, self.machine.error
            if not status.final or (status == FlowState.ERROR and isinstance(exc, errors.JvmFatalError)
                                    and not isinstance(current, errors.JvmFatalError)):
                self.fail(exc)

    def _adopt_spark(self) -> None:
        """Take the session the mirror handed over (once), and the time Spark took to start. The mirror's thread
        writes the hand-over once and never again: reading it is safe, clearing it would race that write."""
        handoff = self._spark_handoff
        if handoff is not None and self.spark is None:
            self.spark, took_s = handoff
            self.startup.took("Spark session", took_s)
            self._look_from_spark()

    def _look_from_spark(self) -> None:
        """The topic-ID watch and the config sync ask the clusters from Spark's JVM from now on: over many topics the
        librdkafka client turning its answers into Python objects cost more than the looks
        (:mod:`geokafka.pipeline.jvm_look`)."""
        if self._jobs is None:
            return
        clients = self._clients
        source: JvmClusterLook | None = None
        try:
            source = JvmClusterLook(self.spark, self.source, timeout_s=clients.observer.timeout_s,
                                    fallback=clients.observer, configs_timeout_s=clients.source_admin.timeout_s)
            target = JvmClusterLook(self.spark, self.target, timeout_s=clients.target_admin.timeout_s,
                                    fallback=clients.target_admin)
        except Exception as exc:  # noqa: BLE001 - any failure keeps the librdkafka clients, which answer alike
            if source is not None:
                source.close()
            log.debug("flow %s: the looks stay on the librdkafka clients: %s", self.name, redact(str(exc))[:300])
            return
        self._jobs.looks_from(clients.register(source), clients.register(target))

    # -- internals -------------------------------------------------------------------------

    def _start(self) -> None:
        now = self.clock()
        try:
            prepared = self._prepare()
            if self._stopping.is_set():
                return
            self._launch(prepared)
        except errors.GeokafkaError as exc:
            self._start_failed(exc, now)

    def _launch(self, prepared: Prepared) -> None:
        assignment = prepared.assignment
        self.gaps_skipped += sum(g.records for g in assignment.gaps)
        self._pairs = list(prepared.pairs)
        self._topic_ids = dict(assignment.topic_ids)
        for key, expected in assignment.expected.items():
            partition = contract.parse_partition_key(key)
            self.progress.setdefault(partition, PartitionProgress()).next_offset = expected.next
            self._changed.add(partition)
        if self._pairs:
            factory = self.query_factory or self._spark_query
            with self.startup.step("query start"):
                self._query = factory(prepared, self._record_batch)
            if self._query is None:  # the mirror stopped while the start waited for Spark
                return
            self.startup.reached("query started")
            if self._mode != self._mode_said:
                self._mode_said = self._mode
                groups = len(assignment.groups)
                log.info("flow %s: %s mode, %d partition group%s", self.name, self._mode, groups, "" if groups == 1 else "s")
        self.machine.started()
        self._signals.take_recreated()
        self._signals.take_reselected()
        self._scheduler.run_now("heartbeat")

    def _spark_query(self, prepared: Prepared, on_batch: BatchCallback) -> RunningQuery | None:
        """The real query, once Spark runs (None when the mirror stops first)."""
        from geokafka.pipeline.query import FlowQuery

        while not self.spark_ready.wait(0.2):
            if self._stopping.is_set():
                return None
        self._adopt_spark()
        if self.spark is None:
            raise errors.KafkaOperationError(f"flow {self.name}: Spark did not start", retriable=True)
        wanted = self._signals.take_mode()  # the mirror's first word on the slots comes before Spark is ready
        if wanted is not None:
            self._mode = wanted
        pipeline = self.topology.pipeline.model_copy(update={"mode": self._mode})
        return FlowQuery(self.spark, self.name, self.flow, pipeline, self.source, self.target,
                         prepared.assignment, {p.source: p.target for p in prepared.pairs}, on_batch,
                         prepared.max_message_bytes)

    def _start_failed(self, exc: errors.GeokafkaError, now: float) -> None:
        self.machine.start_failed(exc, now)
        if self.machine.status == FlowState.RETRYING:
            self._replication.failed(exc)
        elif self.machine.status == FlowState.ERROR:
            self._record_final_state(FlowState.ERROR, reason=str(exc), error=type(exc).__name__)

    def _query_stopped(self, failure: errors.GeokafkaError, now: float) -> None:
        self._stop_query()
        if isinstance(failure, errors.DataLossError):
            restart, failure = loss_outcome(failure, self._diagnose_loss(), self.flow.skip_gaps)
            if restart:
                log.warning("flow %s: %s; restarting past the gap (skip_gaps)", self.name, failure)
                self.machine.restart_now(now)
                return
        self.machine.query_failed(failure, now)
        if self.machine.status == FlowState.RETRYING:
            self._replication.failed(failure)
        elif self._failed_over_meanwhile():
            # a failover fences the flow's writers on the target, and what a fenced writer meets can be any error
            # (a commit racing the fence got UNKNOWN_SERVER_ERROR): the flow ended by the failover, not in error
            log.info("flow %s: failed over while its query stopped on: %s", self.name, failure)
            self._failed_over_elsewhere()
        else:
            self._record_final_state(FlowState.ERROR, reason=str(failure), error=type(failure).__name__)

    def _failed_over_meanwhile(self) -> bool:
        """Whether a failover of this flow was recorded on its target (unknown when the target does not answer: no)."""
        if self._signals.failed_over.is_set():
            return True
        try:
            return self._store.read(timeout_s=5.0).role(self.name) == Role.FAILED_OVER
        except errors.GeokafkaError:
            return False

    def _restart(self, now: float) -> None:
        self._stop_query()
        self.machine.restart_now(now)

    def _stop_query(self) -> None:
        query, self._query = self._query, None
        if query is not None:
            query.stop()

    def _failed_over_elsewhere(self) -> None:
        """`failover`/`promote` ran (maybe in another process): stop, and leave its state alone."""
        self.machine.failed_over()
        self._stop_query()

    def _diagnose_loss(self) -> errors.DataLossError | None:
        """The query stopped on a data loss its source reported: name every partition and range."""
        observer = self._clients.observer
        try:
            state = self._store.read(timeout_s=15.0)
            progress = state.progress(self.name)
            # the sink's commit reports are committed too, and newer than a read the state topic's stable end
            # (another writer's open transaction) stopped short of: a gap named from there would overstate the loss
            for key, entry in self.progress.items():
                if entry.next_offset >= 0:  # -1: no report yet
                    progress[key] = max(progress.get(key, 0), entry.next_offset)
            current = observer.topic_ids([pair.source for pair in self._pairs])
            recreated = recreations(state.topic_ids(self.name), current, {t for t, _ in progress}, include_deleted=True)
            gone = {r.topic for r in recreated}
            marks = observer.log_ranges({p.source: p.partitions for p in self._pairs if p.source not in gone})
        except errors.GeokafkaError:
            return None
        gaps = find_gaps(self._pairs, marks, progress, recreated)
        return data_loss_error(self.name, self.flow.source, gaps) if gaps else None

    def _record_final_state(self, state: str, **details: Any) -> None:
        """Best effort: skipped at once when the target does not answer (no 15 s flush, no log flood). The heartbeat
        is retired first (it waits for one being written, whose view may be older than this state): this comes last."""
        if self._jobs is not None:
            self._jobs.retire()
        try:
            self._clients.target_probe.check_reachable()
            self._store.set_flow_state(self.name, state, **details)
        except errors.GeokafkaError:
            pass

    def _record_batch(self, batch_id: int, rows: list[dict[str, Any]]) -> None:
        """One commit report of the sink (per partition: position and counts since its last report; names
        from the contract's ``commit_summary``)."""
        now = time.time()
        self.batches += 1
        self._replication.succeeded()
        self.startup.reached("first epoch committed")
        written = [int(row[_SUMMARY["written"]]) for row in rows]
        if any(written) and self.startup.reached("first records committed"):
            log.info("flow %s: first records replicated; %s", self.name, self.startup.summary())
        for row in rows:
            partition = (row[_SUMMARY["topic"]], int(row[_SUMMARY["partition"]]))
            self._changed.add(partition)
            entry = self.progress.setdefault(partition, PartitionProgress())
            entry.next_offset = int(row[_SUMMARY["next_offset"]])
            entry.written += int(row[_SUMMARY["written"]])
            entry.duplicates_skipped += int(row[_SUMMARY["duplicates_skipped"]])
            entry.bytes += int(row[_SUMMARY["bytes"]])
            if int(row[_SUMMARY["last_timestamp"]]) >= 0:
                entry.last_timestamp = int(row[_SUMMARY["last_timestamp"]])
            entry.updated_at = now
