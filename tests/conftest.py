"""Session fixtures: real local Kafka clusters and one shared SparkSession.

Ports: east 21092-21094, west 22092, south 23092 (controllers +100) in a run without workers or
in pytest-xdist's worker gw0; gw1 and gw2 start their own clusters lower down (see
``kafka_util.port_base``): below the kernel's ephemeral range (32768-60999), so an outgoing
connection can never hold one. GEOKAFKA_TEST_PORT_BASE moves them (to run two suites side by side).
west and south run an ACL authorizer with the (PLAINTEXT, ANONYMOUS) test clients as super
user: everything is allowed as before, and ACLs for other principals can be stored and copied.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka_util import port_base

from geokafka.control.connection import ClusterConnection, connection
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.kafka_class_archive_build import ensure_archive
from geokafka.infra.local_cluster import (
    LOCAL_JVM_OPTIONS_ENV,
    LocalClusterSpec,
    port_is_free,
    start_clusters,
    stop_cluster,
)
from geokafka.infra.processes import signal_process
from geokafka.pipeline.spark_session import SPARK_JVM_OPTIONS_ENV
from geokafka.topology import Topology, parse_topology

TEST_TOPOLOGY = """
clusters:
  east:
    bootstrap: 127.0.0.1:{east}
    local: {{brokers: 3, racks: [east-a, east-b, east-c], heap_mb: 320, broker_config: {idle}}}
  west:
    bootstrap: 127.0.0.1:{west}
    local: {{brokers: 1, heap_mb: 320, broker_config: {authorizer}}}
  south:
    bootstrap: 127.0.0.1:{south}
    local: {{brokers: 1, heap_mb: 320, broker_config: {authorizer}}}
pipeline:
  master: "local[2]"
  state_dir: {state_dir}
  trigger_ms: 100
  topic_refresh_s: 5
"""
# The suite starts ~20 brokers per worker that live minutes and see little traffic: the quick
# compiler alone starts a 3-node cluster in ~40% less CPU (10 s against 16-18 s) and idles lower.
# Subprocesses (geokafka up, drills) inherit it; a real cluster never sees it.
os.environ.setdefault(LOCAL_JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")
# The same for Spark (the session fixture, every `geokafka mirror` and the bench's Spark
# contenders): a session in 6 instead of 10-12 CPU s, its first job in 4-5 instead of 7-8.
os.environ.setdefault(SPARK_JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")

# Session brokers mostly wait between tests: a follower's fetch and the controller's no-op record
# every 5 s instead of 0.5 s cost a 3-node cluster 2.8 instead of 4.6 CPU s a minute; neither adds
# latency (a fetch returns as soon as records arrive).
IDLE = '"metadata.max.idle.interval.ms": "5000", "replica.fetch.wait.max.ms": "5000"'
AUTHORIZER = ('{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", '
              '"super.users": "User:ANONYMOUS", ' + IDLE + '}')


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Data, logs and run state of the test clusters."""
    return tmp_path_factory.mktemp("geokafka-state")


@pytest.fixture(scope="session")
def base_topology(state_dir: Path) -> Topology:
    """The test clusters, with no flows."""
    base = port_base()
    text = TEST_TOPOLOGY.format(state_dir=state_dir, east=base + 92, west=base + 1092, south=base + 2092,
                                authorizer=AUTHORIZER, idle="{" + IDLE + "}")
    return parse_topology(text, "tests/conftest.py")


@pytest.fixture(scope="session")
def local_clusters(base_topology: Topology) -> Iterator[dict[str, LocalClusterSpec]]:
    """east, west and south running for the whole session."""
    specs = local_cluster_specs(base_topology)
    ensure_archive()  # ./run built it already; a bare pytest builds it here (once per machine)
    stop_orphaned_nodes(specs)
    try:
        start_clusters(specs, timeout_s=180)
        yield {spec.name: spec for spec in specs}
    finally:
        for spec in specs:
            stop_cluster(spec)


def stop_orphaned_nodes(specs: list[LocalClusterSpec]) -> None:
    """Kill Kafka nodes of an earlier test run that hold this worker's ports.

    A pytest-xdist worker that crashes skips its teardown, and its session brokers keep its ports
    (seen: a worker aborted, and every test of that worker in the next run on the machine failed
    to start its clusters). Only nodes started from another pytest temp dir are touched, and only
    while that dir (their config and PID file) still exists: pytest keeps the last three.
    """
    ours = {port for spec in specs for node in spec.nodes for port in (node.broker_port, node.controller_port) if port}
    homes = tuple(str(spec.home) for spec in specs)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            config = Path(args[args.index("kafka.Kafka") + 1])
            if "/pytest-of-" not in str(config) or str(config).startswith(homes):
                continue
            listeners = next(line for line in config.read_text().splitlines() if line.startswith("listeners="))
        except (OSError, ValueError, IndexError, StopIteration):
            continue
        held = {int(port) for port in re.findall(r":(\d+)", listeners)} & ours
        if held and signal_process(config.parent / "kafka.pid", signal.SIGKILL):
            # a killed JVM's main thread is a zombie while its other threads still close their sockets
            deadline = time.monotonic() + 30
            while not all(port_is_free(port) for port in held) and time.monotonic() < deadline:
                time.sleep(0.1)


@pytest.fixture(scope="session")
def east(base_topology: Topology, local_clusters: dict[str, LocalClusterSpec]) -> ClusterConnection:
    return connection(base_topology, "east")


@pytest.fixture(scope="session")
def west(base_topology: Topology, local_clusters: dict[str, LocalClusterSpec]) -> ClusterConnection:
    return connection(base_topology, "west")


@pytest.fixture(scope="session")
def south(base_topology: Topology, local_clusters: dict[str, LocalClusterSpec]) -> ClusterConnection:
    return connection(base_topology, "south")


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession with the Kafka connector, shared by every test."""
    from geokafka.pipeline.spark_session import get_spark

    session = get_spark("local[2]", "geokafka-tests")
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
