"""`geokafka drill ...`: disaster-recovery drills on real local clusters."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from geokafka.artifacts.jars import local_kafka_jars
from geokafka.cli.context import CliContext, pass_ctx
from geokafka.cli.interrupts import terminate_as_interrupt
from geokafka.cli.plan_cmd import LAYOUTS
from geokafka.drills.stretch import StretchDrillOptions, StretchDrillResult, raise_on_disagreement, run_stretch_drill
from geokafka.errors import TopologyError
from geokafka.planning import TOPOLOGY, resolve_layout
from geokafka.topology.schema import MIN_HEAP_MB, Pipeline


@click.group()
def drill() -> None:
    """DR drills on real local clusters: kill a site, measure RPO and RTO, check the plan."""


@drill.command("stretch")
@click.option("--layout", type=click.Choice(LAYOUTS), default=TOPOLOGY,
              help="the topology file's stretch: block, or a built-in layout (3dc, 2dc = 2+1 quorum split, ...)")
@click.option("--dc", default=None, help="the DC to lose [default: the one whose loss the plan finds worst]")
@click.option("--kill-after", type=click.FloatRange(1, 600), default=5.0, help="seconds of traffic before the kill")
@click.option("--observe", type=click.FloatRange(5, 600), default=20.0,
              help="seconds to watch for writes to resume by themselves after the kill")
@click.option("--rate", type=click.FloatRange(10, 5000), default=200.0, help="records produced per second")
@click.option("--heap-mb", type=click.IntRange(MIN_HEAP_MB, 4096), default=256, help="JVM heap of each Kafka process")
@click.option("--recover/--no-recover", default=False,
              help="after the observation window, run the plan's manual steps and measure the RTO they give")
@click.option("--kill-survivors", is_flag=True,
              help="with --recover: the surviving DC's broker-only nodes go down hard too and restart with the "
                   "new voter set (they come back out of the ISR, so leaderless partitions need the plan's "
                   "unclean election step)")
@click.option("--guard", "guard", is_flag=True,
              help="run `geokafka guard` through the drill instead of manual steps; then bring the DC back and "
                   "check that the guard restores min.insync.replicas and the preferred leaders")
@click.option("--guard-grace", type=click.FloatRange(1, 600), default=10.0,
              help="the guard's grace period in the drill (seconds a DC must be out to count as lost)")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"),
              help="folder of the JSON report and PNG timeline")
@click.option("--json", "json_flag", is_flag=True, help="print the report as JSON (as `geokafka --json drill stretch`)")
@pass_ctx
def stretch(ctx: CliContext, layout: str, dc: str | None, kill_after: float, observe: float, rate: float,
            heap_mb: int, recover: bool, kill_survivors: bool, guard: bool, guard_grace: float, out: Path,
            json_flag: bool) -> None:
    """Lose one DC of a real local stretched cluster and compare RPO/RTO with `geokafka plan`.

    Starts the layout as local KRaft processes (broker.rack = DC, controllers placed per DC,
    ports from the layout's base_port), creates its topics with the planned assignment,
    produces with the topics' acks while a consumer reads, then SIGKILLs every process of
    the DC. Exits with DrillFailedError (code 11) when reality disagrees with the plan.

    Only processes this drill started are killed, found by their PID files. WAN latency
    between DCs is NOT emulated (every process binds 127.0.0.1): this is a process-kill drill.
    """
    local_kafka_jars("drill stretch")  # before anything starts: what is missing and how to fetch it
    if json_flag:
        ctx.json_output = True
    topology = ctx.topology if layout == TOPOLOGY or ctx.file.exists() else None
    stretch_block = resolve_layout(layout, topology.stretch if topology else None)
    state_dir = topology.pipeline.state_dir if topology else Pipeline().state_dir
    opts = StretchDrillOptions(
        layout_name=layout, stretch=stretch_block, home=(state_dir / "drills" / f"stretch-{layout}").absolute(),
        out_dir=out, dc=dc, kill_after_s=kill_after, observe_s=observe, rate=rate, heap_mb=heap_mb,
        recover=recover and not guard, guard_grace_s=guard_grace if guard else None, kill_brokers=kill_survivors,
    )
    with terminate_as_interrupt():  # `kill` still stops every process the drill started
        if ctx.json_output:
            result = run_stretch_drill(opts, check=False)
        else:
            with ctx.console.status("starting the stretched cluster...") as status:
                result = run_stretch_drill(
                    opts, on_event=lambda text: ctx.console.log(text),
                    on_tick=lambda text: status.update(text), check=False,
                )
    ctx.emit(result.report, _summary(result))
    notes = list(result.comparison.disagreements) + list(result.comparison.notes)
    notes += [result.report["emulation"]["note"], f"report: {result.json_path}", f"timeline: {result.png_path}"]
    for note in notes:
        ctx.info(f"- {note}")
    raise_on_disagreement(result)


def _summary(result: StretchDrillResult) -> Table:
    r = result.report
    plan, m = r["plan"], r["measured"]
    table = Table("", "plan", "drill", title=f"stretch drill {r['layout']}: lose {r['lost_dc']}")
    table.add_row("quorum", "survives" if plan["quorum"]["survives"] else "lost",
                  {True: "answers", False: "does not answer", None: "-"}[m["quorum_available"]])
    plan_rto = "≈ 0 (automatic)" if plan["rto_zero"] else "> 0 (manual steps)"
    if m["rto_s"] is None:
        drill_rto = (f"{m['partitions_resumed']}/{len(m['partitions'])} partitions accepted writes again within "
                     f"{r['options']['observe_s']:.0f} s")
    else:
        drill_rto = f"{m['rto_s']:.1f} s ({m['rto_kind']})"
    table.add_row("RTO", plan_rto, drill_rto)
    plan_rpo = "0" if plan["rpo_zero"] else "> 0 possible"
    drill_rpo = f"{m['acked_lost']} of {m['acked']} acked records lost"
    if m["acked_unreadable"]:
        drill_rpo += f", {m['acked_unreadable']} unreadable (no leader can serve them)"
    table.add_row("RPO", plan_rpo, drill_rpo)
    guard = r.get("guard")
    if guard is not None:
        back = guard["dc_return"] or {}
        lowered = guard["lowered_after_kill_s"]
        restored = back.get("min_isr_restored_after_s")
        table.add_row("guard", f"lowers min.insync.replicas {guard['grace_s']:.0f} s after the loss, undoes it on return",
                      ("did not act" if lowered is None else f"lowered {lowered:.1f} s after the kill")
                      + ("; not restored" if restored is None else
                         f"; restored {restored:.1f} s after {r['lost_dc']} was back, leaders "
                         f"{back.get('leaders_restored_after_s')} s"))
    verdict = "[green]agrees[/green]" if result.comparison.agrees else "[red]DISAGREES[/red]"
    table.add_row("verdict", "", verdict)
    return table


@drill.command("connected")
@click.option("--flow", "flow_name", default=None, help="the flow to drill [default: the first flow]")
@click.option("--topic", default="drill-orders", help="topic the drill produces to (created if missing)")
@click.option("--group", default="drill-consumers", help="consumer group that must resume on the target")
@click.option("--kill-after", type=click.FloatRange(1, 3600), default=20.0, help="seconds of traffic before the kill")
@click.option("--rate", type=click.FloatRange(1, 20000), default=300.0, help="records produced per second")
@click.option("--out", type=click.Path(path_type=Path), default=Path("reports"), help="folder for the JSON and PNG")
@pass_ctx
def connected(ctx: CliContext, flow_name: str | None, topic: str, group: str, kill_after: float, rate: float,
              out: Path) -> None:
    """Kill the source site of a flow under traffic, fail over, and measure RPO, RTO, duplicates.

    The flow's clusters are started if needed (the source must have a `local:` block); the
    flow must replicate TOPIC and sync GROUP (`topics`/`groups` regexes). Afterwards the
    source site is started again, so the flow can be failed back.
    WARNING: this fails the flow over for real (`geokafka failback FLOW` reverses it).
    """
    local_kafka_jars("drill connected")
    import time

    from geokafka.drills.connected import plot_timeline, run_connected_drill, write_result
    from geokafka.infra.clusters import local_cluster_specs
    from geokafka.infra.local_cluster import start_clusters

    topology = ctx.topology
    name = flow_name or next(iter(sorted(topology.flows)), None)
    if name is None:
        raise TopologyError(f"{ctx.file}: flows: no flow to drill")
    flow = topology.flow(name)
    specs = [s for s in local_cluster_specs(topology) if s.name in (flow.source, flow.target)]
    start_clusters(specs, timeout_s=180)
    t0 = time.monotonic()
    result = run_connected_drill(
        topology, name, lambda text: ctx.info(f"{time.monotonic() - t0:6.1f}s {text}"),
        lambda sample: ctx.info(f"  t={sample['t']:5.1f}s acked {sample['acked']:,} replicated "
                                f"{sample['replicated'] if sample['replicated'] is not None else '?'}"),
        topic=topic, group=group, traffic_s=kill_after, rate=rate,
    )
    start_clusters([s for s in specs if s.name == flow.source], timeout_s=180)  # the site comes back
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report = write_result(result, out / f"drill-connected-{name}-{stamp}.json")
    plot = plot_timeline(result, out / f"drill-connected-{name}-{stamp}.png", f"drill {name}")
    data = {**result.to_dict(), "report": str(report), "timeline": str(plot)}
    summary = (f"RPO {result.rpo_records_measured:,} records (failover report: {result.rpo_reported})  "
               f"RTO {result.rto_seconds:.1f} s  "
               f"duplicates {result.duplicates:,}\nreport: {report}  timeline: {plot}")
    ctx.emit(data, summary)


COMMANDS = [drill]
