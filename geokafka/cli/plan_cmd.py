"""`geokafka plan`: the stretched-cluster analysis of the topology's ``stretch:`` block."""

from __future__ import annotations

import json
from pathlib import Path

import click

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.planning import PRESETS, TOPOLOGY, plan_stretch, reassignment_json, resolve_layout
from geokafka.planning.render import plan_renderable

LAYOUTS = [TOPOLOGY, *PRESETS]


@click.command()
@click.option("--layout", type=click.Choice(LAYOUTS), default=TOPOLOGY,
              help="the topology file's stretch: block, or a built-in layout of the source documents")
@click.option("--assignment", "assignment_file", type=click.Path(path_type=Path), default=None,
              help="also write the replica assignment as kafka-reassign-partitions JSON to this file")
@click.option("--json", "json_flag", is_flag=True, help="machine-readable output (as `geokafka --json plan`)")
@pass_ctx
def plan(ctx: CliContext, layout: str, assignment_file: Path | None, json_flag: bool) -> None:
    """Plan a stretched cluster: placement, quorum, and what losing each DC or node does.

    For each DC (and each single broker or controller) it says whether the KRaft quorum
    survives, whether partitions stay writable with the configured acks, whether an
    acknowledged record can be lost (RPO), whether writes resume by themselves (RTO) and,
    when they do not, the manual failover and failback steps in order.
    """
    if json_flag:
        ctx.json_output = True
    stretch = resolve_layout(layout, ctx.topology.stretch if layout == TOPOLOGY else None)
    result = plan_stretch(stretch)
    if assignment_file is not None:
        assignment_file.parent.mkdir(parents=True, exist_ok=True)
        assignment_file.write_text(json.dumps(reassignment_json(result.topics), indent=2) + "\n", encoding="utf-8")
        ctx.info(f"assignment written to {assignment_file}")
    data = {"layout": layout, **result.to_dict()}
    ctx.emit(data, plan_renderable(result, title=f"stretched cluster ({layout})"))


COMMANDS = [plan]
