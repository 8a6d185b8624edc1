"""Throughput from successive status observations, and a bounded history of them.

Rates come from the replicated progress (``next`` offsets; a never-replicated partition
counts from its log start) of two observations, so they count exactly the source offsets
committed on the target in the window. Bytes per second are the
records per second times the mean replicated record size, taken from the mirror's heartbeat
counters (their change over the window when the same mirror process wrote both).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from geokafka.monitoring.status import FlowStatus, StatusReport, Throughput

DEFAULT_WINDOW_S = 60.0
DEFAULT_MAX_AGE_S = 15 * 60.0


def _offset_delta(old: dict[tuple[str, int], int | None], new: dict[tuple[str, int], int | None]) -> int:
    """Offsets advanced by the partitions present in both observations (a reset counts as 0)."""
    total = 0
    for tp, after in new.items():
        before = old.get(tp)
        if before is not None and after is not None:
            total += max(0, after - before)
    return total


def mean_record_bytes(older: FlowStatus, newer: FlowStatus) -> float | None:
    """Mean size of a replicated record, from the heartbeat's written/bytes counters."""
    same_mirror = (older.pid, older.host) == (newer.pid, newer.host) and newer.pid is not None
    if same_mirror and None not in (older.written, newer.written, older.bytes, newer.bytes):
        written = (newer.written or 0) - (older.written or 0)
        if written > 0:
            return ((newer.bytes or 0) - (older.bytes or 0)) / written
    if newer.written and newer.bytes is not None:
        return newer.bytes / newer.written
    return None


def flow_throughput(older: FlowStatus, newer: FlowStatus, window_s: float) -> Throughput | None:
    """Rates of one flow between two observations ``window_s`` apart."""
    if window_s <= 0:
        return None
    replicated = _offset_delta(
        {(p.topic, p.partition): p.resume_offset for p in older.partitions},
        {(p.topic, p.partition): p.resume_offset for p in newer.partitions},
    )
    records_per_s = replicated / window_s
    size = mean_record_bytes(older, newer)
    produced = None
    if older.source_reachable and newer.source_reachable:
        produced = _offset_delta(
            {(p.topic, p.partition): p.source_end for p in older.partitions},
            {(p.topic, p.partition): p.source_end for p in newer.partitions},
        ) / window_s
    basis = f"replicated progress over the last {window_s:.1f} s"
    if size is not None:
        basis += "; bytes from the mirror's mean record size"
    return Throughput(window_s, records_per_s, None if size is None else records_per_s * size, produced, basis)


def annotate(older: StatusReport, newer: StatusReport) -> StatusReport:
    """Fill ``newer``'s throughput (flow and partition rates) from ``older``; returns ``newer``."""
    window_s = (newer.at_ms - older.at_ms) / 1000
    before = {f.name: f for f in older.flows}
    for flow in newer.flows:
        old = before.get(flow.name)
        if old is None or window_s <= 0:
            continue
        flow.throughput = flow_throughput(old, flow, window_s)
        old_next = {(p.topic, p.partition): p.resume_offset for p in old.partitions}
        for part in flow.partitions:
            prev = old_next.get((part.topic, part.partition))
            if prev is not None and part.resume_offset is not None:
                part.records_per_s = max(0, part.resume_offset - prev) / window_s
    return newer


class History:
    """Observations of the last ``max_age_s`` seconds; each new one gets rates over ``window_s``."""

    def __init__(self, max_age_s: float = DEFAULT_MAX_AGE_S, window_s: float = DEFAULT_WINDOW_S) -> None:
        self.max_age_s = max_age_s
        self.window_s = window_s
        self._reports: deque[StatusReport] = deque()
        self._lock = threading.Lock()

    def add(self, report: StatusReport) -> StatusReport:
        """Record ``report``, annotated with throughput against the oldest observation in the window."""
        with self._lock:
            base = next((r for r in self._reports if report.at_ms - r.at_ms <= self.window_s * 1000), None)
            if base is None and self._reports:
                base = self._reports[-1]
            if base is not None:
                annotate(base, report)
            self._reports.append(report)
            while self._reports and report.at_ms - self._reports[0].at_ms > self.max_age_s * 1000:
                self._reports.popleft()
        return report

    @property
    def latest(self) -> StatusReport | None:
        """The newest observation, if any."""
        with self._lock:
            return self._reports[-1] if self._reports else None

    def __len__(self) -> int:
        return len(self._reports)

    def series(self, smooth_s: float = 5.0) -> dict[str, list[dict[str, Any]]]:
        """Per flow, one point per observation: time, state, RPO records and seconds, and
        records/s against the observation at least ``smooth_s`` earlier (or the first one)."""
        with self._lock:
            reports = list(self._reports)
        out: dict[str, list[dict[str, Any]]] = {}
        seen: dict[str, list[tuple[int, FlowStatus]]] = {}
        for report in reports:
            for flow in report.flows:
                earlier = seen.setdefault(flow.name, [])
                base = next((e for e in reversed(earlier) if report.at_ms - e[0] >= smooth_s * 1000), None)
                if base is None and earlier:
                    base = earlier[0]
                rate = None
                if base is not None:
                    tput = flow_throughput(base[1], flow, (report.at_ms - base[0]) / 1000)
                    rate = None if tput is None else round(tput.records_per_s, 3)
                out.setdefault(flow.name, []).append({
                    "t": report.at_ms, "lag_records": flow.rpo.records, "lag_seconds": flow.rpo.seconds,
                    "records_per_s": rate, "state": flow.state,
                })
                earlier.append((report.at_ms, flow))
        return out
