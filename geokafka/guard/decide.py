"""The guard's decisions, from observations alone (no I/O, the clock is the observation's).

A **DC is out** when every one of its brokers is out: unreachable on its client port, or fenced
by the controller. It is **lost** once it has been out for ``grace_s`` without a break: a single
broker's loss never makes a DC out, and a DC back within the grace period (a flap, a rolling
restart) is never lost.

On a lost DC the guard acts only when all of these hold, and otherwise says why, once:

* the plan says the controller quorum survives the loss of that DC, and the cluster agrees:
  the lost brokers are fenced (only a live quorum fences brokers; without one they stay
  registered forever and nothing can be changed: that needs a person and the plan's steps);
* a topic has partitions with a leader whose ISR is smaller than its min.insync.replicas, so
  ``acks=all`` writes to it fail with NOT_ENOUGH_REPLICAS. Its min.insync.replicas is lowered
  to the smallest such ISR (never below 1). Every acknowledged record is in the surviving ISR
  (that is what the ISR means), so nothing acknowledged is lost; records acknowledged while it
  is lowered have fewer copies, which is what the plan's manual step accepts too. Partitions
  without a leader (no surviving replica) cannot be helped, and unclean leader election is
  never enabled.

When the DC is back (every broker live and reachable) and every partition of a lowered topic
has its full replica set in the ISR again, the guard restores min.insync.replicas (unless
someone changed it meanwhile: then it is left alone and said) and elects the preferred leaders.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from geokafka.guard.model import Action, Broker, ClusterView, DcState, GuardMemory, Lowered


@dataclass(frozen=True)
class GuardSettings:
    """How patient the guard is."""

    grace_s: float = 30.0
    """A DC must be out this long, without a break, to count as lost."""


@dataclass
class Decision:
    """What one observation leads to."""

    actions: list[Action] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    dcs: dict[str, DcState] = field(default_factory=dict)


def is_internal(topic: str) -> bool:
    """Kafka's and geokafka's own topics, which the guard leaves to the broker's defaults."""
    return topic.startswith("__")


