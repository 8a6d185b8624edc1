"""`geokafka validate`: check the topology file."""

from __future__ import annotations

import click

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.errors import TopologyError
from geokafka.topology import check_topology_file


@click.command()
@pass_ctx
def validate(ctx: CliContext) -> None:
    """Check the topology file with every rule other commands apply, and list all problems.

    Exit 0 and a summary when it is valid; otherwise every problem on stderr, one line each
    (TopologyError: file:line: key: what), and exit 2. --json prints {"file", "valid",
    "problems": [{"where", "key", "what"}], ...} on stdout either way.
    """
    checked = check_topology_file(ctx.topology_file())
    topology = checked.topology
    if not checked.valid:
        ctx.emit({"file": str(ctx.file), "valid": False, "problems": [p.to_dict() for p in checked.problems]})
        for problem in checked.problems[:-1]:  # every line as the CLI prints the last one
            click.echo(f"TopologyError: {problem}", err=True)
        raise TopologyError(str(checked.problems[-1]))
    assert topology is not None
    data = {
        "file": str(ctx.file),
        "valid": True,
        "problems": [],
        "clusters": sorted(topology.clusters),
        "flows": {n: f"{f.source} -> {f.target}" for n, f in topology.flows.items()},
        "stretch": sorted(topology.stretch.dcs) if topology.stretch else None,
    }
    stretch = f", a stretched cluster over {len(topology.stretch.dcs)} DCs" if topology.stretch else ""
    ctx.emit(data, f"{ctx.file}: valid ({len(topology.clusters)} clusters, {len(topology.flows)} flows{stretch})")


COMMANDS = [validate]
