"""What happens to every partition when one DC, one broker or one controller is lost.

The reasoning, for a KRaft cluster with ``broker.rack`` = DC:

* **Quorum.** The controllers survive a loss iff the surviving voters are a strict majority of
  all voters (static voter set). Without a quorum nothing in the metadata can change: no
  leader election, no ISR change, no config change (not even lowering min.insync.replicas).
* **Availability** (assuming the ISR was complete when the failure hit, the normal state):

  - no synchronous replica survives: the partition is offline until the DC returns;
  - no quorum: a partition whose leader died stays leaderless; a partition whose leader lives
    but lost a follower cannot drop it from the ISR, so ``acks=all`` writes wait for a replica
    that never answers (they time out); ``acks=1``/``0`` writes are accepted by the leader but
    the high watermark is frozen, so consumers do not see them;
  - quorum alive: the controller fences the lost brokers (``broker.session.timeout.ms``, 9 s by
    default), elects leaders among the surviving ISR members and shrinks the ISR. ``acks=all``
    writes then succeed iff the surviving ISR still has min.insync.replicas members, or, with
    Confluent observers and automatic observer promotion, iff surviving replicas plus caught-up
    observers reach it. Otherwise producers get NOT_ENOUGH_REPLICAS until someone lowers
    min.insync.replicas.

* **Durability (RPO)**, over every state the configuration permits, not only the healthy one:
  with ``acks=all`` a record is acknowledged once every ISR member has it, and the ISR may
  legally shrink to min.insync.replicas members (slow WAN followers drop out first). So an
  acked record is guaranteed to survive the loss of ``k`` of its replicas iff
  ``min.insync.replicas > k``; when the k lost replicas are all those of one DC, that is "acked
  data always spans two DCs". Observers are asynchronous and never guarantee anything.
  Unclean leader election may elect a replica that missed acked records, so it voids the
  guarantee. ``acks=1`` acknowledges once the leader alone has the record; ``acks=0`` never
  acknowledges: any loss of a replica can lose records.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from geokafka.planning.layout import Layout
from geokafka.planning.placement import PartitionPlacement, QuorumPlacement, TopicPlacement
from geokafka.topology.schema import StretchTopic

FailureKind = Literal["dc", "broker", "controller"]
Writes = Literal["uninterrupted", "automatic", "manual", "outage"]

LEADER_STALL_S = (9.0, 15.0)
"""Expected stop of a partition whose leader is lost: the broker session time-out, then the election."""
"""How writes fare: never stop; stop until the controller reacts; need manual steps; cannot be restored
without the lost DC (no surviving replica)."""


@dataclass(frozen=True)
class Failure:
    """A set of nodes lost at once."""

    kind: FailureKind
    name: str
    dc: str
    brokers: frozenset[int]
    controllers: frozenset[int]


@dataclass(frozen=True)
class PartitionOutcome:
    """One partition after a failure, once the controller (if any) has reacted."""

    topic: str
    partition: int
    lost_replicas: int
    surviving_replicas: int
    surviving_observers: int
    leader_lost: bool
    writable: bool
    via_observer_promotion: bool
    below_min_isr: bool
    frozen_high_watermark: bool
    rpo_zero: bool
    rpo_reason: str

    @property
    def affected(self) -> bool:
        """True if the partition lost a synchronous replica."""
        return self.lost_replicas > 0

    @property
    def offline(self) -> bool:
        """True if no synchronous replica survives."""
        return self.surviving_replicas == 0


@dataclass(frozen=True)
class Verdict:
    """The verdict on one failure: quorum, writes, RPO, RTO, and the steps it takes."""

    failure: Failure
    voters_left: int
    quorum: QuorumPlacement
    outcomes: tuple[PartitionOutcome, ...]
    writes: Writes
    reasons: tuple[str, ...]
    steps: tuple[str, ...] = ()
    failback: tuple[str, ...] = ()

    @property
    def quorum_survives(self) -> bool:
        """True if the surviving controllers are a strict majority of the voters."""
        return self.voters_left >= self.quorum.majority

    @property
    def rpo_zero(self) -> bool:
        """True if no acknowledged record can be lost, in any state the configuration allows."""
        return all(o.rpo_zero for o in self.outcomes)

    @property
    def rto_zero(self) -> bool:
        """True if writes continue, or resume without anyone doing anything."""
        return self.writes in ("uninterrupted", "automatic")

    @property
    def leader_stall_s(self) -> tuple[float, float] | None:
        """How long partitions led in the lost set stop, when writes come back by themselves.

        A lost leader is replaced once the controller fences its broker (broker.session.timeout.ms,
        9 s by default) and elects a new one; the 3-DC drill measured 12-14 s. None when no
        partition loses its leader, or when writes need a person (RTO > 0).
        """
        if not self.rto_zero or not any(o.leader_lost for o in self.outcomes):
            return None
        return LEADER_STALL_S

    @property
    def writable_partitions(self) -> int:
        """Partitions that accept writes without manual action."""
        return sum(1 for o in self.outcomes if o.writable)

    def with_steps(self, steps: tuple[str, ...], failback: tuple[str, ...]) -> Verdict:
        """A copy carrying its failover and failback steps."""
        return Verdict(self.failure, self.voters_left, self.quorum, self.outcomes, self.writes, self.reasons,
                       steps, failback)


def dc_failures(layout: Layout) -> list[Failure]:
    """The loss of each DC, every process in it."""
    return [
        Failure("dc", dc.name, dc.name, frozenset(dc.brokers + dc.observers), frozenset(dc.controllers))
        for dc in layout.dcs
    ]


def node_failures(layout: Layout) -> list[Failure]:
    """The loss of each single broker (observer brokers included) and of each single controller."""
    out = [
        Failure("broker", f"broker {b}", layout.dc_of(b), frozenset({b}), frozenset())
        for b in layout.brokers + layout.observer_brokers
    ]
    out += [Failure("controller", f"controller {c}", layout.dc_of(c), frozenset(), frozenset({c}))
            for c in layout.controllers]
    return out


def evaluate_partition(p: PartitionPlacement, topic: StretchTopic, failure: Failure, quorum_ok: bool) -> PartitionOutcome:
    """The outcome of ``failure`` for one partition (see the module doc for the reasoning)."""
    lost = sum(1 for r in p.replicas if r in failure.brokers)
    alive = len(p.replicas) - lost
    observers_alive = sum(1 for o in p.observers if o not in failure.brokers)
    leader_lost = p.leader in failure.brokers
    m = topic.min_insync_replicas
    rpo_zero, rpo_reason = _durability(topic, lost, alive)
    writable = via_observers = below = frozen = False
    if alive == 0:
        pass
    elif lost == 0:
        writable = True
    elif not quorum_ok:
        if not leader_lost and topic.acks != "all":
            writable = frozen = True
    elif topic.acks != "all" or alive >= m:
        writable = True
    elif p.observers and alive + observers_alive >= m:
        writable = via_observers = True
    else:
        below = True
    return PartitionOutcome(
        topic=p.topic, partition=p.partition, lost_replicas=lost, surviving_replicas=alive,
        surviving_observers=observers_alive, leader_lost=leader_lost, writable=writable,
        via_observer_promotion=via_observers, below_min_isr=below, frozen_high_watermark=frozen,
        rpo_zero=rpo_zero, rpo_reason=rpo_reason,
    )


def _durability(topic: StretchTopic, lost: int, alive: int) -> tuple[bool, str]:
    m = topic.min_insync_replicas
    if lost == 0:
        return True, "no replica lost"
    if alive == 0:
        return False, "no replica survives"
    if topic.acks == "0":
        return False, "acks=0: producers never learn whether a record was written"
    if topic.acks == "1":
        return False, "acks=1: a record is acked once the leader alone has it"
    if topic.unclean_leader_election:
        return False, "unclean leader election may elect a replica that missed acked records"
    if m > lost:
        return True, f"every acked record is on >= {m} replicas (min.insync.replicas), at most {lost} lost"
    return False, (
        f"min.insync.replicas={m} <= {lost} lost replicas: a record acked while the ISR had shrunk "
        f"to those replicas exists nowhere else"
    )


def evaluate(layout: Layout, quorum: QuorumPlacement, topics: tuple[TopicPlacement, ...], failure: Failure) -> Verdict:
    """The verdict on ``failure``, without its steps (see :mod:`geokafka.planning.steps`)."""
    voters_left = quorum.size - len(failure.controllers)
    quorum_ok = quorum.survives(len(failure.controllers))
    outcomes = tuple(
        evaluate_partition(p, t.config, failure, quorum_ok) for t in topics for p in t.partitions
    )
    affected = [o for o in outcomes if o.affected]
    if any(o.offline for o in outcomes):
        writes: Writes = "outage"
    elif not all(o.writable for o in outcomes) or (not quorum_ok and affected):
        writes = "manual"
    elif affected:
        writes = "automatic"
    else:
        writes = "uninterrupted"
    return Verdict(failure, voters_left, quorum, outcomes, writes, _reasons(quorum, voters_left, outcomes))


def _reasons(quorum: QuorumPlacement, voters_left: int, outcomes: tuple[PartitionOutcome, ...]) -> tuple[str, ...]:
    total = len(outcomes)
    reasons = []
    if voters_left >= quorum.majority:
        reasons.append(f"quorum survives: {voters_left} of {quorum.size} voters left, majority {quorum.majority}")
    else:
        reasons.append(
            f"quorum lost: {voters_left} of {quorum.size} voters left, majority {quorum.majority}: "
            f"no leader election, ISR or config change until it is restored"
        )
    offline = sum(1 for o in outcomes if o.offline)
    leaderless = sum(1 for o in outcomes if o.leader_lost and not o.offline and not o.writable)
    stuck = sum(1 for o in outcomes if o.affected and not o.leader_lost and not o.writable and not o.offline)
    below = [o for o in outcomes if o.below_min_isr]
    promoted = sum(1 for o in outcomes if o.via_observer_promotion)
    frozen = sum(1 for o in outcomes if o.frozen_high_watermark)
    if offline:
        reasons.append(f"{offline}/{total} partitions have no surviving replica: offline")
    if voters_left < quorum.majority and leaderless:
        reasons.append(f"{leaderless}/{total} partitions lost their leader and cannot elect another")
    if voters_left < quorum.majority and stuck:
        reasons.append(
            f"{stuck}/{total} partitions keep their leader but cannot drop the lost replicas from the ISR: "
            f"acks=all writes time out"
        )
    if below:
        needs = sorted({(o.topic, o.surviving_replicas) for o in below})
        detail = ", ".join(f"{t}: {n} left" for t, n in needs)
        reasons.append(f"{len(below)}/{total} partitions fall below min.insync.replicas ({detail}): NOT_ENOUGH_REPLICAS")
        moved = sum(1 for o in below if o.leader_lost)
        if moved:
            reasons.append(
                f"{moved}/{total} of them get a new leader whose high watermark cannot advance below "
                f"min.insync.replicas (KIP-966): consumers cannot read them either until it is lowered"
            )
    if promoted:
        reasons.append(f"{promoted}/{total} partitions stay writable only by automatic observer promotion (Confluent Server)")
    if frozen:
        reasons.append(f"{frozen}/{total} partitions accept acks=1/0 writes but their high watermark is frozen")
    affected = sum(1 for o in outcomes if o.affected)
    if affected and all(o.writable for o in outcomes) and voters_left >= quorum.majority:
        reasons.append(
            f"{affected}/{total} partitions lose a replica; writes resume once the controller fences the lost "
            f"brokers (broker.session.timeout.ms, 9 s by default)"
        )
    if not affected:
        reasons.append("no partition loses a replica")
    lossy = Counter(o.rpo_reason for o in outcomes if not o.rpo_zero)
    for reason, n in lossy.items():
        reasons.append(f"RPO > 0 for {n}/{total} partitions: {reason}")
    return tuple(reasons)
