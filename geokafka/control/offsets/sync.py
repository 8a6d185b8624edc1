"""Group offset sync: commit translated offsets on the target, with MM2's guards, and say why.

:func:`sync_group_offsets` is called by the pipeline runner every ``sync_interval_s`` and once
by failover. As MM2's ``MirrorCheckpointTask`` it writes only where it is safe:

* only groups the flow selects (``groups``/``exclude_groups``) and topics it replicates;
* never to a target group with members (their offsets are theirs; the broker refuses too);
* backwards only where the target group is still where the sync left it: a group reset for
  reprocessing at the source is followed exactly, but a position that consumers on the target
  reached is theirs (unless the caller says ``overwrite``, as failover may).

Every partition gets an :class:`OffsetAction` with ``commit``, ``unchanged`` or ``skip`` and
the reason, so a partial sync is visible rather than silent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from geokafka.control.offsets._groups_io import (
    GroupActivity,
    Refusal,
    TopicPartitionKey,
    commit_offsets,
    committed_offsets,
    end_offsets,
    group_activity,
)
from geokafka.control.offsets.checkpoints import (
    delete_checkpoints,
    now_ms,
    read_target_state,
    store_checkpoints,
    target_store,
)
from geokafka.control.offsets.groups import FlowOffsets, OffsetsFrom, PartitionTranslation, checkpoint_offsets
from geokafka.control.offsets.index import TargetIndex
from geokafka.control.state_records import GroupCheckpoint
from geokafka.control.state_store import StateStore
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
    held: bool = False
    """A skip because the target group is in use on the target (active, or moved by its consumers)."""


def decide_commit(
    translation: PartitionTranslation,
    *,
    previous: int | None,
    activity: GroupActivity,
    end_offset: int | None = None,
    synced: int | None = None,
    overwrite: bool = False,
) -> Decision:
    """Apply the guards to one partition (pure; the order of the checks is the order of the reasons).

    ``previous`` is the target group's committed offset there, ``synced`` the offset the sync
    itself last committed there (from the group's checkpoint), ``end_offset`` the target's end
    when clamping (failover), ``activity`` the target group's state. ``overwrite`` moves a
    group that consumers on the target moved, too.
    """
    if activity.active:
        return Decision("skip", translation.target_offset, f"target group is active ({activity.describe()})", True)
    if translation.target_offset is None:
        return Decision("skip", None, translation.note or "no target offset")
    offset, notes = translation.target_offset, []
    if end_offset is not None and offset > end_offset:
        offset = end_offset
        notes.append(f"clamped to target end {end_offset}")
    if not translation.caught_up:
        notes.append("replication not caught up: provisional, may re-deliver")
    if previous is not None and previous > offset:
        if synced == previous:
            return Decision("commit", offset, "; ".join([f"source group rewound: follows it back from {previous}",
                                                          *notes]))
        if overwrite:
            return Decision("commit", offset, "; ".join([
                f"overwrites {previous}, which consumers on the target reached", *notes]))
        wrote = f"the sync wrote {synced}" if synced is not None else "the sync never wrote it"
        return Decision("skip", offset, f"target group already at {previous}, moved there on the target ({wrote}); "
                                        f"never rewound to {offset} unless overwritten", True)
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
    held: bool = False
    """Skipped because the target group is in use on the target (active, or moved by its consumers)."""


@dataclass
class SyncReport:
    """What one group offset sync did, per group and partition."""

    flow: str
    source: str
    target: str
    offsets_from: OffsetsFrom
    clamp_to_end: bool
    dry_run: bool
    overwrite: bool = False
    groups: list[str] = field(default_factory=list)
    actions: list[OffsetAction] = field(default_factory=list)
    checkpoints_written: int = 0
    checkpoints_deleted: int = 0
    """Checkpoints of groups the source no longer has (tombstoned, so the state topic does not keep them)."""

    def count(self, action: Action) -> int:
        """Partitions with this outcome."""
        return sum(1 for a in self.actions if a.action == action)

    def by_group(self, group: str) -> list[OffsetAction]:
        """The actions of one group."""
        return [a for a in self.actions if a.group == group]

    def held_on_target(self) -> list[OffsetAction]:
        """Partitions left alone because the target group is in use there (active, or moved by its consumers)."""
        return [a for a in self.actions if a.action == "skip" and a.held]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with a summary."""
        data = asdict(self)
        data["summary"] = {a: self.count(a) for a in ("commit", "unchanged", "skip")}
        return data


@dataclass
class SyncMemory:
    """The checkpoints one process's syncs wrote, newest per group.

    A sync reads the checkpoints back from the state topic, and a read can miss the newest: it
    reads to the partition's last stable offset, so a checkpoint written behind an open
    transaction of the sink (its progress records share the topic) is not there yet. A sync
    round on such a read would forget what the sync committed (its ``synced`` offsets), and a
    source group's rewind would then be taken for consumers on the target moving the group, and
    never followed. Kept by the long-running caller (the pipeline runner) and passed to every
    sync, the newer of the two copies of a group's checkpoint counts (by ``at_ms``).
    """

    checkpoints: dict[str, GroupCheckpoint] = field(default_factory=dict)

    def merged(self, read: dict[str, GroupCheckpoint]) -> dict[str, GroupCheckpoint]:
        """``read`` with each group's checkpoint replaced by the remembered one where that is newer."""
        out = dict(read)
        for group, checkpoint in self.checkpoints.items():
            if group not in out or out[group].at_ms < checkpoint.at_ms:
                out[group] = checkpoint
        return out

    def remember(self, written: dict[str, GroupCheckpoint]) -> None:
        """Keep the checkpoints of a sync's round (what it committed), before they are stored."""
        self.checkpoints.update(written)

    def forget(self, groups: list[str]) -> None:
        """Groups whose checkpoints were deleted."""
        for group in groups:
            self.checkpoints.pop(group, None)


def sync_group_offsets(
    topology: Topology,
    flow_name: str,
    *,
    clamp_to_end: bool = False,
    fallback_to_checkpoints: bool = False,
    source_reachable: bool | None = None,
    overwrite: bool = False,
    dry_run: bool = False,
    index: TargetIndex | None = None,
    memory: SyncMemory | None = None,
    store: StateStore | None = None,
    timeout_s: float = 15.0,
) -> SyncReport:
    """Translate the committed offsets of the flow's groups and commit them on the target.

    ``clamp_to_end`` (failover) caps every offset at the target's end offset.
    ``fallback_to_checkpoints`` (failover) uses the last stored source offsets when the source
    is unreachable; otherwise an unreachable source raises ClusterUnreachableError.
    ``source_reachable``: the caller already probed the source (False: go to the checkpoints
    without waiting for it again).
    ``overwrite`` moves target groups that consumers on the target moved, too (failover's choice).
    ``index``: pass the same :class:`TargetIndex` on every call to read the target incrementally.
    ``memory``: pass the same :class:`SyncMemory` on every call, so a stale read of the state
    cannot make the sync forget what it committed.
    ``store``: the target's state store; pass the caller's to read it incrementally (a store of its own otherwise,
    closed at the end).
    ``dry_run`` decides everything and writes nothing (no commits, no checkpoints).
    ``timeout_s`` bounds each Kafka call (and how long an unreachable cluster is waited for).
    """
    with FlowOffsets(topology, flow_name, timeout_s) as ctx, target_store(ctx.target.conn, store) as state:
        ctx.target.check_reachable()
        snapshot = read_target_state(ctx.target, state)  # before the index: progress must not run ahead of it
        known = snapshot.checkpoints(flow_name)
        if memory is not None:
            known = memory.merged(known)
        origin: OffsetsFrom = "source"
        try:
            if source_reachable is False:
                raise ClusterUnreachableError(f"cluster {ctx.flow.source} is unreachable (probed by the caller)")
            offsets, replicated = ctx.live_offsets(None)
        except ClusterUnreachableError as exc:
            if not fallback_to_checkpoints:
                raise
            offsets, origin = checkpoint_offsets(known, None, exc), "checkpoint"
            replicated = {t for by_tp in offsets.values() for t, _ in by_tp}
        report = SyncReport(flow_name, ctx.flow.source, ctx.flow.target, origin, clamp_to_end, dry_run, overwrite,
                            sorted(offsets))
        own_index = index is None
        idx = index or TargetIndex(ctx.target.conn, timeout_s=timeout_s * 2)
        try:
            idx.refresh({ctx.target_topic(t) for by_tp in offsets.values() for t, _ in by_tp if t in replicated})
            progress = snapshot.progress(flow_name)
            translated = {g: ctx.translate(idx, by_tp, replicated, progress) for g, by_tp in offsets.items()}
        finally:
            if own_index:
                idx.close()
        synced = {g: cp.synced for g, cp in known.items()}
        _apply(ctx, report, translated, synced, clamp_to_end, dry_run, overwrite)
        if not dry_run:
            checkpoints = _checkpoints(report, offsets, replicated, known, origin)
            if memory is not None:  # the commits are made: remembered even if storing them fails
                memory.remember(checkpoints)
            report.checkpoints_written = store_checkpoints(ctx.target, state, checkpoints, known)
            if origin == "source":  # the source answered: a group it no longer lists is gone for good
                gone = gone_groups(known, offsets)
                if gone:
                    delete_checkpoints(state, flow_name, gone)
                    if memory is not None:
                        memory.forget(gone)
                    report.checkpoints_deleted = len(gone)
        summary = report.to_dict()["summary"]
        log.info("flow %s: group offsets %s", flow_name, summary)
        return report


def gone_groups(known: Mapping[str, GroupCheckpoint], offsets: Mapping[str, object]) -> list[str]:
    """Groups with a checkpoint that the source's live read no longer has (pure)."""
    return sorted(set(known) - set(offsets))


def _checkpoints(
    report: SyncReport,
    offsets: dict[str, dict[TopicPartitionKey, int]],
    replicated: set[str],
    known: dict[str, GroupCheckpoint],
    origin: OffsetsFrom,
) -> dict[str, GroupCheckpoint]:
    """Each group's new checkpoint: the source offsets just read (kept when read from a checkpoint)
    and, per target partition, what the sync has committed there so far."""
    out: dict[str, GroupCheckpoint] = {}
    for group, by_tp in offsets.items():
        before = known.get(group)
        synced = dict(before.synced) if before else {}
        for action in report.by_group(group):
            if action.action in ("commit", "unchanged") and action.target_offset is not None:
                synced[(action.target_topic, action.partition)] = action.target_offset
        source = {tp: o for tp, o in by_tp.items() if tp[0] in replicated} if origin == "source" else (
            dict(before.offsets) if before else {})
        at_ms = now_ms() if before is None or before.offsets != source or before.synced != synced else before.at_ms
        out[group] = GroupCheckpoint(report.flow, group, source, at_ms, synced)
    return out


def _apply(
    ctx: FlowOffsets,
    report: SyncReport,
    translated: dict[str, list[PartitionTranslation]],
    synced: dict[str, dict[TopicPartitionKey, int]],
    clamp_to_end: bool,
    dry_run: bool,
    overwrite: bool,
) -> None:
    """Decide every partition, commit group by group, and fill ``report``."""
    placed = {
        g: [(t.target_topic, t.partition) for t in ts if t.target_offset is not None] for g, ts in translated.items()
    }
    activity = group_activity(ctx.target, [g for g, tps in placed.items() if tps])
    previous = committed_offsets(ctx.target, placed)
    ends = end_offsets(ctx.target, {tp for tps in placed.values() for tp in tps}) if clamp_to_end else {}
    for group, items in sorted(translated.items()):
        group_activity_ = activity.get(group, GroupActivity("dead", 0))
        decided: list[tuple[PartitionTranslation, Decision, int | None]] = []
        for t in items:
            key = (t.target_topic, t.partition)
            before = previous.get(group, {}).get(key)
            decision = decide_commit(
                t, previous=before, activity=group_activity_, end_offset=ends.get(key),
                synced=synced.get(group, {}).get(key), overwrite=overwrite,
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
                d = Decision("skip", d.offset, refused[key], refused[key].group_active)
            report.actions.append(OffsetAction(
                group, t.source_topic, t.partition, t.source_offset, t.target_topic, d.offset, before,
                t.caught_up, d.action, d.reason, d.held,
            ))


def _commit(ctx: FlowOffsets, group: str, offsets: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, Refusal]:
    """Commit one group; a failure of this group alone becomes its skip reason, not the sync's end."""
    try:
        return commit_offsets(ctx.target, group, offsets)
    except (KafkaOperationError, AuthError) as exc:
        return {key: Refusal(f"commit failed: {exc}") for key in offsets}
