"""When a lost site's flows fail over without a person: the decisions of `geokafka guard --sites` (pure, no I/O;
the clock is the look's).

Opt-in only (``failover: {automatic: true, ...}`` in the topology); with ``--dry-run`` the guard says what it would do.
A site is **lost** only when two vantage points agree for ``confirm_s`` without a break:

* the guard's own look at the site fails (no broker answers), and
* every live mirror of the site's active flows (they run at the targets' sites) has lost it too: its last look that
  reached the source is stale or a later look failed. A mirror that still reaches the site vetoes: what the guard
  meets is a partition between itself and the site, and failing over would split the business in two. When no
  flow's mirror is live, there is no second view, and the guard waits for a person.

A lost site fails over as one, and only when every active flow's RPO upper bound
(:func:`~geokafka.control.rpo.rpo_interval`, with the guard's first failed look as the time the site went) is at most
``max_rpo_records``; an unbounded RPO is over any limit. Otherwise the guard holds: it says so once, loudly, and
records ``held`` on each flow's target for status, metrics and alerts, until a person fails it over or the site
answers again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from geokafka.control.rpo import RpoInterval
from geokafka.control.state_records import AutoFailover, Role
from geokafka.failover.vantage import FRESH_S, MirrorView
from geokafka.topology.schema import FailoverPolicy

RETRY_S = 30.0
"""A failover of a lost site that did not finish is tried again after this long (it finishes what is left)."""

SiteState = Literal["up", "partitioned", "suspect", "held", "lost", "failed-over"]


@dataclass(frozen=True)
class FlowLook:
    """One flow of the site, as its target's state shows it at the look."""

    flow: str
    target: str
    role: str
    view: MirrorView
    """Its mirror's view of the source."""
    rpo: RpoInterval
    """What a failover would lose now (bounded from the mirror's last look)."""


@dataclass(frozen=True)
class SiteLook:
    """One look at a site: the guard's own, and the flows' targets' state."""

    site: str
    at_ms: int
    """Wall clock, as in the mirrors' records: their looks' ages and the RPO are measured on it."""
    elapsed_ms: int
    """Monotonic clock: how long the guard's own looks have failed, and when to retry (an NTP step or a paused VM
    moves the wall clock by seconds; a site must never be lost early because of it)."""
    reached: bool
    """The guard's own look reached a broker of the site."""
    flows: tuple[FlowLook, ...]


@dataclass
class SiteDecision:
    """What one look leads to."""

    site: str
    state: SiteState
    reason: str
    fail_over: list[str] = field(default_factory=list)
    """Flows to fail over now (the site's active ones), empty unless the site is lost, within the RPO limit, and the
    policy is automatic (not a dry run)."""
    would_fail_over: list[str] = field(default_factory=list)
    """The same, in a dry run or before a retry is due."""
    events: list[str] = field(default_factory=list)
    """What to say (each once per episode)."""
    records: dict[str, tuple[str, str]] = field(default_factory=dict)
    """flow -> (AutoFailover state, reason) to record on its target, when it changed."""


@dataclass
class _SiteMemory:
    own_out_since_ms: int | None = None
    """The guard's first failed look of this episode, on the monotonic clock (``SiteLook.elapsed_ms``)."""
    said: set[str] = field(default_factory=set)
    recorded: dict[str, str] = field(default_factory=dict)
    """flow -> the AutoFailover state last recorded for it."""
    attempted_ms: int | None = None
    """The last failover attempt, on the monotonic clock."""


def gives_view(view: MirrorView) -> bool:
    """The mirror is live (its heartbeat is fresh) and has recorded a look at the source, one way or the other."""
    return view.live and (view.observed_at_ms is not None or view.failed_at_ms is not None)


def mirror_out_since_ms(view: MirrorView) -> int | None:
    """Since when a live mirror has not reached the source (None: it still does).

    Its failed look says so at once; a look that reached the source but is older than :data:`FRESH_S` (looks that
    hang on a site that drops packets are not recorded) counts from that look on.
    """
    if view.failed_at_ms is not None:
        return view.failed_at_ms
    if view.observed_at_ms is None:
        return None
    return view.observed_at_ms if (view.observed_age_s or 0.0) >= FRESH_S else None


