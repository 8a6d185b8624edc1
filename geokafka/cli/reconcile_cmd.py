"""`geokafka reconcile`: what a failover left at the old source, exactly, once it answers again."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.failover.reconcile import ReconcileReport
from geokafka.failover.stranded_export import DEFAULT_MAX_BYTES


def _at(ms: int | None) -> str:
    if ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"


def render_reconcile(report: ReconcileReport) -> RenderableType:
    """Stranded records per partition, the exact RPO, the groups that had not processed them, what was done."""
    parts: list[RenderableType] = []
    table = Table("topic/partition", "offsets", "stranded", "late writes", "first timestamp", "last timestamp",
                  "replayed",
                  title=f"reconcile of {report.flow}: in {report.source}'s log, never replicated to {report.target}, "
                        f"past the {report.failover_kind} of {_at(report.failover_at_ms)}",
                  caption="stranded: written before the failover (acknowledged or not: a send reported failed may "
                          "have been written); late writes: after it")
    replayed = {(p.topic, p.partition): p for p in report.replay.partitions} if report.replay else {}
    for p in report.partitions:
        if not p.records:
            continue
        r = p.range
        done = replayed.get((r.topic, r.partition))
        shown = "-" if done is None else (f"{done.produced:,} now" if report.replay and report.replay.executed
                                          else f"{p.records - done.pending:,} before")
        table.add_row(f"{r.topic}/{r.partition}", f"{p.first_offset}..{p.last_offset}", f"{p.stranded:,}",
                      f"{p.after_failover:,}", _at(p.first_ms), _at(p.last_ms), shown)
    if not report.records:
        table.add_row("(none)", "-", "0", "0", "-", "-", "-")
    parts.append(table)
    text = Text()
    text.append("RPO of the failover, exact: ", style="bold")
    text.append(report.rpo.headline(), style="green" if report.stranded_records == 0 else "yellow")
    if report.late_records:
        text.append(f"\n  late writes (a split brain): {report.late_records:,} records written at {report.source} "
                    "after the failover", style="bold red")
    if report.reported is not None:
        text.append(f"\n  the failover reported: {report.reported.headline()}", style="dim")
    if report.recorded:
        text.append(f"\n  recorded on {report.target}: `geokafka status {report.flow}` shows it", style="dim")
    parts.append(text)
    if report.groups:
        groups = Table("group", "topic/partition", f"committed at {report.source}", "not processed", "processed",
                       "moved by failover", title=f"consumer groups at {report.source} and the stranded records")
        for g in report.groups:
            groups.add_row(g.group, f"{g.topic}/{g.partition}", str(g.committed), f"{g.not_processed:,}",
                           f"{g.processed:,}", "yes" if g.synced else "no")
        parts.append(groups)
    lines = Text()
    if report.export is not None:
        lines.append(f"export: {report.export.records:,} records ({report.export.bytes:,} bytes) written to "
                     f"{report.export.path}\n")
    if report.replay is not None:
        replay = report.replay
        if replay.executed:
            lines.append(f"replay: {replay.produced:,} records produced to {report.target} "
                         f"({report.records - replay.pending:,} by an earlier run)"
                         + (f", {replay.skipped:,} passed over (--skip-keys)" if replay.skipped else "") + "\n")
        else:
            targets = sorted({p.target_topic for p in replay.partitions})
            lines.append(f"replay (preview: add --execute): would produce {replay.pending:,} records to "
                         f"{report.target} {', '.join(targets) or '-'}, marked with gk.stranded headers\n")
    for note in report.notes:
        lines.append(f"note: {note}\n")
    if lines:
        lines.rstrip()
        parts.append(lines)
    return Group(*parts)


@click.command()
@click.argument("flow")
@click.option("--export", "export_dir", type=click.Path(path_type=Path, file_okay=False),
              help="also write the stranded records to DIR/<flow>-stranded-<failover time>.jsonl (key, value, "
                   "headers, timestamp; never overwrites a file)")
@click.option("--max-export-bytes", default=DEFAULT_MAX_BYTES, type=click.IntRange(min=1),
              help="refuse an export larger than this")
@click.option("--replay", is_flag=True,
              help="produce the stranded records to the flow's target topics (a preview unless --execute)")
@click.option("--execute", is_flag=True, help="with --replay: produce them (exactly once, however often run)")
@click.option("--skip-keys", "skip_keys_file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="with --replay: pass over records with these keys (one a line; raw bytes as base64:...), those "
                   "whose producers were told the send failed and sent them again at the new site")
@click.option("--timeout", "timeout_s", default=120.0, type=click.FloatRange(min=1.0),
              help="seconds to read the stranded records (the old source is probed for 5 s first)")
@click.option("--json", "json_output", is_flag=True, help="machine-readable output on stdout (same as the global --json)")
@pass_ctx
def reconcile(ctx: CliContext, flow: str, export_dir: Path | None, max_export_bytes: int, replay: bool, execute: bool,
              skip_keys_file: Path | None, timeout_s: float, json_output: bool) -> None:
    """After a failover of FLOW, once the old source answers again: the records it stranded there.

    \b
    Reads the old source from the position the failover recorded to its ends and lists, per
    partition, the records in its log that never reached the target (offsets, count,
    first/last timestamp), and the consumer groups at the old source that had not processed
    them. Apart: stranded records, written before the failover (acknowledged or not: a send
    whose producer was told it failed may have been written), and late writes, written at the
    old source after the failover (a split brain; failback refuses until they are replayed).
    The stranded count is the failover's exact RPO; it is recorded on the target, where
    `status` shows it. --export writes the records to a file; --replay --execute produces them to the
    target topics with gk.stranded headers, exactly once, so consumers can process them late
    (a group listed as having processed them at the old source sees them again: the
    gk.stranded.processed-by header names it).
    """
    if execute and not replay:
        raise click.UsageError("--execute acts on --replay: give both")
    from geokafka.failover.reconcile import reconcile as run
    from geokafka.failover.stranded_replay import read_skip_keys

    skip_keys: frozenset[bytes] = frozenset()
    if skip_keys_file is not None:
        if not replay:
            raise click.UsageError("--skip-keys acts on --replay: give both")
        try:
            skip_keys = read_skip_keys(skip_keys_file.read_text(encoding="utf-8", errors="surrogateescape"))
        except (ValueError, OSError) as exc:
            raise click.BadParameter(f"{skip_keys_file}: {exc}", param_hint="--skip-keys") from None

    ctx.json_output = ctx.json_output or json_output
    report = run(ctx.topology, flow, export_dir=export_dir, max_export_bytes=max_export_bytes, replay=replay,
                 execute=execute, timeout_s=timeout_s, skip_keys=skip_keys)
    ctx.emit(report.to_dict(), render_reconcile(report))


COMMANDS = [reconcile]
