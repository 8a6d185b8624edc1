"""A cut link between "DCs" while replicating: afterwards the target equals the source record for record.

The target ("far", one broker) runs in a network namespace of its own, reached from the root
namespace over a veth pair (:mod:`geokafka.infra.netns`); the source is the session's west.
Cutting the link downs the namespace's end for 60 s: packets vanish silently, as on a cut
WAN link. Ports: broker GEOKAFKA_TEST_PORT_BASE+7092, controller +7192 (inside the namespace);
namespace ``gk-linkcut-<base>`` on 10.231.<base/100 mod 256>.0/24. Needs root.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_util import assert_same_records, create_topic, numbered_records, port_base, produce, read_all
from pipeline_util import running_mirror, wait_for, wait_progress_at, with_flows

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.errors import ClusterUnreachableError
from geokafka.infra import netns
from geokafka.infra.local_cluster import LocalClusterSpec, NodeSpec, start_cluster, stop_cluster
from geokafka.topology.schema import Cluster, Topology

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

CUT_S = 60.0


@pytest.fixture(scope="module")
def far_dc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[netns.NetNamespace, LocalClusterSpec]]:
    """The far DC: a namespace and a one-broker cluster in it; both removed even when a test fails."""
    ok, reason = netns.available()
    if not ok:
        pytest.skip(f"network namespaces unavailable: {reason}")
    base = port_base()
    ns = netns.NetNamespace(f"gk-linkcut-{base}", (base // 100) % 256)
    spec = LocalClusterSpec(
        name="far", home=tmp_path_factory.mktemp("far-dc"), heap_mb=320, netns=ns.name, host=ns.ns_ip,
        nodes=(NodeSpec(1, True, True, None, base + 7092, base + 7192),),
    )
    try:
        ns.create()
        start_cluster(spec, timeout_s=180)
        yield ns, spec
    finally:
        try:
            stop_cluster(spec)
        finally:
            ns.delete()


def _with_far(base: Topology, spec: LocalClusterSpec) -> Topology:
    clusters = {**base.clusters, "far": Cluster(bootstrap=spec.bootstrap)}
    return base.model_copy(update={"clusters": clusters})


def _unreachable(host: str, port: int, timeout_s: float = 3.0) -> bool:
    """True if a TCP connect gets no answer at all: no accept, no refusal, no ICMP error."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return False
    except TimeoutError:
        return True
    except OSError:
        return False


def test_target_link_cut_for_60s(base_topology: Topology, local_clusters: Any, west: Any, far_dc: Any,
                                 unique: Any) -> None:
    """west -> far; the link to far is cut for 60 s while the source keeps getting records."""
    ns, spec = far_dc
    topic = unique("cut")
    topology = with_flows(_with_far(base_topology, spec), cut={"source": "west", "target": "far", "topics": [topic]})
    far, far_port, target = connection(topology, "far"), spec.brokers[0].broker_port, f"west.{topic}"
    create_topic(west, topic, partitions=3)
    with running_mirror(topology) as runners:
        produce(west, topic, numbered_records(2000, 3, headers=True))
        wait_for(lambda: _count(far, target) >= 500, 180, "replication to start")
        ns.link_down()
        cut_at = time.monotonic()
        try:
            with pytest.raises(ClusterUnreachableError):  # a metadata request gets no answer
                ClusterAdmin(far, timeout_s=3.0).check_reachable()
            produce(west, topic, numbered_records(2000, 3, start=2000, headers=True))
            time.sleep(max(0.0, cut_at + CUT_S - 3.0 - time.monotonic()))
            assert _unreachable(ns.ns_ip, far_port, timeout_s=3.0), "the far DC answered during the cut"
        finally:
            ns.link_up()
        restored_at = time.monotonic()
        print(f"link cut for {restored_at - cut_at:.1f}s")
        produce(west, topic, numbered_records(2000, 3, start=4000, headers=True))
        wait_for(lambda: _count(far, target) >= 6000, 300, "catch-up after the link came back")
        print(f"all 6000 records on far {time.monotonic() - restored_at:.1f}s after the link came back, "
              f"after {runners['cut'].restarts} query restarts")
        # nothing left in flight: the driver saw every source record committed on far
        wait_progress_at(runners, "cut", topic, {p: 2000 for p in range(3)})
    assert_same_records(read_all(west, topic), read_all(far, target))


def _count(conn: Any, topic: str) -> int:
    """Committed records of ``topic`` (0 while it does not exist yet or the cluster does not answer)."""
    try:
        return len(read_all(conn, topic, timeout_s=10))
    except Exception:  # noqa: BLE001 - not created yet, or unreachable: keep waiting
        return 0
