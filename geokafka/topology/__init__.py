"""The topology file: schema, loading and validation."""

from geokafka.topology.load import DEFAULT_FILE, load_topology, parse_topology
from geokafka.topology.schema import Cluster, Flow, LocalCluster, Pipeline, Stretch, Topology

__all__ = [
    "DEFAULT_FILE",
    "Cluster",
    "Flow",
    "LocalCluster",
    "Pipeline",
    "Stretch",
    "Topology",
    "load_topology",
    "parse_topology",
]
