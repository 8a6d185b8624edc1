"""Group offset sync: commit translated offsets on the target, with MM2's guards, and say why.

:func:`sync_group_offsets` is called by the pipeline runner every ``sync_interval_s`` and once
by failover. As MM2's ``MirrorCheckpointTask`` it writes only where it is safe:

* only groups the flow selects (``groups``/``exclude_groups``) and topics it replicates;
* never to a target group with members (their offsets are theirs; the broker refuses too);
* never backwards: a target group that already read further on the target stays where it is.

Every partition gets an :class:`OffsetAction` with ``commit``, ``unchanged`` or ``skip`` and
the reason, so a partial sync is visible rather than silent.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from geokafka.control.offsets._groups_io import (
    GroupActivity,
    TopicPartitionKey,
    commit_offsets,
    committed_offsets,
    end_offsets,
    group_activity,
)
from geokafka.control.offsets.checkpoints import checkpoints_in, read_target_state, store_checkpoints
from geokafka.control.offsets.groups import FlowOffsets, OffsetsFrom, PartitionTranslation, checkpoint_offsets
from geokafka.control.offsets.index import TargetIndex
from geokafka.errors import AuthError, ClusterUnreachableError, KafkaOperationError
from geokafka.topology.schema import Topology

log = logging.getLogger("geokafka.offsets")

Action = Literal["commit", "unchanged", "skip"]


@dataclass(frozen=True)
class Decision:
    """What to do with one translated partition of one group."""

    action: Action
    offset: int | None
    reason: str


def decide_commit(
    translation: PartitionTranslation,
    *,
    previous: int | None,
    activity: GroupActivity,
    end_offset: int | None = None,
) -> Decision:
    """Apply the guards to one partition (pure; the order of the checks is the order of the reasons).

    ``previous`` is the target group's committed offset there, ``end_offset`` the target's
    end when clamping (failover), ``activity`` the target group's state.
    """
    if activity.active:
        return Decision("skip", translation.target_offset, f"target group is active ({activity.describe()})")
    if translation.target_offset is None:
        return Decision("skip", None, translation.note or "no target offset")
    offset, notes = translation.target_offset, []
    if end_offset is not None and offset > end_offset:
        offset = end_offset
        notes.append(f"clamped to target end {end_offset}")
    if not translation.caught_up:
        notes.append("replication not caught up: provisional, may re-deliver")
    if previous is not None and previous > offset:
        return Decision("skip", offset, f"target group already at {previous}; never rewound to {offset}")
    if previous == offset:
        return Decision("unchanged", offset, "; ".join(["already there", *notes]))
    return Decision("commit", offset, "; ".join(["translated", *notes]))


@dataclass(frozen=True)
class OffsetAction:
    """The outcome for one partition of one group."""

    group: str
    source_topic: str
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int | None
    previous_offset: int | None
    caught_up: bool
    action: Action
    reason: str


@dataclass
class SyncReport:
    """What one group offset sync did, per group and partition."""

    flow: str
    source: str
    target: str
    offsets_from: OffsetsFrom
    clamp_to_end: bool
    dry_run: bool
    groups: list[str] = field(default_factory=list)
    actions: list[OffsetAction] = field(default_factory=list)
    checkpoints_written: int = 0

    def count(self, action: Action) -> int:
        """Partitions with this outcome."""
        return sum(1 for a in self.actions if a.action == action)

    def by_group(self, group: str) -> list[OffsetAction]:
        """The actions of one group."""
        return [a for a in self.actions if a.group == group]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with a summary."""
        data = asdict(self)
        data["summary"] = {a: self.count(a) for a in ("commit", "unchanged", "skip")}
        return data


