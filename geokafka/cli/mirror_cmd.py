"""`geokafka mirror`: run flows on Spark."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import click
from rich.live import Live
from rich.table import Table

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.control.flow_states import FlowState
from geokafka.errors import ALL_FAILED_OVER_EXIT
from geokafka.infra.signals import stop_on_signals
from geokafka.pipeline.runner import RunnerView


def _table(runners: list[RunnerView]) -> Table:
    table = Table("flow", "state", "mode", "partitions", "replicated", "MB", "restarts", "last error",
                  title="geokafka mirror")
    for r in runners:
        written = sum(p.written for p in r.progress.values())
        mb = sum(p.bytes for p in r.progress.values()) / 1e6
        table.add_row(r.name, r.status, r.mode, str(len(r.progress)), f"{written:,}", f"{mb:,.1f}", str(r.restarts),
                      str(r.error or "")[:80])
    return table


class LineProgress:
    """Progress for a log or a pipe (not a terminal): one line per flow when its state or mode changes,
    and every ``every_s`` seconds while it runs."""

    def __init__(self, write: Callable[[str], None], every_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._write, self._every_s, self._clock = write, every_s, clock
        self._last: dict[str, tuple[str, float]] = {}

    def __call__(self, runners: list[RunnerView]) -> None:
        now = self._clock()
        for r in runners:
            state, at = self._last.get(r.name, ("", float("-inf")))
            if f"{r.status} {r.mode}" != state or now - at >= self._every_s:
                self._last[r.name] = (f"{r.status} {r.mode}", now)
                self._write(progress_line(r))


def progress_line(r: RunnerView) -> str:
    """``flow f: running, 12,345 records, 12.3 MB, 12 partitions, 0 restarts, real-time mode[, last error: ...]``."""
    written = sum(p.written for p in r.progress.values())
    mb = sum(p.bytes for p in r.progress.values()) / 1e6
    line = (f"flow {r.name}: {r.status}, {written:,} records, {mb:,.1f} MB, {len(r.progress)} partitions, "
            f"{r.restarts} restarts, {r.mode} mode")
    return line + (f", last error: {str(r.error)[:200]}" if r.error else "")


@click.command()
@click.argument("flows", nargs=-1)
@click.option("--duration", type=float, default=None, help="stop after this many seconds (default: run until stopped)")
@pass_ctx
def mirror(ctx: CliContext, flows: tuple[str, ...], duration: float | None) -> None:
    """Replicate the topology's flows (all, or those named) on Spark until stopped.

    \b
    Each flow is one Structured Streaming query in one Spark application (pipeline.master;
    local[*] by default: a task thread per core), its source partitions split into a few
    partition groups (pipeline.partition_groups; one Spark task, one consumer and one transactional
    producer each), in real-time mode by default (pipeline.mode). Per flow:
    - topics: include regexes minus exclude regexes, re-evaluated every pipeline.topic_refresh_s;
      internal topics (__consumer_offsets, __transaction_state, _schemas, connect-*,
      *-changelog, *-repartition, geokafka's own) are never replicated.
    - naming: rename: prefix (<source>.<topic>, default) or identity. Records carry
      provenance headers gk.origin and gk.src; records that started on the target are never
      sent back, so active/active works with either naming.
    - fidelity: partition, order, key, value, headers, timestamp, null keys and tombstones
      are preserved; only committed transactional records are read (read_committed).
    - target topics are created with the source's partition count and configs first.
    - exactly once: each commit of a partition group (every pipeline.commit_interval_ms) is one
      Kafka transaction on the target, holding its records and the progress record of every
      partition that moved (in __geokafka_state); kill -9 and restart at any time.
    - failures: broker restarts and a target that is down are retried with backoff; data loss
      (truncated or re-created source), an oversize record, auth errors and partition
      mismatches stop the flow with an error naming topic, partition and offsets
      (skip_gaps: true logs and counts gaps instead).
    - transform (optional): filter / key / value as Spark SQL expressions.
    Progress: a live table on a terminal, one line per flow otherwise (on each state change and
    every 10 s). Ctrl-C or SIGTERM stops every flow cleanly within about 10 s and prints the same
    summary; a second one stops at once (the next start fences the writers).
    """
    # Ctrl-C and SIGTERM stop the flows; a second Ctrl-C changes nothing, even one that arrives
    # as the process exits (ignored from the end of the block on).
    with stop_on_signals(keep=True) as stop:
        if ctx.json_output:
            runners = _run(ctx, flows, duration, None, stop)
        elif not ctx.console.is_terminal:
            runners = _run(ctx, flows, duration, LineProgress(lambda line: click.echo(line)), stop)
            click.echo("mirror stopped:")
            for runner in runners:
                click.echo(f"  {progress_line(runner)}")
        else:
            with Live(_table([]), console=ctx.console, refresh_per_second=2, transient=False) as live:
                runners = _run(ctx, flows, duration, lambda rs: live.update(_table(rs)), stop)
    result = {
        r.name: {"state": r.status, "error": str(r.error) if r.error else None,
                 "written": sum(p.written for p in r.progress.values()), "restarts": r.restarts, "mode": r.mode,
                 "duplicates_skipped": sum(p.duplicates_skipped for p in r.progress.values()),
                 "startup": dict(r.startup)}
        for r in runners
    }
    ctx.emit(result)
    failed = [r for r in runners if r.status == FlowState.ERROR and r.error is not None]
    if failed:
        err = failed[0].error
        assert err is not None
        raise err
    if runners and all(r.status == FlowState.FAILED_OVER for r in runners):
        # a service manager that restarts the mirror on exit would start Spark again every few seconds for nothing
        if not ctx.json_output:
            click.echo(f"every flow of this mirror is failed over: nothing is left for it to replicate (exit "
                       f"{ALL_FAILED_OVER_EXIT}: a service unit with RestartPreventExitStatus={ALL_FAILED_OVER_EXIT} stays "
                       "stopped)", err=True)
        click.get_current_context().exit(ALL_FAILED_OVER_EXIT)


def _run(ctx: CliContext, flows: tuple[str, ...], duration: float | None, on_tick,  # type: ignore[no-untyped-def]
         stop: threading.Event) -> list[RunnerView]:
    from geokafka.pipeline.mirror import mirror as run_mirror
    from geokafka.pipeline.spark_session import shutdown_spark

    try:
        return run_mirror(ctx.topology, list(flows), duration, on_tick, stop)
    finally:
        shutdown_spark()  # this process started Spark: its JVM goes with it


COMMANDS = [mirror]
