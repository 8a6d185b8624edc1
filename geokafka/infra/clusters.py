"""The local clusters a topology declares, as launchable specs."""

from __future__ import annotations

from pathlib import Path

from geokafka.errors import TopologyError
from geokafka.infra.broker_security import ListenerSecurity
from geokafka.infra.local_cluster import LocalClusterSpec, NodeSpec
from geokafka.topology.local_files import cluster_home
from geokafka.topology.ports import broker_ports, controller_ports
from geokafka.topology.schema import Cluster, Topology


def local_cluster_spec(name: str, cluster: Cluster, state_dir: Path) -> LocalClusterSpec:
    """The spec of cluster ``name``'s ``local:`` block; node ids 1..N, separate controllers 101..

    The brokers' client listener follows the cluster's ``security`` block (see
    :mod:`geokafka.infra.broker_security`).
    """
    local = cluster.local
    if local is None:
        raise ValueError(f"cluster {name} has no local: block")
    bports, cports = broker_ports(cluster), controller_ports(cluster)
    racks: list[str | None] = list(local.racks) if local.racks else [None] * local.brokers
    nodes: list[NodeSpec] = []
    for i, port in enumerate(bports):
        combined = local.mode == "combined" and i < len(cports)
        nodes.append(NodeSpec(i + 1, True, combined, racks[i], port, cports[i] if combined else None))
    if local.mode == "separate":
        nodes += [NodeSpec(101 + j, False, True, None, None, port) for j, port in enumerate(cports)]
    sec = cluster.security
    return LocalClusterSpec(
        name=name,
        home=cluster_home(state_dir, name),
        nodes=tuple(nodes),
        heap_mb=local.heap_mb,
        broker_config=dict(local.broker_config),
        quick_jit=local.jit == "quick",
        security=ListenerSecurity(sec.protocol, sec.sasl_mechanism, sec.username, sec.password),
    )


def local_cluster_specs(topology: Topology, only: list[str] | None = None) -> list[LocalClusterSpec]:
    """Specs of every local cluster (or of the named ones, which must be local clusters)."""
    for name in only or ():
        if name not in topology.clusters:
            raise TopologyError(f"unknown cluster {name!r} (known: {', '.join(sorted(topology.clusters))})")
        if topology.clusters[name].local is None:
            raise TopologyError(f"cluster {name!r} has no local: block, so geokafka does not start or stop it")
    return [
        local_cluster_spec(name, cluster, topology.pipeline.state_dir)
        for name, cluster in topology.clusters.items()
        if cluster.local is not None and (not only or name in only)
    ]