class DcLossPolicy:
    """Turns observations into actions; keeps its memory between them (see module doc)."""

    def __init__(self, brokers: Mapping[int, Broker], quorum_survives: Mapping[str, bool], settings: GuardSettings,
                 memory: GuardMemory | None = None) -> None:
        self.brokers = dict(brokers)
        self.quorum_survives = dict(quorum_survives)
        self.settings = settings
        self.memory = memory or GuardMemory()

    def dcs(self) -> dict[str, list[int]]:
        """DC -> its broker ids."""
        out: dict[str, list[int]] = {}
        for broker in self.brokers.values():
            out.setdefault(broker.dc, []).append(broker.id)
        return {dc: sorted(ids) for dc, ids in sorted(out.items())}

    def decide(self, view: ClusterView) -> Decision:
        """The actions and events of one observation."""
        decision = Decision()
        for dc, ids in self.dcs().items():
            decision.dcs[dc] = self._dc_state(view, dc, ids)
        for dc, state in decision.dcs.items():
            if state == "lost":
                self._on_lost(view, dc, decision)
        self._restore(view, decision)
        return decision

    # -- DC states ---------------------------------------------------------------------------

    def _dc_state(self, view: ClusterView, dc: str, ids: list[int]) -> DcState:
        out = all(b not in view.live or b not in view.reachable for b in ids)
        if not out:
            self.memory.out_since_ms.pop(dc, None)
            self._forget(dc)
            back = any(low.dc == dc for low in self.memory.lowered.values())
            return "returning" if back else "up"
        since = self.memory.out_since_ms.setdefault(dc, view.elapsed_ms)
        return "lost" if view.elapsed_ms - since >= self.settings.grace_s * 1000 else "suspect"

    def _on_lost(self, view: ClusterView, dc: str, decision: Decision) -> None:
        ids = self.dcs()[dc]
        if not self.quorum_survives.get(dc, True):
            self._say(decision, f"quorum:{dc}", f"{dc} is lost and with it the controller quorum (per the plan): "
                      "nothing can be changed without a person; run the plan's steps (geokafka plan)")
            return
        still_registered = sorted(b for b in ids if b in view.live)
        if still_registered:
            self._say(decision, f"fencing:{dc}", f"{dc} is lost but brokers {still_registered} are still registered: "
                      "the controller quorum is not fencing them (lost?); no action, a person must look")
            return
        self._say(decision, f"lost:{dc}", f"{dc} is lost: brokers {ids} out for {self.settings.grace_s:.0f} s or more")
        for topic in sorted({p.topic for p in view.partitions if not is_internal(p.topic)}):
            self._lower(view, dc, topic, decision)

    def _lower(self, view: ClusterView, dc: str, topic: str, decision: Decision) -> None:
        current = view.min_isr.get(topic)
        if current is None:
            return
        starved = [p for p in view.topic(topic) if p.leader >= 0 and len(p.isr) < current]
        offline = [p.partition for p in view.topic(topic) if p.leader < 0]
        if offline:
            self._say(decision, f"offline:{topic}", f"{topic} partitions {offline} have no surviving replica: they "
                      f"stay offline until {dc} returns")
        if not starved:
            return
        target = max(1, min(len(p.isr) for p in starved))
        before = self.memory.lowered.get(topic)
        if target >= current or (before is not None and before.lowered == target):
            return
        original = before.original if before is not None else current
        decision.actions.append(Action(
            "lower-min-isr", topic, dc, target, current,
            f"{dc} lost: {len(starved)} partitions of {topic} have {target} in-sync replicas, below "
            f"min.insync.replicas {current}; acks=all writes resume at {target}"))
        self.memory.lowered[topic] = Lowered(topic, dc, original, target, view.at_ms)

    def failed(self, action: Action) -> None:
        """``action`` could not be applied: decide it again next time."""
        if action.kind == "lower-min-isr":
            self.memory.lowered.pop(action.topic, None)

    def simulated(self, action: Action) -> None:
        """``action`` was only said (a dry run): the cluster keeps its setting, and the guard remembers it did
        not change it (so the DC's return is not mistaken for someone else's change)."""
        low = self.memory.lowered.get(action.topic)
        if action.kind == "lower-min-isr" and low is not None:
            self.memory.lowered[action.topic] = replace(low, applied=False)

    # -- return ------------------------------------------------------------------------------

    def _restore(self, view: ClusterView, decision: Decision) -> None:
        for topic, low in sorted(self.memory.lowered.items()):
            if decision.dcs.get(low.dc) not in ("up", "returning"):
                continue
            parts = view.topic(topic)
            if not parts or any(set(p.isr) != set(p.replicas) for p in parts):
                continue  # the DC's replicas are still catching up
            del self.memory.lowered[topic]
            current = view.min_isr.get(topic)
            expected = low.lowered if low.applied else low.original  # a dry run changed nothing
            if current != expected:
                set_by = f"the {low.lowered} the guard set" if low.applied else f"the {low.original} it had"
                decision.events.append(f"{topic}: min.insync.replicas is {current}, not {set_by}: someone changed "
                                       "it, so it is left alone")
                continue
            decision.actions.append(Action(
                "restore-min-isr", topic, low.dc, low.original, low.lowered,
                f"{low.dc} is back and every replica of {topic} is in sync again"))
            if any(p.leader != p.replicas[0] for p in parts if p.replicas):
                decision.actions.append(Action("elect-preferred-leaders", topic, low.dc, None, None,
                                               f"leaders of {topic} back to their preferred replicas"))

    # -- saying things once -------------------------------------------------------------------

    def _say(self, decision: Decision, key: str, text: str) -> None:
        if key not in self.memory.said:
            self.memory.said.add(key)
            decision.events.append(text)

    def _forget(self, dc: str) -> None:
        """``dc`` is back: what was said about its loss may be said again next time."""
        self.memory.said -= {k for k in self.memory.said if k.endswith(f":{dc}") or k.startswith("offline:")}