class SiteLossPolicy:
    """Turns looks at sites into decisions; remembers each site between looks (see module doc)."""

    def __init__(self, policy: FailoverPolicy, dry_run: bool) -> None:
        self.policy = policy
        self.dry_run = dry_run
        self._sites: dict[str, _SiteMemory] = {}

    def decide(self, look: SiteLook) -> SiteDecision:
        """The decision of one look at one site."""
        memory = self._sites.setdefault(look.site, _SiteMemory())
        decision = self._decide(look, memory)
        for flow in look.flows:
            if flow.role != Role.ACTIVE:
                continue
            state = _record_state(decision.state)
            if state is not None and memory.recorded.get(flow.flow) != state \
                    and not (state == AutoFailover.CLEAR and flow.flow not in memory.recorded):
                memory.recorded[flow.flow] = state
                decision.records[flow.flow] = (state, decision.reason)
        return decision

    def recorded(self, site: str, flow: str, state: str) -> None:
        """The loop recorded ``state`` for ``flow`` itself (after a failover it ran, or one that failed)."""
        self._sites.setdefault(site, _SiteMemory()).recorded[flow] = state

    def _decide(self, look: SiteLook, memory: _SiteMemory) -> SiteDecision:
        site, now, elapsed = look.site, look.at_ms, look.elapsed_ms
        active = [f for f in look.flows if f.role == Role.ACTIVE]
        if not active:
            memory.own_out_since_ms = memory.attempted_ms = None
            return SiteDecision(site, "failed-over", f"every flow of {site} is failed over")
        if look.reached:
            decision = SiteDecision(site, "up", f"{site} answers")
            if memory.own_out_since_ms is not None and memory.said:
                decision.events.append(f"{site} answers again: no failover")
            memory.own_out_since_ms = memory.attempted_ms = None
            memory.said.clear()
            return decision
        if memory.own_out_since_ms is None:
            memory.own_out_since_ms = elapsed
        own_out_ms = elapsed - memory.own_out_since_ms
        live = [f for f in active if gives_view(f.view)]
        reaching = [f for f in live if mirror_out_since_ms(f.view) is None]
        if reaching:
            seen = reaching[0]
            reason = (f"{site} does not answer from here, but {seen.view.describe(site)} (flow {seen.flow}): a partition "
                      f"between the guard and {site}, not a lost site; no failover")
            return self._said(SiteDecision(site, "partitioned", reason), memory, "partitioned", reason)
        confirm_ms = int(self.policy.confirm_s * 1000)
        if not live:
            reason = (f"{site} does not answer from here and no live mirror of its flows gives a second view (a lost "
                      f"site and a partition look the same from here alone): waiting for a person "
                      f"(geokafka failover --site {site})")
            state: SiteState = "held" if own_out_ms >= confirm_ms else "suspect"
            return self._said(SiteDecision(site, state, reason), memory, state, reason)
        # the mirrors' looks are times of other processes: their wall clock is the only one to compare them on
        mirrors_out_ms = now - max(_or(mirror_out_since_ms(f.view), now) for f in live)
        if min(own_out_ms, mirrors_out_ms) < confirm_ms:
            reason = (f"{site} out of reach from here for {own_out_ms / 1000:.0f} s and from the mirrors of "
                      f"{_names(live)} for {mirrors_out_ms / 1000:.0f} s: lost once both reach "
                      f"{self.policy.confirm_s:.0f} s")
            return self._said(SiteDecision(site, "suspect", reason), memory, "suspect",
                              f"{site} out of reach from here and from the mirrors of {_names(live)}: lost if it lasts "
                              f"{self.policy.confirm_s:.0f} s")
        limit = self.policy.max_rpo_records
        over = [f for f in active if limit is None or f.rpo.records_upper is None or f.rpo.records_upper > limit]
        if over:
            reason = (f"{site} is lost, but {_over(over, limit)}: waiting for a person "
                      f"(geokafka failover --site {site} --dry-run shows what it would lose)")
            return self._said(SiteDecision(site, "held", reason), memory, "held", reason)
        names = [f.flow for f in active]
        bound = max(f.rpo.records_upper or 0 for f in active)
        lost = (f"{site} is lost: out of reach from here and from the mirrors for {self.policy.confirm_s:.0f} s or "
                f"more; a failover loses at most {bound:,} records per flow (limit {limit:,})")
        decision = SiteDecision(site, "lost", lost)
        due = memory.attempted_ms is None or elapsed - memory.attempted_ms >= RETRY_S * 1000
        if self.dry_run or not self.policy.automatic:
            decision.would_fail_over = names
            self._said(decision, memory, "lost", f"{lost}: would fail over {_names(active)}")
        elif due:
            decision.fail_over = names
            memory.attempted_ms = elapsed
            decision.events.append(f"{lost}: failing over {_names(active)}")
        else:
            decision.would_fail_over = names
        return decision

    @staticmethod
    def _said(decision: SiteDecision, memory: _SiteMemory, key: str, text: str) -> SiteDecision:
        if key not in memory.said:
            memory.said.add(key)
            decision.events.append(text)
        return decision


def _record_state(state: SiteState) -> str | None:
    return {"up": AutoFailover.CLEAR, "partitioned": AutoFailover.CLEAR, "suspect": AutoFailover.SUSPECT,
            "held": AutoFailover.HELD}.get(state)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _names(flows: list[FlowLook]) -> str:
    return ", ".join(f.flow for f in flows)


def _over(flows: list[FlowLook], limit: int | None) -> str:
    parts = []
    for f in flows:
        if f.rpo.records_upper is None:
            parts.append(f"flow {f.flow}'s RPO has no upper bound ({f.rpo.reason or f.rpo.headline()})")
        else:
            parts.append(f"flow {f.flow} could lose up to {f.rpo.records_upper:,} records (limit {limit:,})"
                         if limit is not None else "no max_rpo_records is set")
    return "; ".join(parts)
