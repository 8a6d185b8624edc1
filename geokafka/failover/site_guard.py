"""The loop of `geokafka guard --sites`: look at every source site and its flows' targets, decide
(:mod:`geokafka.failover.automatic`), record, and fail a lost site over; until stopped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.rpo import rpo_interval
from geokafka.control.state_records import AutoFailover
from geokafka.control.state_store import KafkaStateStore, StateSnapshot
from geokafka.control.state_stores import StateStores, using
from geokafka.errors import AuthError, GeokafkaError, TopologyError
from geokafka.failover.automatic import FlowLook, SiteDecision, SiteLook, SiteLossPolicy
from geokafka.failover.failover import failover
from geokafka.failover.site import SiteReport, flows_of_site, run_for_site
from geokafka.failover.vantage import mirror_view
from geokafka.topology.schema import Topology

log = logging.getLogger("geokafka.guard.sites")

Say = Callable[[str], None]


@dataclass
class SiteGuardRun:
    """What a run of the site guard said and did."""

    dry_run: bool
    events: list[tuple[int, str]] = field(default_factory=list)
    failovers: list[SiteReport] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"dry_run": self.dry_run, "events": [{"at_ms": at, "text": text} for at, text in self.events],
                "failovers": [r.to_dict() for r in self.failovers]}


def guarded_sites(topology: Topology, sites: Iterable[str] = ()) -> list[str]:
    """The sites to watch: ``sites`` (each must source a flow), or every flow's source."""
    chosen = sorted(set(sites)) or sorted({f.source for f in topology.flows.values()})
    if not chosen:
        raise TopologyError("the topology has no flows: no site to guard")
    for site in chosen:
        flows_of_site(topology, site)  # a one-line error for a site that is no flow's source
    return chosen


def run_site_guard(
    topology: Topology,
    sites: Iterable[str] = (),
    *,
    dry_run: bool = False,
    stop: threading.Event | None = None,
    duration_s: float | None = None,
    say: Say = log.info,
    probe_timeout_s: float = 3.0,
    state_timeout_s: float = 5.0,
    watching: threading.Event | None = None,
    stores: StateStores | None = None,
) -> SiteGuardRun:
    """Guard ``sites`` (default: every flow's source) until ``stop`` is set or ``duration_s`` passed.

    Needs ``failover.automatic`` in the topology unless ``dry_run`` (then nothing is failed over or recorded; what
    would be is said). ``watching`` is set once the first look is taken. ``stores``: the caller's state stores
    (stores of its own otherwise, closed when the guard ends).
    """
    policy = topology.failover
    if not policy.automatic and not dry_run:
        raise TopologyError("failover.automatic is not true in the topology: the guard fails sites over only when "
                            "the topology says so (--dry-run says what it would do)")
    stop = stop or threading.Event()
    chosen = guarded_sites(topology, sites)
    decide = SiteLossPolicy(policy, dry_run)
    run = SiteGuardRun(dry_run)
    targets = sorted({topology.flows[f].target for site in chosen for f in flows_of_site(topology, site)})
    admins = {site: ClusterAdmin(connection(topology, site), timeout_s=probe_timeout_s) for site in chosen}
    unreadable: set[str] = set()
    out_since: dict[str, int] = {}
    """site -> the guard's first failed look at it since it last answered (when it went, as far as the guard knows),
    on the wall clock: it bounds the RPO in record timestamps."""

    def event(text: str) -> None:
        run.events.append((int(time.time() * 1000), text))
        say(text)

    event(f"guarding sites {', '.join(chosen)}: lost after {policy.confirm_s:.0f} s out of reach from here and from "
          f"the flows' mirrors; " + (f"fails over when every flow's RPO is at most {policy.max_rpo_records:,} records"
                                     if policy.max_rpo_records is not None else "no RPO limit set")
          + (" - dry run" if dry_run else ""))
    deadline = None if duration_s is None else time.monotonic() + duration_s
    # one thread per probe and per state read: a dead site's or target's time-out delays no other's look
    with using(stores) as owned, \
            ThreadPoolExecutor(max_workers=len(chosen) + len(targets), thread_name_prefix="site-guard") as pool:
        by_target = {target: owned.of(connection(topology, target)) for target in targets}
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            started = time.monotonic()
            probes = {site: pool.submit(_reached, admins[site], probe_timeout_s) for site in chosen}
            reads = {target: pool.submit(store.read, state_timeout_s) for target, store in by_target.items()}
            states = _states(reads, unreadable, event)
            for site in chosen:
                reached = probes[site].result()
                if reached:
                    out_since.pop(site, None)
                else:
                    out_since.setdefault(site, int(time.time() * 1000))
                look = _look(topology, site, reached, out_since.get(site), states)
                if look is None:
                    continue
                decision = decide.decide(look)
                for text in decision.events:
                    event(text)
                if not dry_run:
                    _record(topology, decision, by_target, look)
                if decision.fail_over:
                    _fail_over(topology, site, decision, decide, owned, run, event)
            if watching is not None:
                watching.set()
            stop.wait(max(0.0, policy.interval_s - (time.monotonic() - started)))
    return run


