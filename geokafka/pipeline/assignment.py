"""Where each source partition of a flow resumes, decided from durable state before a query starts."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import NamedTuple

from geokafka import contract
from geokafka.control.admin import ClusterAdmin
from geokafka.control.state_store import StateSnapshot
from geokafka.control.topic_identity import Recreation, recreations
from geokafka.control.topic_sync import TopicPair
from geokafka.errors import DataLossError

log = logging.getLogger(__name__)

EARLIEST, LATEST = -2, -1  # Spark's startingOffsets sentinels


@dataclass(frozen=True)
class Gap:
    """Source offsets that can no longer be replicated."""

    topic: str
    partition: int
    first: int
    last: int | None
    """None: up to an end nobody can know any more (the old log of a re-created topic)."""
    reason: str
    now: tuple[int, int] | None = None
    """A re-created topic's partition: (log start, log end) of the new topic."""

    @property
    def records(self) -> int:
        """Offsets in the gap (0 when its end is unknown)."""
        return 0 if self.last is None else self.last - self.first + 1

    def describe(self) -> str:
        """``orders/0 offsets 100..149`` or ``orders/0 from offset 100 of the old topic (the new one holds
        offsets 0..49)``."""
        if self.last is None:
            old = f"{self.topic}/{self.partition} from offset {self.first} of the old topic"
            if self.now is None:
                return old
            low, high = self.now
            return f"{old} (the new one holds {'no records' if high <= low else f'offsets {low}..{high - 1}'})"
        return f"{self.topic}/{self.partition} offsets {self.first}..{self.last}"


class Expected(NamedTuple):
    """What the driver hands the sink about one source partition."""

    next: int
    """The committed next offset (-1: none yet)."""
    hint: int
    """The state offset where its progress was read (a writer that reads back starts there at the earliest)."""
    last_timestamp: int = -1
    """The timestamp of the last source record replicated (-1: unknown): a packed snapshot of the partition's
    group carries it on."""


@dataclass
class Assignment:
    """The partitions a query reads, in which groups, and where each starts."""

    pairs: list[TopicPair]
    starting: dict[str, dict[str, int]] = field(default_factory=dict)
    groups: list[dict[str, list[int]]] = field(default_factory=list)
    """The partition groups (see :mod:`geokafka.pipeline.groups`): one Spark task, consumer and
    transactional producer each."""
    generation: int = 0
    """The generation of ``groups``: part of every writer's transactional id."""
    expected: dict[str, Expected] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    topic_ids: dict[str, str] = field(default_factory=dict)
    """Source topic -> the topic ID this assignment replicates (to record before the query starts)."""
    state_floor: int = 0
    """The state topic's end when the (settled) state was read: every progress committed before it is in
    ``expected``, so a writer that reads back what it does not know reads from here on, at the earliest."""

    @property
    def partitions(self) -> dict[str, list[int]]:
        """Spark's ``assign`` option."""
        return {pair.source: list(range(pair.partitions)) for pair in self.pairs}


def find_gaps(
    pairs: list[TopicPair],
    marks: dict[str, dict[int, tuple[int, int]]],
    progress: dict[tuple[str, int], int],
    recreated: list[Recreation],
) -> list[Gap]:
    """Every partition whose committed progress the source can no longer continue from (pure).

    ``marks``: topic -> partition -> (log start, log end) on the source now (for the topics in
    ``recreated``: the new topic's, named in the gap when known).
    """
    renewed = {r.topic: r for r in recreated}
    gaps = []
    for pair in pairs:
        for p in range(pair.partitions):
            committed = progress.get((pair.source, p))
            if committed is None:
                continue
            again = renewed.get(pair.source)
            if again is not None:
                gaps.append(Gap(pair.source, p, committed, None, again.describe(), marks.get(pair.source, {}).get(p)))
                continue
            low, high = marks[pair.source][p]
            if committed < low:
                gaps.append(Gap(pair.source, p, committed, low - 1,
                                "no longer on the source (retention or delete-records)"))
            elif committed > high:
                gaps.append(Gap(pair.source, p, high, committed - 1, "source log ends before the replicated position "
                                "(topic deleted and re-created, or unclean leader election)"))
    return gaps


def data_loss_error(flow_name: str, cluster: str, gaps: list[Gap]) -> DataLossError:
    """One error naming every gap, grouped by reason."""
    by_reason: dict[str, list[Gap]] = {}
    for gap in gaps:
        by_reason.setdefault(gap.reason, []).append(gap)
    parts = [f"{', '.join(g.describe() for g in group)}: {reason}" for reason, group in by_reason.items()]
    return DataLossError(f"flow {flow_name}: source records on {cluster} are gone before they were replicated: "
                         f"{'; '.join(parts)}; set skip_gaps: true to skip them (counted)")


def plan_assignment(
    flow_name: str,
    start: str,
    skip_gaps: bool,
    pairs: list[TopicPair],
    source: ClusterAdmin,
    state: StateSnapshot,
) -> Assignment:
    """Resume each partition at its committed progress, checking the source still has it.

    A partition never replicated starts at the flow's ``start`` (earliest or latest). When the
    source's log starts after the committed position (retention, delete-records), ends before
    it, or belongs to a re-created topic (its topic ID changed), the flow stops with
    :class:`DataLossError` naming every such partition and range, unless ``skip_gaps`` is set;
    then each gap is logged and counted, and the partition continues from the log's start.
    """
    records = state.progress_records(flow_name)
    progress = {tp: r.next for tp, r in records.items()}
    assignment = Assignment(pairs, state_floor=state.end_offset)
    marks = source.log_ranges({pair.source: pair.partitions for pair in pairs})
    assignment.topic_ids = source.topic_ids([pair.source for pair in pairs])
    stored = state.topic_ids(flow_name)
    recreated = recreations(stored, assignment.topic_ids, {topic for topic, _ in progress})
    gaps = find_gaps(pairs, marks, progress, recreated)
    if gaps and not skip_gaps:
        raise data_loss_error(flow_name, source.conn.name, gaps)
    gapped = {(g.topic, g.partition) for g in gaps}
    for gap in gaps:
        log.warning("flow %s: skipping %s %s: %s", flow_name, source.conn.name, gap.describe(), gap.reason)
    assignment.gaps = gaps
    for pair in pairs:
        offsets: dict[str, int] = {}
        for p in range(pair.partitions):
            key = contract.partition_key(pair.source, p)
            hint = state.progress_offset(flow_name, pair.source, p)
            hint = state.end_offset if hint is None else hint
            committed = progress.get((pair.source, p))
            if committed is None:
                offsets[str(p)] = EARLIEST if start == "earliest" else LATEST
                assignment.expected[key] = Expected(-1, hint)
                continue
            last_timestamp = records[(pair.source, p)].last_timestamp
            if (pair.source, p) in gapped:
                committed, last_timestamp = marks[pair.source][p][0], -1
            offsets[str(p)] = committed
            assignment.expected[key] = Expected(committed, hint, last_timestamp)
        assignment.starting[pair.source] = offsets
    return assignment