def sync_group_offsets(
    topology: Topology,
    flow_name: str,
    *,
    clamp_to_end: bool = False,
    fallback_to_checkpoints: bool = False,
    dry_run: bool = False,
    index: TargetIndex | None = None,
    timeout_s: float = 15.0,
) -> SyncReport:
    """Translate the committed offsets of the flow's groups and commit them on the target.

    ``clamp_to_end`` (failover) caps every offset at the target's end offset.
    ``fallback_to_checkpoints`` (failover) uses the last stored source offsets when the source
    is unreachable; otherwise an unreachable source raises ClusterUnreachableError.
    ``index``: pass the same :class:`TargetIndex` on every call to read the target incrementally.
    ``dry_run`` decides everything and writes nothing (no commits, no checkpoints).
    ``timeout_s`` bounds each Kafka call (and how long an unreachable cluster is waited for).
    """
    ctx = FlowOffsets(topology, flow_name, timeout_s)
    ctx.target.check_reachable()
    snapshot = read_target_state(ctx.target)  # before the index: progress must not run ahead of it
    known = checkpoints_in(snapshot, flow_name)
    origin: OffsetsFrom = "source"
    try:
        offsets, replicated = ctx.live_offsets(None)
    except ClusterUnreachableError as exc:
        if not fallback_to_checkpoints:
            raise
        offsets, origin = checkpoint_offsets(known, None, exc), "checkpoint"
        replicated = {t for by_tp in offsets.values() for t, _ in by_tp}
    report = SyncReport(flow_name, ctx.flow.source, ctx.flow.target, origin, clamp_to_end, dry_run, sorted(offsets))
    if origin == "source" and not dry_run:
        mine = {g: {tp: o for tp, o in by_tp.items() if tp[0] in replicated} for g, by_tp in offsets.items()}
        report.checkpoints_written = store_checkpoints(ctx.target, flow_name, mine, known)

    own_index = index is None
    idx = index or TargetIndex(ctx.target.conn, timeout_s=timeout_s * 2)
    try:
        idx.refresh({ctx.target_topic(t) for by_tp in offsets.values() for t, _ in by_tp if t in replicated})
        progress = snapshot.progress(flow_name)
        translated = {g: ctx.translate(idx, by_tp, replicated, progress) for g, by_tp in offsets.items()}
    finally:
        if own_index:
            idx.close()
    _apply(ctx, report, translated, clamp_to_end, dry_run)
    log.info("flow %s: group offsets %s", flow_name, report.to_dict()["summary"])
    return report


def _apply(
    ctx: FlowOffsets,
    report: SyncReport,
    translated: dict[str, list[PartitionTranslation]],
    clamp_to_end: bool,
    dry_run: bool,
) -> None:
    """Decide every partition, commit group by group, and fill ``report``."""
    placed = {
        g: [(t.target_topic, t.partition) for t in ts if t.target_offset is not None] for g, ts in translated.items()
    }
    activity = group_activity(ctx.target, [g for g, tps in placed.items() if tps])
    previous = committed_offsets(ctx.target, placed)
    ends = end_offsets(ctx.target, {tp for tps in placed.values() for tp in tps}) if clamp_to_end else {}
    for group, items in sorted(translated.items()):
        decided: list[tuple[PartitionTranslation, Decision, int | None]] = []
        for t in items:
            key = (t.target_topic, t.partition)
            before = previous.get(group, {}).get(key)
            decision = decide_commit(
                t, previous=before, activity=activity.get(group, GroupActivity("dead", 0)), end_offset=ends.get(key)
            )
            decided.append((t, decision, before))
        to_commit: dict[TopicPartitionKey, int] = {
            (t.target_topic, t.partition): d.offset
            for t, d, _ in decided
            if d.action == "commit" and d.offset is not None
        }
        refused = _commit(ctx, group, to_commit) if to_commit and not dry_run else {}
        for t, d, before in decided:
            key = (t.target_topic, t.partition)
            if key in refused:
                d = Decision("skip", d.offset, refused[key])
            if d.action == "skip":
                log.debug("group %s %s/%d: skipped: %s", group, t.source_topic, t.partition, d.reason)
            report.actions.append(OffsetAction(
                group, t.source_topic, t.partition, t.source_offset, t.target_topic, d.offset, before,
                t.caught_up, d.action, d.reason,
            ))


def _commit(ctx: FlowOffsets, group: str, offsets: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, str]:
    """Commit one group; a failure of this group alone becomes its skip reason, not the sync's end."""
    try:
        return commit_offsets(ctx.target, group, offsets)
    except (KafkaOperationError, AuthError) as exc:
        return {key: f"commit failed: {exc}" for key in offsets}
