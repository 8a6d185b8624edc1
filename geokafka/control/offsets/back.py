"""Failback's group positions: where each group resumes at the original site, exactly.

After a failover from B (the original site) to A, a group consumes at A, where a partition
holds B's records copied by the forward flow (``gk.src`` = B's coordinates) and, in identity
naming, A's own new records after them. Failback copies A's own records back to B with the
reverse flow. At B a partition then holds B's own records (some perhaps never copied to A:
the failover's loss) and, in identity naming, the copies of A's records after them; with
prefix naming those copies sit in ``<A>.<topic>`` instead.

A group that committed offset W on an A partition has processed exactly the A records below
W. At B it must resume at **the first record it has not processed**, which is the earliest of:

* B's own record whose forward copy is the first one at or after W on A (the group stopped
  among B's records);
* B's first own record the forward flow never copied (at or after the forward flow's progress:
  lost in the failover, so never seen at A);
* the copy of A's first own record at or after W (the reverse flow's index; the group
  stopped among A's records);
* the end of the B partition (the group processed everything).

Reading only the reverse flow's copies (what a second flow's plain translation does) misses
the first three for B's own records: a group in the middle of B's records was sent past the
rest of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.naming import policy_for
from geokafka.control.offsets._groups_io import (
    ABSENT,
    TopicPartitionKey,
    commit_offsets,
    committed_offsets,
    group_activity,
    list_group_ids,
)
from geokafka.control.offsets.checkpoints import target_store
from geokafka.control.offsets.index import PartitionIndex, TargetIndex
from geokafka.control.offsets.translate import OffsetMapping, SourcePartition
from geokafka.control.selection import select_groups, select_topics
from geokafka.control.state_store import StateStore
from geokafka.topology.schema import Topology


@dataclass(frozen=True)
class BackPosition:
    """Where one group resumes on one partition of the original site, and why."""

    group: str
    topic: str
    partition: int
    resume_at: int
    previous: int | None
    action: str
    """``commit``, ``unchanged`` or ``skip`` (the group is active at the original site)."""
    reason: str


def resume_position(
    b_partition: PartitionIndex,
    a_cluster: str,
    forward: OffsetMapping | None,
    forward_committed: int | None,
    forward_next: int,
    reverse_source: SourcePartition | None,
    reverse_committed: int | None,
) -> tuple[int, str]:
    """The first record of ``b_partition`` the group has not processed (see module doc), and why.

    ``forward``: B's records copied to A (B offset -> A offset) with the group at
    ``forward_committed`` on that A partition (None: it has no offset there). ``forward_next``:
    the forward flow's progress (B offset). ``reverse_source``: the A partition whose records
    the reverse flow copied into ``b_partition``, with the group at ``reverse_committed``.
    """
    candidates: list[tuple[int, str]] = []
    if forward_committed is not None:
        found = forward.first_target_at_or_after(forward_committed) if forward is not None else None
        if found is not None:
            candidates.append((found[0], f"first record not read at {a_cluster} (its offset {found[1]} there)"))
        lost = b_partition.first_not_from(a_cluster, forward_next)
        if lost is not None:
            candidates.append((lost, "first record never copied to the other site (lost in the failover)"))
    if reverse_source is not None and reverse_committed is not None:
        t = b_partition.translate(reverse_source, reverse_committed)
        if t.matched_source_offset is not None:
            candidates.append((t.target_offset, f"copy of {reverse_source.topic}/{reverse_source.partition} offset "
                                                f"{t.matched_source_offset}, the first the group had not read"))
    candidates.append((b_partition.position, "processed everything: the end of the partition"))
    return min(candidates)


@dataclass
class BackReport:
    """Where every selected group resumes at the original site."""

    flow: str
    site: str
    dry_run: bool
    positions: list[BackPosition]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def move_groups_back(topology: Topology, flow_name: str, reverse_name: str, *, dry_run: bool = False,
                     timeout_s: float = 30.0, store: StateStore | None = None) -> BackReport:
    """Commit, at the original source of ``flow_name``, each selected group's exact position.

    ``reverse_name`` is the flow that copied the new primary's records back. Groups active at
    the original site are left alone (and reported). ``store``: the state store of the flow's target (a store of
    its own otherwise, closed at the end).
    """
    flow = topology.flow(flow_name)
    reverse = topology.flow(reverse_name)
    a_admin = ClusterAdmin(connection(topology, flow.target), timeout_s)  # the new primary
    b_admin = ClusterAdmin(connection(topology, flow.source), timeout_s)  # the original site
    fwd_policy, rev_policy = policy_for(flow), policy_for(reverse)
    b_topics = select_topics(b_admin.topic_partitions(), flow)
    a_own = select_topics(a_admin.topic_partitions(), reverse)
    forward_topic = {t: fwd_policy.remote_topic(flow.source, t) for t in b_topics}
    reverse_topic = {rev_policy.remote_topic(reverse.source, t): t for t in a_own}  # B topic -> A topic
    groups = select_groups(list_group_ids(a_admin), flow)
    at_a = committed_offsets(a_admin, {g: None for g in groups})
    with target_store(a_admin.conn, store) as a_state:
        forward_next = a_state.read(timeout_s=timeout_s).progress(flow_name)
    with TargetIndex(a_admin.conn, timeout_s=timeout_s) as a_index, \
            TargetIndex(b_admin.conn, timeout_s=timeout_s) as b_index:
        a_index.refresh(set(forward_topic.values()))
        counts = b_index.refresh(set(b_topics) | set(reverse_topic))
        wanted: dict[str, dict[TopicPartitionKey, int]] = {g: {} for g in groups}
        reasons: dict[tuple[str, str, int], str] = {}
        for group in groups:
            offsets = at_a.get(group, {})
            for b_topic, n in sorted(counts.items()):
                for p in range(n):
                    w_fwd = offsets.get((forward_topic[b_topic], p)) if b_topic in forward_topic else None
                    a_topic = reverse_topic.get(b_topic)
                    w_rev = offsets.get((a_topic, p)) if a_topic is not None else None
                    if w_fwd is None and w_rev is None:
                        continue  # the group never read this at the new primary
                    b_part = b_index.partition(b_topic, p)
                    a_part = a_index.partition(forward_topic[b_topic], p) if b_topic in forward_topic else None
                    if b_part is None:
                        continue
                    mapping = a_part.mapping(SourcePartition(flow.source, b_topic, p)) if a_part else None
                    source = SourcePartition(reverse.source, a_topic, p) if a_topic is not None else None
                    offset, why = resume_position(b_part, reverse.source, mapping, w_fwd,
                                                  forward_next.get((b_topic, p), 0), source, w_rev)
                    wanted[group][(b_topic, p)] = offset
                    reasons[(group, b_topic, p)] = why
    return _apply(b_admin, flow_name, flow.source, groups, wanted, reasons, dry_run)


def _apply(admin: ClusterAdmin, flow_name: str, site: str, groups: list[str],
           wanted: dict[str, dict[TopicPartitionKey, int]], reasons: dict[tuple[str, str, int], str],
           dry_run: bool) -> BackReport:
    activity = group_activity(admin, [g for g in groups if wanted[g]])
    previous = committed_offsets(admin, {g: list(tps) for g, tps in wanted.items() if tps})
    positions: list[BackPosition] = []
    for group in groups:
        state = activity.get(group, ABSENT)
        before = previous.get(group, {})
        changes = {tp: o for tp, o in wanted[group].items() if before.get(tp) != o}
        refused = {}
        if changes and not state.active and not dry_run:
            refused = commit_offsets(admin, group, changes)
        for (topic, p), offset in sorted(wanted[group].items()):
            why = reasons[(group, topic, p)]
            if state.active:
                action, why = "skip", f"group is active at {site} ({state.describe()}); it would resume at {offset}: {why}"
            elif (topic, p) in refused:
                action, why = "skip", refused[(topic, p)]
            elif (topic, p) not in changes:
                action = "unchanged"
            else:
                action = "commit"
            positions.append(BackPosition(group, topic, p, offset, before.get((topic, p)), action, why))
    return BackReport(flow_name, site, dry_run, positions)
