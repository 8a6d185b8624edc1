"""Failback: bring the original source back as the primary after a failover.

The reverse flow (``<flow>-failback``: target -> original source, same naming and guarantees)
replicates what was written on the new primary during the outage back to the original site;
records that started on the original site are not sent back (their ``gk.origin``). Once it
has caught up -- producers on the new primary stopped -- the reverse flow is promoted: groups
are translated back, the reverse flow is marked failed-over (the original site is primary
again), and the original flow is released so ``geokafka mirror <flow>`` can resume.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from geokafka.control.connection import connection
from geokafka.control.failover import FailoverReport, failover
from geokafka.control.admin import ClusterAdmin
from geokafka.control.state_store import flow_role, read_state, set_flow_role
from geokafka.errors import FlowStateError
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
    """The original flow turned around: same topics, naming, groups and syncs."""
    return flow.model_copy(update={"source": flow.target, "target": flow.source})


def with_reverse_flow(topology: Topology, flow_name: str) -> Topology:
    """The topology plus the reverse flow of ``flow_name`` (unless the file declares one)."""
    name = reverse_flow_name(flow_name)
    if name in topology.flows:
        return topology
    return topology.model_copy(update={"flows": {**topology.flows, name: reverse_flow(topology.flows[flow_name])}})


@dataclass
class FailbackReport:
    """The steps taken and the promote report of the reverse flow."""

    flow: str
    reverse: str
    steps: list[str] = field(default_factory=list)
    promote: FailoverReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"flow": self.flow, "reverse": self.reverse, "steps": self.steps,
                "promote": self.promote.to_dict() if self.promote else None}


def failback(topology: Topology, flow_name: str, timeout_s: float = 300.0) -> FailbackReport:
    """Run the reverse flow until caught up, promote it, and release the original flow."""
    flow = topology.flow(flow_name)
    target = connection(topology, flow.target)
    if flow_role(read_state(target), flow_name) != "failed-over":
        raise FlowStateError(f"flow {flow_name} is not failed over; nothing to fail back")
    ClusterAdmin(connection(topology, flow.source)).check_reachable()
    full = with_reverse_flow(topology, flow_name)
    reverse = reverse_flow_name(flow_name)
    names = dict(flow=flow_name, reverse=reverse, source=flow.source, target=flow.target)
    report = FailbackReport(flow_name, reverse, [s.format(**names) for s in FAILBACK_STEPS])
    # A reverse flow left failed-over by an earlier failback would refuse to run: reset it.
    if flow_role(read_state(connection(topology, flow.source)), reverse) == "failed-over":
        set_flow_role(connection(topology, flow.source), reverse, "active")

    from geokafka.pipeline.mirror import mirror

    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            mirror(full, [reverse], stop_event=stop)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=run, name="failback-mirror", daemon=True)
    thread.start()
    try:
        report.promote = failover(full, reverse, promote=True, timeout_s=timeout_s)
    finally:
        stop.set()
        thread.join(120)
    if errors:
        raise errors[0]
    set_flow_role(target, flow_name, "active", failed_back_to=flow.source)
    return report
