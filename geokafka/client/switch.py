"""When a following client switches clusters (pure), and the event that says it did."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from geokafka.client.placement import Placement


class Step(enum.Enum):
    """What a following consumer does next."""

    STAY = "stay"
    """The flow is where the consumer is."""
    WAIT = "wait"
    """The flow moved, and the command moving it has not moved the consumer groups yet: stop reading, wait."""
    SWITCH = "switch"
    """Close at the old cluster, resume at the new one."""


def consumer_step(current: Placement | None, observed: Placement, observed_since: float, now: float,
                  settle_timeout_s: float) -> Step:
    """The consumer's next step, given where it consumes (None: nowhere yet) and the flow's latest placement.

    A group resumes at the new cluster from the offsets the failover moved it to, so a consumer waits
    until the failover has moved them (joining the group there earlier would make the failover leave
    it alone, as a group in use). It waits at most ``settle_timeout_s`` after the move was first seen:
    a failover that died half-way moved nothing, and the group then resumes from what the flow's offset
    sync committed earlier, or the earliest records: more duplicates, nothing skipped.
    """
    if current is not None and current.site_key == observed.site_key:
        return Step.STAY
    if observed.settled or now - observed_since >= settle_timeout_s:
        return Step.SWITCH
    return Step.WAIT


@dataclass(frozen=True)
class Switch:
    """A following client moved from one cluster to another (given to ``on_switch`` and logged)."""

    flow: str
    client: str
    """``consumer <group>`` or ``producer``."""
    from_cluster: str
    to_cluster: str
    placement: Placement
    topics: tuple[str, ...] = ()
    """A consumer's subscription at ``to_cluster``."""
    waited_s: float = 0.0
    """How long a consumer stopped reading while the failover moved its group."""

    @property
    def groups_moved(self) -> bool:
        """The move's command had moved the consumer groups when the client switched."""
        return self.placement.settled

    def describe(self) -> str:
        """The log line: what happened and where the client is now."""
        text = (f"flow {self.flow}: {self.client} switched from {self.from_cluster} to {self.to_cluster}: the flow is "
                f"{self.placement.describe()}")
        if self.topics:
            offsets = ("the offsets it moved the group to" if self.groups_moved else
                       "what the group committed there before (the move did not finish in time: duplicates likely)")
            text += f"; reading {', '.join(self.topics)} from {offsets}"
            if self.waited_s >= 0.05:
                text += f", after waiting {self.waited_s:.1f} s for it"
        return text
