"""The topology file: schema, loading and validation."""

from geokafka.topology.load import (
    DEFAULT_FILE,
    CheckedTopology,
    check_topology_file,
    check_topology_text,
    load_topology,
    parse_topology,
)
from geokafka.topology.problems import Problem
from geokafka.topology.schema import Cluster, Flow, LocalCluster, Pipeline, Stretch, Topology

__all__ = [
    "DEFAULT_FILE",
    "CheckedTopology",
    "Cluster",
    "Flow",
    "LocalCluster",
    "Pipeline",
    "Problem",
    "Stretch",
    "Topology",
    "check_topology_file",
    "check_topology_text",
    "load_topology",
    "parse_topology",
]
