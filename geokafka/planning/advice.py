"""Warnings and recommendations on a stretched layout, each with the value that triggers it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from geokafka.planning.layout import Layout
from geokafka.planning.placement import QuorumPlacement, TopicPlacement, leaders_per_broker
from geokafka.planning.verdicts import Verdict

Level = Literal["warning", "recommendation"]


@dataclass(frozen=True)
class Advice:
    """One finding: ``code`` is stable for scripts, ``message`` is for people."""

    level: Level
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """JSON shape."""
        return {"level": self.level, "code": self.code, "message": self.message}


def advise(
    layout: Layout, quorum: QuorumPlacement, topics: tuple[TopicPlacement, ...], dc_verdicts: tuple[Verdict, ...]
) -> tuple[Advice, ...]:
    """Every warning first, then every recommendation."""
    found = _layout_advice(layout, quorum) + _topic_advice(layout, topics) + _verdict_advice(dc_verdicts)
    found += _general_advice(layout, topics)
    return tuple(sorted(found, key=lambda a: a.level != "warning"))


def _layout_advice(layout: Layout, quorum: QuorumPlacement) -> list[Advice]:
    out: list[Advice] = []
    broker_dcs = [dc for dc in layout.dcs if dc.brokers]
    if len(layout.dcs) == 1:
        out.append(Advice("warning", "single-dc",
                          f"one DC ({layout.dcs[0].name}): node failures are covered, the loss of the DC is an "
                          f"outage; stretch over 3 DCs or replicate to another cluster (flows:)"))
    elif len(broker_dcs) == 1:
        out.append(Advice("warning", "brokers-in-one-dc",
                          f"every broker is in {broker_dcs[0].name}: controllers elsewhere keep the metadata quorum, "
                          f"but losing {broker_dcs[0].name} loses every replica (an outage, and the data unless its "
                          f"disks come back); put brokers in a second DC"))
    if quorum.size == 1:
        out.append(Advice("warning", "single-voter", "one KRaft controller: losing it freezes all metadata"))
    elif quorum.size % 2 == 0:
        out.append(Advice("recommendation", "even-quorum",
                          f"{quorum.size} voters tolerate {quorum.tolerated} failure(s), as {quorum.size - 1} would"))
    for dc in layout.dcs:
        if len(layout.dcs) > 1 and not quorum.survives(len(dc.controllers)):
            share = f"{len(dc.controllers)} of {quorum.size} voters, majority {quorum.majority}"
            out.append(Advice("warning", "quorum-depends-on-dc",
                              f"{dc.name} holds {share}: losing {dc.name} loses the quorum (manual recovery, "
                              f"RTO > 0); put a tie-breaker controller in a third site (2.5 DCs)"))
    if len(broker_dcs) > 1:
        out.append(Advice("recommendation", "wan-latency",
                          "keep DC-to-DC latency low and stable (single-digit ms): acks=all waits for the "
                          "farthest in-sync replica, and slow followers drop out of the ISR"))
    if layout.observer_brokers:
        out.append(Advice("recommendation", "observers",
                          "observers are a Confluent Server feature (Apache Kafka has no asynchronous replicas): "
                          "they never count for acks=all, so they never lower the RPO; with automatic observer "
                          "promotion they restore writes when a partition falls below min.insync.replicas"))
    return out


def _topic_advice(layout: Layout, topics: tuple[TopicPlacement, ...]) -> list[Advice]:
    out: list[Advice] = []
    broker_dcs = [dc for dc in layout.dcs if dc.brokers]
    for t in topics:
        c = t.config
        if c.replication_factor == 1:
            out.append(Advice("warning", "no-redundancy", f"{t.name}: replication_factor 1, any broker loss loses data"))
        if c.acks != "all":
            out.append(Advice("warning", "acks-not-all",
                              f"{t.name}: acks={c.acks}: records are acked before they are replicated; the loss of "
                              f"a leader can lose acked records (RPO > 0). Use acks=all"))
        if c.unclean_leader_election:
            out.append(Advice("warning", "unclean-election",
                              f"{t.name}: unclean.leader.election.enable=true elects out-of-sync replicas and "
                              f"loses acked records; leave it off and elect uncleanly by hand when you must"))
        if c.acks == "all" and c.min_insync_replicas == 1 and c.replication_factor > 1:
            out.append(Advice("warning", "min-isr-one",
                              f"{t.name}: min.insync.replicas=1: a record can be acked by the leader alone; "
                              f"any single broker loss can lose it"))
        if c.acks == "all" and len(broker_dcs) > 1:
            for dc in broker_dcs:
                _, most = t.replicas_in(layout, dc.name)
                if most >= c.min_insync_replicas and most < c.replication_factor:
                    out.append(Advice(
                        "warning", "acked-data-in-one-dc",
                        f"{t.name}: min.insync.replicas={c.min_insync_replicas} <= {most} replicas in {dc.name}: "
                        f"an acked record can live in {dc.name} only, so losing {dc.name} can lose it (RPO > 0). "
                        f"Raise min.insync.replicas to {most + 1} or spread replicas over more DCs"))
        if len(broker_dcs) > 1 and c.replication_factor > 1:
            if c.replication_factor % len(broker_dcs):
                out.append(Advice(
                    "warning", "rf-uneven",
                    f"{t.name}: replication_factor {c.replication_factor} does not divide over {len(broker_dcs)} "
                    f"DCs with brokers: some partitions hold more replicas in one DC than in another, so each DC "
                    f"loss hurts a different subset of partitions"))
        if len(broker_dcs) > 1 and c.replication_factor < len(broker_dcs):
            out.append(Advice("recommendation", "rf-below-dcs",
                              f"{t.name}: replication_factor {c.replication_factor} < {len(broker_dcs)} DCs: each "
                              f"partition lives in {c.replication_factor} of them"))
    leaders = leaders_per_broker(layout, topics)
    if leaders and max(leaders.values()) - min(leaders.values()) > 1:
        out.append(Advice("recommendation", "leader-balance",
                          f"preferred leaders per broker range from {min(leaders.values())} to "
                          f"{max(leaders.values())}: use a partition count that is a multiple of {len(leaders)}"))
    return out


def _verdict_advice(dc_verdicts: tuple[Verdict, ...]) -> list[Advice]:
    stopped = [v.failure.name for v in dc_verdicts
               if v.quorum_survives and v.rpo_zero and any(o.below_min_isr for o in v.outcomes)]
    if not stopped:
        return []
    return [Advice(
        "recommendation", "consistency-vs-availability",
        f"losing {' or '.join(stopped)} keeps every acked record (min.insync.replicas spans the DCs) but stops "
        f"acks=all writes until min.insync.replicas is lowered by hand. For automatic failover with RPO 0, "
        f"put brokers in a third DC (RF 3, min.isr 2) or add observers with automatic observer promotion "
        f"(Confluent Server); lowering min.insync.replicas in advance trades RPO 0 away; `geokafka guard` "
        f"lowers it automatically after the DC is confirmed lost and restores it when the DC is back"),
        Advice(
        "recommendation", "producer-request-timeout",
        "producers: request.timeout.ms 10000 or less (delivery.timeout.ms long): an acks=all request the leader "
        "accepted before the DC loss waits for its whole request timeout (30 s by default) even after "
        "min.insync.replicas is lowered; measured in the guard drill: writes resumed 0.3-1 s after the change "
        "with 10 s, 30-38 s after the loss with the default")]


def _general_advice(layout: Layout, topics: tuple[TopicPlacement, ...]) -> list[Advice]:
    if sum(1 for dc in layout.dcs if dc.brokers) < 2:
        return []
    return [Advice(
        "recommendation", "fetch-from-follower",
        "consumers: set client.rack to their DC, with replica.selector.class="
        "org.apache.kafka.common.replica.RackAwareReplicaSelector on the brokers (KIP-392), so they read from a "
        "replica in their own DC instead of crossing the WAN to the leader")]
