"""`geokafka reconcile FLOW`: after a failover, once the old source answers, the exact loss.

Reads the old source's logs from the position the failover recorded (the flow's progress on
the target) to their ends and lists, per partition, the records that were acknowledged there
and never reached the target (:mod:`geokafka.failover.stranded`): offset range, count, first
and last timestamp, and the consumer groups at the old source that had not processed them
(from their committed offsets there). The count is the failover's exact RPO, recorded on the
target (:class:`~geokafka.control.state_records.LossAccount`) for `status`. Optionally the
records are exported to a file (:mod:`~geokafka.failover.stranded_export`) and produced to the
surviving site, exactly once (:mod:`~geokafka.failover.stranded_replay`).

A flow that never failed over, or an old source that still does not answer, is refused at
once with nothing written.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Message

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.naming import policy_for
from geokafka.control.offsets._groups_io import committed_offsets, list_group_ids
from geokafka.control.rpo import RpoInterval
from geokafka.control.selection import select_groups, select_topics
from geokafka.control.state_records import LossAccount, Role, TopicPartitionKey
from geokafka.control.state_store import StateSnapshot, StateStore
from geokafka.control.state_stores import StateStores, using
from geokafka.errors import ClusterUnreachableError, FlowStateError
from geokafka.failover.stranded import (
    GroupBacklog,
    StrandedPartition,
    StrandedRange,
    group_backlogs,
    loss_span_s,
    processed_by,
    read_stranded,
    timestamp_of,
)
from geokafka.failover.stranded_export import DEFAULT_MAX_BYTES, ExportResult, export_path, write_export
from geokafka.failover.stranded_replay import ReplayResult, replay_partition, replay_plan
from geokafka.topology.schema import Topology


@dataclass
class ReconcileReport:
    """The stranded records of a flow's last failover, who had not processed them, and what was done with them."""

    flow: str
    source: str
    target: str
    failover_at_ms: int
    failover_kind: str
    counted_at_ms: int
    partitions: list[StrandedPartition] = field(default_factory=list)
    groups: list[GroupBacklog] = field(default_factory=list)
    reported: RpoInterval | None = None
    """The interval the failover report stated, to compare with the exact count."""
    recorded: bool = False
    """The exact count was written to the target's state topic."""
    export: ExportResult | None = None
    replay: ReplayResult | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        """Records in the old source's logs past the replicated position, never replicated: the stranded ones and
        the late writes."""
        return sum(p.records for p in self.partitions)

    @property
    def stranded_records(self) -> int:
        """Written before the failover and never replicated: the failover's exact RPO in records (acknowledged or
        not: a send whose producer was told it failed may have reached the log)."""
        return sum(p.stranded for p in self.partitions)

    @property
    def late_records(self) -> int:
        """Written at the old source after the failover (timestamps after it): a split brain, not a loss."""
        return sum(p.after_failover for p in self.partitions)

    def unreplayed_late_records(self, replayed: dict[TopicPartitionKey, int]) -> int:
        """Late writes of partitions whose replay (``replayed``: partition -> next offset replayed) has not passed
        the last of them."""
        return sum(p.after_failover for p in self.partitions if p.last_late_offset is not None
                   and replayed.get((p.range.topic, p.range.partition), -1) <= p.last_late_offset)

    @property
    def seconds(self) -> float | None:
        """From the oldest stranded record to the newest (the exact RPO in seconds)."""
        return loss_span_s(self.partitions)

    @property
    def rpo(self) -> RpoInterval:
        """The exact RPO (late writes are no part of it)."""
        return RpoInterval.exact(self.stranded_records, self.seconds)

    def account(self) -> LossAccount:
        """The record that keeps the exact count on the target."""
        parts = [p.to_dict() for p in self.partitions if p.records]
        seconds = self.seconds
        return LossAccount(self.flow, self.counted_at_ms, self.failover_at_ms, self.stranded_records,
                           None if seconds is None else round(seconds, 3), parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "flow": self.flow, "source": self.source, "target": self.target, "failover_at_ms": self.failover_at_ms,
            "failover_kind": self.failover_kind, "counted_at_ms": self.counted_at_ms, "records": self.records,
            "stranded_records": self.stranded_records, "late_records": self.late_records,
            "seconds": None if self.seconds is None else round(self.seconds, 3), "rpo": self.rpo.to_dict(),
            "reported": None if self.reported is None else self.reported.to_dict(), "recorded": self.recorded,
            "partitions": [p.to_dict() for p in self.partitions],
            "groups": [vars(g) for g in self.groups],
            "export": None if self.export is None else self.export.to_dict(),
            "replay": None if self.replay is None else self.replay.to_dict(), "notes": self.notes,
        }


