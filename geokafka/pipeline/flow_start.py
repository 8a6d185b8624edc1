"""The control-plane half of a flow's start, which needs no Spark: both clusters checked, the flow's writers
fenced, target topics created and synced, its generation decided, its progress read and every
partition's resume position planned. The query starts from what this returns."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from geokafka import contract, errors
from geokafka.control.connection import ClusterConnection
from geokafka.control.state_records import Progress, Role, StateRecord, TopicId
from geokafka.control.state_store import StateSnapshot, StateStore, ensure_state_topic
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.assignment import Assignment, plan_assignment
from geokafka.pipeline.fencing import fence
from geokafka.pipeline.flow_clients import FlowClients
from geokafka.pipeline.flow_topics import selected_pairs, sync_topic_metadata, target_pairs
from geokafka.pipeline.groups import GenerationPlan, GroupList, generation_record, plan_generation, split_into_groups
from geokafka.pipeline.startup import StartupTimeline
from geokafka.topology.schema import Flow

log = logging.getLogger(__name__)

Fencer = Callable[[ClusterConnection, list[str]], None]


@dataclass(frozen=True)
class Prepared:
    """What a query starts from."""

    assignment: Assignment
    max_message_bytes: dict[str, int]

    @property
    def pairs(self) -> list[TopicPair]:
        """The source topics and their target topics."""
        return self.assignment.pairs


@dataclass
class FlowStarter:
    """Prepares one flow's starts."""

    name: str
    flow: Flow
    target: ClusterConnection
    clients: FlowClients
    store: StateStore
    group_count: int
    timeline: StartupTimeline
    fencer: Fencer = fence

    def prepare(self) -> Prepared:
        """Everything a start does before its query; raises the geokafka error that stopped it."""
        timeline = self.timeline
        source, target = self.clients.source_admin, self.clients.target_admin
        with timeline.step("clusters checked"):
            source.check_reachable()
            target.check_reachable()
            ensure_state_topic(target, self.store)
        # Fence first: a killed writer's open transaction would hold the state topic's (and every target
        # topic's) last stable offset until it expires, and the progress must be read to its end. Which
        # writers to fence (this generation's, and the previous one's when the groups changed) is in the
        # state itself: what is already readable tells, and the settled read confirms it. And fence before
        # the target topics are created: a target's transaction coordinator starts at its first
        # transactional id, and its partitions wait behind every partition created before them (a
        # 1-node target: the first id took 11 s after 2,000 new partitions, 0.1 s before them).
        planned = selected_pairs(self.flow, source)
        groups = split_into_groups(planned, self.group_count)
        with timeline.step("writers fenced"):
            plan = self._fence_for(groups, planned, self.store.read(timeout_s=15.0))
        with timeline.step("target topics"):
            pairs = target_pairs(self.flow, source, target)
            try:  # a restart (e.g. for new partitions) must not delay the config/ACL sync
                sync_topic_metadata(self.name, self.flow, source, target, pairs)
            except errors.GeokafkaError as exc:
                log.warning("flow %s: topic configs/ACLs not synced before the start: %s", self.name, exc)
        if pairs != planned:  # the source's topics changed in between: the groups follow what was created
            groups = split_into_groups(pairs, self.group_count)
            with timeline.step("writers fenced"):
                plan = self._fence_for(groups, pairs, self.store.read(timeout_s=15.0))
        with timeline.step("progress read"):
            state = self.store.read_settled()
            if state.generation(self.name) != plan.stored:
                plan = self._fence_for(groups, pairs, state)  # a generation recorded behind an open transaction
                state = self.store.read_settled()
        if state.role(self.name) == Role.FAILED_OVER:
            raise errors.FlowFailedOverError(
                f"flow {self.name} was failed over to {self.flow.target}; run `geokafka failback {self.name}` instead")
        if plan.new:
            self.store.write(generation_record(plan, int(time.time() * 1000)))
            log.info("flow %s: generation %d: %d partitions in %d groups", self.name, plan.generation,
                     sum(len(p) for g in plan.groups for p in g.values()), len(plan.groups))
        with timeline.step("resume positions"):
            assignment = plan_assignment(self.name, self.flow.start, self.flow.skip_gaps, pairs, source, state)
            assignment.groups, assignment.generation = plan.groups, plan.generation
            self._record_topic_ids(assignment, state)
            max_bytes = target.max_message_bytes([p.target for p in pairs])
        return Prepared(assignment, max_bytes)

    def _fence_for(self, groups: GroupList, pairs: list[TopicPair], state: StateSnapshot) -> GenerationPlan:
        """The generation this start writes under, its writers (and the previous generation's) fenced."""
        stored = state.generation(self.name)
        legacy = pairs if stored is None and state.progress(self.name) else None
        plan = plan_generation(self.name, groups, stored, legacy)
        self.fencer(self.target, plan.fence)
        return plan

    def _record_topic_ids(self, assignment: Assignment, state: StateSnapshot) -> None:
        """Before the query starts: the source topic IDs it replicates. A skipped re-created topic's
        progress is reset to where its new log starts first, so no crash can pair the new ID with
        the old topic's offsets."""
        stored = state.topic_ids(self.name)
        now_ms = int(time.time() * 1000)
        resets: list[StateRecord] = [
            Progress(self.name, gap.topic, gap.partition,
                     assignment.expected[contract.partition_key(gap.topic, gap.partition)].next)
            for gap in assignment.gaps if gap.last is None
        ]
        ids: list[StateRecord] = [
            TopicId(self.name, topic, topic_id, now_ms)
            for topic, topic_id in assignment.topic_ids.items() if stored.get(topic) != topic_id
        ]
        if resets or ids:
            self.store.write(*resets, *ids)
