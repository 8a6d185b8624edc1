"""The loopback ports a local cluster uses, derived in one place from its declaration."""

from __future__ import annotations

from pathlib import Path

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


EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_range(path: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int] | None:
    """The kernel's range of client (ephemeral) ports, or None where it cannot be read."""
    try:
        low, high = (int(v) for v in path.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return None
    return low, high


def ephemeral_overlap(ports: list[int], span: tuple[int, int] | None) -> list[int]:
    """The ``ports`` inside the ephemeral ``span``.

    A client that keeps reconnecting to a stopped broker's port inside that range can be given
    the very same port as its source and connect to itself; the port then stays taken (up to a
    minute, with TIME-WAIT) and the broker cannot start again until it is free.
    """
    if span is None:
        return []
    return sorted(p for p in ports if span[0] <= p <= span[1])
