"""Checks that span several keys of a valid schema, each giving every problem it finds.

One place for every rule a command would otherwise find later: ``geokafka validate`` reports
them all, loading a topology refuses the first, and the planner asks the stretch rules of its
built-in layouts here too.
"""

from __future__ import annotations

from geokafka.topology.ports import broker_ports, local_ports
from geokafka.topology.schema import Stretch, Topology

KeyPath = tuple[str, ...]
Finding = tuple[KeyPath, str]
"""A key path in the topology and what is wrong there."""


def topology_findings(topology: Topology) -> list[Finding]:
    """Every cross-key problem of ``topology``, in file order of its blocks."""
    found = missing_clusters(topology) + flow_findings(topology) + local_cluster_findings(topology)
    if topology.stretch is not None:
        found += stretch_cluster_findings(topology) + stretch_findings(topology.stretch)
    return found


def missing_clusters(topology: Topology) -> list[Finding]:
    """``clusters:`` may be left out only by a file that plans a stretched cluster and nothing else."""
    if "clusters" in topology.model_fields_set:
        return []
    if topology.flows:
        return [(("clusters",), "required key is missing: flows name their source and target clusters there")]
    if topology.stretch is None:
        return [(("clusters",), "required key is missing (a topology has clusters:, a stretch: block, or both)")]
    return []


def flow_findings(topology: Topology) -> list[Finding]:
    """Flows naming unknown clusters, or a prefix separator that occurs in a cluster name."""
    if "clusters" not in topology.model_fields_set:
        return []  # reported once by missing_clusters
    found: list[Finding] = []
    for name, flow in topology.flows.items():
        for role in ("source", "target"):
            ref = getattr(flow, role)
            if ref not in topology.clusters:
                found.append((("flows", name, role), f"unknown cluster {ref!r}"))
            elif flow.rename == "prefix" and flow.separator in ref:
                found.append((
                    ("flows", name, "separator"),
                    f"separator {flow.separator!r} occurs in cluster name {ref!r}, so prefixed names are ambiguous",
                ))
    return found


def local_cluster_findings(topology: Topology) -> list[Finding]:
    """Local clusters whose ports overflow, collide, or are not the ports their bootstrap names."""
    found: list[Finding] = []
    owner: dict[int, str] = {}
    for name, cluster in topology.clusters.items():
        if cluster.local is None:
            continue
        ports = local_ports(cluster)
        if max(ports) > 65535:
            found.append((("clusters", name, "local"), f"ports run up to {max(ports)}, above 65535"))
            continue
        brokers = broker_ports(cluster)
        for address in cluster.bootstrap.split(","):
            port = int(address.strip().rpartition(":")[2])
            if port not in brokers:
                key = ("clusters", name, "local", "port") if cluster.local.port else ("clusters", name, "bootstrap")
                span = f"{brokers[0]}" if len(brokers) == 1 else f"{brokers[0]}-{brokers[-1]}"
                found.append((key, f"bootstrap port {port} is not a port of the local brokers ({span}): "
                                   f"clients would never reach the brokers `geokafka up` starts"))
                break
        for port in ports:
            if port in owner:
                found.append((("clusters", name, "local"), f"port {port} is also used by cluster {owner[port]!r}"))
                break
            owner[port] = name
    return found


def stretch_cluster_findings(topology: Topology) -> list[Finding]:
    """``stretch.cluster`` (what `geokafka guard` watches) must be one of the clusters."""
    name = topology.stretch.cluster if topology.stretch is not None else None
    if name is None or name in topology.clusters:
        return []
    known = ", ".join(sorted(topology.clusters)) or "none"
    return [(("stretch", "cluster"), f"{name!r} is not in clusters (known: {known})")]


def stretch_findings(stretch: Stretch) -> list[Finding]:
    """Topics of a stretched cluster that cannot be placed, or can never take an ``acks=all`` write."""
    brokers = sum(dc.brokers for dc in stretch.dcs.values())
    found: list[Finding] = []
    for name, topic in stretch.topics.items():
        where = ("stretch", "topics", name)
        if topic.replication_factor > brokers:
            found.append((where, f"replication_factor {topic.replication_factor} exceeds the {brokers} brokers "
                                 f"that hold synchronous replicas"))
        if topic.min_insync_replicas > topic.replication_factor:
            found.append((where, f"min_insync_replicas {topic.min_insync_replicas} exceeds replication_factor "
                                 f"{topic.replication_factor}: no acks=all write could ever succeed"))
    return found
