"""`geokafka guard`: watch the stretched cluster and handle a DC loss where the plan says it is safe."""

from __future__ import annotations

import os
import time

import click

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.errors import TopologyError
from geokafka.infra.signals import stop_on_signals


@click.command()
@click.option("--dry-run", is_flag=True, help="say what it would do; change and journal nothing")
@click.option("--duration", type=click.FloatRange(min=1), default=None, help="stop after this many seconds")
@click.option("--grace", "grace_s", type=click.FloatRange(min=1), default=None,
              help="seconds a DC must be out to count as lost (default: stretch.guard.grace_s)")
@click.option("--sites", "sites_mode", is_flag=True,
              help="guard the connected clusters' source sites instead: fail a lost site's flows over as the "
                   "topology's failover: policy allows")
@click.option("--site", "sites", multiple=True, metavar="NAME",
              help="with --sites: only this source site (repeatable; default: every flow's source)")
@pass_ctx
def guard(ctx: CliContext, dry_run: bool, duration: float | None, grace_s: float | None, sites_mode: bool,
          sites: tuple[str, ...]) -> None:
    """Watch the stretched cluster (stretch.cluster) and handle the loss of a DC; or, with
    --sites, watch the flows' source sites and fail a lost one over.

    \b
    A DC is lost when every broker in it has been unreachable or fenced for the grace period
    (one broker down, or a short flap, is not a DC loss). Then, where the plan says the
    controller quorum survives and the cluster confirms it (the lost brokers are fenced), it
    lowers min.insync.replicas of the topics whose acks=all writes stopped, so they resume on
    the surviving DC; when the DC is back and every replica is in sync again, it restores the
    setting and the preferred leaders. It never acts without a quorum (it prints the plan's
    steps) and never enables unclean leader election. Every action is journaled on the
    cluster (topic __geokafka_guard) and shown by `geokafka status`.

    \b
    With --sites (connected clusters; opt-in: failover.automatic in the topology, else only
    --dry-run): a site is lost when neither this process nor any live mirror of its flows
    has reached it for failover.confirm_s; a mirror that still reaches it means a partition,
    never a failover. A lost site fails over as one (`geokafka failover --site`) when every
    flow's RPO upper bound is at most failover.max_rpo_records; otherwise the guard says so,
    records it for status, metrics and alerts, and waits for a person.
    """
    if sites and not sites_mode:
        raise click.UsageError("--site needs --sites")
    if sites_mode:
        _guard_sites(ctx, dry_run, duration, sites)
        return
    from geokafka.control.connection import connection
    from geokafka.guard.decide import GuardSettings
    from geokafka.guard.loop import run_guard
    from geokafka.planning import plan_stretch

    stretch = ctx.topology.stretch
    if stretch is None or stretch.cluster is None:
        raise TopologyError(f"{ctx.file}: the guard needs a stretch: block with cluster: naming the stretched cluster "
                            "(or --sites, to guard the connected clusters' source sites)")
    plan = plan_stretch(stretch)
    quorum = {dc: plan.verdict_for_dc(dc).quorum_survives for dc in stretch.dcs}
    settings = GuardSettings(grace_s=grace_s if grace_s is not None else stretch.guard.grace_s)
    started = time.monotonic()

    def say(text: str) -> None:
        ctx.info(f"[bold cyan]{time.monotonic() - started:7.1f}s[/] {text}")

    # SIGINT and SIGTERM stop the guard between its looks (never a KeyboardInterrupt inside a Kafka client's
    # callback, which can leave the client hanging); a second one stops at once
    with stop_on_signals(keep=True, on_second=lambda: os._exit(130)) as stop:
        run = run_guard(connection(ctx.topology, stretch.cluster), settings, quorum, dry_run=dry_run,
                        interval_s=stretch.guard.interval_s, duration_s=duration, say=say, stop=stop)
    if stop.is_set():
        done = sum(1 for applied in run.actions if applied.outcome == "done")
        ctx.info(f"guard stopped: {done} actions taken, {len(run.events)} events")
    if ctx.json_output:
        ctx.emit({"dry_run": run.dry_run, "events": [{"at_ms": at, "text": t} for at, t in run.events],
                  "actions": [{"at_ms": a.at_ms, **a.action.to_dict(), "outcome": a.outcome}
                              for a in run.actions]})


def _guard_sites(ctx: CliContext, dry_run: bool, duration: float | None, sites: tuple[str, ...]) -> None:
    from geokafka.failover.site_guard import run_site_guard

    if not ctx.topology.failover.automatic and not dry_run:
        raise TopologyError(f"{ctx.file}: failover.automatic is not true: `geokafka guard --sites` fails sites over "
                            "only when the topology says so (--dry-run says what it would do)")
    started = time.monotonic()

    def say(text: str) -> None:
        ctx.info(f"[bold cyan]{time.monotonic() - started:7.1f}s[/] {text}")

    with stop_on_signals(keep=True, on_second=lambda: os._exit(130)) as stop:
        run = run_site_guard(ctx.topology, sites, dry_run=dry_run, stop=stop, duration_s=duration, say=say)
    if stop.is_set():
        done = sum(len(r.outcomes) - len(r.failed) for r in run.failovers)
        ctx.info(f"guard stopped: {done} flows failed over, {len(run.events)} events")
    if ctx.json_output:
        ctx.emit(run.to_dict())


COMMANDS = [guard]
