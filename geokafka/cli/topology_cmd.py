"""`geokafka validate`: check the topology file."""

from __future__ import annotations

import click

from geokafka.cli.context import CliContext, pass_ctx


@click.command()
@pass_ctx
def validate(ctx: CliContext) -> None:
    """Check the topology file and summarize it."""
    topology = ctx.topology
    data = {
        "file": str(ctx.file),
        "clusters": sorted(topology.clusters),
        "flows": {n: f"{f.source} -> {f.target}" for n, f in topology.flows.items()},
        "stretch": sorted(topology.stretch.dcs) if topology.stretch else None,
    }
    ctx.emit(data, f"{ctx.file}: valid ({len(topology.clusters)} clusters, {len(topology.flows)} flows)")


COMMANDS = [validate]
