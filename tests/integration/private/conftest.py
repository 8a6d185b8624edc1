"""Clusters of their own for the modules here: each kills, pauses or restarts brokers of east,
west or south, which the session shares with every other worker's tests.

Each module gets east, west and south on its worker's port base (``kafka_util.port_base``:
east +92..94, west +1092, south +2092), started for the module and stopped after it; the
fixtures keep the session's names, so a test reads the same either way (the root conftest's
module-scoped ``east``, ``west`` and ``south`` connect to whichever clusters the module has).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_util import stop_orphaned_nodes, topology_on
from kafka_util import port_base
from pipeline_util import TEST_STORES

from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import LocalClusterSpec, start_clusters, stop_cluster
from geokafka.topology import Topology


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Data, logs and run state of this module's clusters and flows."""
    return tmp_path_factory.mktemp("private-state")


@pytest.fixture(scope="module")
def base_topology(request: pytest.FixtureRequest, state_dir: Path) -> Topology:
    """This module's own east, west and south, with no flows; east has 3 nodes unless the module names fewer in
    ``EAST_BROKERS`` (a module that loses the whole site, or never touches east's nodes, needs no three racks)."""
    return topology_on(state_dir, port_base(), getattr(request.module, "EAST_BROKERS", 3))


@pytest.fixture(scope="module")
def local_clusters(request: pytest.FixtureRequest, base_topology: Topology) -> Iterator[dict[str, LocalClusterSpec]]:
    """east, west and south running for this module only; a module that needs fewer names them in ``CLUSTERS``
    (each node a JVM start: the suite's largest cost)."""
    wanted = getattr(request.module, "CLUSTERS", ("east", "west", "south"))
    specs = [spec for spec in local_cluster_specs(base_topology) if spec.name in wanted]
    stop_orphaned_nodes(specs)
    try:
        start_clusters(specs, timeout_s=180)
        yield {spec.name: spec for spec in specs}
    finally:
        # the tests' state stores read incrementally: one kept for this module's west would read the next module's
        # new west on the same ports from this one's offsets, and find nothing written there
        TEST_STORES.close()
        for spec in specs:
            stop_cluster(spec)
