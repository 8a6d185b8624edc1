"""Terminal rendering of a status report with rich: per flow a headline, then a table of its partitions."""

from __future__ import annotations

import time
from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from geokafka.control.flow_states import LIVE_STATES, HeadlineState
from geokafka.control.state_records import AutoFailover
from geokafka.guard.summary import GuardStatus
from geokafka.monitoring.status import FlowStatus, PartitionStatus, StatusReport

_STATE_STYLE: dict[str, str] = {
    HeadlineState.STARTING: "green", HeadlineState.RUNNING: "bold green", HeadlineState.RETRYING: "bold yellow",
    HeadlineState.STOPPED: "yellow", HeadlineState.NOT_STARTED: "dim", HeadlineState.ERROR: "bold red",
    HeadlineState.DOWN: "bold red", HeadlineState.SOURCE_UNREACHABLE: "bold red",
    HeadlineState.FAILED_OVER: "bold magenta", HeadlineState.STATE_UNAVAILABLE: "bold red",
}


def fmt_count(value: int | float | None) -> str:
    """``1,234`` or ``-`` when unknown."""
    return "-" if value is None else f"{value:,.0f}"


def fmt_seconds(value: float | None) -> str:
    """``0 s``, ``3.4 s``, ``2m05s``, ``1h02m`` or ``-`` when unknown."""
    if value is None:
        return "-"
    if value < 60:
        return "0 s" if value == 0 else f"{value:.1f} s"
    minutes, seconds = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def fmt_rate(value: float | None, unit: str = "rec/s") -> str:
    """``1,234 rec/s``, ``0.5 rec/s`` or ``-``."""
    if value is None:
        return "-"
    return f"{value:,.1f} {unit}" if value < 10 else f"{value:,.0f} {unit}"


def fmt_bytes_rate(value: float) -> str:
    """``1.25 MB/s``, ``3.4 kB/s`` or ``120 B/s``."""
    if value >= 1e6:
        return f"{value / 1e6:,.2f} MB/s"
    return f"{value / 1e3:,.1f} kB/s" if value >= 1e3 else f"{value:,.0f} B/s"


def state_line(flow: FlowStatus) -> Text:
    """``running (heartbeat 2.1 s ago)`` with the error reason or the unreachable cause."""
    text = Text(flow.state, style=_STATE_STYLE.get(flow.state, "bold"))
    details = []
    if flow.mirror_state and flow.mirror_state != flow.state:
        details.append(f"mirror last recorded {flow.mirror_state}")
    if flow.heartbeat_age_s is not None:
        what = "heartbeat" if flow.mirror_state in LIVE_STATES else "recorded"
        details.append(f"{what} {fmt_seconds(flow.heartbeat_age_s)} ago")
    if flow.failover is None and flow.mirror_view_text and flow.mirror_state in LIVE_STATES:
        here = "answers here" if flow.source_reachable else "does not answer here"
        details.append(f"source: {here}; {flow.mirror_view_text}")
    if details:
        text.append(f" ({', '.join(details)})")
    for problem in (flow.reason, flow.source_error, flow.state_error):
        if problem:
            text.append(f"\n  {problem}", style="red")
    return text


def headline(flow: FlowStatus) -> Text:
    """State, RPO and throughput of one flow, as the table's title block."""
    text = Text()
    text.append(f"{flow.name}", style="bold")
    text.append(f"  {flow.source} → {flow.target}   ")
    text.append_text(state_line(flow))
    rpo = flow.rpo
    style = "green" if rpo.exact and rpo.records == 0 else "yellow"
    if flow.failover is not None:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(flow.failover.at_ms / 1000))
        text.append(f"\n  failed over to {flow.target} at {at} ({flow.failover.kind}); ")
        if flow.failover.exact and flow.failover.counted_at_ms:
            counted = time.strftime("%H:%M:%S", time.localtime(flow.failover.counted_at_ms / 1000))
            text.append(f"RPO, exact (counted in {flow.source}'s logs at {counted}): ")
        else:
            text.append("RPO: ")
        text.append(rpo.headline, style=style)
        if flow.old_source_back:
            text.append(f"\n  {flow.old_source_back}", style="bold red")
        elif not flow.failover.exact:
            text.append(f"\n  the exact loss: `geokafka reconcile {flow.name}` once {flow.source} answers again",
                        style="dim")
    else:
        text.append("\n  RPO if the source died now: ")
        text.append(rpo.headline, style=style)
        if rpo.note:
            text.append(f" ({rpo.note})", style="dim")
    for problem in flow.recreated:
        text.append(f"\n  {problem}", style="red")
    if rpo.lost_records:
        text.append(f"\n  LOST: {fmt_count(rpo.lost_records)} records deleted at the source before they were "
                    f"replicated (retention or deleteRecords); on no cluster any more", style="bold red")
    automatic = flow.automatic
    if automatic is not None and (automatic["state"] != AutoFailover.FAILED_OVER or flow.failover is not None):
        label = {AutoFailover.HELD: "automatic failover held", AutoFailover.SUSPECT: "automatic failover: site suspect",
                 AutoFailover.FAILED_OVER: "failed over by the guard"}.get(automatic["state"], automatic["state"])
        at = time.strftime("%H:%M:%S", time.localtime(automatic["at_ms"] / 1000))
        text.append(f"\n  {label} ({at}): {automatic['reason']}",
                    style="bold red" if automatic["state"] == AutoFailover.HELD else "yellow")
    held = sorted({h["group"] for h in flow.held_groups})
    if held:
        text.append(f"\n  groups in use on {flow.target}, offsets not synced there: {', '.join(held)}", style="yellow")
    tput = flow.throughput
    if tput is not None:
        text.append(f"\n  throughput over the last {tput.window_s:.1f} s: {fmt_rate(tput.records_per_s)}")
        if tput.bytes_per_s is not None:
            text.append(f", {fmt_bytes_rate(tput.bytes_per_s)}")
        if tput.produced_per_s is not None:
            text.append(f" (source receives {fmt_rate(tput.produced_per_s)})")
    else:
        text.append("\n  throughput: not measured (needs two observations)", style="dim")
    return text


