"""Where replicas, leaders and KRaft voters go in a stretched cluster (rack = DC).

Replica assignment follows the reasoning of the seed "Kafka Stretch Clusters" and of Kafka's
own rack-aware assignor: replicas of a partition on distinct brokers, spread over the DCs as
evenly as the broker counts allow, preferred leaders rotating over a DC-alternating broker
list so that every broker leads the same number of partitions. When the replication factor
does not divide over the DCs, the DC holding the extra replica rotates with the leader, so the
imbalance moves from partition to partition instead of always hitting the same DC.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from geokafka.planning.layout import Layout
from geokafka.topology.schema import StretchTopic


@dataclass(frozen=True)
class PartitionPlacement:
    """The replicas of one partition; ``replicas[0]`` is its preferred leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    observers: tuple[int, ...] = ()

    @property
    def leader(self) -> int:
        """The preferred leader."""
        return self.replicas[0]


@dataclass(frozen=True)
class TopicPlacement:
    """One topic, its settings and the placement of each partition."""

    name: str
    config: StretchTopic
    partitions: tuple[PartitionPlacement, ...]

    def replicas_in(self, layout: Layout, dc: str) -> tuple[int, int]:
        """(fewest, most) synchronous replicas that a partition of this topic has in ``dc``."""
        members = set(layout.dc(dc).brokers)
        counts = [sum(1 for r in p.replicas if r in members) for p in self.partitions]
        return min(counts), max(counts)


@dataclass(frozen=True)
class QuorumPlacement:
    """The KRaft controller quorum: voter ids per DC and the majority it needs."""

    voters: dict[str, tuple[int, ...]]

    @property
    def size(self) -> int:
        """Number of voters."""
        return sum(len(v) for v in self.voters.values())

    @property
    def majority(self) -> int:
        """Voters that must be alive for the quorum to elect a leader and commit."""
        return self.size // 2 + 1

    @property
    def tolerated(self) -> int:
        """How many voters can fail with the quorum surviving."""
        return self.size - self.majority

    def survives(self, lost_voters: int) -> bool:
        """True if the quorum keeps a strict majority after losing ``lost_voters``."""
        return self.size - lost_voters >= self.majority

    def to_dict(self) -> dict[str, object]:
        """JSON shape."""
        return {
            "voters": {dc: list(ids) for dc, ids in self.voters.items()},
            "size": self.size,
            "majority": self.majority,
            "tolerated_voter_failures": self.tolerated,
        }


def place_quorum(layout: Layout) -> QuorumPlacement:
    """The controller quorum as the topology declares it, DC by DC."""
    return QuorumPlacement({dc.name: dc.controllers for dc in layout.dcs if dc.controllers})


def place_topics(layout: Layout) -> tuple[TopicPlacement, ...]:
    """Rack-aware assignment of every topic; topics continue the leader rotation of the previous one."""
    load: Counter[int] = Counter()
    start = 0
    placed = []
    for name, topic in layout.topics.items():
        placed.append(place_topic(layout, name, topic, start, load))
        start += topic.partitions
    return tuple(placed)


def place_topic(
    layout: Layout, name: str, topic: StretchTopic, start: int = 0, load: Counter[int] | None = None
) -> TopicPlacement:
    """Assign the partitions of one topic; ``load`` (replicas per broker so far) is updated."""
    load = Counter() if load is None else load
    dcs = [dc for dc in layout.dcs if dc.brokers]
    alternated = rack_alternated(dc.brokers for dc in dcs)
    dc_index = {b: i for i, dc in enumerate(dcs) for b in dc.brokers}
    partitions = []
    for p in range(topic.partitions):
        g = start + p
        leader = alternated[g % len(alternated)]
        first_dc = dc_index[leader]
        order = [dcs[(first_dc + i) % len(dcs)] for i in range(len(dcs))]
        counts = _spread(topic.replication_factor, [len(dc.brokers) for dc in order])
        chosen: list[list[int]] = []
        for dc, count in zip(order, counts, strict=True):
            members = [leader] if dc is order[0] else []
            candidates = [b for b in dc.brokers if b not in members]
            rank = {b: i for i, b in enumerate(dc.brokers)}
            candidates.sort(key=lambda b: (load[b], (rank[b] - g) % len(dc.brokers)))
            members += candidates[: count - len(members)]
            chosen.append(members)
        replicas = _interleave(chosen)
        load.update(replicas)
        observers = tuple(o for dc in layout.dcs for o in dc.observers)
        partitions.append(PartitionPlacement(name, p, replicas, observers))
    return TopicPlacement(name, topic, tuple(partitions))


