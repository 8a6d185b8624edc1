"""Where each source partition of a flow resumes, decided from durable state before a query starts."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.control.state_store import StateSnapshot
from geokafka.control.topic_sync import TopicPair
from geokafka.errors import DataLossError
from geokafka.pipeline.writer import transactional_id

log = logging.getLogger(__name__)

EARLIEST, LATEST = -2, -1  # Spark's startingOffsets sentinels


@dataclass(frozen=True)
class Gap:
    """Source offsets that can no longer be replicated."""

    topic: str
    partition: int
    first: int
    last: int
    reason: str


@dataclass
class Assignment:
    """The partitions a query reads and where it starts."""

    pairs: list[TopicPair]
    starting: dict[str, dict[str, int]] = field(default_factory=dict)
    expected: dict[str, tuple[int, int]] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)

    @property
    def partitions(self) -> dict[str, list[int]]:
        """Spark's ``assign`` option."""
        return {pair.source: list(range(pair.partitions)) for pair in self.pairs}


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
    source's log starts after the committed position (retention, delete-records) or ends
    before it (topic deleted and re-created), the flow stops with :class:`DataLossError`
    naming the range, unless ``skip_gaps`` is set; then the gap is logged and reported.
    """
    progress = state.progress(flow_name)
    assignment = Assignment(pairs)
    for pair in pairs:
        marks = source.watermarks(pair.source, pair.partitions)
        offsets: dict[str, int] = {}
        for p in range(pair.partitions):
            low, high = marks[p]
            committed = progress.get((pair.source, p))
            key = f"{pair.source}/{p}"
            hint = state.offsets.get(f"progress/{flow_name}/{key}", state.end_offset)
            if committed is None:
                offsets[str(p)] = EARLIEST if start == "earliest" else LATEST
                assignment.expected[key] = (-1, hint)
                continue
            gap = None
            if committed < low:
                gap = Gap(pair.source, p, committed, low - 1, "no longer on the source (retention or delete-records)")
            elif committed > high:
                gap = Gap(pair.source, p, high, committed - 1, "source log ends before the replicated position "
                          "(topic deleted and re-created, or unclean leader election)")
            if gap is not None:
                where = f"{source.conn.name} {gap.topic}/{gap.partition} offsets {gap.first}..{gap.last}"
                if not skip_gaps:
                    raise DataLossError(f"flow {flow_name}: {where}: {gap.reason}; set skip_gaps: true to skip it")
                log.warning("flow %s: skipping %s: %s", flow_name, where, gap.reason)
                assignment.gaps.append(gap)
                committed = low
            offsets[str(p)] = committed
            assignment.expected[key] = (committed, hint)
        assignment.starting[pair.source] = offsets
    return assignment


def fence_writers(flow_name: str, pairs: list[TopicPair], target: ClusterConnection) -> None:
    """Initialise every partition's transactional id once: open transactions of a dead writer
    are aborted now, so the state topic can be read to its end without waiting for them."""
    from confluent_kafka import Producer

    def fence(txn_id: str) -> None:
        producer = Producer(target.librdkafka(**{"transactional.id": txn_id, "transaction.timeout.ms": 30_000}))
        producer.init_transactions(60)

    ids = [transactional_id(flow_name, pair.source, p) for pair in pairs for p in range(pair.partitions)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(fence, ids))