PARTITION_ROWS = 20
"""A flow with more partitions than this shows a row per topic and its most-lagging partitions (unless asked for every
row): a site's thousands of partitions would bury the three lines that matter."""
MOST_LAGGING = 10


def flow_table(flow: FlowStatus, every_partition: bool = False) -> RenderableType:
    """Per-partition figures of one flow; past :data:`PARTITION_ROWS` partitions, a row per topic and the most-lagging
    partitions, unless ``every_partition``."""
    if every_partition or len(flow.partitions) <= PARTITION_ROWS:
        return _partition_table(flow, flow.partitions)
    lagging = sorted((p for p in flow.partitions if (p.lag_records or 0) > 0 or p.recreated or p.lost_records),
                     key=lambda p: (-(p.lag_seconds or 0.0), -(p.lag_records or 0), p.topic, p.partition))[:MOST_LAGGING]
    parts: list[RenderableType] = [_topic_table(flow)]
    if lagging:
        worst = _partition_table(flow, lagging)
        worst.title = f"the {len(lagging)} most-lagging of {len(flow.partitions):,} partitions"
        parts.append(worst)
    parts.append(Text(f"{len(flow.partitions):,} partitions: `geokafka status {flow.name} --partitions` shows every "
                      "row", style="dim"))
    return Group(*parts)


def _topic_table(flow: FlowStatus) -> Table:
    """One row per topic: partitions, sums and the worst lag."""
    table = Table()
    for header in ("topic", "partitions", "source end", "replicated", "lag (records)", "worst lag (time)", "rec/s"):
        table.add_column(header, justify="left" if header == "topic" else "right")
    by_topic: dict[str, list[PartitionStatus]] = {}
    for part in flow.partitions:
        by_topic.setdefault(part.topic, []).append(part)
    for topic, parts in sorted(by_topic.items()):
        lag = _sum(p.lag_records for p in parts)
        rates = [p.records_per_s for p in parts if p.records_per_s is not None]
        seconds = [p.lag_seconds for p in parts if p.lag_seconds is not None]
        table.add_row(topic, f"{len(parts):,}", fmt_count(_sum(p.source_end for p in parts)),
                      fmt_count(_sum(p.replicated for p in parts)),
                      Text(fmt_count(lag), style="green" if lag == 0 else ("yellow" if lag else "")),
                      fmt_seconds(max(seconds) if seconds else None), fmt_rate(sum(rates) if rates else None, ""))
    return table


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _partition_table(flow: FlowStatus, partitions: list[PartitionStatus]) -> Table:
    table = Table()
    table.add_column("topic")
    table.add_column("part", justify="right")
    table.add_column("source end", justify="right")
    table.add_column("replicated", justify="right")
    table.add_column("lag (records)", justify="right")
    table.add_column("lag (time)", justify="right")
    table.add_column("rec/s", justify="right")
    lost = any(part.lost_records for part in partitions)
    if lost:
        table.add_column("lost", justify="right", style="red")
    end_label = "source end" if flow.source_reachable else "last seen end"
    table.columns[2].header = end_label
    for part in partitions:
        lag_style = "green" if part.lag_records == 0 else ("yellow" if part.lag_records else "")
        cells: list[str | Text] = [
            part.topic, str(part.partition), fmt_count(part.source_end), fmt_count(part.replicated),
            Text("re-created", style="red") if part.recreated else Text(fmt_count(part.lag_records), style=lag_style),
            fmt_seconds(part.lag_seconds),
            fmt_rate(part.records_per_s, ""),
        ]
        table.add_row(*cells, *([fmt_count(part.lost_records)] if lost else []))
    if not flow.partitions:
        table.add_row("(no topics)", "", "", "", "", "", "")
    return table


def guard_block(guard: GuardStatus) -> Text:
    """What the stretched cluster's guard changed and has not undone, and its last records."""
    text = Text()
    text.append(f"guard on {guard.cluster}", style="bold")
    if guard.error:
        text.append(f"\n  {guard.error}", style="red")
        return text
    if guard.lowered:
        for low in guard.lowered:
            text.append(f"\n  {low['topic']}: min.insync.replicas lowered {low['original']} -> {low['lowered']} "
                        f"({low['dc']} lost); restored when {low['dc']} is back in sync", style="yellow")
    else:
        text.append("\n  nothing changed (no DC lost, or every change undone)", style="green")
    for rec in guard.recent:
        at = time.strftime("%H:%M:%S", time.localtime(rec["at_ms"] / 1000))
        text.append(f"\n  {at} {rec['status']}: {rec['text']}", style="dim")
    return text


def render_report(report: StatusReport, every_partition: bool = False) -> RenderableType:
    """Every flow's table, then the guard."""
    parts: list[RenderableType] = []
    if not report.flows:
        parts += [Text("no flows in the topology", style="dim"), Text("")]
    for flow in report.flows:
        parts += [headline(flow), flow_table(flow, every_partition), Text("")]
    if report.guard is not None:
        parts += [guard_block(report.guard), Text("")]
    return Group(*parts[:-1])
