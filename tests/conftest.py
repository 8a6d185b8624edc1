"""Session fixtures: real local Kafka clusters and one shared SparkSession.

The session's clusters (east 11592-11594, west 12592, south 13592, controllers +100; moved with
GEOKAFKA_TEST_SHARED_PORT_BASE) are started once per run and shared by every pytest-xdist
worker: below the kernel's ephemeral range (32768-60999), so an outgoing connection can never
hold one. Tests that kill or pause their brokers live in ``integration/private/`` and get
clusters of their own on their worker's port base (``kafka_util.port_base``). west and south run
an ACL authorizer with the (PLAINTEXT, ANONYMOUS) test clients as super user: everything is
allowed as before, and ACLs for other principals can be stored and copied.
"""

from __future__ import annotations

import fcntl
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cluster_util import stop_orphaned_nodes, topology_on
from kafka_util import shared_port_base

from geokafka.bench.setup import BENCH_JVM_OPTIONS_ENV
from geokafka.control.connection import ClusterConnection, connection
from geokafka.infra.clusters import local_cluster_spec
from geokafka.infra.kafka_class_archive_build import ensure_archive
from geokafka.infra.local_cluster import LOCAL_JVM_OPTIONS_ENV, LocalClusterSpec, start_clusters, stop_cluster
from geokafka.pipeline.spark_session import SPARK_JVM_OPTIONS_ENV
from geokafka.topology import Topology

# The suite starts ~20 brokers per worker that live minutes and see little traffic: the quick
# compiler alone starts a 3-node cluster in ~40% less CPU (10 s against 16-18 s) and idles lower.
# Subprocesses (geokafka up, drills) inherit it; a real cluster never sees it.
os.environ.setdefault(LOCAL_JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")
# The same for Spark (the session fixture, every `geokafka mirror` and the bench's Spark
# contenders): a session in 6 instead of 10-12 CPU s, its first job in 4-5 instead of 7-8.
os.environ.setdefault(SPARK_JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")
# And for the quick bench's own JVMs (the copy loop, MirrorMaker 2, Kafka's perf tools), which copy for seconds.
os.environ.setdefault(BENCH_JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Data, logs and run state of the test clusters."""
    return tmp_path_factory.mktemp("geokafka-state")


def shared_home(config: pytest.Config) -> Path:
    """Where the shared clusters live: under the run's base temp dir, which pytest-xdist's workers
    share with their controller (each worker's own is a sub-directory of it)."""
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "shared-clusters"


def shared_specs(config: pytest.Config) -> list[LocalClusterSpec]:
    """The specs of the clusters every worker shares, homed in :func:`shared_home`."""
    home = shared_home(config)
    return [local_cluster_spec(name, cluster, home)
            for name, cluster in topology_on(home, shared_port_base()).clusters.items() if cluster.local]


@pytest.fixture(scope="session")
def base_topology(state_dir: Path) -> Topology:
    """The shared test clusters, with no flows (the pipeline's state stays this process's own)."""
    return topology_on(state_dir, shared_port_base())


@pytest.fixture(scope="session")
def local_clusters(pytestconfig: pytest.Config) -> Iterator[dict[str, LocalClusterSpec]]:
    """east, west and south running for the whole run, shared by every pytest-xdist worker.

    The first worker to ask starts them (under a file lock); the xdist controller stops them when
    every worker is done (``pytest_sessionfinish``); a run without workers stops them itself.
    Tests that kill or pause session brokers must not use them: they live in
    ``integration/private/``, whose conftest gives each module clusters of its own.
    """
    specs = shared_specs(pytestconfig)
    home = shared_home(pytestconfig)
    home.mkdir(parents=True, exist_ok=True)
    ensure_archive()  # ./run built it already; a bare pytest builds it here (once per machine)
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "ready").exists():
            stop_orphaned_nodes(specs)
            start_clusters(specs, timeout_s=180)
            (home / "ready").touch()
    try:
        yield {spec.name: spec for spec in specs}
    finally:
        if "PYTEST_XDIST_WORKER" not in os.environ:
            stop_shared(pytestconfig)


def stop_shared(config: pytest.Config) -> None:
    """Stop the shared clusters if they were started (by PID file; nothing else is touched)."""
    if (shared_home(config) / "ready").exists():
        specs = shared_specs(config)
        with ThreadPoolExecutor(len(specs)) as pool:  # side by side: the run waits for this
            list(pool.map(stop_cluster, specs))
        (shared_home(config) / "ready").unlink()


@pytest.fixture(scope="module")  # module: in integration/private/ it connects to the module's own clusters
def east(base_topology: Topology, local_clusters: dict[str, LocalClusterSpec]) -> ClusterConnection:
    return connection(base_topology, "east")


@pytest.fixture(scope="module")
def west(base_topology: Topology, local_clusters: dict[str, LocalClusterSpec]) -> ClusterConnection:
    return connection(base_topology, "west")


@pytest.fixture(scope="module")
def south(base_topology: Topology, local_clusters: dict[str, LocalClusterSpec]) -> ClusterConnection:
    return connection(base_topology, "south")


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession with the Kafka connector, shared by every test."""
    from geokafka.artifacts.spark_home import pyspark_home, trimmed_home
    from geokafka.pipeline.spark_session import get_spark

    trimmed_home(pyspark_home())  # ./run built it already (geokafka itself never does); a bare pytest builds it here
    # real-time mode runs every partition group of every flow at once: room for a mirror of four groups
    session = get_spark("local[4]", "geokafka-tests")
    yield session
    session.stop()


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Names no other test uses: ``unique("orders")`` -> ``orders-1a2b3c4d``."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:8]}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with a ``slow`` test first, longest first (``slow(seconds=...)``, the file's time in a
    parallel run; 60 when not given), then the other integration tests, unit tests last: with
    parallel workers (``./run tests`` passes ``--dist loadfile --no-loadscope-reorder``, which hands
    out whole files in this order) the longest work starts first and the short files fill the end,
    so no worker runs a long file alone at the end."""
    slow_s: dict[object, float] = {}
    for item in items:
        marker = item.get_closest_marker("slow")
        if marker is not None:
            slow_s[item.path] = max(slow_s.get(item.path, 0.0), float(marker.kwargs.get("seconds", 60)))

    def rank(item: pytest.Item) -> tuple[int, float]:
        if item.path in slow_s:
            return 0, -slow_s[item.path]
        return (1 if item.get_closest_marker("integration") else 2), 0.0

    items.sort(key=rank)  # stable: each file keeps its own order


_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    tests_state = sys.modules.get("pipeline_util")
    if tests_state is not None:
        tests_state.TEST_STORES.close()  # the tests' state stores: before the shared brokers stop
    if "PYTEST_XDIST_WORKER" not in os.environ:  # a run without workers, or xdist's controller once all are done
        stop_shared(session.config)
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave with pytest's own status once everything is reported, skipping interpreter
    teardown: a full run once ended in SIGSEGV (exit 139) *after* printing "455 passed",
    while native Kafka clients still held by the session were being destroyed against
    clusters already stopped. Set GEOKAFKA_TEST_SOFT_EXIT=1 to see that teardown."""
    # not in a pytest-xdist worker: its last message to the controller may still be unsent
    if _EXIT_STATUS and os.environ.get("GEOKAFKA_TEST_SOFT_EXIT") != "1" and "PYTEST_XDIST_WORKER" not in os.environ:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[-1])
