"""`geokafka mirror`: run flows on Spark."""

from __future__ import annotations

import click
from rich.live import Live
from rich.table import Table

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.pipeline.runner import FlowRunner


def _table(runners: list[FlowRunner]) -> Table:
    table = Table("flow", "state", "partitions", "replicated", "MB", "restarts", "last error", title="geokafka mirror")
    for r in runners:
        written = sum(p.written for p in r.progress.values())
        mb = sum(p.bytes for p in r.progress.values()) / 1e6
        table.add_row(r.name, r.status, str(len(r.progress)), f"{written:,}", f"{mb:,.1f}", str(r.restarts),
                      str(r.error or "")[:80])
    return table


@click.command()
@click.argument("flows", nargs=-1)
@click.option("--duration", type=float, default=None, help="stop after this many seconds (default: run until stopped)")
@pass_ctx
def mirror(ctx: CliContext, flows: tuple[str, ...], duration: float | None) -> None:
    """Replicate the topology's flows (all, or those named) on Spark until stopped.

    \b
    Each flow is one Structured Streaming query in one Spark application (pipeline.master;
    local[*] by default). Per flow:
    - topics: include regexes minus exclude regexes, re-evaluated every pipeline.topic_refresh_s;
      internal topics (__consumer_offsets, __transaction_state, _schemas, connect-*,
      *-changelog, *-repartition, geokafka's own) are never replicated.
    - naming: rename: prefix (<source>.<topic>, default) or identity. Records carry
      provenance headers gk.origin and gk.src; records that started on the target are never
      sent back, so active/active works with either naming.
    - fidelity: partition, order, key, value, headers, timestamp, null keys and tombstones
      are preserved; only committed transactional records are read (read_committed).
    - target topics are created with the source's partition count and configs first.
    - exactly once: each batch of a source partition is one Kafka transaction on the target,
      together with its progress record in __geokafka_state; kill -9 and restart at any time.
    - failures: broker restarts and a target that is down are retried with backoff; data loss
      (truncated or re-created source), an oversize record, auth errors and partition
      mismatches stop the flow with an error naming topic, partition and offsets
      (skip_gaps: true logs and counts gaps instead).
    - transform (optional): filter / key / value as Spark SQL expressions.
    """
    runners: list[FlowRunner] = []
    if ctx.json_output:
        runners = _run(ctx, flows, duration, None)
    else:
        with Live(_table([]), console=ctx.console, refresh_per_second=2, transient=False) as live:
            runners = _run(ctx, flows, duration, lambda rs: live.update(_table(rs)))
    result = {
        r.name: {"state": r.status, "error": str(r.error) if r.error else None,
                 "written": sum(p.written for p in r.progress.values()), "restarts": r.restarts}
        for r in runners
    }
    ctx.emit(result)
    failed = [r for r in runners if r.status == "error" and r.error is not None]
    if failed:
        err = failed[0].error
        assert err is not None
        raise err


def _run(ctx: CliContext, flows: tuple[str, ...], duration: float | None, on_tick):  # type: ignore[no-untyped-def]
    from geokafka.pipeline.mirror import mirror as run_mirror

    return run_mirror(ctx.topology, list(flows), duration, on_tick)


COMMANDS = [mirror]
