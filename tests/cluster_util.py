"""The test clusters' topology, shared by the session's clusters and the private ones of
``integration/private/``, and the clean-up of nodes an earlier run left behind."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import LocalClusterSpec, port_is_free, start_clusters, stop_cluster
from geokafka.infra.processes import signal_process
from geokafka.topology import Topology, parse_topology

TEST_TOPOLOGY = """
clusters:
  east:
    bootstrap: 127.0.0.1:{east}
    local: {{brokers: {east_brokers}, racks: [{east_racks}], heap_mb: 320, jit: quick, broker_config: {idle}}}
  west:
    bootstrap: 127.0.0.1:{west}
    local: {{brokers: 1, heap_mb: 320, jit: quick, broker_config: {authorizer}}}
  south:
    bootstrap: 127.0.0.1:{south}
    local: {{brokers: 1, heap_mb: 320, jit: quick, broker_config: {authorizer}}}
pipeline:
  master: "local[2]"
  state_dir: {state_dir}
  trigger_ms: 100
  topic_refresh_s: 5
"""
# Test brokers run the quick compiler only (jit: quick): a start costs 2.5-2.9 instead of 3.8-4.2 CPU s and an idle
# broker 1.0-1.2 instead of 1.8 CPU s a minute (measured on this machine); the suite starts ~90 of them and moves little
# data through each.
# Session brokers mostly wait between tests: a follower's fetch and the controller's no-op record
# every 5 s instead of 0.5 s cost a 3-node cluster 2.8 instead of 4.6 CPU s a minute; neither adds
# latency (a fetch returns as soon as records arrive).
# Fewer request, network, background and coordinator threads than a production broker's (8, 3, 10, 4): each idle
# one wakes on a timer, and a test broker serves a few clients. Idle, a node then costs 0.99 instead of 1.29 CPU s a
# minute, a 3-node cluster 4.28 instead of 4.69 (measured side by side over 2 minutes, load 0.6).
# (The index files' size, which cost a broker 11 ms of CPU a fresh partition at Kafka's 10 MB, is every local
# cluster's own now: see geokafka.infra.local_cluster.server_properties.)
IDLE = ('"metadata.max.idle.interval.ms": "5000", "replica.fetch.wait.max.ms": "5000", "num.io.threads": "2", '
        '"num.network.threads": "1", "background.threads": "2", "group.coordinator.threads": "1", '
        '"share.coordinator.threads": "1"')
LEAN = json.loads("{" + IDLE + "}")
AUTHORIZER = ('{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", '
              '"super.users": "User:ANONYMOUS", ' + IDLE + '}')


def topology_on(state_dir: Path, base: int, east_brokers: int = 3) -> Topology:
    """east, west and south on ports from ``base`` (east +92..94, west +1092, south +2092), no flows; east has
    ``east_brokers`` nodes, one per rack (east-a, east-b, east-c)."""
    racks = ", ".join(f"east-{rack}" for rack in "abc"[:east_brokers])
    text = TEST_TOPOLOGY.format(state_dir=state_dir, east=base + 92, west=base + 1092, south=base + 2092,
                                east_brokers=east_brokers, east_racks=racks, authorizer=AUTHORIZER, idle="{" + IDLE + "}")
    return parse_topology(text, "tests/conftest.py")


@contextmanager
def one_more_cluster(topology: Topology, name: str, port: int,
                     broker_config: dict[str, str] | None = None) -> Iterator[Topology]:
    """``topology`` plus a one-broker local cluster ``name`` on ``port`` (controller +100), running inside the
    block: a site of a module's own, beside the clusters it shares."""
    extra = parse_topology(f"""
clusters:
  {name}:
    bootstrap: 127.0.0.1:{port}
    local: {{brokers: 1, heap_mb: 320, jit: quick, broker_config: {json.dumps({**LEAN, **(broker_config or {})})}}}
pipeline: {{state_dir: {topology.pipeline.state_dir}}}
""", "tests/cluster_util.py").clusters[name]
    topology = topology.model_copy(update={"clusters": {**topology.clusters, name: extra}})
    specs = [s for s in local_cluster_specs(topology) if s.name == name]
    stop_orphaned_nodes(specs)
    start_clusters(specs, timeout_s=180)
    try:
        yield topology
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
