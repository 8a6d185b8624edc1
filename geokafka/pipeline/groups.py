"""A flow's partition groups and their generation (pure: no Kafka, no Spark).

A flow's unit of work is the partition group, not the partition: one Spark task, one consumer
assigned all the group's source partitions and one transactional producer, with one Kafka
transaction per commit holding the group's records and a progress record per partition that
moved (KIP-618's task transactions). Groups are stable: the same topics, partitions and group
count always give the same groups. When they change (partitions or topics added, another group
count), the flow gets a new **generation**: its transactional ids change, and every id of the
previous generation is fenced before the new one writes, so no partition is ever written by two
writers (a zombie of the old assignment and the new one).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from geokafka.contract import group_transactional_id, legacy_transactional_id
from geokafka.control.state_records import Generation
from geokafka.control.topic_sync import TopicPair

GroupList = list[dict[str, list[int]]]
"""Per group: source topic -> its partitions in the group (the source's and the sink's ``groups`` option)."""


def split_into_groups(pairs: list[TopicPair], count: int) -> GroupList:
    """The source partitions of ``pairs`` dealt round-robin, in (topic, partition) order, into
    ``min(count, partitions)`` groups: balanced within one partition, and the same for the same input."""
    partitions = sorted((pair.source, p) for pair in pairs for p in range(pair.partitions))
    groups: GroupList = [{} for _ in range(max(1, min(count, len(partitions))))]
    for i, (topic, partition) in enumerate(partitions):
        groups[i % len(groups)].setdefault(topic, []).append(partition)
    return groups


def digest(groups: GroupList) -> str:
    """A short name of exactly this grouping (topic order, partition order and group count included)."""
    canonical = json.dumps([sorted(g.items()) for g in groups], separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class GenerationPlan:
    """What a start writes under, and which writers it must fence first."""

    flow: str
    generation: int
    groups: GroupList
    new: bool
    """True when this start records a new generation (the grouping changed, or the flow's first start)."""
    fence: list[str]
    """Transactional ids to fence before the state is read and the query starts: the previous
    generation's (its zombies must not commit) and this generation's (a killed writer's open
    transaction must not hold the state topic)."""
    stored: Generation | None = None
    """The recorded generation this plan was made from."""

    @property
    def writer_ids(self) -> list[str]:
        """The transactional ids of this generation, one per group."""
        return [group_transactional_id(self.flow, self.generation, g) for g in range(len(self.groups))]


def plan_generation(flow: str, groups: GroupList, stored: Generation | None,
                    legacy: list[TopicPair] | None = None) -> GenerationPlan:
    """The generation this start writes under (pure).

    ``stored``: the flow's last recorded assignment. The same grouping keeps its generation; any
    other (or none recorded) gets the next one. ``legacy``: the flow's pairs when it replicated
    before partition groups existed (progress without an assignment record): their per-partition
    writers are fenced once.
    """
    mine = digest(groups)
    if stored is not None and stored.digest == mine:
        ids = [group_transactional_id(flow, stored.generation, g) for g in range(stored.groups)]
        return GenerationPlan(flow, stored.generation, groups, False, ids, stored)
    generation = 0 if stored is None else stored.generation + 1
    previous = [] if stored is None else [group_transactional_id(flow, stored.generation, g) for g in range(stored.groups)]
    old = [legacy_transactional_id(flow, pair.source, p) for pair in legacy or [] for p in range(pair.partitions)]
    current = [group_transactional_id(flow, generation, g) for g in range(len(groups))]
    return GenerationPlan(flow, generation, groups, True, previous + old + current, stored)


def generation_record(plan: GenerationPlan, at_ms: int) -> Generation:
    """The state record of a new generation."""
    partitions = sum(len(parts) for group in plan.groups for parts in group.values())
    return Generation(plan.flow, plan.generation, len(plan.groups), digest(plan.groups), partitions, at_ms)


def recorded_writers(flow: str, stored: Generation | None, pairs: list[TopicPair]) -> list[str]:
    """Every transactional id that may write for the flow now: its recorded generation's, or, with none
    recorded, its writers from before partition groups (what failover fences)."""
    if stored is not None:
        return [group_transactional_id(flow, stored.generation, g) for g in range(stored.groups)]
    return [legacy_transactional_id(flow, pair.source, p) for pair in pairs for p in range(pair.partitions)]
