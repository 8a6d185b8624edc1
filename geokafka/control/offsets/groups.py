"""Where a consumer group resumes on a flow's target: its source offsets, translated exactly.

Source offsets come from the source cluster (its committed offsets) or, when the source is
unreachable and the caller allows it, from the last checkpoint a sync stored on the target.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.naming import policy_for
from geokafka.control.offsets._groups_io import (
    ABSENT,
    TopicPartitionKey,
    committed_offsets,
    group_activity,
    list_group_ids,
)
from geokafka.control.offsets.checkpoints import read_target_state, target_store
from geokafka.control.offsets.exceptions import NoCommittedOffsetsError
from geokafka.control.offsets.index import TargetIndex
from geokafka.control.offsets.translate import SourcePartition
from geokafka.control.selection import select_groups, select_topics
from geokafka.control.state_records import GroupCheckpoint
from geokafka.control.state_store import StateStore
from geokafka.errors import ClusterUnreachableError
from geokafka.topology.schema import Topology

OffsetsFrom = Literal["source", "checkpoint"]


@dataclass(frozen=True)
class PartitionTranslation:
    """One source partition of a group and where it resumes on the target."""

    source_topic: str
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int | None
    """None when there is nothing to resume on (see ``note``)."""
    caught_up: bool
    matched_source_offset: int | None = None
    note: str = ""
    target_committed: int | None = None
    """The target group's committed offset there now (what a consumer would start from today)."""


@dataclass(frozen=True)
class GroupTranslation:
    """Every replicated partition a group has an offset for, translated."""

    flow: str
    group: str
    source: str
    target: str
    offsets_from: OffsetsFrom
    synced: bool
    """Whether the flow's ``groups`` regexes select this group for offset sync."""
    partitions: list[PartitionTranslation] = field(default_factory=list)
    target_state: str = "dead"
    """The group's state on the target (``stable`` etc. when consumers are in it there)."""
    target_members: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


class FlowOffsets:
    """One flow's clusters, naming and topic selection, for one round of translations."""

    def __init__(self, topology: Topology, flow_name: str, timeout_s: float = 15.0) -> None:
        self.name = flow_name
        self.flow = topology.flow(flow_name)
        self.source = ClusterAdmin(connection(topology, self.flow.source), timeout_s)
        self.target = ClusterAdmin(connection(topology, self.flow.target), timeout_s)
        self.policy = policy_for(self.flow)

    def __enter__(self) -> FlowOffsets:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close both clusters' clients (a sync round opens them, and closes them when it ends)."""
        self.source.close()
        self.target.close()

    def target_topic(self, source_topic: str) -> str:
        """Name of ``source_topic`` on the target."""
        return self.policy.remote_topic(self.flow.source, source_topic)

    def live_offsets(self, groups: Iterable[str] | None) -> tuple[dict[str, dict[TopicPartitionKey, int]], set[str]]:
        """Committed source offsets of ``groups`` (None: every group the flow selects), and the replicated topics."""
        self.source.check_reachable()
        names = select_groups(list_group_ids(self.source), self.flow) if groups is None else list(groups)
        replicated = set(select_topics(self.source.topic_partitions(), self.flow))
        return committed_offsets(self.source, {g: None for g in names}), replicated

    def translate(
        self,
        index: TargetIndex,
        offsets: Mapping[TopicPartitionKey, int],
        replicated: set[str],
        progress: Mapping[tuple[str, int], int],
    ) -> list[PartitionTranslation]:
        """Translate one group's source offsets with an index refreshed after ``progress`` was read."""
        out = []
        for (topic, partition), committed in sorted(offsets.items()):
            target_topic = self.target_topic(topic)
            pidx = index.partition(target_topic, partition)
            if topic not in replicated:
                out.append(PartitionTranslation(topic, partition, committed, target_topic, None, False,
                                                note=f"topic not replicated by flow {self.name}"))
            elif pidx is None:
                note = f"{target_topic}/{partition} does not exist on {self.flow.target} yet"
                out.append(PartitionTranslation(topic, partition, committed, target_topic, None, False, note=note))
            else:
                source = SourcePartition(self.flow.source, topic, partition)
                t = pidx.translate(source, committed, progress.get((topic, partition)))
                out.append(PartitionTranslation(topic, partition, committed, target_topic, t.target_offset,
                                                t.caught_up, t.matched_source_offset))
        return out


def checkpoint_offsets(
    checkpoints: Mapping[str, GroupCheckpoint], groups: Iterable[str] | None, cause: ClusterUnreachableError
) -> dict[str, dict[TopicPartitionKey, int]]:
    """Source offsets from checkpoints, or ``cause`` again if a group asked for has none."""
    names = list(checkpoints) if groups is None else list(groups)
    missing = [g for g in names if g not in checkpoints]
    if missing:
        raise ClusterUnreachableError(f"{cause} (and no checkpoint of group {missing[0]} is stored on the target)")
    return {g: dict(checkpoints[g].offsets) for g in names}


def translate_group(
    topology: Topology,
    flow_name: str,
    group: str,
    *,
    index: TargetIndex | None = None,
    fallback_to_checkpoints: bool = True,
    timeout_s: float = 15.0,
    store: StateStore | None = None,
) -> GroupTranslation:
    """Where ``group`` would resume on the flow's target, per replicated partition it has an offset for.

    Raises NoCommittedOffsetsError if the group has no committed offset on a replicated topic.
    With ``fallback_to_checkpoints``, an unreachable source is replaced by the group's last checkpoint.
    ``timeout_s`` bounds each Kafka call (and how long an unreachable cluster is waited for).
    ``store``: the target's state store (a store of its own otherwise, closed at the end).
    """
    with FlowOffsets(topology, flow_name, timeout_s) as ctx, target_store(ctx.target.conn, store) as state:
        ctx.target.check_reachable()
        snapshot = read_target_state(ctx.target, state)  # before the index: progress must not run ahead of it
        origin: OffsetsFrom = "source"
        try:
            by_group, replicated = ctx.live_offsets([group])
            offsets = by_group[group]
        except ClusterUnreachableError as exc:
            if not fallback_to_checkpoints:
                raise
            offsets = checkpoint_offsets(snapshot.checkpoints(flow_name), [group], exc)[group]
            replicated, origin = {t for t, _ in offsets}, "checkpoint"
        mine = {tp: o for tp, o in offsets.items() if tp[0] in replicated}
        if not mine:
            others = ", ".join(sorted({t for t, _ in offsets}))
            also = f" (it has offsets on {others})" if others else ""
            raise NoCommittedOffsetsError(
                f"group {group} has no committed offsets on {ctx.flow.source} for topics of flow {flow_name}{also}"
            )
        own_index = index is None
        idx = index or TargetIndex(ctx.target.conn, timeout_s=timeout_s * 2)
        try:
            idx.refresh({ctx.target_topic(t) for t, _ in mine})
            partitions = ctx.translate(idx, mine, replicated, snapshot.progress(flow_name))
        finally:
            if own_index:
                idx.close()
        synced = bool(select_groups([group], ctx.flow))
        placed = [(p.target_topic, p.partition) for p in partitions if p.target_offset is not None]
        now = committed_offsets(ctx.target, {group: placed}).get(group, {}) if placed else {}
        partitions = [replace(p, target_committed=now.get((p.target_topic, p.partition))) for p in partitions]
        activity = group_activity(ctx.target, [group]).get(group, ABSENT)
        return GroupTranslation(flow_name, group, ctx.flow.source, ctx.flow.target, origin, synced, partitions,
                                activity.state, activity.members)
