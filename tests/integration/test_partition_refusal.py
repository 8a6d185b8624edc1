"""A partition is not a lost site: `failover` refuses while the flow's mirror still reaches the source.

The operator's commands run in a network namespace of their own (:mod:`geokafka.infra.netns`) that reaches the
target but not the source: the target ("dst", one broker) listens on the root end of the namespace's veth pair,
where the mirror (in the root namespace) reaches it too, and the source is the session's east on the root
namespace's loopback, which the namespace cannot reach. From there the source does not answer, while the mirror,
at the target's side, keeps observing it: `status` shows both views, `failover` refuses in one line, and
`failover --force` fails over. Ports: dst broker GEOKAFKA_TEST_PORT_BASE+8092, controller +8192; namespace
``gk-op-<base>``. Needs root.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka_util import create_topic, numbered_records, port_base, produce
from pipeline_util import GEOKAFKA, running_mirror, state_store, wait_for, with_flows

from geokafka.control.connection import connection
from geokafka.infra import netns
from geokafka.infra.local_cluster import LocalClusterSpec, NodeSpec, start_cluster, stop_cluster
from geokafka.topology.schema import Cluster, Topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]



@pytest.fixture(scope="module")
def operator_ns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[netns.NetNamespace, LocalClusterSpec]]:
    """The operator's namespace and the target cluster on its link's root end; both removed even when a test fails."""
    ok, reason = netns.available()
    if not ok:
        pytest.skip(f"network namespaces unavailable: {reason}")
    base = port_base()
    ns = netns.NetNamespace(f"gk-op-{base}", ((base // 100) + 128) % 256)
    spec = LocalClusterSpec(name="dst", home=tmp_path_factory.mktemp("dst"), heap_mb=320, host=ns.host_ip,
                            nodes=(NodeSpec(1, True, True, None, base + 8092, base + 8192),))
    try:
        ns.create()
        start_cluster(spec, timeout_s=180)
        yield ns, spec
    finally:
        try:
            stop_cluster(spec)
        finally:
            ns.delete()


def _in_namespace(ns: netns.NetNamespace, topology_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", ns.name, str(GEOKAFKA), "-f", str(topology_file), *args],
                          capture_output=True, text=True, timeout=120)


def test_failover_refuses_while_the_mirror_still_reaches_the_source_and_force_fails_over(
        base_topology: Topology, east: Any, operator_ns: Any, unique: Any, tmp_path: Path) -> None:
    ns, spec = operator_ns
    topic, flow = unique("partition"), unique("partition")
    topology = base_topology.model_copy(update={"clusters": {**base_topology.clusters,
                                                             "dst": Cluster(bootstrap=spec.bootstrap)}})
    topology = with_flows(topology, **{flow: {"source": "east", "target": "dst", "topics": [topic]}})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    create_topic(east, topic, partitions=2)
    produce(east, topic, numbered_records(20, 2))
    dst = connection(topology, "dst")
    with running_mirror(topology) as runners:
        def observing() -> bool:
            ends = state_store(dst).read(timeout_s=10).source_ends(flow)
            return flow in runners and runners[flow].status == "running" and ends is not None \
                and time.time() * 1000 - ends.at_ms < 1_000
        wait_for(observing, 180, "the mirror running and observing east")
        status = _in_namespace(ns, path, "status", flow)
        assert status.returncode == 0, status.stdout + status.stderr
        assert "does not answer here; the mirror last reached east" in status.stdout, status.stdout
        refused = _in_namespace(ns, path, "failover", flow)
        assert refused.returncode == 10, refused.stdout + refused.stderr
        line = refused.stderr.strip()
        assert line.startswith(f"SourceStillReachedError: flow {flow}: the mirror last reached east ") and \
            "a partition between here and east" in line and "--force" in line and "\n" not in line, line
        assert state_store(dst).read(timeout_s=10).role(flow) == "active"  # nothing changed
        forced = _in_namespace(ns, path, "--json", "failover", flow, "--force")
        assert forced.returncode == 0, forced.stdout + forced.stderr
        wait_for(lambda: runners[flow].status == "failed-over", 60, "the mirror to stop the failed-over flow")
    assert state_store(dst).read(timeout_s=10).role(flow) == "failed-over"
