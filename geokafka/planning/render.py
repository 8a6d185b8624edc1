"""The plan as rich tables for the terminal (the JSON is :meth:`StretchPlan.to_dict`)."""

from __future__ import annotations

from itertools import groupby

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from geokafka.planning.placement import leaders_per_broker, replicas_per_broker
from geokafka.planning.plan import StretchPlan
from geokafka.planning.verdicts import Verdict

MAX_ASSIGNMENT_ROWS = 12

_WRITES = {
    "uninterrupted": "continue",
    "automatic": "resume by themselves",
    "manual": "stop: manual steps",
    "outage": "outage",
}
_RTO = {"uninterrupted": "0", "automatic": "0 (auto)", "manual": "> 0 (manual)", "outage": "> 0 (outage)"}


def _rto(v: Verdict) -> str:
    """The RTO cell: a stall of the partitions led in the lost set shows as such, never as 0."""
    stall = v.leader_stall_s
    if stall is None:
        return _RTO[v.writes]
    return f"stall {stall[0]:.0f}-{stall[1]:.0f} s (auto)"


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in ids) or "-"


def plan_renderable(plan: StretchPlan, title: str = "stretched cluster") -> RenderableType:
    """Layout, placement, verdicts, steps and advice, in that order."""
    parts: list[RenderableType] = [
        _layout_table(plan, title), _quorum_line(plan), _topics_table(plan), _assignment_table(plan),
        _verdict_table(plan),
    ]
    for v in plan.dc_verdicts:
        parts.append(_verdict_detail(v))
    parts.append(_advice(plan))
    return Group(*parts)


def _layout_table(plan: StretchPlan, title: str) -> Table:
    leaders = leaders_per_broker(plan.layout, plan.topics)
    replicas = replicas_per_broker(plan.layout, plan.topics)
    table = Table("DC (rack)", "brokers", "observer brokers", "controllers", "leaders", "replicas", title=title)
    for dc in plan.layout.dcs:
        table.add_row(
            dc.name, _ids(dc.brokers), _ids(dc.observers), _ids(dc.controllers),
            "/".join(str(leaders[b]) for b in dc.brokers) or "-",
            "/".join(str(replicas[b]) for b in dc.brokers) or "-",
        )
    return table


def _quorum_line(plan: StretchPlan) -> Text:
    q = plan.quorum
    spread = ", ".join(f"{dc} {len(ids)}" for dc, ids in q.voters.items())
    lost = [v.failure.name for v in plan.dc_verdicts if not v.quorum_survives]
    tail = f"losing {' or '.join(lost)} loses it" if lost else "survives the loss of any one DC"
    return Text(f"KRaft quorum: {q.size} voters ({spread}), majority {q.majority}: {tail}\n")


def _topics_table(plan: StretchPlan) -> Table:
    table = Table("topic", "partitions", "RF", "min.isr", "acks", "unclean", "replicas per DC", title="topics")
    for t in plan.topics:
        c = t.config
        per_dc = []
        for dc in plan.layout.dcs:
            if dc.brokers:
                low, high = t.replicas_in(plan.layout, dc.name)
                per_dc.append(f"{dc.name} {low}" if low == high else f"{dc.name} {low}-{high}")
        table.add_row(t.name, str(c.partitions), str(c.replication_factor), str(c.min_insync_replicas), c.acks,
                      "yes" if c.unclean_leader_election else "no", ", ".join(per_dc))
    return table


def _assignment_table(plan: StretchPlan) -> Table:
    rows = [(t, p) for t in plan.topics for p in t.partitions]
    shown = rows[:MAX_ASSIGNMENT_ROWS]
    more = len(rows) - len(shown)
    caption = f"{more} more partitions: --json or --assignment FILE" if more else None
    table = Table("partition", "replicas (leader first)", "observers", title="rack-aware assignment", caption=caption)
    for t, p in shown:
        replicas = " ".join(f"{r}({plan.layout.dc_of(r)})" for r in p.replicas)
        table.add_row(f"{t.name}-{p.partition}", replicas, _ids(p.observers))
    return table


def _verdict_table(plan: StretchPlan) -> Table:
    table = Table("lose", "quorum", "writes", "writable", "RPO", "RTO", "manual action",
                  title="verdicts: one failure at a time")
    for v in plan.dc_verdicts:
        _verdict_row(table, v.failure.name, v)
    key = lambda v: (v.failure.kind, v.quorum_survives, v.writes, v.rpo_zero, v.writable_partitions)  # noqa: E731
    for _, group in groupby(plan.node_verdicts, key=key):
        members = list(group)
        kind = members[0].failure.kind
        names = ",".join(m.failure.name.split()[-1] for m in members)
        same_kind = [v for v in plan.node_verdicts if v.failure.kind == kind]
        label = f"any one {kind}" if len(members) == len(same_kind) else f"{kind} {names}"
        _verdict_row(table, label, members[0])
    return table


def _verdict_row(table: Table, label: str, v: Verdict) -> None:
    quorum = f"{'ok' if v.quorum_survives else 'LOST'} ({v.voters_left}/{v.quorum.size})"
    rpo = Text("0", style="green") if v.rpo_zero else Text("> 0", style="red")
    rto_style = "green" if v.rto_zero else "red"
    table.add_row(
        label, Text(quorum, style="green" if v.quorum_survives else "red"), _WRITES[v.writes],
        f"{v.writable_partitions}/{len(v.outcomes)}", rpo, Text(_rto(v), style=rto_style),
        f"{len(v.steps)} steps" if v.steps else "none",
    )


def _verdict_detail(v: Verdict) -> RenderableType:
    lines = [Text(f"\nLosing {v.failure.name}", style="bold")]
    lines += [Text(f"  - {r}") for r in v.reasons]
    if v.steps:
        lines.append(Text("  failover:", style="bold"))
        lines += [Text(f"    {i}. {s}") for i, s in enumerate(v.steps, 1)]
    if v.failback and v.steps:
        lines.append(Text("  failback:", style="bold"))
        lines += [Text(f"    {i}. {s}") for i, s in enumerate(v.failback, 1)]
    return Group(*lines)


def _advice(plan: StretchPlan) -> RenderableType:
    lines = [Text("\nWarnings and recommendations", style="bold")]
    for a in plan.advice:
        mark, style = ("!", "yellow") if a.level == "warning" else ("*", "cyan")
        lines.append(Text(f"  {mark} {a.message}", style=style))
    return Group(*lines)
