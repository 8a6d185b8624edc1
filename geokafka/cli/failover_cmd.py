"""`geokafka failover | promote | failback`: move a flow's business between sites."""

from __future__ import annotations

import click
from rich.table import Table

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.control.failover import FailoverReport


def render_report(report: FailoverReport) -> Table:
    """The failover report as a table: losses per partition, then where groups resume."""
    table = Table("topic/partition", "observed source end", "replicated up to", "unreplicated", "RPO s",
                  title=f"{report.kind} of {report.flow}: {report.source} -> {report.target}", show_lines=False)
    for p in report.partitions:
        end = "-" if p.observed_end is None else str(p.observed_end)
        table.add_row(f"{p.topic}/{p.partition}", end, str(p.replicated_next), str(p.unreplicated), f"{p.rpo_seconds:.1f}")
    table.caption = (
        f"RPO: {report.rpo_records} records, {report.rpo_seconds:.1f} s   "
        f"command took {report.duration_s:.1f} s   source reachable: {report.source_reachable}"
    )
    return table


def render_groups(report: FailoverReport) -> Table:
    """Where each group resumes on the target."""
    table = Table("group", "topic/partition", "resume at", "action", title="consumer groups on the target")
    for group, rows in sorted(report.groups.items()):
        for row in rows:
            table.add_row(group, f"{row['topic']}/{row['partition']}", str(row["resume_at"]), row["action"])
    return table


def _emit(ctx: CliContext, report: FailoverReport) -> None:
    if ctx.json_output:
        ctx.emit(report.to_dict())
        return
    ctx.console.print(render_report(report))
    if report.groups:
        ctx.console.print(render_groups(report))
    for note in report.notes:
        ctx.console.print(f"note: {note}")


@click.command()
@click.argument("flow")
@pass_ctx
def failover(ctx: CliContext, flow: str) -> None:
    """The source site is gone: stop FLOW, move its groups to the target, report the loss.

    \b
    Fences the flow's writers (nothing more lands), marks it failed-over on the target (a
    running mirror stops it), commits every synced group's translated offset clamped to the
    target's end (from the last checkpoint when the source is unreachable), and prints per
    partition what the last observation of the source held that the target does not (RPO).
    WARNING: after this, FLOW no longer replicates; use `failback` to reverse it.
    """
    from geokafka.control.failover import failover as run

    _emit(ctx, run(ctx.topology, flow))


@click.command()
@click.argument("flow")
@click.option("--timeout", default=120.0, help="seconds to wait for the flow to catch up")
@pass_ctx
def promote(ctx: CliContext, flow: str, timeout: float) -> None:
    """Planned move of FLOW to its target, with zero loss.

    Stop producers on the source first. Waits until the running mirror has replicated every
    committed record, syncs configs and groups a last time, then fails over (RPO 0), or
    refuses with the partitions still behind after --timeout.
    """
    from geokafka.control.failover import failover as run

    _emit(ctx, run(ctx.topology, flow, promote=True, timeout_s=timeout))


@click.command()
@click.argument("flow")
@click.option("--timeout", default=300.0, help="seconds to wait for the reverse flow to catch up")
@pass_ctx
def failback(ctx: CliContext, flow: str, timeout: float) -> None:
    """After a failover of FLOW, make the original source the primary again.

    \b
    Steps (printed as they are done):
    1. check the original source is reachable;
    2. run the reverse flow FLOW-failback (target -> source, same guarantees) on Spark;
    3. once producers on the new primary are stopped, wait until it has caught up;
    4. promote it: translate groups back, RPO 0;
    5./6. you move clients back and restart `geokafka mirror FLOW`.
    """
    from geokafka.control.failback import failback as run

    report = run(ctx.topology, flow, timeout_s=timeout)
    if ctx.json_output:
        ctx.emit(report.to_dict())
        return
    for step in report.steps:
        ctx.console.print(step)
    if report.promote is not None:
        _emit(ctx, report.promote)


COMMANDS = [failover, promote, failback]
