"""`geokafka failover | promote | failback`: move a flow's business between sites."""

from __future__ import annotations

from collections.abc import Callable

import click
from rich.table import Table

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.errors import TopologyError
from geokafka.failover.failover import FailoverReport
from geokafka.failover.site import SiteReport


def rpo_headline(report: FailoverReport) -> str:
    """``RPO: 120 to 410 records, up to 1.4 s (source last observed 0.3 s before it was found gone)``."""
    return f"RPO: {report.rpo.headline()}"


def render_report(report: FailoverReport) -> Table:
    """The failover report as a table: losses per partition, then where groups resume."""
    verb = f"{report.kind} (dry run: nothing changed)" if report.dry_run else report.kind
    table = Table("topic/partition", "last observed source end", "replicated up to", "seen, not replicated",
                  "replicated past the observation",
                  title=f"{verb} of {report.flow}: {report.source} -> {report.target}", show_lines=False)
    for p in report.partitions:
        end = "-" if p.observed_end is None else str(p.observed_end)
        table.add_row(f"{p.topic}/{p.partition}", end, str(p.replicated_next), str(p.unreplicated),
                      str(p.replicated_past_observation))
    table.caption = (f"{rpo_headline(report)}\ncommand took {report.duration_s:.1f} s   "
                     f"source reachable: {report.source_reachable}")
    return table


def render_groups(report: FailoverReport) -> Table:
    """Where each group resumes on the target."""
    title = "consumer groups on the target" + (" (would be)" if report.dry_run else "")
    table = Table("group", "topic/partition", "resume at", "action", "why", title=title)
    for group, rows in sorted(report.groups.items()):
        for row in rows:
            resume = "-" if row["resume_at"] is None else str(row["resume_at"])
            table.add_row(group, f"{row['topic']}/{row['partition']}", resume, row["action"], row["reason"])
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


def render_site(report: SiteReport) -> Table:
    """One row per flow of the site: what happened, its RPO and groups, its time."""
    verb = f"{report.kind} (dry run: nothing changed)" if report.dry_run else report.kind
    table = Table("flow", "source -> target", "result", "RPO", "groups moved", "took",
                  title=f"{verb} of site {report.site}: {len(report.outcomes)} flows")
    for o in report.outcomes:
        rpo, groups = "-", "-"
        if o.error is not None:
            result = f"FAILED: {type(o.error).__name__}: {o.error}"
        elif o.done_before is not None:
            result = "done before: " + o.done_before
        else:
            result = "would be done" if report.dry_run else "done"
            promote = getattr(o.report, "promote", None) or o.report
            if isinstance(promote, FailoverReport):
                rpo = promote.rpo.headline()
                groups = str(len(promote.groups))
        table.add_row(o.flow, f"{o.source} -> {o.target}", result, rpo, groups, f"{o.duration_s:.1f} s")
    failed = ", ".join(o.flow for o in report.failed)
    table.caption = (f"took {report.duration_s:.1f} s" + (f"; failed: {failed} (run it again to finish them: what is "
                                                            "done stays done)" if failed else ""))
    return table


def _flow_or_site(flow: str | None, site: str | None) -> None:
    if (flow is None) == (site is None):
        raise TopologyError("name one FLOW or one --site SITE")


def _run_site(ctx: CliContext, site: str, kind: str, run: Callable[[str], object], dry_run: bool,
              parallel: bool = True) -> None:
    from geokafka.failover.site import run_for_site

    report = run_for_site(ctx.topology, site, kind, run, dry_run=dry_run, parallel=parallel)
    if ctx.json_output:
        ctx.emit(report.to_dict())
    else:
        ctx.console.print(render_site(report))
        for outcome in report.outcomes:
            notes = getattr(outcome.report, "notes", None) or []
            for note in notes:
                ctx.console.print(f"note ({outcome.flow}): {note}")
    if report.exit_code:
        click.get_current_context().exit(report.exit_code)


_DRY_RUN = "print exactly what would happen and change nothing"
_SITE = "every flow whose source is this cluster, side by side, in one report"
_OVERWRITE = ("also move groups that consumers on the target moved (by default they stay where they are, "
              "and the report says so)")


@click.command()
@click.argument("flow", required=False)
@click.option("--site", default=None, help=_SITE)
@click.option("--dry-run", is_flag=True, help=_DRY_RUN)
@click.option("--timeout", "probe_timeout", default=5.0, type=click.FloatRange(min=0.1),
              help="seconds to wait for the source to answer (a dead site answers at once)")
@click.option("--overwrite-target-offsets", is_flag=True, help=_OVERWRITE)
@click.option("--force", is_flag=True,
              help="fail over even though the flow's mirror still reaches the source (a partition, not a lost site)")
