"""Replication status of every flow: state, lag, throughput and the RPO if the source died now
(or, after a failover, what the failover lost).

Everything is read from Kafka, never from a mirror's memory, so ``status`` works from any
process while ``mirror`` runs elsewhere:

* the target's ``__geokafka_state`` gives each partition's progress (the next source offset
  to replicate, committed with the data), the flow's heartbeat and the mirror's last
  observation of the source's end offsets;
* the source gives its end offsets (as a read_committed client sees them: records of open
  transactions are not counted yet) and the timestamp of the oldest unreplicated record.

When the source is unreachable, the last progress and the mirror's last observation of the
source still answer the disaster question: what would a failover lose right now, as an
interval (:mod:`geokafka.control.rpo`). After a failover the flow shows what that failover
lost: bounded as its report said, or exact once `reconcile` counted it.

Lag semantics (per source partition, ``next`` = replicated progress)::

    offsets   ... next-1 | next ......... end-1 | end
              on target  | not yet on the target |
    lag_records = end - first committed offset >= next   (0 when only transaction
                  markers or aborted records remain; may count markers inside the span)
    lag_seconds = read - timestamp(first committed record >= next)  (0 when caught up or when that
                  record is younger than the read; ``read`` is when the progress was read)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from geokafka.control.flow_states import LIVE_STATES, UNHEALTHY_STATES, FlowState, HeadlineState
from geokafka.control.rpo import RpoInterval
from geokafka.control.state_records import Role
from geokafka.control.topic_identity import Recreation
from geokafka.guard.summary import GuardStatus
from geokafka.secrets import redact

STALE_AFTER_S = 30.0
"""A ``running`` heartbeat older than this means the mirror died (it re-writes it every ~5 s)."""


_ProbeResult = tuple[int, int | None] | None
"""(offset, timestamp ms) of the first committed record at/after ``next``; None: there is none."""


@dataclass
class PartitionStatus:
    """Replication of one source partition."""

    topic: str
    partition: int
    target_topic: str
    source_end: int | None
    replicated: int | None
    lag_records: int | None
    lag_seconds: float | None
    last_replicated_ms: int | None = None
    records_per_s: float | None = None
    resume_offset: int | None = None
    """Where replication continues: the progress, or where a never-replicated partition starts
    (log start with ``start: earliest``; unknown with ``latest``). Throughput counts from it."""
    lost_records: int = 0
    """Offsets between the progress and the source's log start: deleted at the source (retention,
    deleteRecords) before they were replicated, so on no cluster any more (see :func:`lost_offsets`)."""
    source_start: int | None = None
    """The source's log start offset (None when the source is unreachable)."""
    recreated: bool = False
    """The source topic was re-created since its progress was recorded: no lag can be counted."""


@dataclass
class Throughput:
    """Rates over an observation window (``window_s`` says how long it really was)."""

    window_s: float
    records_per_s: float
    bytes_per_s: float | None
    produced_per_s: float | None
    basis: str


