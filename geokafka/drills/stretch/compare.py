"""Reality against the plan: the pure judgement at the end of a stretch drill.

A drill *disagrees* with the plan when:

* a partition the plan calls writable without manual action accepted no new write within the
  observation window (the plan was too optimistic), or one the plan says needs manual steps
  accepted new writes by itself (too pessimistic);
* the plan promised RPO 0 and an acknowledged record is missing from a partition that could
  be read back;
* the metadata quorum was (or was not) available, against the plan's quorum verdict;
* after the plan's manual steps were run, a partition that should have come back did not.

An RPO > 0 verdict with no record lost is not a disagreement: RPO > 0 is a worst case (an ISR
that had shrunk into the lost DC), which a healthy cluster does not hit every time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from geokafka.planning.verdicts import Verdict


@dataclass(frozen=True)
class PartitionObservation:
    """When one partition accepted writes again after the kill (None: not within the window)."""

    topic: str
    partition: int
    predicted_writable: bool
    resumed_after_s: float | None
    resumed_after_recovery_s: float | None = None


@dataclass(frozen=True)
class DrillObservation:
    """What the drill measured."""

    observe_s: float
    partitions: tuple[PartitionObservation, ...]
    acked: int
    acked_lost: int
    acked_unreadable: int
    quorum_available: bool | None
    recovered: bool = False


@dataclass(frozen=True)
class Comparison:
    """The judgement: ``agrees`` is False as soon as one disagreement is found."""

    disagreements: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def agrees(self) -> bool:
        """True if reality matched the plan on every point checked."""
        return not self.disagreements


def automatic_rto(obs: DrillObservation) -> float | None:
    """Seconds until every partition the plan calls writable accepted writes again, if they all did."""
    delays = [p.resumed_after_s for p in obs.partitions if p.predicted_writable]
    if not delays or any(d is None for d in delays):
        return None
    return max(d for d in delays if d is not None)


def compare(verdict: Verdict, obs: DrillObservation) -> Comparison:
    """Judge ``obs`` against ``verdict`` (see the module doc)."""
    bad: list[str] = []
    notes: list[str] = []
    name = verdict.failure.name
    for p in obs.partitions:
        label = f"{p.topic}-{p.partition}"
        if p.predicted_writable and p.resumed_after_s is None:
            bad.append(f"plan: {label} stays writable without manual action after losing {name}; "
                       f"drill: no write accepted within {obs.observe_s:.0f} s")
        elif not p.predicted_writable and p.resumed_after_s is not None:
            bad.append(f"plan: {label} needs manual steps after losing {name}; "
                       f"drill: writes resumed by themselves after {p.resumed_after_s:.1f} s")
    if verdict.rpo_zero and obs.acked_lost:
        bad.append(f"plan: RPO 0 when losing {name}; drill: {obs.acked_lost} of {obs.acked} acknowledged "
                   f"records are missing")
    if not verdict.rpo_zero and not obs.acked_lost:
        notes.append("no acknowledged record lost this time; the plan's RPO > 0 is a worst case (an ISR "
                     "that had shrunk into the lost DC), not a certainty")
    if obs.acked_unreadable:
        notes.append(f"{obs.acked_unreadable} acknowledged records sit in partitions that no client can read "
                     f"(no live leader, or a new leader whose high watermark cannot advance below "
                     f"min.insync.replicas), so they could not be checked: unreadable, not counted as lost")
    if obs.quorum_available is not None and obs.quorum_available != verdict.quorum_survives:
        said = "survives" if verdict.quorum_survives else "is lost"
        seen = "accepted" if obs.quorum_available else "refused"
        bad.append(f"plan: the KRaft quorum {said} when losing {name}; drill: the cluster {seen} a metadata change")
    if obs.recovered:
        offline = {(o.topic, o.partition) for o in verdict.outcomes if o.offline}
        for p in obs.partitions:
            if (p.topic, p.partition) in offline:
                continue
            if not p.predicted_writable and p.resumed_after_recovery_s is None:
                bad.append(f"plan: the manual steps restore writes to {p.topic}-{p.partition}; "
                           f"drill: still no write accepted after running them")
    return Comparison(tuple(bad), tuple(notes))