@pass_ctx
def failover(ctx: CliContext, flow: str | None, site: str | None, dry_run: bool, probe_timeout: float,
             overwrite_target_offsets: bool, force: bool) -> None:
    """The source site is gone: stop FLOW (or every flow of --site), move its groups to the target, report the loss.

    \b
    Fences the flow's writers (nothing more lands), marks it failed-over on the target (a
    running mirror stops it), commits every synced group's translated offset clamped to the
    target's end (from the last checkpoint when the source is unreachable), and prints per
    partition what the last observation of the source held that the target does not, and the
    RPO as an interval: seen and not replicated, up to what the source could have taken since
    at its peak write rate (`geokafka reconcile FLOW` counts it exactly once the source is back).
    When the source does not answer from here but the flow's mirror (at the target's site)
    still reaches it, this is a partition, not a lost site: refused unless --force.
    --site SITE does all of this for every flow whose source is SITE, side by side: one
    report, exit 0 when every flow is failed over (also those that were already), else the
    first failed flow's code; run it again to finish what failed.
    WARNING: after this, FLOW no longer replicates; use `failback` to reverse it. Try
    --dry-run first.
    """
    from geokafka.failover.failover import failover as run

    _flow_or_site(flow, site)

    def one(name: str) -> FailoverReport:
        return run(ctx.topology, name, probe_timeout_s=probe_timeout, overwrite_groups=overwrite_target_offsets,
                   dry_run=dry_run, force=force)

    if site is not None:
        _run_site(ctx, site, "failover", one, dry_run)
    else:
        assert flow is not None
        _emit(ctx, one(flow))


@click.command()
@click.argument("flow", required=False)
@click.option("--site", default=None, help=_SITE)
@click.option("--timeout", default=120.0, help="seconds to wait for the flow to catch up")
@click.option("--dry-run", is_flag=True, help=_DRY_RUN)
@click.option("--overwrite-target-offsets", is_flag=True, help=_OVERWRITE)
@pass_ctx
def promote(ctx: CliContext, flow: str | None, site: str | None, timeout: float, dry_run: bool,
            overwrite_target_offsets: bool) -> None:
    """Planned move of FLOW (or every flow of --site) to its target, with zero loss.

    Stop producers on the source first. Waits until the running mirror has replicated every
    committed record, syncs configs and groups a last time, then fails over (RPO 0), or
    refuses with the partitions still behind after --timeout. --site: every flow whose source
    is SITE, side by side, one report.
    """
    from geokafka.failover.failover import failover as run

    _flow_or_site(flow, site)

    def one(name: str) -> FailoverReport:
        return run(ctx.topology, name, promote=True, timeout_s=timeout, overwrite_groups=overwrite_target_offsets,
                   dry_run=dry_run)

    if site is not None:
        _run_site(ctx, site, "promote", one, dry_run)
    else:
        assert flow is not None
        _emit(ctx, one(flow))


@click.command()
@click.argument("flow", required=False)
@click.option("--site", default=None,
              help="every failed-over flow whose source is this cluster, one after another, in one report")
@click.option("--timeout", default=300.0, help="seconds to wait for the reverse flow to catch up")
@click.option("--dry-run", is_flag=True, help=_DRY_RUN)
@click.option("--ignore-late-writes", is_flag=True,
              help="fail back although records written at the original source after the failover were not replayed "
                   "(they stay there, behind the replicated position)")
@pass_ctx
def failback(ctx: CliContext, flow: str | None, site: str | None, timeout: float, dry_run: bool,
             ignore_late_writes: bool) -> None:
    """After a failover of FLOW (or of every flow of --site), make the original source the primary again.

    \b
    Steps (printed as they are done):
    0. count the records the failover stranded at the original source (as `reconcile` does),
       and refuse while records written there after the failover are not replayed (late
       writes, a split brain) unless --ignore-late-writes;
    1. check the original source is reachable;
    2. run the reverse flow FLOW-failback (target -> source, same guarantees) on Spark;
    3. once producers on the new primary are stopped, wait until it has caught up;
    4. promote it (RPO 0) and move every group to the first record it has not processed at
       the original site;
    5./6. you move clients back and restart `geokafka mirror FLOW`.
    --site SITE: every flow whose source is SITE, one after another (each runs its reverse flow
    on Spark), one report; flows already back at SITE count as done.
    """
    from geokafka.failover.failback import failback as run

    _flow_or_site(flow, site)
    if site is not None:
        _run_site(ctx, site, "failback", lambda name: run(ctx.topology, name, timeout_s=timeout, dry_run=dry_run,
                                                          ignore_late_writes=ignore_late_writes), dry_run, parallel=False)
        return
    assert flow is not None
    report = run(ctx.topology, flow, timeout_s=timeout, dry_run=dry_run, ignore_late_writes=ignore_late_writes)
    if ctx.json_output:
        ctx.emit(report.to_dict())
        return
    if report.stranded is not None:
        from geokafka.cli.reconcile_cmd import render_reconcile

        ctx.console.print(render_reconcile(report.stranded))
    for step in report.steps:
        ctx.console.print(step)
    if report.promote is not None:
        ctx.console.print(render_report(report.promote))
    if report.groups is not None and report.groups.positions:
        table = Table("group", "topic/partition", "resume at", "was", "action", "why",
                      title=f"consumer groups at {report.groups.site}")
        for pos in report.groups.positions:
            was = "-" if pos.previous is None else str(pos.previous)
            table.add_row(pos.group, f"{pos.topic}/{pos.partition}", str(pos.resume_at), was, pos.action, pos.reason)
        ctx.console.print(table)
    for note in report.notes:
        ctx.console.print(f"note: {note}")


COMMANDS = [failover, promote, failback]