def _reached(admin: ClusterAdmin, timeout_s: float) -> bool:
    try:
        return admin.probe(timeout_s)
    except AuthError:
        return True  # its brokers answered (and refused us): the site is there
    except GeokafkaError:
        return False


def _states(reads: dict[str, Future[StateSnapshot]], unreadable: set[str], event: Say) -> dict[str, StateSnapshot]:
    out: dict[str, StateSnapshot] = {}
    for target, future in reads.items():
        try:
            out[target] = future.result()
        except GeokafkaError as exc:
            if target not in unreadable:
                unreadable.add(target)
                event(f"the state on {target} is not readable ({exc}): its flows are not judged until it is")
            continue
        if target in unreadable:
            unreadable.discard(target)
            event(f"the state on {target} is readable again")
    return out


def _look(topology: Topology, site: str, reached: bool, gone_at_ms: int | None,
          states: dict[str, StateSnapshot]) -> SiteLook | None:
    """The look at ``site``, or None when a target of its flows could not be read (nothing is judged half-seen)."""
    now_ms, elapsed_ms = int(time.time() * 1000), int(time.monotonic() * 1000)
    flows = []
    for name in flows_of_site(topology, site):
        target = topology.flows[name].target
        state = states.get(target)
        if state is None:
            return None
        observation = state.source_ends(name)
        rpo = rpo_interval(observation, state.progress_records(name), now_ms, gone_at_ms=gone_at_ms)
        flows.append(FlowLook(name, target, state.role(name), mirror_view(state, name, now_ms), rpo))
    return SiteLook(site, now_ms, elapsed_ms, reached, tuple(flows))


def _record(topology: Topology, decision: SiteDecision, stores: dict[str, KafkaStateStore], look: SiteLook) -> None:
    for flow, (state, reason) in decision.records.items():
        target = topology.flows[flow].target
        _write_auto(stores[target], AutoFailover(flow, look.site, state, reason, look.at_ms))


def _fail_over(topology: Topology, site: str, decision: SiteDecision, decide: SiteLossPolicy,
               stores: StateStores, run: SiteGuardRun, event: Say) -> None:
    report = run_for_site(topology, site, "failover", lambda name: failover(topology, name, stores=stores))
    run.failovers.append(report)
    for outcome in report.outcomes:
        flow = topology.flows[outcome.flow]
        if outcome.ok:
            rpo = "" if outcome.report is None else f", RPO {outcome.report.rpo.headline()}"
            text = f"flow {outcome.flow} failed over to {flow.target} in {outcome.duration_s:.1f} s{rpo}"
            state = AutoFailover.FAILED_OVER
        else:
            text = f"flow {outcome.flow} not failed over: {outcome.error}; trying again in 30 s"
            state = AutoFailover.HELD
        event(text)
        decide.recorded(site, outcome.flow, state)
        record = AutoFailover(outcome.flow, site, state, text, int(time.time() * 1000))
        _write_auto(stores.of(connection(topology, flow.target)), record)
    done = len(report.outcomes) - len(report.failed)
    event(f"site {site}: {done} of {len(report.outcomes)} flows failed over in {report.duration_s:.1f} s"
          + (f"; not: {', '.join(o.flow for o in report.failed)}" if report.failed else ""))


def _write_auto(store: KafkaStateStore, record: AutoFailover) -> None:
    """Best effort: a target that does not take the record is said in the log; the next change writes again."""
    try:
        store.write(record)
    except GeokafkaError as exc:
        log.warning("automatic failover state of %s not recorded on %s: %s", record.flow, store.name, exc)