def rack_alternated(brokers_per_rack: Iterable[tuple[int, ...]]) -> list[int]:
    """Brokers ordered rack by rack in turn: [r1b1, r2b1, r3b1, r1b2, ...] (as Kafka's assignor)."""
    racks = [list(b) for b in brokers_per_rack]
    out: list[int] = []
    for i in range(max((len(r) for r in racks), default=0)):
        out += [rack[i] for rack in racks if i < len(rack)]
    return out


def _spread(replicas: int, capacity: list[int]) -> list[int]:
    """Replicas per DC: one per DC in turn (first DC first), never more than the DC's brokers."""
    counts = [0] * len(capacity)
    left = replicas
    while left:
        for i, cap in enumerate(capacity):
            if left and counts[i] < cap:
                counts[i] += 1
                left -= 1
    return counts


def _interleave(per_dc: list[list[int]]) -> tuple[int, ...]:
    """Replica list: the leader, then one replica per DC in turn, so failover leaders alternate DCs."""
    out: list[int] = []
    for i in range(max(len(x) for x in per_dc)):
        out += [members[i] for members in per_dc if i < len(members)]
    return tuple(out)


def reassignment_json(topics: Iterable[TopicPlacement]) -> dict[str, object]:
    """The assignment as ``kafka-reassign-partitions --reassignment-json-file`` reads it.

    Only synchronous replicas: Apache Kafka has no observers (see :func:`confluent_placement`).
    """
    return {
        "version": 1,
        "partitions": [
            {"topic": t.name, "partition": p.partition, "replicas": list(p.replicas)}
            for t in topics
            for p in t.partitions
        ],
    }


def confluent_placement(layout: Layout, topic: TopicPlacement) -> dict[str, object] | None:
    """``confluent.placement.constraints`` of a topic with observers (Confluent Server), else None.

    None as well when the replicas do not divide evenly over the DCs: constraints fix one
    count per rack, so the rotating extra replica cannot be expressed.
    """
    if not layout.observer_brokers:
        return None
    replicas = []
    for dc in layout.dcs:
        low, high = topic.replicas_in(layout, dc.name) if dc.brokers else (0, 0)
        if low != high:
            return None
        if high:
            replicas.append({"count": high, "constraints": {"rack": dc.name}})
    observers = [
        {"count": len(dc.observers), "constraints": {"rack": dc.name}} for dc in layout.dcs if dc.observers
    ]
    return {"version": 2, "replicas": replicas, "observers": observers,
            "observerPromotionPolicy": "under-min-isr"}


def leaders_per_broker(layout: Layout, topics: Iterable[TopicPlacement]) -> dict[int, int]:
    """Preferred leaderships of each synchronous broker."""
    counts = {b: 0 for b in layout.brokers}
    for topic in topics:
        for p in topic.partitions:
            counts[p.leader] += 1
    return counts


def replicas_per_broker(layout: Layout, topics: Iterable[TopicPlacement]) -> dict[int, int]:
    """Synchronous replicas held by each broker."""
    counts = {b: 0 for b in layout.brokers}
    for topic in topics:
        for p in topic.partitions:
            for r in p.replicas:
                counts[r] += 1
    return counts