@dataclass
class Rpo:
    """What a failover would lose now (or, after one, what it lost): records and seconds, as an interval.

    ``basis``: ``live`` (the source answers: its lag, exact), ``last-observed`` (the source does
    not answer: bounded from the mirror's last look), ``failover`` (what the flow's failover
    lost, bounded or counted by `reconcile`) or ``unknown``.
    """

    records: int | None
    """Exactly this many when ``exact``; otherwise the lower bound (certainly lost)."""
    seconds: float | None
    """The span of the writes lost when ``exact`` (the age of the oldest unreplicated record, live);
    otherwise its upper bound."""
    basis: str  # "live" | "last-observed" | "failover" | "unknown"
    observed_ms: int | None = None
    note: str | None = None
    records_upper: int | None = None
    """At most this many (None: unbounded)."""
    lost_records: int = 0
    """Already lost, failover or not: deleted at the source before they were replicated."""
    records_lower: int | None = None
    seconds_lower: float | None = None
    seconds_upper: float | None = None
    observation_age_s: float | None = None
    exact: bool = False
    headline: str = ""
    """The interval in words, as `status`, `failover`, the dashboard and the metrics' help say it."""

    def __post_init__(self) -> None:
        if not self.headline:
            if self.basis == "live" and self.records is not None:
                self.set_interval(RpoInterval.exact(self.records, self.seconds))
            elif self.records is None:
                self.headline = "unknown"
            else:
                self.set_interval(RpoInterval("observed", self.records, self.records_upper, 0.0, self.seconds,
                                              self.observed_ms, reason="the source's last observation is not known"))

    def set_interval(self, interval: RpoInterval) -> None:
        """Take the figures of ``interval`` (exact or bounded)."""
        self.records_lower, self.records_upper = interval.records_lower, interval.records_upper
        self.seconds_lower, self.seconds_upper = interval.seconds_lower, interval.seconds_upper
        self.observation_age_s = interval.observation_age_s
        self.exact = interval.is_exact
        self.records = interval.records_lower
        self.seconds = interval.seconds_lower if interval.is_exact else interval.seconds_upper
        if interval.observed_at_ms is not None:
            self.observed_ms = interval.observed_at_ms
        self.headline = interval.headline()


@dataclass
class FailoverStatus:
    """A failed-over flow: when, how, and whether its loss is exact yet."""

    at_ms: int
    kind: str
    """``failover`` or ``promote``."""
    exact: bool
    counted_at_ms: int | None = None
    """When `reconcile` (or `failback`) counted the stranded records in the old source's logs."""


@dataclass
class FlowStatus:
    """One flow, as seen from its target's state and its source."""

    name: str
    source: str
    target: str
    state: str
    mirror_state: str | None
    reason: str | None = None
    heartbeat_age_s: float | None = None
    source_reachable: bool = True
    source_error: str | None = None
    state_error: str | None = None
    written: int | None = None
    bytes: int | None = None
    restarts: int | None = None
    gaps_skipped: int | None = None
    host: str | None = None
    pid: int | None = None
    partitions: list[PartitionStatus] = field(default_factory=list)
    rpo: Rpo = field(default_factory=lambda: Rpo(None, None, "unknown"))
    throughput: Throughput | None = None
    last_failover: dict[str, Any] | None = None
    failover: FailoverStatus | None = None
    """Set while the flow is failed over: its RPO is then what the failover lost."""
    recreated: list[str] = field(default_factory=list)
    """Why no lag can be counted for a source topic that was re-created, one line per topic."""
    held_groups: list[dict[str, Any]] = field(default_factory=list)
    """Group partitions the offset sync leaves alone because the group is in use on the target."""
    mirror_view: dict[str, Any] | None = None
    """The flow's mirror's own view of the source (its last look, as it recorded it on the target), beside this
    process's: a source that does not answer from here but does from the mirror is a partition, not a lost site."""
    mirror_view_text: str | None = None
    old_source_back: str | None = None
    """Set while the flow is failed over and its old source answers again: producers may still write there (a split
    brain); what its logs hold past the replicated position, for `reconcile`."""
    automatic: dict[str, Any] | None = None
    """What `geokafka guard --sites` last recorded about the flow's source site (``state``: suspect, held, failed-over,
    clear; ``reason``; ``at_ms``), when it ever did."""


@dataclass
class StatusReport:
    """Every flow at one instant (``at_ms``, wall clock), and the stretched cluster's guard."""

    at_ms: int
    flows: list[FlowStatus]
    guard: GuardStatus | None = None

    def flow(self, name: str) -> FlowStatus:
        """The status of flow ``name``."""
        for flow in self.flows:
            if flow.name == name:
                return flow
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return asdict(self)

    def unhealthy(self) -> list[str]:
        """Names of the flows in a state a person has to look at (:data:`UNHEALTHY_STATES`)."""
        return [f.name for f in self.flows if f.state in UNHEALTHY_STATES]


# -- pure decisions -------------------------------------------------------------------------


