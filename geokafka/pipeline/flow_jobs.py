"""A flow's periodic control-plane jobs, each run on a schedule of its own (:mod:`geokafka.pipeline.scheduler`).

* ``observe``: the source's end offsets and peak append rate (what bounds the RPO if the source dies).
* ``heartbeat``: the flow's state on the target, so `status` tells a live mirror from a dead one; it
  also notices a failover made elsewhere.
* ``topic-ids``: a source topic deleted and re-created under the running query.
* ``selection``: topics or partitions added to what the flow selects (target topics made ready first).
* ``sync``: topic configs, ACLs and group offsets.

Jobs only look and write state; what they find reaches the runner through :class:`FlowSignals`, which its
loop reads. Each job says a failure once while it lasts (:class:`RepeatedFailure`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from geokafka import errors
from geokafka.control.source_ends import SourceEndsWatch
from geokafka.control.state_records import HeldGroups, Role
from geokafka.control.state_store import StateStore
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.flow_clients import FlowClients
from geokafka.pipeline.flow_topics import selection_changed, sync_topic_metadata, target_pairs
from geokafka.pipeline.jvm_look import ClusterLook
from geokafka.pipeline.repeated_failure import RepeatedFailure
from geokafka.pipeline.scheduler import Job, Scheduler
from geokafka.pipeline.slots import Mode
from geokafka.topology.schema import Flow, Topology

log = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
TOPIC_IDS_S = 1.0
TOPIC_IDS_MAX_PERIOD_S = 5.0
"""The re-created-topic watch runs every :data:`TOPIC_IDS_S`, less often where a look at every topic costs more
than :data:`OBSERVE_CPU_SHARE` of a core (DescribeTopics of 200 topics: 29-37 ms), but at least this often."""
OBSERVE_CPU_SHARE = 0.02
"""The source observation takes at most this share of a core: at thousands of partitions a look costs
milliseconds of CPU, and it then runs less often than ``rpo.observe_ms`` (its age is in every RPO figure)..."""
OBSERVE_MAX_PERIOD_S = 0.75
"""... but at least this often, whatever a look costs: at a site's death the last observation is then under a
second old (the look itself takes a few milliseconds), and the failover's RPO interval spans under 2 s of traffic."""


def seconds(interval_s: float) -> str:
    """An interval as the jobs' messages say it: ``250 ms``, ``5 s``, ``2.5 s``."""
    return f"{interval_s * 1000:g} ms" if interval_s < 1 else f"{interval_s:g} s"


def selection_refresh_s(topology: Topology, flow: Flow) -> tuple[float, str]:
    """How often ``flow``'s selection job looks for topics and partitions added, and the setting that says so:
    ``pipeline.topic_refresh_s``, or the flow's ``sync_interval_s`` where it is shorter and the flow syncs
    partition counts (they then follow every sync)."""
    refresh, sync_s = topology.pipeline.topic_refresh_s, flow.sync_interval_s
    if "partitions" in flow.sync and sync_s < refresh:
        return sync_s, f"sync_interval_s, as the flow syncs partitions; topic_refresh_s is {refresh:g} s"
    return refresh, "pipeline.topic_refresh_s"


class FlowView(Protocol):
    """What the jobs read of their flow's runner (from their own threads): the runner's latest published view."""

    @property
    def name(self) -> str:
        """The flow's name."""

    @property
    def replicating(self) -> bool:
        """The query runs."""

    @property
    def recorded_state(self) -> str:
        """The state the heartbeat records."""

    @property
    def pairs(self) -> list[TopicPair]:
        """The topic pairs the running query replicates."""

    @property
    def topic_ids(self) -> Mapping[str, str]:
        """Source topic -> the ID the running query replicates."""

    def summary(self) -> dict[str, Any]:
        """The mirror's counters and identity, for the heartbeat."""


@dataclass
class FlowSignals:
    """What the jobs (and the mirror) found that the runner must act on (set from their threads, taken by the
    runner's loop)."""

    failed_over: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _recreated: list[str] = field(default_factory=list)
    _reselected: list[TopicPair] | None = None
    _mode: Mode | None = None

    def recreated(self, topics: list[str]) -> None:
        """Source topics re-created under the running query."""
        with self._lock:
            self._recreated = topics

    def take_recreated(self) -> list[str]:
        """The re-created topics found since the last take."""
        with self._lock:
            topics, self._recreated = self._recreated, []
            return topics

    def reselected(self, pairs: list[TopicPair]) -> None:
        """The flow now selects other topics or partitions (target topics already made ready)."""
        with self._lock:
            self._reselected = pairs

    def take_reselected(self) -> list[TopicPair] | None:
        """The new selection found since the last take, if any."""
        with self._lock:
            pairs, self._reselected = self._reselected, None
            return pairs

    def run_in(self, mode: Mode) -> None:
        """The mirror wants the flow's query in ``mode`` (real-time or micro-batch: task slots came or went)."""
        with self._lock:
            self._mode = mode

    def take_mode(self) -> Mode | None:
        """The mode asked for since the last take, if any."""
        with self._lock:
            mode, self._mode = self._mode, None
            return mode


