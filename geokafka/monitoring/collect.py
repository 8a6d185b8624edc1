"""Collecting flow status from Kafka: the state topic, source end offsets and the guard's journal."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from geokafka.control.connection import connection
from geokafka.control.flow_states import HeadlineState
from geokafka.control.rpo import RpoInterval, rpo_interval
from geokafka.control.state_records import AutoFailover, Role
from geokafka.control.state_store import StateSnapshot
from geokafka.control.state_stores import StateStores
from geokafka.errors import GeokafkaError
from geokafka.failover.failback import with_reverse_flow
from geokafka.failover.vantage import mirror_view
from geokafka.guard.journal import Journal
from geokafka.guard.summary import GuardStatus, summarize
from geokafka.monitoring.status import (
    STALE_AFTER_S,
    FlowStatus,
    StatusReport,
    failover_rpo,
    flow_rpo,
    headline_state,
    mirror_details,
    recreation_problem,
)
from geokafka.monitoring.status_io import ClusterReads, flow_partitions, recreated_topics
from geokafka.monitoring.throughput import History
from geokafka.topology.schema import Topology


def collect_status(
    topology: Topology,
    flows: list[str] | None = None,
    sample_s: float = 0.0,
    state_timeout_s: float = 10.0,
    source_timeout_s: float = 5.0,
) -> StatusReport:
    """The status of ``flows`` (all when None) read from Kafka now.

    With ``sample_s`` > 0, a second observation ``sample_s`` later gives throughput over
    that window (the report returned is the second one).
    """
    with StatusCollector(topology, flows, state_timeout_s, source_timeout_s) as collector:
        report = collector.collect()
        if sample_s <= 0:
            return report
        history = History()
        history.add(report)
        time.sleep(sample_s)
        return history.add(collector.collect())


class StatusCollector:
    """Reads flow status repeatedly, reusing clients and reading the state topic incrementally."""

    def __init__(
        self,
        topology: Topology,
        flows: list[str] | None = None,
        state_timeout_s: float = 10.0,
        source_timeout_s: float = 5.0,
        stale_after_s: float = STALE_AFTER_S,
        stores: StateStores | None = None,
    ) -> None:
        names = list(flows) if flows else sorted(topology.flows)
        for name in names:
            base = name.removesuffix("-failback")
            if name not in topology.flows and base != name and base in topology.flows:
                topology = with_reverse_flow(topology, base)  # a failback's reverse flow, which no file declares
            topology.flow(name)  # an unknown name fails here
        self.topology = topology
        self.names = names
        self.state_timeout_s = state_timeout_s
        self.source_timeout_s = source_timeout_s
        self.stale_after_s = stale_after_s
        self.stores = stores or StateStores()
        """The targets' state stores (the collector's own, closed by :meth:`close`, unless given)."""
        self._own_stores = stores is None
        self._io: ClusterReads | None = None
        self._pool: ThreadPoolExecutor | None = None

    def __enter__(self) -> StatusCollector:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def collect(self) -> StatusReport:
        """One observation of every flow; problems become states, never exceptions."""
        if self._io is None:
            self._io = ClusterReads(self.topology, self.state_timeout_s, self.source_timeout_s, self.stores)
        io = self._io
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=min(16, len(self.names) + 1), thread_name_prefix="status")
        # side by side, each flow with its own read of its target's state just before its source is read: a dead
        # source's time-out delays or ages no other flow's figures
        guard = self._pool.submit(self._guard_status)
        futures = [self._pool.submit(self._one, name, io) for name in self.names]
        return StatusReport(int(time.time() * 1000), [f.result() for f in futures], guard.result())

    def _one(self, name: str, io: ClusterReads) -> FlowStatus:
        return self._flow_status(name, io, io.state(self.topology.flows[name].target))

    def _guard_status(self) -> GuardStatus | None:
        """The guard's journal on the stretched cluster, when the topology names one."""
        stretch = self.topology.stretch
        if stretch is None or stretch.cluster is None:
            return None
        try:
            entries = Journal(connection(self.topology, stretch.cluster), self.state_timeout_s).read()
        except GeokafkaError as exc:
            return GuardStatus(stretch.cluster, error=f"guard journal unavailable: {exc}")
        return summarize(stretch.cluster, entries)

    def _flow_status(self, name: str, io: ClusterReads, read: tuple[StateSnapshot, GeokafkaError | None]) -> FlowStatus:
        flow = self.topology.flows[name]
        state, state_error = read
        heartbeat = state.heartbeat(name)
        record = None if heartbeat is None else heartbeat.as_dict()
        # what the state holds is as old as it was when read, not when the source answered after it (a slow source
        # read would age every heartbeat and every lag); a failed read's older snapshot ages to now
        fresh = state_error is None and state.read_at_ms > 0
        partitions, source_error, observed_ms, now_ms = flow_partitions(
            io, name, flow, state, state.read_at_ms if fresh else None)
        reachable = source_error is None
        as_of_ms = state.read_at_ms if fresh else now_ms
        view = mirror_view(state, name, as_of_ms)
        shown, age = headline_state(record, as_of_ms, reachable, self.stale_after_s, state.role(name),
                                    view.might_reach_source)
        status = FlowStatus(
            name=name, source=flow.source, target=flow.target, state=shown, heartbeat_age_s=age,
            source_reachable=reachable, source_error=source_error, partitions=partitions,
            last_failover=state.failover_report(name), mirror_view=view.to_dict(),
            mirror_view_text=view.describe(flow.source), **mirror_details(record),
        )
        if not reachable and shown not in (HeadlineState.SOURCE_UNREACHABLE, HeadlineState.FAILED_OVER):
            status.source_error = (f"{source_error}; but {view.describe(flow.source)}: a partition between here "
                                   f"and {flow.source}, not a lost site (run `failover` only if the mirror loses it too)")
        if state_error is not None:
            status.state_error = f"state unavailable: {state_error}"
            if record is not None:
                status.state_error += " (showing the last state read)"
            elif reachable:
                status.state = HeadlineState.STATE_UNAVAILABLE
        basis = "live" if reachable else ("last-observed" if observed_ms is not None else "unknown")
        status.rpo = flow_rpo(partitions, basis, observed_ms)
        if basis == "last-observed":  # the source did not answer now: it may be gone since the last look
            status.rpo.set_interval(rpo_interval(state.source_ends(name), state.progress_records(name), now_ms,
                                                 gone_at_ms=now_ms))
        recreated = recreated_topics(io, name, flow, state) if reachable else []
        for recreation in recreated:
            for part in partitions:
                if part.topic == recreation.topic:
                    part.recreated, part.lag_records, part.lag_seconds = True, None, None
            status.recreated.append(recreation_problem(recreation, partitions))
        if recreated:
            status.rpo.set_interval(RpoInterval.unknown(
                f"source topic {', '.join(r.topic for r in recreated)} was re-created since it was replicated"))
        if state.role(name) == Role.FAILED_OVER:
            role = state.record(Role, name)
            loss = state.loss_account(name)
            status.failover, status.rpo = failover_rpo(state.failover_report(name), role.at_ms if role else None,
                                                       None if loss is None else loss.encode())
            if reachable:
                past = sum(p.lag_records or 0 for p in partitions)
                status.old_source_back = (
                    f"the old source {flow.source} answers again and takes writes: {past:,} records in its logs past "
                    f"the replicated position (stranded before the failover, or late writes after it: a split brain); "
                    f"`geokafka reconcile {name}` lists them apart")
        held = state.held_groups(name)
        status.held_groups = [] if held is None else list(held.held)
        automatic = state.auto_failover(name)
        if automatic is not None and automatic.state != AutoFailover.CLEAR:
            status.automatic = automatic.encode()
        return status

    def close(self) -> None:
        """Release the Kafka clients."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._io is not None:
            self._io.close()
            self._io = None
        if self._own_stores:
            self.stores.close()
