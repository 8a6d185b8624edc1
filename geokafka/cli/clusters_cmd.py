"""`geokafka up` / `geokafka down`: the local clusters of the topology."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from geokafka.artifacts.jars import local_kafka_jars
from geokafka.cli.context import CliContext, pass_ctx
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import start_clusters, stop_cluster
from geokafka.topology.ports import ephemeral_overlap, ephemeral_range


@click.command()
@click.argument("clusters", nargs=-1)
@click.option("--timeout", default=120.0, help="seconds to wait for every broker to be in the metadata")
@pass_ctx
def up(ctx: CliContext, clusters: tuple[str, ...], timeout: float) -> None:
    """Start the topology's local clusters (all, or those named) and wait until they serve."""
    local_kafka_jars("up")  # before anything starts: what is missing and how to fetch it
    specs = local_cluster_specs(ctx.topology, list(clusters))
    span = ephemeral_range()
    for spec in specs:
        ctx.info(f"starting {spec.name} ({len(spec.brokers)} brokers, {len(spec.controllers)} controllers)...")
        ports = [p for n in spec.nodes for p in (n.broker_port, n.controller_port) if p is not None]
        inside = ephemeral_overlap(ports, span)
        if inside and span is not None:
            ctx.info(f"note: {spec.name}: ports {inside[0]}-{inside[-1]} lie in this machine's ephemeral port range "
                     f"({span[0]}-{span[1]}): a client reconnecting to a stopped broker can take its port, so a "
                     f"restart may wait up to a minute; ports below {span[0]} avoid it")
    racks_by_cluster = start_clusters(specs, timeout_s=timeout)
    rows: list[dict[str, Any]] = []
    for spec in specs:
        racks = [racks_by_cluster[spec.name].get(b.node_id) or "-" for b in spec.brokers]
        rows.append({"cluster": spec.name, "brokers": len(spec.brokers), "racks": racks, "bootstrap": spec.bootstrap})
    table = Table("cluster", "brokers", "racks", "bootstrap", title="local clusters up")
    for row in rows:
        table.add_row(row["cluster"], str(row["brokers"]), ",".join(row["racks"]), row["bootstrap"])
    ctx.emit(rows, table)


@click.command()
@click.argument("clusters", nargs=-1)
@pass_ctx
def down(ctx: CliContext, clusters: tuple[str, ...]) -> None:
    """Stop the topology's local clusters; data is kept for the next `up`."""
    result = {spec.name: stop_cluster(spec) for spec in local_cluster_specs(ctx.topology, list(clusters))}
    ctx.emit(result, "\n".join(f"{name}: stopped {n} processes" for name, n in result.items()))


COMMANDS = [up, down]
