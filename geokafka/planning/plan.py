"""The whole stretched-cluster plan: placement, quorum, verdicts, steps and advice, as data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from geokafka.planning.advice import Advice, advise
from geokafka.planning.layout import Layout, layout_of
from geokafka.planning.placement import (
    QuorumPlacement,
    TopicPlacement,
    confluent_placement,
    leaders_per_broker,
    place_quorum,
    place_topics,
    reassignment_json,
    replicas_per_broker,
)
from geokafka.planning.steps import failback_steps, failover_steps
from geokafka.planning.verdicts import Failure, Verdict, dc_failures, evaluate, node_failures
from geokafka.topology.schema import Stretch

_SEVERITY = {"uninterrupted": 0, "automatic": 1, "manual": 2, "outage": 3}


@dataclass(frozen=True)
class StretchPlan:
    """Everything ``geokafka plan`` reports; pure data, rendered by :mod:`geokafka.planning.render`."""

    layout: Layout
    quorum: QuorumPlacement
    topics: tuple[TopicPlacement, ...]
    dc_verdicts: tuple[Verdict, ...]
    node_verdicts: tuple[Verdict, ...]
    advice: tuple[Advice, ...]

    def verdict_for_dc(self, name: str) -> Verdict:
        """The verdict on losing DC ``name`` (:class:`TopologyError` if unknown)."""
        self.layout.dc(name)
        return next(v for v in self.dc_verdicts if v.failure.name == name)

    def most_interesting_dc(self) -> str:
        """The DC whose loss the plan finds worst: quorum loss, then writes, then RPO; first on ties.

        DCs without brokers come last: killing only controllers shows the least.
        """
        def rank(v: Verdict) -> tuple[int, int, int, int]:
            has_brokers = 1 if v.failure.brokers else 0
            return (has_brokers, 0 if v.quorum_survives else 1, _SEVERITY[v.writes], 0 if v.rpo_zero else 1)

        best = max(rank(v) for v in self.dc_verdicts)
        return next(v.failure.name for v in self.dc_verdicts if rank(v) == best)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``geokafka plan --json``."""
        return {
            "dcs": {
                dc.name: {"brokers": list(dc.brokers), "observer_brokers": list(dc.observers),
                          "controllers": list(dc.controllers)}
                for dc in self.layout.dcs
            },
            "quorum": self.quorum.to_dict(),
            "topics": {
                t.name: {
                    "partitions": t.config.partitions,
                    "replication_factor": t.config.replication_factor,
                    "min_insync_replicas": t.config.min_insync_replicas,
                    "acks": t.config.acks,
                    "unclean_leader_election": t.config.unclean_leader_election,
                    "replicas_per_dc": {
                        dc.name: list(t.replicas_in(self.layout, dc.name)) for dc in self.layout.dcs if dc.brokers
                    },
                    "observers": {str(p.partition): list(p.observers) for p in t.partitions if p.observers},
                    "confluent_placement": confluent_placement(self.layout, t),
                }
                for t in self.topics
            },
            "reassignment": reassignment_json(self.topics),
            "leaders_per_broker": {str(b): n for b, n in leaders_per_broker(self.layout, self.topics).items()},
            "replicas_per_broker": {str(b): n for b, n in replicas_per_broker(self.layout, self.topics).items()},
            "verdicts": {
                "dc": [verdict_dict(v) for v in self.dc_verdicts],
                "node": [verdict_dict(v) for v in self.node_verdicts],
            },
            "advice": [a.to_dict() for a in self.advice],
        }


def verdict_dict(v: Verdict) -> dict[str, Any]:
    """JSON shape of one verdict, partitions included."""
    return {
        "failure": {"kind": v.failure.kind, "name": v.failure.name, "dc": v.failure.dc,
                    "brokers": sorted(v.failure.brokers), "controllers": sorted(v.failure.controllers)},
        "quorum": {"survives": v.quorum_survives, "voters_left": v.voters_left, "voters": v.quorum.size,
                   "majority": v.quorum.majority},
        "writes": v.writes,
        "writable_partitions": v.writable_partitions,
        "partitions": len(v.outcomes),
        "rpo_zero": v.rpo_zero,
        "rto_zero": v.rto_zero,
        "leader_stall_s": None if v.leader_stall_s is None else list(v.leader_stall_s),
        "manual_action": bool(v.steps),
        "reasons": list(v.reasons),
        "steps": list(v.steps),
        "failback": list(v.failback),
        "partition_outcomes": [
            {"topic": o.topic, "partition": o.partition, "lost_replicas": o.lost_replicas,
             "surviving_replicas": o.surviving_replicas, "writable": o.writable, "rpo_zero": o.rpo_zero,
             "why": o.rpo_reason}
            for o in v.outcomes if o.affected
        ],
    }


def plan_stretch(stretch: Stretch) -> StretchPlan:
    """Plan ``stretch``: raises :class:`TopologyError` when its topics cannot be placed."""
    layout = layout_of(stretch)
    quorum = place_quorum(layout)
    topics = place_topics(layout)

    def judged(failures: list[Failure]) -> tuple[Verdict, ...]:
        out = []
        for failure in failures:
            v = evaluate(layout, quorum, topics, failure)
            v = v.with_steps(failover_steps(layout, v), ())
            out.append(v.with_steps(v.steps, failback_steps(layout, v)))
        return tuple(out)

    dc_verdicts = judged(dc_failures(layout))
    node_verdicts = judged(node_failures(layout))
    return StretchPlan(layout, quorum, topics, dc_verdicts, node_verdicts,
                       advise(layout, quorum, topics, dc_verdicts))
