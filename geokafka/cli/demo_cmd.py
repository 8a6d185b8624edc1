"""`geokafka demo`: the main job on the embedded default topology."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from geokafka.artifacts.jars import local_kafka_jars
from geokafka.cli.context import CliContext, pass_ctx
from geokafka.cli.interrupts import terminate_as_interrupt


def _reported_rpo(result: Any) -> str:
    return str(result.rpo_reported)


def _summary(result: Any) -> Table:
    table = Table("measure", "value", title="geokafka demo: nyc site lost, failed over to atl")
    rows = [
        ("flow started on Spark, first epoch committed (before traffic)", f"{result.mirror_start_s:.1f} s"),
        ("orders acked at nyc (acks=all)", f"{result.produced_acked:,}"),
        ("replicated to atl", f"{result.replicated:,}"),
        ("RPO, measured (acked, never replicated)", f"{result.rpo_records_measured:,} records"),
        ("RPO, failover report (interval)", _reported_rpo(result)),
        ("  acked after the last observation", f"{result.acked_after_last_observation:,}"),
        ("RTO (site killed -> the application consuming at atl, never restarted)", f"{result.rto_seconds:.1f} s"),
        ("  of which `failover` took", f"{result.failover_command_s:.1f} s"),
        ("  the application switched to atl after", "-" if result.switch_seconds is None
         else f"{result.switch_seconds:.1f} s"),
        ("consumed at nyc / at atl", f"{result.consumed_at_source:,} / {result.consumed_at_target:,}"),
        ("duplicates seen by the group", f"{result.duplicates:,}"),
        ("replicated records the group never saw", f"{result.missing_for_consumer:,}"),
        ("new orders written at atl / consumed there", f"{result.acked_at_target:,} / {result.consumed_new_at_target:,}"),
        ("stranded at nyc, counted by `reconcile` once it is back", "-" if result.stranded_counted is None
         else f"{result.stranded_counted:,} records"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


@click.command()
@click.option("--traffic", default=20.0, help="seconds of traffic before the nyc site dies")
@click.option("--rate", default=300.0, help="orders per second")
@click.option("--keep", is_flag=True, help="leave the atl cluster running afterwards")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), help="folder for the report")
@pass_ctx
def demo(ctx: CliContext, traffic: float, rate: float, keep: bool, out: Path) -> None:
    """Two local sites, a flow on local Spark, live orders, the source site dies, failover.

    The order producer and the consumer group use geokafka's client library: they follow the
    failover to atl on their own. Prints RPO (records and seconds), RTO and duplicates, then
    nyc comes back and `reconcile` counts what it stranded; writes them as JSON and a PNG
    timeline under --out. Runs on its own embedded topology (ports 17092-17094 and 18092).
    """
    local_kafka_jars("demo")  # before anything starts: what is missing and how to fetch it
    from geokafka.drills.connected import plot_timeline, write_result
    from geokafka.drills.demo import run_demo

    t0 = time.monotonic()

    def say(text: str) -> None:
        ctx.info(f"[bold cyan]{time.monotonic() - t0:6.1f}s[/] {text}")

    def watch(sample: dict[str, Any]) -> None:
        lag = "?" if sample["lag_records"] is None else f"{sample['lag_records']:,}"
        replicated = "?" if sample["replicated"] is None else f"{sample['replicated']:,}"
        ctx.info(f"  t={sample['t']:5.1f}s acked {sample['acked']:6,} replicated {replicated:>6} "
                 f"lag {lag:>6} consumed@nyc {sample['consumed_at_source']:6,}")

    state_dir = Path(".geokafka") / "demo"
    with terminate_as_interrupt():  # `kill` still stops the demo's clusters
        result = run_demo(state_dir, say, watch, traffic_s=traffic, rate=rate, keep=keep)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report = write_result(result, out / f"demo-{stamp}.json")
    plot = plot_timeline(result, out / f"demo-{stamp}.png", "demo")
    if ctx.json_output:
        ctx.emit(result.to_dict())
        return
    ctx.console.print(_summary(result))
    ctx.console.print(f"report: {report}   timeline: {plot}   total {time.monotonic() - t0:.0f}s")


COMMANDS = [demo]
