"""The manual failover and failback steps of a verdict, in the order they must run.

This is the KRaft version of the seed's 2-DC ZooKeeper procedure ("remove the lost DC's
ZooKeepers from the configuration and restart ZooKeeper; a new leader is elected in DC 2;
lower min.insync.replicas 3 -> 2; producers resume"; failback: "restore the quorum, restore
min.insync.replicas"). KRaft cannot remove voters without a majority (``kafka-metadata-quorum
remove-controller`` needs one), so the quorum is restored the way ZooKeeper's was: by
restarting the surviving controllers with a voter set that lists only them. That is an unclean
quorum recovery: metadata that only the lost controllers had committed is gone.
"""

from __future__ import annotations

from geokafka.planning.layout import Layout
from geokafka.planning.verdicts import Verdict


def _ids(ids: tuple[int, ...] | list[int]) -> str:
    return ", ".join(str(i) for i in sorted(ids)) or "none"


def failover_steps(layout: Layout, verdict: Verdict) -> tuple[str, ...]:
    """What an operator must do, in order, to get writes back after ``verdict.failure``."""
    failure = verdict.failure
    lost_brokers = sorted(failure.brokers)
    survivors = [c for c in layout.controllers if c not in failure.controllers]
    steps: list[str] = []
    offline = sorted({o.topic for o in verdict.outcomes if o.offline})
    if not verdict.quorum_survives and not survivors:
        return (
            f"No controller survives the loss of {failure.name}: the cluster metadata is gone with it. Restore "
            f"{failure.name} (its disks hold the data), or fail over to a connected cluster (geokafka failover FLOW).",
        )
    if not verdict.quorum_survives:
        steps.append(
            f"Fence {failure.name} for good (power or network): its controllers must not come back with "
            f"their old metadata log, or the two sides form diverging quorums."
        )
        steps.append(
            f"Restore the KRaft quorum without {failure.name}: stop the surviving controllers ({_ids(survivors)}) "
            f"and restart them with controller.quorum.voters listing only them (running brokers follow the new "
            f"leader; give them the same list for their next restart). This is an unclean quorum recovery: "
            f"metadata committed only by the lost "
            f"controllers ({_ids(sorted(failure.controllers))}) is gone."
        )
        if lost_brokers:
            steps.append(
                f"Wait until the new quorum fences brokers {_ids(lost_brokers)} (broker.session.timeout.ms) and "
                f"elects leaders among the surviving replicas; check that each new leader has the highest log end "
                f"offset of its partition's surviving replicas (the restored metadata may predate the last ISR changes)."
            )
    if offline:
        steps.append(
            f"Topics {', '.join(offline)} have partitions with no replica outside {failure.name}: nothing can lead "
            f"them. Wait for {failure.name} to return (its disks hold the data) or fail over to a connected cluster."
        )
    below: dict[str, int] = {}
    for o in verdict.outcomes:
        if o.below_min_isr or (not verdict.quorum_survives and o.affected and not o.offline):
            topic = layout.topics[o.topic]
            if topic.acks == "all" and o.surviving_replicas < topic.min_insync_replicas:
                below[o.topic] = min(below.get(o.topic, o.surviving_replicas), o.surviving_replicas)
    for topic_name, left in sorted(below.items()):
        m = layout.topics[topic_name].min_insync_replicas
        steps.append(
            f"Lower min.insync.replicas of {topic_name} from {m} to {left} (kafka-configs --bootstrap-server "
            f"<a broker outside {failure.name}> --alter --entity-type topics --entity-name {topic_name} "
            f"--add-config min.insync.replicas={left}): until failback, acked records live outside {failure.name} "
            f"only."
        )
    led = [o for o in verdict.outcomes if o.affected and not o.offline]
    if steps and (not verdict.quorum_survives and led or any(not o.rpo_zero for o in led)):
        why = [f"its ISR held only replicas in {failure.name}"] if any(not o.rpo_zero for o in led) else []
        if not verdict.quorum_survives:
            # Kafka 4.1 (KIP-966): a broker that comes back from an unclean shutdown leaves the ISR
            # and the eligible leader replicas, so survivors restarted above can all be ineligible
            why.append("every surviving replica was restarted (an unclean shutdown takes a broker out of "
                       "the ISR and the eligible leader replicas)")
        steps.append(
            f"Only if a partition stays leaderless because {' or '.join(why)}: find the surviving replica "
            "with the highest last offset (kafka-dump-log --files <its last segment> on each broker; the "
            "election takes the first live replica of the partition's replica list, so reorder that list "
            "with kafka-reassign-partitions first if another replica is ahead), then kafka-leader-election "
            f"--bootstrap-server <a broker outside {failure.name}> --election-type UNCLEAN --topic <topic> "
            "--partition <partition>. This loses the records that the elected replica lacks."
        )
    if steps and not all(o.offline for o in verdict.outcomes if o.affected):
        if verdict.quorum_survives:
            steps.append("Producers and consumers resume by themselves (they refresh metadata); nothing to change "
                         "on clients.")
        else:
            steps.append("Producers and consumers resume by themselves (they refresh metadata), except an "
                         "idempotent producer that stopped with a fatal error (OUT_OF_ORDER_SEQUENCE_NUMBER: a "
                         "partition's new leader disagrees with its sequence numbers): the application must create a new one.")
    return tuple(steps)


def failback_steps(layout: Layout, verdict: Verdict) -> tuple[str, ...]:
    """How to bring ``verdict.failure``'s nodes back and restore the planned state, in order."""
    failure = verdict.failure
    steps: list[str] = []
    survivors = [c for c in layout.controllers if c not in failure.controllers]
    if not survivors:
        return (
            f"Bring {failure.name} back on its own disks: start its controllers, then its brokers; nothing was "
            f"rebuilt elsewhere, so their logs are the truth.",
        )
    if not verdict.quorum_survives:
        steps.append(
            f"Restore the quorum: reformat the metadata log of {failure.name}'s controllers "
            f"({_ids(sorted(failure.controllers))}), never restart them on their old log, then restart the "
            f"controllers one at a time with the original controller.quorum.voters "
            f"(dynamic quorums: kafka-metadata-quorum add-controller)."
        )
    elif failure.controllers:
        steps.append(
            f"Start controllers {_ids(sorted(failure.controllers))} again; they catch up from the quorum leader."
        )
    if failure.brokers:
        steps.append(
            f"Start brokers {_ids(sorted(failure.brokers))} again and wait until they are back in every ISR "
            f"(kafka-topics --bootstrap-server <bootstrap> --describe --under-replicated-partitions prints nothing)."
        )
    lowered = any(step.startswith("Lower min.insync.replicas") for step in verdict.steps)
    if lowered:
        for name, topic in layout.topics.items():
            steps.append(f"Restore min.insync.replicas of {name} to {topic.min_insync_replicas} (kafka-configs "
                         f"--bootstrap-server <bootstrap> --alter --entity-type topics --entity-name {name} "
                         f"--add-config min.insync.replicas={topic.min_insync_replicas}).")
    if failure.brokers:
        steps.append(
            "Move leadership back: kafka-leader-election --bootstrap-server <bootstrap> --election-type PREFERRED "
            "--all-topic-partitions "
            "(kafka-reassign-partitions with the plan's assignment if replicas were moved)."
        )
    return tuple(steps)