def raw_lag(end: int | None, next_offset: int | None) -> int | None:
    """Offsets between the replicated progress and the source end; never negative."""
    if end is None or next_offset is None:
        return None
    return max(0, end - next_offset)


def lost_offsets(log_start: int | None, next_offset: int | None) -> int:
    """Offsets deleted at the source before they were replicated: ``log_start - next`` when the
    progress lies below the log start (may count transaction markers), else 0."""
    if log_start is None or next_offset is None:
        return 0
    return max(0, log_start - next_offset)


def partition_lag(
    end: int | None, next_offset: int | None, probe: _ProbeResult | str, now_ms: int
) -> tuple[int | None, float | None]:
    """(lag in records, lag in seconds) of a partition with a reachable source.

    ``probe`` is the first committed record at/after ``next_offset`` (offset, timestamp),
    None when there is none (only transaction markers or aborted records remain), or the
    string ``"unknown"`` when it could not be read in time.
    """
    lag = raw_lag(end, next_offset)
    if lag is None or end is None:
        return None, None
    if lag == 0 or probe is None:
        return 0, 0.0
    if isinstance(probe, str):
        return lag, None
    offset, timestamp = probe
    records = max(0, end - offset)
    if records == 0:
        return 0, 0.0
    seconds = None if timestamp is None or timestamp < 0 else max(0.0, (now_ms - timestamp) / 1000)
    return records, seconds


def observed_lag(
    observed_end: int | None, next_offset: int | None, last_replicated_ms: int | None, observed_ms: int | None
) -> tuple[int | None, float | None]:
    """(records, seconds) not replicated at the mirror's last observation of a now unreachable source.

    The seconds are an upper bound: from the last replicated record's timestamp to the
    observation (the oldest unreplicated record is not newer than the observation).
    """
    lag = raw_lag(observed_end, next_offset)
    if lag is None:
        return None, None
    if lag == 0:
        return 0, 0.0
    if last_replicated_ms is None or last_replicated_ms < 0 or observed_ms is None:
        return lag, None
    return lag, max(0.0, (observed_ms - last_replicated_ms) / 1000)


def headline_state(
    record: dict[str, Any] | None, now_ms: int, source_reachable: bool, stale_after_s: float = STALE_AFTER_S,
    role: str | None = None, mirror_reaches_source: bool = False,
) -> tuple[str, float | None]:
    """(state shown to the user, heartbeat age in seconds) from the ``flow/<name>`` record.

    Precedence: failed-over (the ``role/<name>`` record or the flow's state), then
    source-unreachable (unless the mirror, with a fresh heartbeat, still reaches the source: then
    only the path from here is cut, and the mirror's state stands), then error, then down (a live
    state whose heartbeat is older than ``stale_after_s``), then the recorded state.
    """
    recorded = (record or {}).get("state")
    at_ms = (record or {}).get("at_ms")
    age = None if at_ms is None else max(0.0, (now_ms - int(at_ms)) / 1000)
    if recorded == FlowState.FAILED_OVER or role == Role.FAILED_OVER:
        return HeadlineState.FAILED_OVER, age
    live_mirror = recorded in LIVE_STATES and age is not None and age <= stale_after_s
    if not source_reachable and not (mirror_reaches_source and live_mirror):
        return HeadlineState.SOURCE_UNREACHABLE, age
    if recorded is None:
        return HeadlineState.NOT_STARTED, age
    if recorded == FlowState.ERROR:
        return HeadlineState.ERROR, age
    if recorded in LIVE_STATES and (age is None or age > stale_after_s):
        return HeadlineState.DOWN, age
    return str(recorded), age


