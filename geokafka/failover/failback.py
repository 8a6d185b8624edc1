"""Failback: bring the original source back as the primary after a failover.

It starts with the accounting of `reconcile` (:mod:`geokafka.failover.reconcile`): the records
the failover stranded at the original site, exactly, and the groups that had not processed
them (recorded on the target as the failover's exact RPO).

The reverse flow (``<flow>-failback``: target -> original source, same naming and guarantees)
replicates what was written on the new primary during the outage back to the original site;
records that started on the original site are not sent back (their ``gk.origin``). Once it
has caught up -- producers on the new primary stopped -- the reverse flow is promoted (marked
failed-over: the original site is primary again), every group is moved to the first record
it has not processed at the original site (:mod:`geokafka.control.offsets.back`, which reads
both flows' copies), and the original flow is released so ``geokafka mirror <flow>`` can
resume.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.flow_states import FlowState
from geokafka.control.offsets._groups_io import list_group_ids
from geokafka.control.offsets.back import BackReport, move_groups_back
from geokafka.control.selection import select_groups, select_topics
from geokafka.control.state_records import Role
from geokafka.control.state_stores import StateStores, using
from geokafka.errors import FlowStateError, LateWritesError, NotFailedOverError
from geokafka.failover.failover import FailoverReport, failover
from geokafka.failover.reconcile import ReconcileReport, reconcile
from geokafka.infra.threads import in_thread
from geokafka.topology.schema import Flow, Topology

FAILBACK_STEPS = [
    "1. the original source site is back and reachable (checked)",
    "2. replicate the new primary's writes back with the reverse flow {reverse} (running now)",
    "3. stop producers on {target}; the reverse flow catches up (waited for)",
    "4. promote {reverse}: translate consumer groups back to {source}, RPO 0 (done)",
    "5. move producers and consumers back to {source}",
    "6. restart `geokafka mirror {flow}` to protect {source} again",
]


def reverse_flow_name(flow_name: str) -> str:
    """Name of the flow that carries writes back during failback."""
    return f"{flow_name}-failback"


def reverse_flow(flow: Flow) -> Flow:
    """The original flow turned around: same topics, naming and groups; its group offsets are
    moved by failback itself (a plain sync would translate from its own copies only)."""
    sync = [kind for kind in flow.sync if kind != "group-offsets"]
    return flow.model_copy(update={"source": flow.target, "target": flow.source, "sync": sync})


def with_reverse_flow(topology: Topology, flow_name: str) -> Topology:
    """The topology plus the reverse flow of ``flow_name`` (unless the file declares one)."""
    name = reverse_flow_name(flow_name)
    if name in topology.flows:
        return topology
    return topology.model_copy(update={"flows": {**topology.flows, name: reverse_flow(topology.flows[flow_name])}})


@dataclass
class FailbackReport:
    """The steps taken, the promote report of the reverse flow and where the groups resume."""

    flow: str
    reverse: str
    dry_run: bool = False
    steps: list[str] = field(default_factory=list)
    stranded: ReconcileReport | None = None
    """The records the failover left at the original site, counted before anything else."""
    promote: FailoverReport | None = None
    groups: BackReport | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"flow": self.flow, "reverse": self.reverse, "dry_run": self.dry_run, "steps": self.steps,
                "stranded": self.stranded.to_dict() if self.stranded else None,
                "promote": self.promote.to_dict() if self.promote else None,
                "groups": self.groups.to_dict() if self.groups else None, "notes": self.notes}


def failback(topology: Topology, flow_name: str, timeout_s: float = 300.0, *, dry_run: bool = False,
             ignore_late_writes: bool = False, stores: StateStores | None = None) -> FailbackReport:
    """Run the reverse flow until caught up, promote it, move the groups back, release the original flow.

    Refuses while records written at the original source after the failover (late writes: a split
    brain) are not replayed to the new primary, unless ``ignore_late_writes``. ``dry_run`` checks
    what it can (the flow is failed over, the original site answers) and says what would happen,
    changing nothing. ``stores``: the caller's state stores (stores of its own otherwise; the reverse flow's mirror
    has its own).
    """
    with using(stores) as own:
        return _failback(topology, flow_name, timeout_s, dry_run, ignore_late_writes, own)


def _failback(topology: Topology, flow_name: str, timeout_s: float, dry_run: bool, ignore_late_writes: bool,
              stores: StateStores) -> FailbackReport:
    flow = topology.flow(flow_name)
    target = stores.of(connection(topology, flow.target))
    if target.read().role(flow_name) != Role.FAILED_OVER:
        raise NotFailedOverError(f"flow {flow_name} is not failed over; nothing to fail back")
    ClusterAdmin(connection(topology, flow.source)).check_reachable()
    full = with_reverse_flow(topology, flow_name)
    reverse = reverse_flow_name(flow_name)
    names = dict(flow=flow_name, reverse=reverse, source=flow.source, target=flow.target)
    report = FailbackReport(flow_name, reverse, dry_run, [s.format(**names) for s in FAILBACK_STEPS])
    report.stranded = reconcile(topology, flow_name, record=not dry_run, timeout_s=timeout_s, stores=stores)
    replayed = {tp: r.next for tp, r in target.read().reconciled(flow_name).items()}
    late = report.stranded.unreplayed_late_records(replayed)
    if late and not ignore_late_writes:
        refusal = (f"{late:,} records were written at {flow.source} after the failover and are not on {flow.target} "
                   f"(late writes: a split brain); `geokafka reconcile {flow_name}` lists them, `--replay --execute` "
                   "moves them; or fail back with --ignore-late-writes to leave them where they are")
        if not dry_run:
            raise LateWritesError(f"flow {flow_name}: {refusal}")
        report.notes.append(f"would refuse: {refusal}")
    elif late:
        report.notes.append(f"{late:,} late writes at {flow.source} left where they are (--ignore-late-writes)")
    if report.stranded.records:
        report.notes.append(
            f"{report.stranded.records:,} records the failover stranded at {flow.source} reach {flow.target} when "
            f"`geokafka mirror {flow_name}` resumes from the replicated position (those `reconcile --replay "
            "--execute` produced already are not copied again)")
    if dry_run:
        return _preview(full, flow_name, reverse, report)
    # A reverse flow left failed-over by an earlier failback would refuse to run: reset it.
    source_store = stores.of(connection(topology, flow.source))
    if source_store.read().role(reverse) == Role.FAILED_OVER:
        source_store.set_role(reverse, Role.ACTIVE)

    from geokafka.pipeline.mirror import mirror

    stop = threading.Event()
    mirroring = in_thread(lambda: mirror(full, [reverse], stop_event=stop), "failback-mirror")
    try:
        promoting = in_thread(lambda: failover(full, reverse, promote=True, timeout_s=timeout_s, move_groups=False,
                                                  stores=stores),
                              "failback-promote")
        pending: list[Future[Any]] = [promoting, mirroring]
        wait(pending, return_when=FIRST_COMPLETED)
        if not promoting.done():
            # the reverse flow's mirror ended first: its own error, not the promote's time-out; or the promote fenced
            # the flow and recorded it failed over, which its mirror saw before the promote returned
            runners = mirroring.result()
            if not any(r.status == FlowState.FAILED_OVER for r in runners):
                raise FlowStateError(f"the reverse flow {reverse} stopped before it caught up")
        report.promote = promoting.result()
    finally:
        stop.set()
        wait([mirroring], timeout=120)
    if mirroring.done() and mirroring.exception() is not None:
        raise mirroring.exception()  # type: ignore[misc]
    report.groups = move_groups_back(full, flow_name, reverse, store=target)
    held = sorted({p.group for p in report.groups.positions if p.action == "skip"})
    if held:
        report.notes.append(f"groups active at {flow.source} were left alone: {', '.join(held)}")
    target.set_role(flow_name, Role.ACTIVE, failed_back_to=flow.source)
    return report


def _preview(topology: Topology, flow_name: str, reverse: str, report: FailbackReport) -> FailbackReport:
    """What a failback would do: which topics go back, which groups move (their positions need the
    reverse flow's copies, so they are computed when it has run)."""
    flow = topology.flow(flow_name)
    back = topology.flow(reverse)
    new_primary = ClusterAdmin(connection(topology, flow.target))
    topics = select_topics(new_primary.topic_partitions(), back)
    groups = select_groups(list_group_ids(new_primary), flow)
    report.steps = [f"would: {step}" for step in report.steps]
    report.notes.append(f"{reverse} would copy {', '.join(topics) or 'no topics'} from {flow.target} "
                        f"to {flow.source} (records that started at {flow.source} stay)")
    report.notes.append(f"groups that would move to their first unprocessed record at {flow.source}: "
                        f"{', '.join(groups) or 'none'}")
    return report