class FlowJobs:
    """The jobs of one flow, scheduled on ``scheduler`` by :meth:`schedule`."""

    def __init__(self, topology: Topology, view: Callable[[], FlowView], clients: FlowClients, store: StateStore,
                 signals: FlowSignals) -> None:
        self.topology = topology
        self._view = view
        self.name = view().name
        self.flow = topology.flows[self.name]
        self.clients = clients
        self.store = store
        self.signals = signals
        self._source_ends = SourceEndsWatch(self.name, clients.observer, store)
        self._source_look: ClusterLook = clients.observer
        """Where the topic-ID watch and the config sync ask the source: the librdkafka observer, then the flow's look
        from Spark's JVM once the runner hands one over (:meth:`looks_from`)."""
        self._target_look: ClusterLook = clients.target_admin
        """Where the config sync asks the target: the librdkafka admin client, then the JVM's look."""
        self._observe_job: Job | None = None
        self._said_observe_cost = False
        self._held_groups: list[tuple[str, str, int, str]] = []
        self._offset_index: Any = None
        self._sync_memory: Any = None
        every_sync = f"every {seconds(self.flow.sync_interval_s)}"
        self._heartbeats = RepeatedFailure(log, f"flow {self.name}: heartbeat", f"every {seconds(HEARTBEAT_S)}")
        self._metadata_sync = RepeatedFailure(log, f"flow {self.name}: topic config/ACL sync", every_sync)
        self._offset_sync = RepeatedFailure(log, f"flow {self.name}: group offset sync", every_sync)
        self._state_write = threading.Lock()
        self._retired = False
        """Set by :meth:`retire`, under :attr:`_state_write`: no heartbeat is written from then on."""

    @property
    def view(self) -> FlowView:
        """The runner as its owner last published it."""
        return self._view()

    def looks_from(self, source: ClusterLook, target: ClusterLook) -> None:
        """Ask the source's topic IDs and both sides' topic configs through these looks from now on (the runner's
        thread hands them over once; the topic-ID and sync jobs read them)."""
        self._source_look, self._target_look = source, target

    def retire(self) -> None:
        """No heartbeat after this returns (it waits for one being written): the runner's final state comes last."""
        with self._state_write:
            self._retired = True

    def schedule(self, scheduler: Scheduler) -> None:
        """Put every job on ``scheduler``."""
        sync_s = self.flow.sync_interval_s
        refresh, refresh_from = selection_refresh_s(self.topology, self.flow)
        observe_s = self.topology.rpo.observe_ms / 1000
        scheduler.add("heartbeat", HEARTBEAT_S, self.heartbeat, timeout_s=HEARTBEAT_S)
        self._observe_job = scheduler.add("observe", observe_s, self.observe, timeout_s=max(2.0, 4 * observe_s),
                                          cpu_share=OBSERVE_CPU_SHARE, max_period_s=OBSERVE_MAX_PERIOD_S,
                                          extra_cpu=self._observer_cpu_s)
        scheduler.add("topic-ids", TOPIC_IDS_S, self.watch_topic_ids, timeout_s=5.0, cpu_share=OBSERVE_CPU_SHARE,
                      max_period_s=TOPIC_IDS_MAX_PERIOD_S, extra_cpu=self._ids_cpu_s)
        scheduler.add("selection", refresh, self.watch_selection, timeout_s=30.0)
        scheduler.add("sync", sync_s, self.sync, timeout_s=max(30.0, sync_s))
        log.info("flow %s: jobs run every: heartbeat %s, observe %s (rpo.observe_ms), topic-ids %s, selection %s (%s), "
                 "sync %s (sync_interval_s)", self.name, seconds(HEARTBEAT_S), seconds(observe_s), seconds(TOPIC_IDS_S),
                 seconds(refresh), refresh_from, seconds(sync_s))

    def _observer_cpu_s(self) -> float:
        """CPU seconds of the source observer's own threads (``rdk:main``, ``rdk:bg``): part of what a look costs."""
        return self.clients.observer.background_cpu_s()

    def _ids_cpu_s(self) -> float:
        """CPU seconds the topic-ID look spent beyond the job's own thread (the librdkafka client's background
        thread, or the JVM's answering threads)."""
        return self._source_look.background_cpu_s()

    # -- heartbeat -------------------------------------------------------------------------

    def heartbeat(self) -> None:
        """Record the flow's state; notice a failover made elsewhere (then write nothing: its state is the failover's)."""
        try:
            if self.store.read(timeout_s=5.0).role(self.name) == Role.FAILED_OVER:
                self.signals.failed_over.set()
                return
            view = self.view
            with self._state_write:  # a late heartbeat must not follow the final state the runner writes
                if self._retired:
                    return
                self.store.set_flow_state(self.name, view.recorded_state, **view.summary())
        except errors.GeokafkaError as exc:
            self._heartbeats.failed(exc)
        else:
            self._heartbeats.succeeded()

    # -- source observation ----------------------------------------------------------------

    def observe(self) -> None:
        """Record the source's end offsets (the RPO's lower bound if it dies) and its peak append rate, every
        ``rpo.observe_ms`` on a schedule of its own (never behind a sync); after a failed look, when it failed
        (what bounds the RPO from above)."""
        if self.view.replicating:
            self._source_ends.observe(self.view.pairs)
        job = self._observe_job
        if job is not None and job.period_s > 1.2 * job.interval_s and not self._said_observe_cost:
            self._said_observe_cost = True
            log.info("flow %s: a look at the source's %d partitions costs %.0f ms of CPU: looking every %.1f s instead "
                     "of every %g ms (rpo.observe_ms), to stay under %.0f%% of a core; every RPO figure says its age",
                     self.name, sum(p.partitions for p in self.view.pairs), 1000 * job.cpu_cost_s, job.period_s,
                     1000 * job.interval_s, 100 * OBSERVE_CPU_SHARE)

    # -- topics ----------------------------------------------------------------------------

    def watch_topic_ids(self) -> None:
        """A source topic whose ID changed under the running query (deleted and re-created)."""
        known = self.view.topic_ids
        if not self.view.replicating or not known:
            return
        try:
            current = self._source_look.topic_ids(sorted(known))
        except errors.GeokafkaError:
            return  # the query itself reports an unreachable source
        changed = [t for t, topic_id in known.items() if t in current and current[t] != topic_id]
        if changed:
            self.signals.recreated(changed)

    def watch_selection(self) -> None:
        """Topics or partitions added to the flow's selection: their target topics made ready (created or
        grown, configs and ACLs synced) before the runner restarts the query, which takes seconds."""
        if not self.view.replicating:
            return
        try:
            if not selection_changed(self.flow, self.clients.observer, self.view.pairs):
                return
            pairs = target_pairs(self.flow, self.clients.source_admin, self.clients.target_admin)
        except errors.GeokafkaError as exc:
            log.debug("flow %s: selection not checked: %s", self.name, exc)  # an unreachable source: the query says
            return
        self._sync_metadata(pairs)
        self.signals.reselected(pairs)

    # -- syncs -----------------------------------------------------------------------------

    def sync(self) -> None:
        """Topic configs and ACLs, then group offsets (best effort: a failed sync never stops replication)."""
        if not self.view.replicating:
            return
        self._sync_metadata(self.view.pairs)
        if "group-offsets" not in self.flow.sync:
            return
        try:
            from geokafka.control.offsets import SyncMemory, TargetIndex, sync_group_offsets

            if self._offset_index is None:
                self._offset_index = self.clients.register(TargetIndex(self.clients.target_admin.conn, timeout_s=30.0))
            if self._sync_memory is None:
                self._sync_memory = SyncMemory()
            report = sync_group_offsets(self.topology, self.name, index=self._offset_index,
                                        memory=self._sync_memory, store=self.store, timeout_s=5.0)
            self._record_held_groups(report.held_on_target())
        except errors.GeokafkaError as exc:
            self._offset_sync.failed(exc)
        else:
            self._offset_sync.succeeded()

    def _sync_metadata(self, pairs: list[TopicPair]) -> None:
        try:
            sync_topic_metadata(self.name, self.flow, self.clients.source_admin, self.clients.target_admin, pairs,
                                (self._source_look, self._target_look))
        except errors.GeokafkaError as exc:
            self._metadata_sync.failed(exc)
        else:
            self._metadata_sync.succeeded()

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
        self.store.write(HeldGroups(self.name, int(time.time() * 1000), [
            {"group": g, "topic": t, "partition": p, "reason": r} for g, t, p, r in now]))