def flow_rpo(partitions: list[PartitionStatus], basis: str, observed_ms: int | None = None) -> Rpo:
    """Records a failover would lose now (sum of lags) and their age (the largest lag in seconds)."""
    lags = [p.lag_records for p in partitions]
    if not partitions and basis == "live":
        return Rpo(0, 0.0, basis, observed_ms, "no topic selected")
    if not partitions or any(lag is None for lag in lags):
        known = [lag for lag in lags if lag is not None]
        if not known:
            return Rpo(None, None, "unknown", observed_ms, "no progress or source end offsets known")
    records = sum(lag for lag in lags if lag is not None)
    seconds_known = [p.lag_seconds for p in partitions if p.lag_seconds is not None]
    missing_seconds = any(p.lag_seconds is None and (p.lag_records or 0) > 0 for p in partitions)
    seconds = None if missing_seconds else max(seconds_known, default=0.0)
    note = None
    if basis == "last-observed":
        note = "the source is unreachable: bounded from the mirror's last observation of its end offsets"
    if any(lag is None for lag in lags):
        note = (note + "; " if note else "") + "some partitions have no known end offset"
    lost = sum(p.lost_records for p in partitions)
    return Rpo(records, seconds, basis, observed_ms, note, lost_records=lost)


def failover_rpo(report: dict[str, Any] | None, role_at_ms: int | None, loss: dict[str, Any] | None
                 ) -> tuple[FailoverStatus, Rpo]:
    """What a failed-over flow's failover lost (pure): the exact count once `reconcile` made one for
    this failover (``loss``, a LossAccount value), else the interval its report stated."""
    report = report or {}
    at_ms = int(report.get("started_ms") or role_at_ms or 0)
    kind = str(report.get("kind", "failover"))
    if loss is not None and int(loss.get("failover_at_ms", -1)) == at_ms:
        seconds = loss.get("seconds")
        interval = RpoInterval.exact(int(loss.get("records", 0)), None if seconds is None else float(seconds))
        counted: int | None = int(loss.get("at_ms", 0))
    elif isinstance(report.get("rpo"), dict):
        interval, counted = RpoInterval.from_dict(report["rpo"]), None
    elif report.get("rpo_records") is not None:  # a report of an older geokafka: the lower bound only
        interval = RpoInterval("observed", int(report["rpo_records"]), report.get("rpo_records_upper"), 0.0,
                               report.get("rpo_seconds"), reason="not recorded")
        counted = None
    else:
        interval, counted = RpoInterval.unknown("no failover report recorded"), None
    rpo = Rpo(None, None, "failover", headline="-")
    rpo.set_interval(interval)
    return FailoverStatus(at_ms, kind, interval.is_exact, counted), rpo


def recreation_problem(recreation: Recreation, partitions: list[PartitionStatus]) -> str:
    """One line: which topic was re-created, how far the old one was replicated, what the new one holds."""
    parts = sorted((p for p in partitions if p.topic == recreation.topic), key=lambda p: p.partition)
    old = ", ".join(f"{recreation.topic}/{p.partition} up to offset {p.replicated}" for p in parts
                    if p.replicated is not None) or "nothing"
    new = ", ".join(
        f"{recreation.topic}/{p.partition} " + ("no records" if p.source_end == p.source_start or p.source_end is None
                                                 else f"offsets {p.source_start}..{p.source_end - 1}")
        for p in parts)
    return (f"source topic {recreation.topic}: {recreation.describe()}; the flow replicated {old} of the old topic; "
            f"the new topic holds {new or 'no partitions'}: a mirror stops on it (DataLossError) unless skip_gaps: "
            "true, which replicates the new topic from its start")


def mirror_details(record: dict[str, Any] | None) -> dict[str, Any]:
    """The heartbeat's counters and process identity, typed."""
    rec = record or {}

    def _int(key: str) -> int | None:
        value = rec.get(key)
        return int(value) if isinstance(value, (int, float)) else None

    reason = rec.get("reason")
    if isinstance(reason, str):
        reason = redact(reason)  # recorded text may quote a Kafka or Spark error
    if rec.get("state") == FlowState.ERROR and not reason:
        reason = "no reason recorded"
    return {
        "mirror_state": rec.get("state"), "reason": reason, "written": _int("written"), "bytes": _int("bytes"),
        "restarts": _int("restarts"), "gaps_skipped": _int("gaps_skipped"),
        "host": rec.get("host"), "pid": _int("pid"),
    }