def reconcile(topology: Topology, flow_name: str, *, export_dir: Path | None = None,
              max_export_bytes: int = DEFAULT_MAX_BYTES, replay: bool = False, execute: bool = False,
              probe_timeout_s: float = 5.0, timeout_s: float = 120.0, record: bool = True,
              skip_keys: frozenset[bytes] = frozenset(), stores: StateStores | None = None) -> ReconcileReport:
    """Count the flow's stranded records at the old source; export them, preview or run their replay.

    The count is recorded on the target (``record``) once it is complete and any export is
    written; a replay runs only with ``replay`` and ``execute`` (``replay`` alone previews it), and
    passes over records whose key is in ``skip_keys`` (their producers were told the sends failed
    and sent them again at the new site). ``stores``: the caller's state stores (stores of its own otherwise).
    """
    with using(stores) as own:
        return _reconcile(topology, flow_name, export_dir, max_export_bytes, replay, execute, probe_timeout_s, timeout_s,
                          record, skip_keys, own)


def _reconcile(topology: Topology, flow_name: str, export_dir: Path | None, max_export_bytes: int, replay: bool,
               execute: bool, probe_timeout_s: float, timeout_s: float, record: bool, skip_keys: frozenset[bytes],
               stores: StateStores) -> ReconcileReport:
    flow = topology.flow(flow_name)
    target = connection(topology, flow.target)
    store = stores.of(target)
    state = store.read(timeout_s=min(timeout_s, 30.0))
    if state.role(flow_name) != Role.FAILED_OVER:
        raise FlowStateError(f"flow {flow_name} never failed over (it is active on {flow.target}): nothing was "
                             f"stranded; reconcile counts what a failover left at {flow.source}")
    report_data = state.failover_report(flow_name) or {}
    role = state.record(Role, flow_name)
    failover_at = int(report_data.get("started_ms") or (role.at_ms if role else 0))
    path = None if export_dir is None else export_path(export_dir, flow_name, failover_at)
    source = ClusterAdmin(connection(topology, flow.source), timeout_s=probe_timeout_s)
    if not source.probe(probe_timeout_s):
        raise ClusterUnreachableError(f"the old source {flow.source} ({source.conn.bootstrap}) does not answer: "
                                      f"reconcile reads its logs once it is back; nothing was written")
    source.timeout_s = min(timeout_s, 30.0)
    report = ReconcileReport(flow_name, flow.source, flow.target, failover_at, str(report_data.get("kind", "failover")),
                             int(time.time() * 1000))
    if isinstance(report_data.get("rpo"), dict):
        report.reported = RpoInterval.from_dict(report_data["rpo"])
    ranges = _stranded_ranges(topology, flow_name, source, state, report_data, report.notes)
    by_tp = {(r.topic, r.partition): StrandedPartition(r) for r in ranges}
    for msg in read_stranded(source, ranges, timeout_s):
        by_tp[(str(msg.topic()), int(msg.partition() or 0))].add(int(msg.offset() or 0), timestamp_of(msg), failover_at)
    report.partitions = [by_tp[key] for key in sorted(by_tp)]
    stranded = [(p.range.topic, p.range.partition) for p in report.partitions if p.records]
    groups = list_group_ids(source) if stranded else []
    committed = committed_offsets(source, {g: stranded for g in groups}) if groups else {}
    synced = set(select_groups(groups, flow))
    report.groups = group_backlogs(report.partitions, committed, synced)
    _notes(report)
    if path is not None:
        report.export = write_export(path, _read_all(source, ranges, timeout_s), max_export_bytes)
    if record:
        store.write(report.account())
        report.recorded = True
    if replay:
        report.replay = _replay(topology, flow_name, source, report, state, committed, synced, execute, timeout_s,
                                skip_keys, store)
    return report


