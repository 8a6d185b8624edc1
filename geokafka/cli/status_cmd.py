"""`geokafka status` and `geokafka dashboard`: replication lag, throughput and RPO, read from Kafka."""

from __future__ import annotations

import json
import os
import sys
import time

import click

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.errors import UNHEALTHY_EXIT
from geokafka.infra.signals import stop_on_signals
from geokafka.monitoring.collect import StatusCollector, collect_status

_JSON_HELP = "machine-readable output on stdout (same as the global --json)"
"""Exit code of a one-shot `status` that shows a flow in error, down, or with an unreachable source or state."""


@click.command()
@click.argument("flows", nargs=-1)
@click.option("--watch", is_flag=True,
              help="keep observing every --interval seconds until Ctrl-C (throughput over the last minute)")
@click.option("--interval", default=2.0, type=click.FloatRange(min=0.2), help="seconds between observations with --watch")
@click.option("--sample", "sample_s", default=2.0, type=click.FloatRange(min=0.0),
              help="one-shot: seconds between the two observations that give throughput (0: one observation, no throughput)")
@click.option("--prometheus", is_flag=True, help="print the figures in Prometheus text format instead")
@click.option("--timeout", "timeout_s", default=10.0, type=click.FloatRange(min=1.0),
              help="seconds to wait for the target's state topic (then: state unavailable)")
@click.option("--partitions", "every_partition", is_flag=True,
              help="a row for every partition (by default, past 20 partitions a flow shows a row per topic and its "
                   "10 most-lagging partitions)")
@click.option("--json", "json_flag", is_flag=True, help=_JSON_HELP)
@pass_ctx
def status(ctx: CliContext, flows: tuple[str, ...], watch: bool, interval: float, sample_s: float,
           prometheus: bool, timeout_s: float, every_partition: bool, json_flag: bool) -> None:
    """Per flow and partition: state, lag in records and seconds, throughput and the RPO if the source died now.

    Reads the progress and heartbeats the mirror commits to each target's __geokafka_state,
    so it works from any machine while `geokafka mirror` runs elsewhere. A `running` flow
    whose heartbeat is older than 30 s is shown as `down`. When a source is unreachable, the
    last known progress and the mirror's last observation of the source bound the RPO (an
    interval: records and seconds between a lower and an upper bound). A failed-over flow
    shows when it failed over and what it lost: as its failover bounded it, or exactly once
    `geokafka reconcile` counted it in the old source's logs.

    Exits 20 when a flow is in error or down, or its source or state cannot be read (for
    scripts and cron checks); 0 otherwise, including stopped and failed-over flows.
    """
    from geokafka.monitoring.metrics import render_metrics
    from geokafka.monitoring.status_render import render_report

    ctx.json_output = ctx.json_output or json_flag
    names = list(flows) or None
    if not watch:
        report = collect_status(ctx.topology, names, sample_s=sample_s, state_timeout_s=timeout_s)
        if prometheus:
            sys.stdout.write(render_metrics(report))
            return
        ctx.emit(report.to_dict(), render_report(report, every_partition))
        if report.unhealthy():
            click.get_current_context().exit(UNHEALTHY_EXIT)
        return
    _watch(ctx, StatusCollector(ctx.topology, names, state_timeout_s=timeout_s), interval, prometheus, every_partition)


def _watch(ctx: CliContext, collector: StatusCollector, interval: float, prometheus: bool,
           every_partition: bool = False) -> None:
    """Observe until Ctrl-C: a live table for people, one JSON document per line under --json."""
    from rich.live import Live

    from geokafka.monitoring.metrics import render_metrics
    from geokafka.monitoring.status_render import render_report
    from geokafka.monitoring.throughput import History

    history = History()
    with stop_on_signals() as stop, collector:
        if ctx.json_output or prometheus:
            while not stop.is_set():
                started = time.monotonic()
                report = history.add(collector.collect())
                text = render_metrics(report) if prometheus else json.dumps(report.to_dict(), default=str)
                sys.stdout.write(text + "\n")
                sys.stdout.flush()
                stop.wait(max(0.0, interval - (time.monotonic() - started)))
            return
        with Live(console=ctx.console, auto_refresh=False) as live:
            while not stop.is_set():
                started = time.monotonic()
                report = history.add(collector.collect())
                live.update(render_report(report, every_partition), refresh=True)
                stop.wait(max(0.0, interval - (time.monotonic() - started)))


@click.command()
@click.argument("flows", nargs=-1)
@click.option("--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)")
@click.option("--port", default=8088, type=click.IntRange(0, 65535), help="port of the page, /api/status and /metrics")
@click.option("--interval", default=2.0, type=click.FloatRange(min=0.2), help="seconds between status samples")
@click.option("--history", "history_min", default=15.0, type=click.FloatRange(min=1.0), help="minutes of history kept")
@pass_ctx
def dashboard(ctx: CliContext, flows: tuple[str, ...], host: str, port: int, interval: float, history_min: float) -> None:
    """Serve a local web page with each flow's state, lag and throughput over time.

    Also serves /api/status (JSON) and /metrics (Prometheus text, for a scrape job).
    Runs until Ctrl-C or SIGTERM.
    """
    from geokafka.monitoring.dashboard import Dashboard

    board = Dashboard(ctx.topology, list(flows) or None, host, port, interval, history_min * 60)
    started = time.monotonic()
    with stop_on_signals(keep=True, on_second=lambda: os._exit(130)) as stop, board:
        ctx.info(f"dashboard on {board.url} (metrics: {board.url}metrics); Ctrl-C to stop")
        ctx.emit({"url": board.url, "metrics": f"{board.url}metrics", "api": f"{board.url}api/status"})
        sys.stdout.flush()
        while not stop.wait(0.5):
            pass
    ctx.info(f"dashboard stopped after {time.monotonic() - started:.0f} s")


COMMANDS = [status, dashboard]
