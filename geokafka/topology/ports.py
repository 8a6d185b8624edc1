"""The loopback ports a local cluster uses, derived in one place from its declaration."""

from __future__ import annotations

from geokafka.topology.schema import Cluster


def broker_ports(cluster: Cluster) -> list[int]:
    """Client ports of the local brokers: ``port``, ``port+1``, ..."""
    assert cluster.local is not None
    base = cluster.local.port or cluster.bootstrap_port
    return [base + i for i in range(cluster.local.brokers)]


def controller_ports(cluster: Cluster) -> list[int]:
    """Ports of the KRaft controller listeners."""
    assert cluster.local is not None
    base = cluster.local.controller_port or (cluster.local.port or cluster.bootstrap_port) + 100
    return [base + i for i in range(cluster.local.controller_count)]


def local_ports(cluster: Cluster) -> list[int]:
    """Every port the local cluster binds."""
    return broker_ports(cluster) + controller_ports(cluster)