def _stranded_ranges(topology: Topology, flow_name: str, source: ClusterAdmin, state: StateSnapshot,
                     report: dict[str, Any], notes: list[str]) -> list[StrandedRange]:
    """Per partition of the flow at the old source: from the failover's recorded progress to its ends now."""
    flow = topology.flows[flow_name]
    policy = policy_for(flow)
    current = state.progress_records(flow_name)
    positions: dict[TopicPartitionKey, int] = {tp: r.next for tp, r in current.items()}
    for row in report.get("partitions", []):  # as the failover recorded it (a replay moves the progress on)
        if (row["topic"], int(row["partition"])) in current:
            positions[(row["topic"], int(row["partition"]))] = int(row["replicated_next"])
    counts = source.topic_partitions()
    topics = select_topics(counts, flow)
    stored, ids = state.topic_ids(flow_name), source.topic_ids(topics)
    recreated = sorted(t for t in topics if t in stored and ids.get(t) not in (None, stored[t]))
    if recreated:
        notes.append(f"{', '.join(recreated)} re-created at {flow.source} since the flow replicated it: its offsets "
                     "there mean nothing for the flow's progress, so its records are not counted")
    partitions = [(t, p) for t in topics if t not in recreated for p in range(counts[t])]
    never = [tp for tp in partitions if tp not in positions]
    if never and flow.start == "latest":
        notes.append(f"{len(never)} partition(s) never replicated (start: latest): where the flow would have started "
                     "is unknown, so they are not counted")
        partitions = [tp for tp in partitions if tp in positions]
    starts = source.offsets(partitions, earliest=True)
    ends = source.offsets(partitions)
    highs = source.offsets(partitions, committed=False)
    return [StrandedRange(t, p, policy.remote_topic(flow.source, t), positions.get((t, p), 0), starts[(t, p)],
                          ends[(t, p)], highs[(t, p)]) for t, p in partitions]


def _notes(report: ReconcileReport) -> None:
    deleted = sum(p.range.deleted for p in report.partitions)
    if deleted:
        report.notes.append(f"{deleted:,} offsets past the replicated position were deleted at {report.source} "
                            "(retention or deleteRecords) before reconcile read them: they are on no cluster")
    undecided = sum(p.range.undecided for p in report.partitions)
    if undecided:
        report.notes.append(f"{undecided:,} offsets at {report.source} belong to transactions not decided yet: "
                            "run reconcile again once they are (committed ones are then counted)")
    late = report.late_records
    if late:
        report.notes.append(f"{late:,} records were written at {report.source} after the failover (late writes: "
                            f"applications kept writing there, a split brain); they are no part of the failover's "
                            f"RPO; `--replay --execute` moves them to {report.target} with the stranded ones, and "
                            "failback refuses until it has (or is told --ignore-late-writes)")


def _read_all(source: ClusterAdmin, ranges: list[StrandedRange], timeout_s: float) -> Iterator[Message]:
    records = read_stranded(source, ranges, timeout_s)
    try:
        yield from records
    finally:
        records.close()  # a reader stopped early (an export past its size) closes its consumer now


def _replay(topology: Topology, flow_name: str, source: ClusterAdmin, report: ReconcileReport, state: StateSnapshot,
            committed: dict[str, dict[TopicPartitionKey, int]], synced: set[str], execute: bool,
            timeout_s: float, skip_keys: frozenset[bytes], store: StateStore) -> ReplayResult:
    flow = topology.flows[flow_name]
    plan = replay_plan(report.partitions, state.reconciled(flow_name))
    result = ReplayResult(execute, plan)
    if not execute:
        return result
    target = connection(topology, flow.target)
    ranges = {(p.range.topic, p.range.partition): p.range for p in report.partitions}

    def processed(msg: Message) -> list[str]:
        return processed_by(committed, synced, str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0))

    for part in plan:
        if part.pending == 0:
            continue
        rng = ranges[(part.topic, part.partition)]

        def read(start: int, rng: StrandedRange = rng) -> Iterator[Message]:
            return _read_from(source, rng, start, timeout_s)

        replay_partition(target, store, flow_name, flow.source, part, report.failover_at_ms, read, processed,
                         skip=(lambda msg: msg.key() in skip_keys) if skip_keys else None)
    return result


def _read_from(source: ClusterAdmin, rng: StrandedRange, start: int, timeout_s: float) -> Iterator[Message]:
    records = read_stranded(source, [rng], timeout_s, starts={(rng.topic, rng.partition): start})
    try:
        yield from records
    finally:
        records.close()
