"""The driver side of one flow: prepare, start, watch, refresh and restart its Spark query.

Transient failures (a broker restart, a target down for a minute, a fenced writer) restart
the query from durable state with backoff; fatal ones (data loss, oversize record, auth,
partition mismatch) stop the flow with the error recorded in the target's state topic.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from geokafka import errors
from geokafka.control.acl_sync import sync_topic_acls
from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.naming import policy_for
from geokafka.control.selection import select_topics
from geokafka.control.source_ends import SourceEndsWatch
from geokafka.control.state_records import HeldGroups, Progress, Role, StateRecord, TopicId
from geokafka.control.state_store import StateSnapshot, StateStore, ensure_state_topic, state_store
from geokafka.control.topic_identity import recreations
from geokafka.control.topic_sync import TopicPair, ensure_target_topic, sync_topic_configs
from geokafka.pipeline.assignment import Assignment, data_loss_error, fence_writers, find_gaps, plan_assignment
from geokafka.pipeline.failures import classify
from geokafka.pipeline.query import FlowQuery
from geokafka.pipeline.repeated_failure import RepeatedFailure
from geokafka.pipeline.schedule import Backoff, Every, FlowState
from geokafka.pipeline.startup import StartupTimeline
from geokafka.topology.schema import Topology

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

@dataclass
class PartitionProgress:
    """What the pipeline has done for one source partition in this process."""

    next_offset: int = -1
    written: int = 0
    bytes: int = 0
    last_timestamp: int = -1
    updated_at: float = 0.0


@dataclass
class FlowClients:
    """The admin clients a runner keeps: for work, and short-timeout ones for its watch loop."""

    source_admin: ClusterAdmin
    observer: ClusterAdmin
    """The source, with a 2 s timeout: must not stall the loop when the source dies."""
    target_admin: ClusterAdmin
    target_probe: ClusterAdmin
    """The target, with a 2 s timeout: checked before writing state on the way out."""

    @classmethod
    def connect(cls, topology: Topology, flow_name: str) -> FlowClients:
        """Clients for both clusters of a flow."""
        flow = topology.flows[flow_name]
        source, target = connection(topology, flow.source), connection(topology, flow.target)
        return cls(ClusterAdmin(source), ClusterAdmin(source, timeout_s=2.0), ClusterAdmin(target),
                   ClusterAdmin(target, timeout_s=2.0))


@dataclass
class FlowRunner:
    """Runs one flow's query and keeps it healthy.

    ``clock`` (monotonic seconds), ``clients`` and ``store`` default to the real ones; tests
    pass a fake clock, fake clients and an in-memory state store to drive its transitions.
    """

    spark: SparkSession | None
    topology: Topology
    name: str
    status: FlowState = FlowState.STARTING
    error: errors.GeokafkaError | None = None
    progress: dict[tuple[str, int], PartitionProgress] = field(default_factory=dict)
    gaps_skipped: int = 0
    restarts: int = 0
    batches: int = 0
    clock: Callable[[], float] = time.monotonic
    clients: FlowClients | None = None
    store: StateStore | None = None
    startup: StartupTimeline = field(default_factory=StartupTimeline.of_process)
    _query: FlowQuery | None = None
    _pairs: list[TopicPair] = field(default_factory=list)
    _backoff: Backoff = field(default_factory=Backoff)
    _heartbeat_job: Every = field(default_factory=lambda: Every(5.0))
    _observation_job: Every = field(init=False)
    _identity_job: Every = field(default_factory=lambda: Every(1.0))
    _offset_index: Any = None
    _sync_memory: Any = None
    _ever_started: bool = False
    _prepared: Assignment | None = None
    _max_message_bytes: dict[str, int] = field(default_factory=dict)
    _topic_ids: dict[str, str] = field(default_factory=dict)
    _held_groups: list[tuple[str, str, int, str]] = field(default_factory=list)
    _source_ends: SourceEndsWatch | None = None

    def __post_init__(self) -> None:
        self.flow = self.topology.flows[self.name]
        self.source = connection(self.topology, self.flow.source)
        self.target = connection(self.topology, self.flow.target)
        clients = self.clients or FlowClients.connect(self.topology, self.name)
        self.source_admin, self._observer = clients.source_admin, clients.observer
        self.target_admin, self._target_probe = clients.target_admin, clients.target_probe
        self._store: StateStore = self.store or state_store(self.target)
        self.policy = policy_for(self.flow)
        self._refresh_job = Every(self._refresh_interval())
        self._observation_job = Every(self.topology.rpo.observe_ms / 1000)
        self._sync_job = Every(self.flow.sync_interval_s)
        every_sync = f"every {self.flow.sync_interval_s:g}s"
        self._metadata_sync = RepeatedFailure(log, f"flow {self.name}: topic config/ACL sync", every_sync)
        self._offset_sync = RepeatedFailure(log, f"flow {self.name}: group offset sync", every_sync)
        self._heartbeats = RepeatedFailure(log, f"flow {self.name}: heartbeat", f"every {self._heartbeat_job.interval_s:g}s")
        # works again when an epoch commits: a start that succeeds can still fail its first batch
        self._replication = RepeatedFailure(log, f"flow {self.name}: replication",
                                            f"with backoff up to {self._backoff.max_s:g}s")

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Prepare topics and positions and start the query; raises on any problem."""
        if self._prepared is None:
            self.prepare()
        self.launch()

    def prepare(self) -> None:
        """The control-plane half of a start, which needs no Spark: check both clusters, create
        and sync target topics, fence the flow's writers, read its progress, plan where each
        partition resumes. `mirror` runs it while Spark starts."""
        self._prepared = None
        timeline = self.startup
        with timeline.step("clusters checked"):
            self.source_admin.check_reachable()
            self.target_admin.check_reachable()
            ensure_state_topic(self.target_admin)
        with timeline.step("target topics"):
            self._pairs = self._target_pairs()
            self._sync_topic_metadata()  # a restart (e.g. for new partitions) must not delay config/ACL sync
        # Fence first: a killed writer's open transaction would hold the state topic's (and
        # every target topic's) last stable offset until it times out, and the state must be
        # read to its end.
        with timeline.step("writers fenced"):
            fence_writers(self.name, self._pairs, self.target)
        with timeline.step("progress read"):
            state = self._store.read()
        if state.role(self.name) == Role.FAILED_OVER:
            raise errors.FlowFailedOverError(
                f"flow {self.name} was failed over to {self.flow.target}; run `geokafka failback {self.name}` instead"
            )
        with timeline.step("resume positions"):
            assignment = plan_assignment(
                self.name, self.flow.start, self.flow.skip_gaps, self._pairs, self.source_admin, state
            )
            self._record_topic_ids(assignment, state)
            self._max_message_bytes = self.target_admin.max_message_bytes([p.target for p in self._pairs])
        self._prepared = assignment

    def _record_topic_ids(self, assignment: Assignment, state: StateSnapshot) -> None:
        """Before the query starts: the source topic IDs it replicates. A skipped re-created topic's
        progress is reset to where its new log starts first, so no crash can pair the new ID with
        the old topic's offsets."""
        stored = state.topic_ids(self.name)
        now_ms = int(time.time() * 1000)
        resets: list[StateRecord] = [
            Progress(self.name, gap.topic, gap.partition, assignment.expected[f"{gap.topic}/{gap.partition}"][0])
            for gap in assignment.gaps if gap.last is None
        ]
        ids: list[StateRecord] = [
            TopicId(self.name, topic, topic_id, now_ms)
            for topic, topic_id in assignment.topic_ids.items() if stored.get(topic) != topic_id
        ]
        if resets or ids:
            self._store.write(*resets, *ids)

    def try_prepare(self) -> None:
        """:meth:`prepare`, a failure handled as a failed start is (retry, or stop on a fatal one)."""
        try:
            self.prepare()
        except errors.GeokafkaError as exc:
            self._start_failed(exc)

    def launch(self) -> None:
        """Start the query from the prepared assignment (needs ``spark``)."""
        assignment, self._prepared = self._prepared, None
        if assignment is None or self.spark is None:
            raise RuntimeError(f"flow {self.name}: launch needs prepare() and a Spark session first")
        self.gaps_skipped += sum(g.records for g in assignment.gaps)
        self._topic_ids = dict(assignment.topic_ids)
        for key, (next_offset, _) in assignment.expected.items():
            topic, _, partition = key.rpartition("/")
            self.progress.setdefault((topic, int(partition)), PartitionProgress()).next_offset = next_offset
        if self._pairs:
            with self.startup.step("query start"):
                self._query = FlowQuery(
                    self.spark, self.name, self.flow, self.topology.pipeline, self.source, self.target, assignment,
                    {p.source: p.target for p in self._pairs}, self._record_batch, self._max_message_bytes,
                )
            self.startup.reached("query started")
        now = self.clock()
        self._refresh_job.push(now)
        self._sync_job.push(now)
        self.status, self.error = FlowState.RUNNING, None
        self._ever_started = True
        self._heartbeat(force=True)

    def stop(self, final_state: FlowState = FlowState.STOPPED) -> None:
        """Stop the query and record ``final_state`` on the target when it is reachable."""
        if self._query is not None:
            self._query.stop()
            self._query = None
        if self._offset_index is not None:
            self._offset_index.close()
            self._offset_index = None
        if self.status == FlowState.FAILED_OVER:
            return
        if self.status == FlowState.RETRYING and self.error is not None and not self._ever_started:
            # never replicated anything: give up with the reason (e.g. an unreachable cluster)
            self.status = FlowState.ERROR
        if self.status != FlowState.ERROR:
            self.status = final_state
        self._record_final_state(self.status, **self._summary())

    def tick(self) -> None:
        """Check health, restart after failures, refresh selection, run periodic syncs."""
        now = self.clock()
        if self.status.final:
            return
        if self.status == FlowState.RETRYING:
            if self._backoff.due(now):
                self._try_start()
            if self.status == FlowState.RETRYING and self._heartbeat_job.ever_run:
                self._heartbeat()  # a failover may happen while the source is unreachable
            return
        self._heartbeat()  # first: it notices a failover made elsewhere
        if self.status != FlowState.RUNNING:
            return
        if self._query is not None:
            self._query.poll()
        if self._query is not None and not self._query.active:
            failure = self._query_failure()
            self._query.stop()
            self._query = None
            if isinstance(failure, errors.DataLossError):
                diagnosed = self._diagnose_loss()
                if diagnosed is not None and self.flow.skip_gaps:
                    # The source never skips records on its own: a new start's plan logs, counts and skips the gap.
                    log.warning("flow %s: %s; restarting past the gap (skip_gaps)", self.name, diagnosed)
                    self._restart()
                    return
                failure = diagnosed or failure
                if self.flow.skip_gaps:  # a gap the driver cannot see (yet): try again, backing off
                    failure = errors.DataLossError(str(failure), kafka_code=failure.kafka_code, retriable=True)
            self._handle_failure(failure)
            return
        if self._identity_job.take(now) and self._source_topic_recreated():
            return
        if self._refresh_job.take(now):
            if self._selection_changed():
                log.info("flow %s: topic selection changed, restarting its query", self.name)
                self._prepare_targets()
                self._restart()
                return
        if self._sync_job.take(now):
            self._periodic_sync()

    # -- internals -------------------------------------------------------------------------

    def _source_topic_recreated(self) -> bool:
        """A source topic's ID changed under the running query: stop it before it replicates the
        new log from the old offsets (a start decides, naming every partition, or skips)."""
        try:
            current = self._observer.topic_ids(sorted(self._topic_ids))
        except errors.GeokafkaError:
            return False  # the query itself reports an unreachable source
        changed = [t for t, topic_id in self._topic_ids.items() if t in current and current[t] != topic_id]
        if not changed:
            return False
        log.warning("flow %s: source topic %s was re-created; stopping its query", self.name, ", ".join(changed))
        if self._query is not None:
            self._query.stop()
            self._query = None
        self.restarts += 1
        self._prepared = None
        self._try_start()  # DataLossError naming every partition, or the new topic from its start with skip_gaps
        return True

    def _diagnose_loss(self) -> errors.DataLossError | None:
        """The query stopped on a data loss its source reported: name every partition and range."""
        try:
            state = self._store.read(timeout_s=15.0)
            progress = state.progress(self.name)
            current = self._observer.topic_ids([pair.source for pair in self._pairs])
            recreated = recreations(state.topic_ids(self.name), current, {t for t, _ in progress},
                                    include_deleted=True)
            gone = {r.topic for r in recreated}
            marks = {pair.source: self._observer.watermarks(pair.source, pair.partitions)
                     for pair in self._pairs if pair.source not in gone}
        except errors.GeokafkaError:
            return None
        gaps = find_gaps(self._pairs, marks, progress, recreated)
        return data_loss_error(self.name, self.flow.source, gaps) if gaps else None

    def _try_start(self) -> None:
        try:
            self.start()
            self._backoff.reset()
        except errors.GeokafkaError as exc:
            self._start_failed(exc)

    def _start_failed(self, exc: errors.GeokafkaError) -> None:
        if isinstance(exc, errors.FlowFailedOverError):
            self._failed_over_elsewhere()
        elif not exc.retriable:
            self._fail(exc)
        else:
            self._schedule_retry(exc)

    def _query_failure(self) -> errors.GeokafkaError:
        """Why the query stopped (see :mod:`geokafka.pipeline.failures`)."""
        assert self._query is not None
        found = self._query.failure()
        if found is None:
            return errors.KafkaOperationError(f"flow {self.name}: the query stopped")
        java_exception, typed = found
        if not hasattr(java_exception, "getCause"):  # a Python-side failure
            return errors.KafkaOperationError(str(java_exception).splitlines()[0][:300])
        return classify(java_exception, typed, self.spark.sparkContext._jvm)  # type: ignore[union-attr]

    def _restart(self) -> None:
        if self._query is not None:
            self._query.stop()
            self._query = None
        self.restarts += 1
        self._prepared = None
        self._try_start()

    def _handle_failure(self, failure: errors.GeokafkaError) -> None:
        if not failure.retriable:
            self._fail(failure)
        else:
            self.restarts += 1
            self._schedule_retry(failure)

    def _schedule_retry(self, exc: errors.GeokafkaError) -> None:
        delay = self._backoff.schedule(self.clock())
        self._replication.failed(exc)
        log.debug("flow %s: next start in %.0fs", self.name, delay)
        self.status, self.error = FlowState.RETRYING, exc

    def _fail(self, exc: errors.GeokafkaError) -> None:
        self.status, self.error = FlowState.ERROR, exc
        if self._query is not None:
            self._query.stop()
            self._query = None
        self._record_final_state(FlowState.ERROR, reason=str(exc), error=type(exc).__name__)

    def _record_final_state(self, state: str, **details: Any) -> None:
        """Best effort: skipped at once when the target does not answer (no 15 s flush, no log flood)."""
        try:
            self._target_probe.check_reachable()
            self._store.set_flow_state(self.name, state, **details)
        except errors.GeokafkaError:
            pass

    def _refresh_interval(self) -> float:
        interval = self.topology.pipeline.topic_refresh_s
        if "partitions" in self.flow.sync:
            interval = min(interval, self.flow.sync_interval_s)
        return interval

    def _target_pairs(self) -> list[TopicPair]:
        topics = select_topics(self.source_admin.topic_partitions(), self.flow)
        grow = "partitions" in self.flow.sync
        return [
            ensure_target_topic(self.source_admin, self.target_admin, t,
                                self.policy.remote_topic(self.flow.source, t), grow, self.flow.config_exclude)
            for t in topics
        ]

    def _selection_changed(self) -> bool:
        try:
            current = self._observer.topic_partitions()
        except errors.GeokafkaError:
            return False  # the query itself will report an unreachable source
        selected = {t: current[t] for t in select_topics(current, self.flow)}
        return selected != {p.source: p.partitions for p in self._pairs}

    def _prepare_targets(self) -> None:
        """Create/grow target topics and sync their configs and ACLs at once, before the query
        restart (which can take seconds) rather than after it."""
        try:
            self._pairs = self._target_pairs()
        except errors.GeokafkaError as exc:
            log.warning("flow %s: target topics not prepared before restart: %s", self.name, exc)
            return
        self._sync_topic_metadata()

    def _sync_topic_metadata(self) -> None:
        """Topic configs and topic ACLs, source to target (best effort: never stops replication)."""
        try:
            if "configs" in self.flow.sync:
                for pair in self._pairs:
                    changed = sync_topic_configs(self.source_admin, self.target_admin, pair, self.flow.config_exclude)
                    if changed:
                        log.info("flow %s: %s configs synced: %s", self.name, pair.target, sorted(changed))
            if "acls" in self.flow.sync:
                created = sync_topic_acls(self.source_admin, self.target_admin, [p.source for p in self._pairs],
                                          lambda name: self.policy.remote_topic(self.flow.source, name))
                if created:
                    log.info("flow %s: %d topic ACLs copied to %s", self.name, len(created), self.flow.target)
        except Exception as exc:  # noqa: BLE001 - a failed sync must never stop replication
            self._metadata_sync.failed(exc)
        else:
            self._metadata_sync.succeeded()

    def _periodic_sync(self) -> None:
        self._sync_topic_metadata()
        try:
            if "group-offsets" in self.flow.sync:
                from geokafka.control.offsets import SyncMemory, TargetIndex, sync_group_offsets

                if self._offset_index is None:
                    self._offset_index = TargetIndex(self.target, timeout_s=30.0)
                if self._sync_memory is None:
                    self._sync_memory = SyncMemory()
                report = sync_group_offsets(self.topology, self.name, index=self._offset_index,
                                            memory=self._sync_memory, timeout_s=5.0)
                self._record_held_groups(report.held_on_target())
        except Exception as exc:  # noqa: BLE001 - a failed sync must never stop replication
            self._offset_sync.failed(exc)
        else:
            self._offset_sync.succeeded()

    def _record_held_groups(self, held: list[Any]) -> None:
        """Groups whose target offsets the sync leaves alone because they are in use on the target:
        said once when it changes, and kept on the target for `status`."""
        now = sorted({(a.group, a.target_topic, a.partition, a.reason) for a in held})
        if now == self._held_groups:
            return
        self._held_groups = now
        for group in sorted({g for g, _, _, _ in now}):
            reasons = sorted({r for g, _, _, r in now if g == group})
            log.warning("flow %s: group %s is in use on %s, its offsets there are not synced: %s",
                        self.name, group, self.flow.target, reasons[0])
        self._store.write(HeldGroups(self.name, int(time.time() * 1000), [
            {"group": g, "topic": t, "partition": p, "reason": r} for g, t, p, r in now]))

    def _record_batch(self, batch_id: int, rows: list[dict[str, Any]]) -> None:
        now = time.time()
        self.batches += 1
        self._replication.succeeded()
        self.startup.reached("first epoch committed")
        if any(row["written"] for row in rows) and self.startup.reached("first records committed"):
            log.info("flow %s: first records replicated; %s", self.name, self.startup.summary())
        for row in rows:
            entry = self.progress.setdefault((row["topic"], row["partition"]), PartitionProgress())
            entry.next_offset = row["next_offset"]
            entry.written += row["written"]
            entry.bytes += row["bytes"]
            if row["last_timestamp"] >= 0:
                entry.last_timestamp = row["last_timestamp"]
            entry.updated_at = now

    def _summary(self) -> dict[str, Any]:
        reason = {"reason": str(self.error), "error": type(self.error).__name__} if self.error else {}
        return {
            **reason,
            "written": sum(p.written for p in self.progress.values()),
            "bytes": sum(p.bytes for p in self.progress.values()),
            "restarts": self.restarts,
            "gaps_skipped": self.gaps_skipped,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "master": self.topology.pipeline.master,
        }

    def _heartbeat(self, force: bool = False) -> None:
        """Every rpo.observe_ms: record the source's end offsets (what failover calls the last observation);
        every 5 s: the flow's state, so `status` can tell a live mirror from a dead one."""
        now = self.clock()
        if self.status == FlowState.RUNNING and self._observation_job.take(now, force):
            self._observe_source_ends()
        if self._heartbeat_job.take(now, force):
            try:
                if self._store.read(timeout_s=5.0).role(self.name) == Role.FAILED_OVER:
                    self._failed_over_elsewhere()
                    return
                self._store.set_flow_state(self.name, self.status, **self._summary())
            except errors.GeokafkaError as exc:
                self._heartbeats.failed(exc)
            else:
                self._heartbeats.succeeded()

    def _failed_over_elsewhere(self) -> None:
        """`failover`/`promote` ran (maybe in another process): stop, and leave its state alone."""
        self.status = FlowState.FAILED_OVER
        self.error = None
        if self._query is not None:
            query, self._query = self._query, None
            query.stop()

    def _observe_source_ends(self) -> None:
        """Record the source's end offsets, in one request per broker (the RPO's bounds if it dies;
        see :mod:`geokafka.control.source_ends`)."""
        if self._source_ends is None:
            self._source_ends = SourceEndsWatch(self.name, self._observer, self._store)
        self._source_ends.observe(self._pairs)
