"""A site at once: `failover --site`, `promote --site`, `failback --site` run the command for every flow whose
source is the site (failover and promote side by side; failback one flow after another, each running its
reverse flow on Spark), and make one report with one exit code.

A flow that is already where the command would take it (failed over, or back at its source) counts as done,
so running the command again after a partial failure finishes the rest and changes nothing that is done.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from geokafka.errors import AlreadyFailedOverError, GeokafkaError, NotFailedOverError, TopologyError
from geokafka.topology.schema import Topology


@dataclass
class FlowOutcome:
    """What the command did for one flow of the site."""

    flow: str
    source: str
    target: str
    duration_s: float = 0.0
    report: Any = None
    """The flow's report when the command ran it through."""
    done_before: str | None = None
    """Why nothing was needed: the flow was where the command takes it already."""
    error: GeokafkaError | None = None

    @property
    def ok(self) -> bool:
        """Done now or before."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"flow": self.flow, "source": self.source, "target": self.target,
                "duration_s": round(self.duration_s, 3), "done_before": self.done_before,
                "error": None if self.error is None else {"type": type(self.error).__name__, "message": str(self.error),
                                                          "exit_code": self.error.exit_code},
                "report": None if self.report is None else self.report.to_dict()}


@dataclass
class SiteReport:
    """One report for a site-wide command."""

    site: str
    kind: str
    dry_run: bool
    started_ms: int
    finished_ms: int = 0
    outcomes: list[FlowOutcome] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        """The whole command (the flows ran side by side)."""
        return (self.finished_ms - self.started_ms) / 1000

    @property
    def failed(self) -> list[FlowOutcome]:
        """The flows the command could not finish."""
        return [o for o in self.outcomes if not o.ok]

    @property
    def exit_code(self) -> int:
        """0 when every flow is done; else the first failed flow's error's code."""
        failed = self.failed
        return 0 if not failed else (failed[0].error.exit_code if failed[0].error is not None else 1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"site": self.site, "kind": self.kind, "dry_run": self.dry_run, "duration_s": round(self.duration_s, 3),
                "failed": [o.flow for o in self.failed], "exit_code": self.exit_code,
                "flows": [o.to_dict() for o in self.outcomes]}


def flows_of_site(topology: Topology, site: str) -> list[str]:
    """The flows whose source is ``site``, by name; a one-line error when the site is no cluster or sources none."""
    if site not in topology.clusters:
        raise TopologyError(f"--site {site}: no cluster of that name in the topology "
                            f"(clusters: {', '.join(sorted(topology.clusters))})")
    names = sorted(name for name, flow in topology.flows.items() if flow.source == site)
    if not names:
        raise TopologyError(f"--site {site}: no flow has {site} as its source")
    return names


DONE_BEFORE: dict[str, tuple[type[GeokafkaError], ...]] = {
    "failover": (AlreadyFailedOverError,), "promote": (AlreadyFailedOverError,), "failback": (NotFailedOverError,)}
"""Per command, the errors that say a flow is where the command takes it already."""


def run_for_site(topology: Topology, site: str, kind: str, run: Callable[[str], Any], dry_run: bool = False,
                 parallel: bool = True, clock: Callable[[], float] = time.time) -> SiteReport:
    """``run(flow)`` for every flow of ``site`` (side by side unless not ``parallel``); a flow already where ``kind``
    takes it is done (:data:`DONE_BEFORE`), any other geokafka error is that flow's failure."""
    names = flows_of_site(topology, site)
    done_before = DONE_BEFORE[kind]
    report = SiteReport(site, kind, dry_run, int(clock() * 1000))

    def one(name: str) -> FlowOutcome:
        flow = topology.flows[name]
        outcome = FlowOutcome(name, flow.source, flow.target)
        started = clock()
        try:
            outcome.report = run(name)
        except GeokafkaError as exc:
            if isinstance(exc, done_before):
                outcome.done_before = str(exc)
            else:
                outcome.error = exc
        outcome.duration_s = clock() - started
        return outcome

    with ThreadPoolExecutor(max_workers=len(names) if parallel else 1, thread_name_prefix=f"{kind}-{site}") as pool:
        report.outcomes = list(pool.map(one, names))
    report.finished_ms = int(clock() * 1000)
    return report
